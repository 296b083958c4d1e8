"""The GPU delegate on a CUDA device: what only a device can show (``gpu``-marked).

Skipped without a device, failed with ``REQUIRE_GPU=1``; with
``LITEDELEGATE_TEST_DEVICE=emulated`` they run on the emulated CUDA device (the same
code path, fewer models). Each test invokes several times with new inputs: the first
invoke runs eagerly, the second captures a CUDA graph, later ones replay it. The
reference is the CPU path (which the rest of the suite checks against LiteRT).
"""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest
from model_helpers import concatenation_model

from backends.gpu import GpuDelegate
from backends.gpu.placement import PlacementCache
from interpreter import Interpreter

pytestmark = pytest.mark.gpu
EMULATED = os.environ.get("LITEDELEGATE_TEST_DEVICE") == "emulated"  # tests/gpu/conftest.py

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"
FLOAT_MODELS = sorted(MODELS.glob("converter/*_float32.tflite")) + sorted(MODELS.glob("real/mp_*.tflite"))
if EMULATED:  # the host shim runs the kernels on the CPU: a few models say enough
    FLOAT_MODELS = [p for p in FLOAT_MODELS if p.stem in ("mini_mobilenet_float32", "concat_float32", "mp_face_detection_short_range")]
FACE = MODELS / "real" / "mp_face_detection_short_range.tflite"
MOBILENET = MODELS / "converter" / "mini_mobilenet_float32.tflite"


def interpreter_for(model: pathlib.Path | bytes, delegate: GpuDelegate | None = None) -> Interpreter:
    interpreter = Interpreter(model_content=model if isinstance(model, bytes) else model.read_bytes())
    if delegate is not None:
        interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    return interpreter


