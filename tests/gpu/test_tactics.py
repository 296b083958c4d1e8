"""Tactics (``backends/gpu/tactics.py``, issue 31): every node with several candidate kernels
chooses one at prepare, as TensorRT does.

Specifications, on the emulated device (host emulation, and the emulated CUDA device where the
candidates' ``.cu`` kernels really run, through the host shim):
- with injected times (``GpuDelegate(tactic_timing=...)``, as placement's costs), each
  candidate's time decides: the fastest is chosen, the runner-up named with both times;
- without them, the first row of the table that applies and passes its check (the direct kernel);
- a second prepare of the same model takes the decision from the cache, in memory and from the
  placement cache's directory (a new process), and neither checks nor times again;
- on the emulated CUDA device each candidate is checked against the node's numpy twin on inputs
  in {-2..2}: a candidate made to fail (a grid one tile short) is never chosen, however fast,
  and the reports (``PartitionStats.kernels``, ``GpuDelegate.tactic_report``) name it and why;
- a node none of whose candidates passes is refused with an error naming it;
- a convolution is checked on a smaller input with its own channels, filter and padding (a few
  blocks through the shim), and a broken candidate is still caught there;
- the rows fit the GPU and the layer (issue 31, item 4): recorded on the emulated device (an
  H200's 132 multiprocessors) for face detection at batch 1, no candidate the tables can choose
  for a CONV_2D or DEPTHWISE_CONV_2D of at least 16,384 outputs launches fewer blocks than its
  direct kernel; a thin float16 layer's tensor-core tiles are at most twice its channels wide.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.cuda import conv2d
from backends.gpu.cuda.conv2d import CONV2D_TACTICS, Conv2DTiledCuda
from backends.gpu.placement import PlacementCache
from backends.gpu.tactics import FILL_OUTPUTS, Tactic, TacticTrial, launch_blocks
from delegate_sdk.delegate import DelegatePrepareError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.params import Conv2DParams, FullyConnectedParams

SHAPE = (1, 12, 13, 6)
#: The rows of CONV2D_TACTICS that apply to ``conv_model()`` in float32 (40 channels: every tile
#: fits; 6,240 outputs: below the fill rule's threshold).
CONV_ROWS = ("direct", "tiled 64x64", "tiled 128x32", "tiled 32x32", "tiled 64x16", "tiled 32x16")


def conv_model(out_channels: int = 40, shape: tuple[int, ...] = SHAPE) -> bytes:
    rng = np.random.default_rng(7)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(shape))
    w = graph.add_constant("w", rng.uniform(-1, 1, (out_channels, 3, 3, shape[3])).astype(np.float32))
    b = graph.add_constant("b", rng.uniform(-1, 1, out_channels).astype(np.float32))
    out = graph.add_tensor("out", [1])
    graph.add_operator(B.CONV_2D, [x, w, b], [out], Conv2DParams(stride_h=1, stride_w=1, fused_activation_function=Act.RELU))
    graph.add_output(out)
    return builder.build()


def fc_model(rows: int = 5, depth: int = 40, units: int = 24) -> bytes:
    rng = np.random.default_rng(8)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [rows, depth])
    w = graph.add_constant("w", rng.uniform(-1, 1, (units, depth)).astype(np.float32))
    b = graph.add_constant("b", rng.uniform(-1, 1, units).astype(np.float32))
    out = graph.add_tensor("out", [rows, units])
    graph.add_operator(B.FULLY_CONNECTED, [x, w, b], [out], FullyConnectedParams(fused_activation_function=Act.RELU6))
    graph.add_output(out)
    return builder.build()


class Times:
    """An injected timing: the given microseconds per candidate (others 100 µs), each call recorded."""

    def __init__(self, **us: float) -> None:
        self.us = {name.replace("_", " "): value for name, value in us.items()}
        self.trials: list[TacticTrial] = []

    def __call__(self, trial: TacticTrial) -> float:
        self.trials.append(trial)
        return self.us.get(trial.tactic, 100.0)


def prepared(model: bytes, delegate: GpuDelegate) -> Interpreter:
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    return interpreter


def run(interpreter: Interpreter, seed: int = 0) -> np.ndarray:
    detail = interpreter.get_input_details()[0]
    interpreter.set_tensor(detail["index"], np.random.default_rng(seed).uniform(-1, 1, detail["shape"]).astype(np.float32))
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def the_choice(delegate: GpuDelegate):
    ((_, choice),) = [c for kernel in delegate.kernels for c in kernel.tactics()]
    return choice


# -- injected times decide ---------------------------------------------------------------------------


@pytest.mark.parametrize("fastest", ["direct", "tiled 64x64", "tiled 128x32"])
def test_with_injected_times_the_fastest_candidate_is_chosen(fastest):
    times = Times(**{fastest.replace(" ", "_"): 3.0, "direct": 5.0 if fastest != "direct" else 3.0})
    delegate = GpuDelegate("host", tactic_timing=times, placement_cache=PlacementCache())
    prepared(conv_model(), delegate)
    choice = the_choice(delegate)
    assert choice.chosen == fastest
    assert choice.source == "injected"
    assert {trial.tactic for trial in times.trials} == set(CONV_ROWS)  # the rows that apply
    assert all(trial.op == "CONV_2D v1 (node 0)" and trial.family == "CONV_2D" for trial in times.trials)


def test_the_runner_up_is_the_second_fastest_and_the_stats_show_both_times():
    delegate = GpuDelegate("host", tactic_timing=Times(tiled_128x32=7.0, direct=9.5), placement_cache=PlacementCache())
    prepared(conv_model(), delegate)
    (stats,) = delegate.partition_stats()
    assert stats.kernels == ("CONV_2D v1 (node 0) [tiled 128x32 7.0 µs, runner-up direct 9.5 µs]",)
    assert stats.kernel_variants() == [("CONV_2D v1 [tiled 128x32]", 1)]
    assert delegate.tactic_report() == ["CONV_2D v1 (node 0): tiled 128x32 7.0 µs, runner-up direct 9.5 µs (injected)"]


def test_a_tie_goes_to_the_row_first_in_the_table():
    delegate = GpuDelegate("host", tactic_timing=lambda trial: 4.0, placement_cache=PlacementCache())
    prepared(conv_model(), delegate)
    assert the_choice(delegate).chosen == "direct"


def test_without_injected_times_the_emulated_device_takes_the_first_row_that_passes():
    delegate = GpuDelegate("host", placement_cache=PlacementCache())
    prepared(conv_model(), delegate)
    choice = the_choice(delegate)
    assert (choice.chosen, choice.source, choice.times_us) == ("direct", "table order", {})
    assert choice.runner_up == "tiled 64x64"


def test_the_products_choose_among_their_candidates_too():
    delegate = GpuDelegate("host", tactic_timing=Times(tiled_64x64=1.0), placement_cache=PlacementCache())
    interpreter = prepared(fc_model(), delegate)
    assert the_choice(delegate).chosen == "tiled 64x64"
    reference = Interpreter(model_content=fc_model())  # the CPU kernels: TFLite's reference
    reference.allocate_tensors()
    np.testing.assert_allclose(run(interpreter), run(reference), rtol=1e-5, atol=1e-5)


# -- the cache ---------------------------------------------------------------------------------------


def test_a_second_prepare_takes_the_decision_from_the_cache_in_memory():
    cache = PlacementCache()
    first = Times(tiled_64x64=2.0)
    prepared(conv_model(), GpuDelegate("host", tactic_timing=first, placement_cache=cache))
    again = Times(direct=1.0)  # would choose otherwise: it is not asked
    delegate = GpuDelegate("host", tactic_timing=again, placement_cache=cache)
    prepared(conv_model(), delegate)
    assert len(first.trials) == len(CONV_ROWS) and again.trials == []
    choice = the_choice(delegate)
    assert (choice.chosen, choice.from_cache) == ("tiled 64x64", True)
    assert delegate.tactic_report() == ["CONV_2D v1 (node 0): tiled 64x64 2.0 µs, runner-up direct 100 µs (injected, cached)"]


def test_a_new_process_takes_the_decision_from_the_placement_cache_directory(tmp_path):
    first = Times(tiled_128x32=2.0)
    prepared(conv_model(), GpuDelegate("host", tactic_timing=first, placement_cache=PlacementCache(tmp_path)))
    (stored,) = [name for name in os.listdir(tmp_path) if name.startswith("tactic-")]
    assert json.loads((tmp_path / stored).read_text())["chosen"] == "tiled 128x32"
    again = Times()
    delegate = GpuDelegate("host", tactic_timing=again, placement_cache=PlacementCache(tmp_path))  # an empty memory
    prepared(conv_model(), delegate)
    assert again.trials == [] and the_choice(delegate).chosen == "tiled 128x32"


def test_another_shape_or_precision_is_another_decision():
    cache = PlacementCache()
    prepared(conv_model(40), GpuDelegate("host", tactic_timing=Times(), placement_cache=cache))
    times = Times()
    prepared(conv_model(24), GpuDelegate("host", tactic_timing=times, placement_cache=cache))
    prepared(conv_model(40), GpuDelegate("host", "float16", tactic_timing=times, placement_cache=cache))
    # 24 channels: no 64-channel tile fits (5 rows); float16 on the emulated sm_90: the three
    # tensor-core tiles too (9 rows).
    assert len(times.trials) == 5 + 9
    assert len(cache) == 3


def test_a_damaged_cache_file_is_timed_again(tmp_path):
    prepared(conv_model(), GpuDelegate("host", tactic_timing=Times(), placement_cache=PlacementCache(tmp_path)))
    (stored,) = [name for name in os.listdir(tmp_path) if name.startswith("tactic-")]
    (tmp_path / stored).write_text(json.dumps({"chosen": "no such kernel"}))
    times = Times()
    prepared(conv_model(), GpuDelegate("host", tactic_timing=times, placement_cache=PlacementCache(tmp_path)))
    assert len(times.trials) == len(CONV_ROWS)


# -- the check on the device ---------------------------------------------------------------------------


class OneTileShort(Conv2DTiledCuda):
    """A tiled kernel whose grid misses its last tile of pixels: those outputs are never written."""

    def launch_config(self, geometry):
        (x, y, z), block = super().launch_config(geometry)
        return (x - 1, y, z), block


BROKEN = Tactic("one tile short", OneTileShort, conv2d.finite_filter_reason,
                lambda problem: conv2d.conv2d_tiled_launch_config(problem.geometry, (64, 64)), {"tile": (64, 64)})


def test_on_the_emulated_cuda_device_every_candidate_is_checked_against_the_twin():
    delegate = GpuDelegate(emulated_cuda_device(), tactic_timing=Times(), placement_cache=PlacementCache())
    prepared(conv_model(), delegate)
    choice = the_choice(delegate)
    assert choice.checked and choice.failed == {}
    assert choice.passed == CONV_ROWS


def test_a_candidate_that_fails_its_check_is_never_chosen_and_the_reports_name_it(monkeypatch):
    monkeypatch.setattr(conv2d, "CONV2D_TACTICS", (*CONV2D_TACTICS, BROKEN))
    delegate = GpuDelegate(emulated_cuda_device(), tactic_timing=Times(one_tile_short=0.5, tiled_64x64=2.0),
                           placement_cache=PlacementCache())
    interpreter = prepared(conv_model(), delegate)
    choice = the_choice(delegate)
    assert choice.chosen == "tiled 64x64" and "one tile short" not in choice.passed
    assert "one tile short" not in choice.times_us  # never timed: it cannot be chosen
    why = choice.failed["one tile short"]
    assert "outputs differ from the twin on inputs in {-2..2}" in why
    (stats,) = delegate.partition_stats()
    assert "failed its check: one tile short (" in stats.kernels[0]
    assert "failed its check: one tile short" in delegate.tactic_report()[0]
    reference = Interpreter(model_content=conv_model())
    reference.allocate_tensors()
    np.testing.assert_allclose(run(interpreter), run(reference), rtol=1e-5, atol=1e-5)


def test_a_failed_check_is_cached_with_the_decision(monkeypatch):
    monkeypatch.setattr(conv2d, "CONV2D_TACTICS", (*CONV2D_TACTICS, BROKEN))
    cache = PlacementCache()
    prepared(conv_model(), GpuDelegate(emulated_cuda_device(), tactic_timing=Times(), placement_cache=cache))
    delegate = GpuDelegate(emulated_cuda_device(), tactic_timing=Times(), placement_cache=cache)
    prepared(conv_model(), delegate)
    choice = the_choice(delegate)
    assert choice.from_cache and "one tile short" in choice.failed


def test_host_emulation_runs_the_twins_and_checks_nothing():
    delegate = GpuDelegate("host", placement_cache=PlacementCache())
    prepared(conv_model(), delegate)
    assert the_choice(delegate).checked is False


def test_a_node_none_of_whose_candidates_passes_is_refused_with_its_name(monkeypatch):
    class NeverWrites(conv2d.Conv2DCuda):
        def launch_config(self, geometry):
            return (0, 1, 1), (256, 1, 1)  # CUDA refuses an empty grid

    only_broken = (Tactic("direct", NeverWrites, launch_shape=lambda problem: conv2d.conv2d_launch_config(problem.geometry)),)
    monkeypatch.setattr(conv2d, "CONV2D_TACTICS", only_broken)
    delegate = GpuDelegate(emulated_cuda_device(), placement_cache=PlacementCache())
    with pytest.raises(DelegatePrepareError, match=r"NoTacticError: CONV_2D v1 \(node 0\): no kernel passed its check on "
                       r"emulated cuda:0: direct: HostShimError: conv2d_f32: invalid launch configuration"):
        prepared(conv_model(), delegate)


def test_on_a_device_the_candidates_are_timed_with_cuda_events_and_the_fastest_is_kept():
    """The path a GPU takes: no injected times, so each candidate that passed its check is timed
    on the device's side stream between two CUDA events. Here an emulated device stands in for
    one (its events time the host shim's runs), which exercises that path on a CPU."""
    device = emulated_cuda_device()
    device.emulated = False  # (as a CUDA device: measure, and keep the delegate's own counters)
    delegate = GpuDelegate(device, placement_cache=PlacementCache())
    prepared(conv_model(), delegate)
    choice = the_choice(delegate)
    assert choice.source == "measured" and choice.checked
    assert set(choice.times_us) == set(choice.passed) == set(CONV_ROWS)
    assert all(us > 0 for us in choice.times_us.values())
    assert choice.chosen == min(choice.passed, key=lambda name: choice.times_us[name])
    assert delegate.tactic_report()[0].endswith("(measured)")


def test_a_large_convolution_is_checked_on_a_smaller_input_with_its_padding_and_a_broken_candidate_is_caught(monkeypatch):
    from backends.cpu.common import compute_padding

    monkeypatch.setattr(conv2d, "CONV2D_TACTICS", (*CONV2D_TACTICS, BROKEN))
    shape = (1, 41, 40, 6)  # 41 x 40 outputs of 24 channels
    delegate = GpuDelegate(emulated_cuda_device(), tactic_timing=Times(one_tile_short=0.5), placement_cache=PlacementCache())
    interpreter = prepared(conv_model(24, shape), delegate)
    choice = the_choice(delegate)
    assert "outputs differ from the twin" in choice.failed["one tile short"] and choice.chosen != "one tile short"
    ((op, *_),) = delegate.kernels[0].steps
    assert op.check_input_shape(shape, (3, 3)) == (1, 12, 12, 6)  # 12 x 12 outputs, the same SAME padding
    assert op.check_input_shape((3, 41, 41, 6), (5, 5)) == (2, 12, 12, 6)
    op.params = dataclasses.replace(op.params, stride_h=2)  # (the method reads the op's stride and padding)
    assert op.check_input_shape((1, 41, 40, 6), (3, 3)) == (1, 23, 12, 6)
    small, real = compute_padding(op.params.padding, 23, 3, 2), compute_padding(op.params.padding, 41, 3, 2)
    assert (small.out_size, small.before, small.after) == (12, real.before, real.after) == (12, 1, 1)
    reference = Interpreter(model_content=conv_model(24, shape))
    reference.allocate_tensors()
    np.testing.assert_allclose(run(interpreter), run(reference), rtol=1e-5, atol=1e-5)


# -- the rows fit the GPU and the layer (issue 31, item 4) -----------------------------------------------

FACE_DETECTION = pathlib.Path(__file__).parents[1] / "data" / "models" / "real" / "mp_face_detection_short_range.tflite"


def window_choices(delegate: GpuDelegate) -> list[tuple[str, object, object]]:
    """``(label, op, choice)`` of every CONV_2D and DEPTHWISE_CONV_2D step."""
    return [
        (label, op, op.tactic) for kernel in delegate.kernels for op, _, _, label in kernel.steps
        if op.tactic is not None and op.tactic.family in ("CONV_2D", "DEPTHWISE_CONV_2D")
    ]


@pytest.mark.parametrize("precision", ["float32", "float16"])
def test_no_candidate_for_a_large_convolution_of_face_detection_at_batch_1_launches_fewer_blocks_than_its_direct_kernel(precision):
    delegate = GpuDelegate("host", precision, placement_cache=PlacementCache())  # the emulated device: sm_90, 132 SMs
    prepared(FACE_DETECTION.read_bytes(), delegate)
    large = [(label, op, choice) for label, op, choice in window_choices(delegate) if math.prod(op.outputs[0].shape) >= FILL_OUTPUTS]
    assert len(large) == 18  # 10 CONV_2D and 8 DEPTHWISE_CONV_2D nodes of 16,384 outputs or more
    for label, op, choice in large:
        direct = launch_blocks(choice.launches["direct" if "direct" in choice.launches else "direct fused"])
        candidates = {name: launch_blocks(shape) for name, shape in choice.launches.items()}
        # Every row the tables can choose has its launch, but the vendor GEMM: cuBLAS picks its
        # own kernels and grid for the shape (split-K included).
        assert set(candidates) == {name for name in choice.passed if not name.startswith("cuBLAS")}
        assert all(blocks >= direct for blocks in candidates.values()), (label, direct, candidates)
        assert len(candidates) > 1, f"{label}: only the direct kernel"  # a tile that fills the GPU applies
        emptier = [why for why in choice.not_applicable.values() if "leave the GPU emptier" in why]
        assert all(f"than the direct kernel's {direct} " in why for why in emptier)


def thin_model() -> bytes:
    """Three float CONV_2D of 16, 8 and 2 output channels (65,536, 8,192 and 2,048 outputs)."""
    rng = np.random.default_rng(11)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x, channels_in = graph.add_input("x", [1, 64, 64, 8]), 8
    for index, (channels, stride) in enumerate(((16, 1), (8, 2), (2, 1))):
        w = graph.add_constant(f"w{index}", rng.uniform(-1, 1, (channels, 3, 3, channels_in)).astype(np.float32))
        out = graph.add_tensor(f"out{index}", [1])
        graph.add_operator(B.CONV_2D, [x, w], [out], Conv2DParams(stride_h=stride, stride_w=stride))
        x, channels_in = out, channels
    graph.add_output(x)
    return builder.build()


def mma_tile_n(name: str) -> int:
    return int(name.split("x")[-1])


def test_thin_float16_layers_get_tensor_core_tiles_that_fit_them():
    # The widest tile fastest: it may be chosen only where it fits.
    times = Times(mma_64x64=1.0, mma_64x16=2.0, mma_128x8=2.0)
    delegate = GpuDelegate("host", "float16", tactic_timing=times, placement_cache=PlacementCache())
    prepared(thin_model(), delegate)
    chosen = {}
    for label, op, choice in window_choices(delegate):
        channels = op.outputs[0].shape[-1]
        mma = [name for name in choice.passed if name.startswith("mma")]
        assert all(mma_tile_n(name) <= 2 * channels for name in mma), (label, mma)
        assert "more than twice the layer's" in choice.not_applicable["mma 64x64"]
        chosen[channels] = choice.chosen
    assert chosen == {16: "mma 64x16", 8: "mma 64x16", 2: "direct"}  # 2 channels: no tile fits


def test_face_detection_s_float16_layers_have_only_tensor_core_tiles_that_fit_them():
    delegate = GpuDelegate("host", "float16", placement_cache=PlacementCache())
    prepared(FACE_DETECTION.read_bytes(), delegate)
    for label, op, choice in window_choices(delegate):
        if choice.family == "CONV_2D":
            mma = [name for name in choice.passed if name.startswith("mma")]
            assert all(mma_tile_n(name) <= 2 * op.outputs[0].shape[-1] for name in mma), (label, mma)


# -- a product's check runs on fewer rows, its timing on all of them ------------------------------------


def test_check_rows_keeps_up_to_192_rows_and_else_two_tiles_and_the_nodes_own_remainder():
    from backends.gpu.tactics import check_rows

    assert [check_rows(rows) for rows in (1, 5, 192)] == [1, 5, 192]
    assert [check_rows(rows) for rows in (193, 256, 300, 2000)] == [129, 128, 172, 144]
    assert all(check_rows(rows) % 64 == rows % 64 for rows in range(193, 1000))


def test_a_fully_connected_of_many_rows_is_checked_on_fewer_rows_and_timed_on_all_of_them(monkeypatch):
    """A [300, 40] x [40, 24] product: its candidates are checked on check_rows(300) = 172
    rows (on the emulated device a tiled candidate runs one OS thread per GPU thread: a
    [2000, 512] node's check took over 30 s), then timed on the node's 300 rows."""
    from backends.gpu.cuda import matmul

    seen: list[int] = []

    class Recording(matmul.MatmulBiasActivationCuda):
        def __call__(self, a, *args, **kwargs):
            seen.append(int(a.shape[0]))
            return super().__call__(a, *args, **kwargs)

    direct = matmul.MATMUL_TACTICS[0]
    monkeypatch.setattr(matmul, "MATMUL_TACTICS", (dataclasses.replace(direct, launcher=Recording),))
    device = emulated_cuda_device()
    device.emulated = False  # (as a CUDA device: the candidates are timed on the real shapes)
    delegate = GpuDelegate(device, placement_cache=PlacementCache())
    interpreter = prepared(fc_model(rows=300), delegate)
    assert seen and seen[0] == 172 and set(seen) == {172, 300}
    reference = Interpreter(model_content=fc_model(rows=300))
    reference.allocate_tensors()
    np.testing.assert_allclose(run(interpreter), run(reference), rtol=1e-5, atol=1e-5)


def test_a_batch_matmul_of_many_products_is_checked_on_two_and_timed_on_all_of_them(monkeypatch):
    from backends.gpu.cuda import matmul
    from schema.params import BatchMatMulParams
    from tests.model_helpers import In, Out, single_op_model

    seen: list[int] = []

    class Recording(matmul.MatmulBiasActivationCuda):
        def __call__(self, a, *args, **kwargs):
            seen.append(int(a.shape[0]))
            return super().__call__(a, *args, **kwargs)

    monkeypatch.setattr(matmul, "MATMUL_TACTICS", (dataclasses.replace(matmul.MATMUL_TACTICS[0], launcher=Recording),))
    device = emulated_cuda_device()
    device.emulated = False  # (as a CUDA device: the candidates are timed on the real shapes)
    model = single_op_model(B.BATCH_MATMUL, [In([5, 7, 6]), In([5, 6, 4])], Out([5, 7, 4]), BatchMatMulParams())
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(GpuDelegate(device, placement_cache=PlacementCache()))
    interpreter.allocate_tensors()
    assert seen[0] == 2 and set(seen) == {2, 5}
    rng = np.random.default_rng(3)
    inputs = [rng.uniform(-1, 1, shape).astype(np.float32) for shape in ((5, 7, 6), (5, 6, 4))]
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    np.testing.assert_allclose(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]),
                               inputs[0] @ inputs[1], rtol=1e-5, atol=1e-5)
