"""The GPU delegate under the emulated device's rules (issue 13): on host emulation
(``device="host"``, the ops' numpy branch) and on the emulated CUDA device (the branch a
real GPU runs: hand-written kernels through the host shim, CuPy calls, several devices).

Tests named ``..._is_caught`` put one of the defects the delegate once had back (with
monkeypatch) and check that the emulated device fails it: they show the rules can fail.
"""

from __future__ import annotations

import contextlib
import pathlib
import warnings

import numpy as np
import pytest
from gpu_helpers import raises_caused_by, run
from model_helpers import concatenation_model

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.device import Device
from backends.gpu.emulation import FreedMemoryError, StreamRaceError
from backends.gpu.ops.base import GpuOp
from delegate_sdk.delegate import DelegatePrepareError
from interpreter.testing import assert_matches_cpu
from interpreter import Interpreter
from interpreter.example_model import build_example_model
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.params import AddParams, MulParams, SubParams

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"
FLOAT_MODELS = sorted(MODELS.glob("converter/*_float32.tflite")) + [MODELS / "real" / "mp_face_detection_short_range.tflite"]
MOBILENET = MODELS / "converter" / "mini_mobilenet_float32.tflite"
POSE = MODELS / "real" / "mp_pose_detection.tflite"


def io_bytes(interpreter: Interpreter) -> int:
    details = (*interpreter.get_input_details(), *interpreter.get_output_details())
    return int(sum(np.prod(d["shape"]) * np.dtype(d["dtype"]).itemsize for d in details))


# -- defect 1 and 9: device, stream, and the device branch on a CPU -------------------------------


# (device 1's work on device 1 and the delegate's stream: tests/gpu/test_delegate_device.py)


@contextlib.contextmanager
def _device_and_pool(self):
    """Device.active as it once was for the ops: the device current, not the stream."""
    with self.cuda_device, self.xp.cuda.using_allocator(self._malloc):
        yield self


@pytest.mark.parametrize("make_device", [lambda: "host", emulated_cuda_device], ids=["host", "emulated-cuda"])
def test_ops_run_outside_the_delegates_stream_is_caught(monkeypatch, make_device):
    monkeypatch.setattr(Device, "active", _device_and_pool)
    with raises_caused_by(StreamRaceError, "legacy default stream"):
        run(build_example_model(), GpuDelegate(device=make_device()), invokes=1)


def test_ops_run_outside_the_delegates_device_is_caught(monkeypatch):
    @contextlib.contextmanager
    def stream_only(self):  # as the old code: the stream entered, the device not
        with self.stream:
            yield self

    device = emulated_cuda_device(device_id=1, device_count=2)
    monkeypatch.setattr(Device, "active", stream_only)
    # Prepare fails, so the interpreter keeps the CPU plan and raises why (as LiteRT).
    with pytest.raises(DelegatePrepareError, match="WrongDeviceError: .*stream .* of device 1> made current while device 0"):
        run(build_example_model(), GpuDelegate(device=device), invokes=1)


# -- defect 2 and 10: CUDA graphs ------------------------------------------------------------------


@pytest.mark.parametrize("make_device", [lambda: "host", emulated_cuda_device], ids=["host", "emulated-cuda"])
def test_from_the_third_invoke_each_partition_replays_its_graph(make_device):
    delegate = GpuDelegate(device=make_device())
    assert_matches_cpu(build_example_model(), lambda: delegate, invokes=5)
    (stats,) = delegate.partition_stats()
    assert stats.graph == "replaying" and stats.invokes == 5
    assert stats.total.graph_replays == 4  # invoke 2 captures, then replays; 3-5 replay
    assert stats.last_invoke.kernel_launches == 0 and stats.last_invoke.graph_nodes > 0