def invoke(interpreter: Interpreter, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], rng.uniform(-1, 1, tuple(detail["shape"])).astype(detail["dtype"]))
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def error_of_scale(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| over the output's largest magnitude (sums of thousands of products
    are added in another order on a GPU: elementwise-relative error means nothing near 0)."""
    scale = float(np.max(np.abs(want))) or 1.0
    return float(np.max(np.abs(got.astype(np.float64) - want))) / scale


def assert_close_over_invokes(model, delegate: GpuDelegate, limit: float, invokes: int = 4) -> None:
    gpu, cpu = interpreter_for(model, delegate), interpreter_for(model)
    for k in range(invokes):
        for i, (got, want) in enumerate(zip(invoke(gpu, k), invoke(cpu, k))):
            assert got.shape == want.shape
            assert error_of_scale(got, want) <= limit, f"invoke {k + 1}, output {i}: {error_of_scale(got, want):.3g}"
    for stats in delegate.partition_stats():
        assert stats.graph == "replaying", f"partition {stats.partition}: {stats.graph}"


@pytest.mark.parametrize("path", FLOAT_MODELS, ids=lambda p: p.stem)
def test_float32_models_match_the_cpu_path_within_1e_4_of_each_outputs_scale(cuda_device, path):
    assert_close_over_invokes(path, GpuDelegate(device=cuda_device()), 1e-4)


@pytest.mark.parametrize("path", FLOAT_MODELS, ids=lambda p: p.stem)
def test_float16_precision_stays_within_2e_2_of_each_outputs_scale(cuda_device, path):
    assert_close_over_invokes(path, GpuDelegate(device=cuda_device(), precision="float16"), 2e-2)


@pytest.mark.parametrize("path", [MOBILENET, FACE], ids=lambda p: p.stem)
def test_graph_replays_equal_eager_runs_bit_for_bit_as_inputs_change(cuda_device, path):
    with_graphs = interpreter_for(path, GpuDelegate(device=cuda_device()))
    eager = interpreter_for(path, GpuDelegate(device=cuda_device(), cuda_graphs=False))
    for k in range(12):
        for got, want in zip(invoke(with_graphs, k), invoke(eager, k)):
            np.testing.assert_array_equal(got, want, err_msg=f"invoke {k + 1}")


def test_a_second_device_runs_the_model_on_its_own_stream(cuda_device, cuda_device_count):
    if cuda_device_count < 2:
        pytest.skip("this machine has one CUDA device")
    assert_close_over_invokes(FACE, GpuDelegate(device=cuda_device(1)), 1e-4)


def test_a_concatenation_of_twelve_inputs_is_captured_and_replayed(cuda_device):
    assert_close_over_invokes(concatenation_model(12), GpuDelegate(device=cuda_device()), 0.0)


def test_after_warm_up_an_invoke_moves_only_inputs_and_outputs_allocates_nothing_and_syncs_once(cuda_device):
    delegate = GpuDelegate(device=cuda_device())
    interpreter = interpreter_for(FACE, delegate)
    for k in range(3):
        invoke(interpreter, k)
    last = delegate.last_invoke()
    io = sum(d["shape"].prod() * 4 for d in (*interpreter.get_input_details(), *interpreter.get_output_details()))
    assert (last.graph_replays, last.pool_allocations, last.synchronizations) == (1, 0, 1)
    assert (last.uploads, last.downloads, last.transfer_bytes) == (1, 2, io)


def test_each_cuda_source_is_compiled_once_per_device(cuda_device):
    device = cuda_device()
    delegate = GpuDelegate(device=device, placement_cache=PlacementCache())  # nothing decided: every candidate checked
    invoke(interpreter_for(FACE, delegate), 0)
    # 21 convs (direct, tiled, the vendor GEMM's output stage for the 1x1 ones), 16 depthwise (direct
    # and tiled), adds and relus (fused into them), max pools, pads and concatenations: each source once
    assert sorted(device._modules) == [
        "conv2d.cu", "conv2d_tiled.cu", "depthwise_conv2d.cu", "depthwise_conv2d_tiled.cu", "elementwise.cu",
        "gemm_epilogue.cu", "layout.cu", "pool2d.cu",
    ]


INT8_MODELS = sorted(MODELS.glob("converter/*_int8.tflite")) + sorted(MODELS.glob("real/*int8*.tflite"))
if EMULATED:
    INT8_MODELS = [p for p in INT8_MODELS if p.stem in ("mini_mobilenet_int8", "mww_hey_jarvis_int8_streaming")]


def full_range_invoke(interpreter: Interpreter, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for detail in interpreter.get_input_details():
        dtype = np.dtype(detail["dtype"])
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            value = rng.integers(info.min, int(info.max) + 1, tuple(detail["shape"])).astype(dtype)
        else:
            value = rng.uniform(-2, 2, tuple(detail["shape"])).astype(dtype)
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()


@pytest.mark.parametrize("path", INT8_MODELS, ids=lambda p: p.stem)
def test_int8_models_equal_the_cpu_path_bit_for_bit_in_every_tensor(cuda_device, path):
    """The CPU path is bit-exact with LiteRT's BUILTIN_REF (tests/test_int8_models.py); the
    device must be too, in every tensor (random int8 inputs saturate classifier outputs),
    over 8 invokes (the streaming model carries its state on the device from one to the next)."""
    delegate = GpuDelegate(device=cuda_device(), expose_intermediates=True)
    gpu = Interpreter(model_path=str(path))
    gpu.modify_graph_with_delegate(delegate)
    gpu.allocate_tensors()
    cpu = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True)
    cpu.allocate_tensors()
    for step in range(8):
        full_range_invoke(gpu, step)
        full_range_invoke(cpu, step)
        for ours, theirs in zip(gpu._main.tensors, cpu._main.tensors):
            if ours.is_constant or ours.data is None or theirs.data is None or ours.dtype.kind not in "iuf":
                continue
            np.testing.assert_array_equal(ours.data, theirs.data, err_msg=f"invoke {step + 1}: {ours.name}")
    for stats in delegate.partition_stats():
        assert stats.graph == "replaying" or stats.invokes < 2, stats.graph


def _bool_and_integer_cases() -> dict:
    from test_ops_numpy import In, model  # tests/gpu/test_ops_numpy.py's one-node builder

    from schema.enums import BuiltinOperator as B

    return {
        "less": lambda: model(B.LESS, [In((2, 3, 4)), In((4,))], out_dtype=np.bool_),
        "equal-int32": lambda: model(B.EQUAL, [In((2, 3), np.int32), In((2, 3), np.int32)], out_dtype=np.bool_),
        "logical_and": lambda: model(B.LOGICAL_AND, [In((2, 3), np.bool_), In((3,), np.bool_)], out_dtype=np.bool_),
        "logical_not": lambda: model(B.LOGICAL_NOT, [In((2, 3), np.bool_)], out_dtype=np.bool_),
        "select_v2": lambda: model(B.SELECT_V2, [In((2, 1), np.bool_), In((2, 3)), In((3,))]),
    }


BOOL_AND_INTEGER_CASES = _bool_and_integer_cases()


@pytest.mark.parametrize("case", BOOL_AND_INTEGER_CASES)
def test_bool_and_integer_ops_run_on_the_device_like_the_cpu(cuda_device, case):
    from interpreter.testing import assert_matches_cpu

    delegate = GpuDelegate(device=cuda_device())
    assert_matches_cpu(BOOL_AND_INTEGER_CASES[case](), lambda: delegate, invokes=4)
    assert delegate.partition_stats()[0].graph == "replaying"