def test_graph_intermediates_in_a_pool_others_allocate_from_are_caught(monkeypatch):
    device = emulated_cuda_device()
    monkeypatch.setattr(device.xp.cuda, "MemoryPool", lambda: device.pool)  # capture into the shared pool
    with raises_caused_by(FreedMemoryError, "graph replay"):
        run(build_example_model(), GpuDelegate(device=device), invokes=3)


@pytest.mark.parametrize("make_device", [lambda: "host", emulated_cuda_device], ids=["host", "emulated-cuda"])
def test_a_concatenation_of_twelve_inputs_is_captured(make_device):
    delegate = GpuDelegate(device=make_device())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a failed capture warns
        assert_matches_cpu(concatenation_model(12), lambda: delegate, invokes=4)
    assert delegate.partition_stats()[0].graph == "replaying"


# -- defect 5: what crosses the bus ------------------------------------------------------------------


@pytest.mark.parametrize("path", FLOAT_MODELS, ids=lambda p: p.stem)
def test_models_taken_whole_move_only_their_inputs_and_outputs_per_invoke(path):
    delegate = GpuDelegate(device="host")
    interpreter = run(path.read_bytes(), delegate)
    if not all(p.delegated for p in interpreter.node_placements()):
        pytest.skip("not taken whole")
    stats = delegate.device.xp.machine.stats
    before = (stats.upload_bytes, stats.download_bytes)
    interpreter.invoke()
    assert delegate.last_invoke().transfer_bytes == io_bytes(interpreter)
    moved = stats.upload_bytes - before[0] + stats.download_bytes - before[1]
    assert moved == io_bytes(interpreter)  # the machine saw nothing the counters missed


def two_partitions_with_a_device_only_edge() -> bytes:
    """a = x + c and b = x - c (partition 0); m = b * c on the CPU (MUL excluded); out =
    a + m (partition 1). ``a`` goes from partition 0 to partition 1 and nowhere else."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 8, 8, 4])
    c = graph.add_constant("c", np.full((1, 8, 8, 4), 0.5, np.float32))
    a, b, m, out = (graph.add_tensor(n, [1, 8, 8, 4]) for n in ("a", "b", "m", "out"))
    graph.add_operator(BuiltinOperator.ADD, [x, c], [a], AddParams())
    graph.add_operator(BuiltinOperator.SUB, [x, c], [b], SubParams())
    graph.add_operator(BuiltinOperator.MUL, [b, c], [m], MulParams())
    graph.add_operator(BuiltinOperator.ADD, [a, m], [out], AddParams())
    graph.add_output(out)
    return builder.build()


def test_an_output_only_a_later_partition_reads_stays_on_the_device():
    delegate = GpuDelegate(device="host", excluded_ops=[BuiltinOperator.MUL])
    assert_matches_cpu(two_partitions_with_a_device_only_edge(), lambda: delegate, invokes=4)
    assert len(delegate.kernels) == 2
    tensor_bytes = 8 * 8 * 4 * 4
    last = delegate.last_invoke()
    # x up, b down (the CPU's MUL reads it), m up, out down; a never leaves the device
    assert (last.uploads, last.downloads, last.transfer_bytes) == (2, 2, 4 * tensor_bytes)


def test_the_pose_model_moves_only_what_the_cpu_side_reads():
    """Whatever of it the CPU runs (nothing, now that DEPTH_TO_SPACE runs on the GPU too),
    only what the CPU side reads travels: the folded float16 weights and the edges between
    partitions stay on the device."""
    delegate = GpuDelegate(device="host")
    interpreter = run(POSE.read_bytes(), delegate, invokes=2)
    main = interpreter._main
    cpu_reads = {t for n in main.execution_plan if main.nodes[n].delegate is None for t in main.nodes[n].inputs}
    cpu_writes = {t for n in main.execution_plan if main.nodes[n].delegate is None for t in main.nodes[n].outputs}
    for kernel in delegate.kernels:
        assert set(kernel.downloads) <= cpu_reads | set(main.outputs)
        assert set(kernel.runtime_inputs) <= (cpu_writes - {t.index for t in main.tensors if t.is_constant}) | set(main.inputs)
    expected = sum(main.tensors[t].nbytes for k in delegate.kernels for t in (*k.downloads, *k.runtime_inputs))
    assert delegate.last_invoke().transfer_bytes == expected < 3 * io_bytes(interpreter)


# -- defect 8: nothing uploaded that nobody reads ---------------------------------------------------


@pytest.mark.parametrize("path", FLOAT_MODELS, ids=lambda p: p.stem)
def test_every_upload_is_read_on_host_emulation(path):
    delegate = GpuDelegate(device="host")
    run(path.read_bytes(), delegate, invokes=1)
    assert delegate.device.xp.machine.unread_uploads() == []


def test_every_upload_is_read_on_the_device_branch():
    delegate = GpuDelegate(device=emulated_cuda_device())
    run(build_example_model(), delegate, invokes=1)
    run(MOBILENET.read_bytes(), delegate, invokes=1)
    assert delegate.device.xp.machine.unread_uploads() == []


def test_uploading_constants_an_op_laid_out_itself_is_caught(monkeypatch):
    def every_input(self):  # what the delegate once uploaded: every constant input
        return [p for p, t in enumerate(self.inputs) if t is not None and p not in self.index_inputs]

    monkeypatch.setattr(GpuOp, "device_inputs", every_input)
    delegate = GpuDelegate(device=emulated_cuda_device())
    run(build_example_model(), delegate, invokes=1)
    unread = delegate.device.xp.machine.unread_uploads()
    assert any("CONV_2D" in label for label in unread) and any("DEPTHWISE_CONV_2D" in label for label in unread)


# -- defect 11 and the counters -----------------------------------------------------------------------


def test_each_cuda_source_is_compiled_once_per_device():
    device = emulated_cuda_device()
    run(build_example_model(), GpuDelegate(device=device), invokes=2)  # 2 depthwise, 2 conv, 1 fully connected...
    assert sorted(device._modules) == ["conv2d.cu", "depthwise_conv2d.cu", "elementwise.cu", "matmul.cu", "pool2d.cu"]
    assert device.xp.machine.stats.modules_loaded == 6  # and the probe's


@pytest.mark.parametrize("make_device", [lambda: "host", emulated_cuda_device], ids=["host", "emulated-cuda"])
def test_after_warm_up_an_invoke_allocates_nothing_syncs_once_and_moves_inputs_and_outputs(make_device):
    delegate = GpuDelegate(device=make_device())
    interpreter = run(build_example_model(), delegate, invokes=3)
    machine = delegate.device.xp.machine.stats
    seen = (machine.synchronizations, machine.allocations)
    interpreter.invoke()
    last = delegate.last_invoke()
    assert (last.pool_allocations, last.synchronizations, last.graph_replays, last.kernel_launches) == (0, 1, 1, 0)
    assert (last.uploads, last.downloads, last.transfer_bytes) == (1, 1, io_bytes(interpreter))
    # What the machine saw: no hidden host waits (a pageable download is one), no allocation.
    assert (machine.synchronizations - seen[0], machine.allocations - seen[1]) == (1, 0)


def test_eager_invokes_are_counted_kernel_by_kernel_on_the_emulated_device():
    delegate = GpuDelegate(device="host", cuda_graphs=False)
    run(build_example_model(), delegate, invokes=2)
    last = delegate.last_invoke()
    assert last.graph_replays == 0 and last.kernel_launches > 8 and last.pool_allocations > 0


def test_cuBLAS_in_a_capture_is_caught_as_CuPy_refuses_it(monkeypatch):
    """What the first run on a real GPU showed: CuPy's matmul (cuBLAS) cannot be captured,
    so the device branch multiplies with cuda/matmul.cu; put xp.matmul back and the
    emulated device refuses the capture the same way."""
    from backends.gpu.ops.fully_connected import FullyConnected

    monkeypatch.setattr(FullyConnected, "matmul", lambda self, x, bias: self.xp.matmul(x, self.weights))
    delegate = GpuDelegate(device=emulated_cuda_device())
    with pytest.warns(RuntimeWarning, match="capture failed.*cuBLAS"):
        run(build_example_model(), delegate, invokes=3)
    assert delegate.partition_stats()[0].graph.startswith("capture failed")


# -- defect 6: TFLite's activation range, +-FLT_MAX with no activation ------------------------------

FLT_MAX = float(np.finfo(np.float32).max)


def overflowing(op: int, activation) -> bytes:
    """One node whose float32 sums overflow: inputs and weights of 1e30, half of the
    output channels with negative weights (so +inf and -inf before the clamp)."""
    from schema.params import Conv2DParams, DepthwiseConv2DParams, FullyConnectedParams

    builder = ModelBuilder()
    graph = builder.subgraph()
    if op == BuiltinOperator.FULLY_CONNECTED:
        x = graph.add_input("x", [2, 8])
        weights = np.full((4, 8), 1e30, np.float32) * np.array([1, -1, 1, -1], np.float32)[:, None]
        params = FullyConnectedParams(fused_activation_function=activation)
        out_shape = [2, 4]
    elif op == BuiltinOperator.CONV_2D:
        x = graph.add_input("x", [1, 4, 4, 2])
        weights = np.full((4, 3, 3, 2), 1e30, np.float32) * np.array([1, -1, 1, -1], np.float32)[:, None, None, None]
        params = Conv2DParams(padding=0, stride_h=1, stride_w=1, fused_activation_function=activation)
        out_shape = [1, 4, 4, 4]
    else:
        x = graph.add_input("x", [1, 4, 4, 4])
        weights = np.full((1, 3, 3, 4), 1e30, np.float32) * np.array([1, -1, 1, -1], np.float32)
        params = DepthwiseConv2DParams(padding=0, stride_h=1, stride_w=1, depth_multiplier=1, fused_activation_function=activation)
        out_shape = [1, 4, 4, 4]
    w = graph.add_constant("w", weights)
    bias = graph.add_constant("b", np.zeros(weights.shape[0] if op != BuiltinOperator.DEPTHWISE_CONV_2D else 4, np.float32))
    out = graph.add_tensor("out", out_shape)
    graph.add_operator(op, [x, w, bias], [out], params)
    graph.add_output(out)
    return builder.build()


@pytest.mark.filterwarnings("ignore:overflow encountered")  # the CPU kernels' overflow guard (numpy's dot)
@pytest.mark.parametrize("activation", ["NONE", "RELU", "TANH"])
@pytest.mark.parametrize("op", [BuiltinOperator.CONV_2D, BuiltinOperator.DEPTHWISE_CONV_2D, BuiltinOperator.FULLY_CONNECTED],
                         ids=lambda op: BuiltinOperator(op).name)
@pytest.mark.parametrize("make_device", [lambda: "host", emulated_cuda_device], ids=["host", "emulated-cuda"])
def test_an_overflowing_output_saturates_at_flt_max_as_on_the_cpu(make_device, op, activation):
    from schema.enums import ActivationFunctionType

    if op == BuiltinOperator.FULLY_CONNECTED and activation == "TANH":
        pytest.skip("TFLite's FULLY_CONNECTED refuses a fused TANH")
    model = overflowing(op, ActivationFunctionType[activation])
    interpreter = Interpreter(model_content=model)
    x = np.full(interpreter.get_input_details()[0]["shape"], 1e30, np.float32)
    delegated = assert_matches_cpu(model, lambda: GpuDelegate(device=make_device()), inputs=[x], invokes=2, rtol=0, atol=0)
    out = delegated.get_tensor(delegated.get_output_details()[0]["index"])
    assert np.isfinite(out).all() and out.max() == FLT_MAX
    assert out.min() == (0.0 if activation == "RELU" else -FLT_MAX)
