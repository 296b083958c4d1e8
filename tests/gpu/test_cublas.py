"""The vendor GEMM among the candidates (``backends/gpu/cuda/cublas.py``, issue 31): cuBLAS's
``cublasGemmStridedBatchedEx`` called without CuPy (which refuses cuBLAS during stream capture),
then ``gemm_epilogue.cu`` for the bias, clamp and epilogue.

Specifications, on the emulated CUDA device (``emulation.EmulatedCublas``: the library's
column-major arithmetic, its handle's stream, its workspace, its capture rule) and host emulation
(the twins):
- every transposition, batch and shared operand ``MatmulShape`` reads gives ``a @ b`` (float32,
  and float16 operands with float32 sums), with as many launches as its twin, in a CUDA graph too;
- ``gemm_epilogue.cu`` computes what its twin computes (bias, clamp, residual ADD, PRELU, RELU);
- a GEMM left on the handle's default stream races with the delegate's stream, and a GEMM captured
  without a workspace of the handle's own is refused: each fails a CPU test;
- the rows apply where they should: 1x1 convolutions with stride 1 only, TF32 only with
  ``allow_tf32``, none with ``vendor_gemm=False``; chosen (by injected times) they equal the CPU path.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device, open_device
from backends.gpu.cuda import cublas
from backends.gpu.cuda.conv2d import CONV2D_TACTICS, Conv2DGeometry, Conv2DProblem, Epilogue
from backends.gpu.cuda.cublas import CublasMatmulCuda, gemm_epilogue_twin, round_to_tf32
from backends.gpu.cuda.matmul import MATMUL_TACTICS, NO_CLAMP, MatmulProblem, MatmulShape
from backends.gpu.placement import PlacementCache
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.params import AddParams, Conv2DParams

RNG = np.random.default_rng(31)

# (a shape, b shape, adjoint_a, adjoint_b)
PRODUCTS = {
    "plain": ((7, 5), (5, 9), False, False),
    "one-row": ((1, 40), (40, 24), False, False),
    "adjoint-a": ((5, 7), (5, 9), True, False),
    "adjoint-b": ((7, 5), (9, 5), False, True),
    "both-adjoint-batched": ((3, 6, 4), (3, 8, 6), True, True),
    "shared-a": ((1, 4, 6), (5, 6, 3), False, False),
    "adjoint-a-of-one-row": ((1, 6, 1), (2, 6, 5), True, False),
}


def on_both_devices(make, inputs, call):
    """``call(launcher, *arrays)`` on the emulated CUDA device (the emulated cuBLAS and the shim's
    epilogue kernel) and on host emulation (the twins): results and launches of each."""
    results = []
    for device in (emulated_cuda_device(), open_device("host")):
        with device.active():
            launcher = make(**device.launcher_arguments(CublasMatmulCuda.source, vendor=True))
            arrays = [None if a is None else device.upload(a) for a in inputs]
            before = device.counters.kernel_launches
            out = device.download(call(launcher, *arrays))
            results.append((out, device.counters.kernel_launches - before))
    return results


@pytest.mark.parametrize("storage, compute", [(np.float32, "float32"), (np.float16, "float16"), (np.float32, "tf32")])
@pytest.mark.parametrize("case", list(PRODUCTS))
def test_the_vendor_gemm_computes_every_product_matmul_shape_reads_as_its_twin(case, storage, compute):
    a_shape, b_shape, adjoint_a, adjoint_b = PRODUCTS[case]
    a = RNG.standard_normal(a_shape).astype(storage)
    b = RNG.standard_normal(b_shape).astype(storage)
    n = b_shape[-2] if adjoint_b else b_shape[-1]
    bias = RNG.standard_normal(n).astype(storage)
    (kernel, kernel_launches), (twin, twin_launches) = on_both_devices(
        lambda **where: CublasMatmulCuda(Act.RELU6, storage, compute, **where), [a, b, bias],
        lambda launcher, a, b, bias: launcher(a, b, bias, adjoint_a=adjoint_a, adjoint_b=adjoint_b),
    )
    left = np.swapaxes(a, -1, -2) if adjoint_a else a
    right = np.swapaxes(b, -1, -2) if adjoint_b else b
    if compute == "tf32":
        left, right = round_to_tf32(left), round_to_tf32(right)
    expected = np.clip(np.matmul(left.astype(np.float32), right.astype(np.float32)) + bias.astype(np.float32), 0, 6)
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if storage == np.float32 else {"rtol": 1e-3, "atol": 1e-3}
    np.testing.assert_allclose(kernel.astype(np.float32), expected.reshape(kernel.shape), **tolerance)
    np.testing.assert_allclose(twin.astype(np.float32), kernel.astype(np.float32), **tolerance)
    assert kernel_launches == twin_launches == 2  # the GEMM, then the output stage


def test_the_output_stage_kernel_equals_its_twin_with_an_epilogue():
    from backends.gpu.cuda.cublas import gemm_epilogue_args

    acc = RNG.standard_normal((30, 12)).astype(np.float32)
    bias = RNG.standard_normal(12).astype(np.float32)
    residual = RNG.standard_normal((30, 9)).astype(np.float32)
    alpha = RNG.uniform(0, 0.5, 12).astype(np.float32)
    epilogue = Epilogue(residual_channels=9, add_bounds=(-1.5, 3.0), prelu=True, post_bounds=(-0.5, np.inf))
    bounds = (-2.0, 2.5)
    device = emulated_cuda_device()
    with device.active():
        module = device.module("gemm_epilogue.cu")
        arrays = [device.upload(v) for v in (acc, bias, residual, alpha)]
        out = device.xp.empty((30, 12), np.float32)
        args = gemm_epilogue_args(arrays[0], arrays[1], out, 12, bounds, epilogue, arrays[2], arrays[3], np.uint64(0))
        module.get_function("gemm_epilogue_f32")((1, 1, 1), (512, 1, 1), args)
        kernel = device.download(out)
    twin = np.empty((30, 12), np.float32)
    gemm_epilogue_twin(acc, bias, residual, alpha, twin, bounds=bounds, epilogue=epilogue)
    np.testing.assert_array_equal(kernel, twin)


def test_tf32_keeps_ten_mantissa_bits_rounded_to_nearest():
    values = np.array([1 + 2**-10, 1 + 2**-11 + 2**-12, 1 + 2**-12, -3.0, np.inf, np.nan], np.float32)
    rounded = round_to_tf32(values)
    np.testing.assert_array_equal(rounded[:5], [1 + 2**-10, 1 + 2**-10, 1.0, -3.0, np.inf])
    assert np.isnan(rounded[5])


# -- the library's rules on the emulated device ------------------------------------------------------


def fc_like_model(units: int = 24) -> bytes:
    from test_tactics import fc_model

    return fc_model(units=units)


def prefer(name: str):
    return lambda trial: 1.0 if trial.tactic == name else 9.0


def test_a_gemm_left_on_the_handles_default_stream_races_with_the_delegates_stream(monkeypatch):
    def without_set_stream(self, *args):
        library = self.library
        original = library.set_stream
        library.set_stream = lambda handle, stream: None  # (the handle stays on the legacy default stream)
        try:
            return original_gemm(self, *args)
        finally:
            library.set_stream = original

    original_gemm = cublas.CublasHandle.gemm
    monkeypatch.setattr(cublas.CublasHandle, "gemm", without_set_stream)
    delegate = GpuDelegate(emulated_cuda_device(), tactic_timing=prefer("cuBLAS float32"), placement_cache=PlacementCache())
    interpreter = Interpreter(model_content=fc_like_model())
    with pytest.raises(Exception, match="StreamRaceError: .*cublasGemmStridedBatchedEx|StreamRaceError: .*legacy default stream"):
        interpreter.modify_graph_with_delegate(delegate)


def test_a_gemm_captured_without_a_workspace_of_its_own_is_refused(monkeypatch):
    monkeypatch.setattr(cublas.CublasHandle, "gemm", _gemm_without_workspace)
    delegate = GpuDelegate(emulated_cuda_device(), tactic_timing=prefer("cuBLAS float32"), placement_cache=PlacementCache())
    interpreter = Interpreter(model_content=fc_like_model())
    with pytest.raises(Exception, match="captured on a handle with no workspace of its own"):
        interpreter.modify_graph_with_delegate(delegate)  # the check replays the candidate in a CUDA graph


def _gemm_without_workspace(self, transa, transb, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c, batch, compute):
    operand_type, result_type, compute_type = cublas.COMPUTE[compute]
    self.library.set_stream(self.handle, self.device.xp.cuda.get_current_stream().ptr)
    self.library.gemm_strided_batched(
        self.handle, transa, transb, m, n, k, a.data.ptr, operand_type, lda, stride_a, b.data.ptr, operand_type, ldb,
        stride_b, c.data.ptr, result_type, ldc, stride_c, batch, compute_type,
    )


def test_set_stream_resets_the_workspace_as_cublas_does():
    device = emulated_cuda_device()
    handle = device.cublas()
    library, state = handle.library, handle.library.handles[handle.handle]
    with device.active():
        library.set_workspace(handle.handle, handle.workspace.data.ptr, handle.workspace.nbytes)
        assert state.workspace is not None
        library.set_stream(handle.handle, device.stream.ptr)
        assert state.workspace is None


def test_an_unsupported_call_returns_cublas_s_status():
    device = emulated_cuda_device()
    handle = device.cublas()
    with device.active():
        a = device.xp.empty((4, 4), np.float32)
        with pytest.raises(cublas.CublasError, match="CUBLAS_STATUS_INVALID_VALUE"):
            handle.library.gemm_strided_batched(handle.handle, 0, 0, 4, 4, 4, a.data.ptr, 0, 2, 0, a.data.ptr, 0, 4, 0,
                                                a.data.ptr, 0, 4, 0, 1, cublas.CUBLAS_COMPUTE_32F)


# -- the rows ------------------------------------------------------------------------------------------


def names(table, problem) -> list[str]:
    return [t.name for t in table if t.reason(problem) is None]


def matmul_problem(storage="float32", vendor=True, tf32=False) -> MatmulProblem:
    return MatmulProblem(MatmulShape.of((8, 16), (16, 32)), True, NO_CLAMP, storage, 90, vendor, tf32)


def test_the_vendor_rows_follow_the_storage_and_the_delegate_s_options():
    assert names(MATMUL_TACTICS, matmul_problem())[-1:] == ["cuBLAS float32"]
    assert names(MATMUL_TACTICS, matmul_problem(tf32=True))[-2:] == ["cuBLAS float32", "cuBLAS TF32"]
    assert names(MATMUL_TACTICS, matmul_problem("float16"))[-1:] == ["cuBLAS float16"]
    assert not [n for n in names(MATMUL_TACTICS, matmul_problem(vendor=False)) if n.startswith("cuBLAS")]
    reasons = {t.name: t.reason(matmul_problem()) for t in MATMUL_TACTICS}
    assert "allow_tf32=True" in reasons["cuBLAS TF32"]


def conv_problem(filter_hw, stride=1, groups=1, pre_padding=(0, 0, 0, 0)) -> Conv2DProblem:
    geometry = Conv2DGeometry.of((1, 8, 8, 8), (groups, *filter_hw, 8 // groups, 4), stride, 1, "SAME", pre_padding)
    return Conv2DProblem(geometry, "float32", True, None, 90, pre_padding, True, False)


def test_the_vendor_gemm_runs_only_convolutions_that_are_one_product():
    assert "cuBLAS float32" in names(CONV2D_TACTICS, conv_problem((1, 1)))
    for problem in (conv_problem((3, 3)), conv_problem((1, 1), stride=2), conv_problem((1, 1), groups=2),
                    conv_problem((1, 1), pre_padding=(1, 0, 0, 0))):
        assert "cuBLAS float32" not in names(CONV2D_TACTICS, problem)


def pointwise_model() -> bytes:
    """A 1x1 CONV_2D, then an ADD of a residual and a RELU (fusion.py folds both into it)."""
    rng = np.random.default_rng(5)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 6, 7, 16])
    w = graph.add_constant("w", rng.uniform(-1, 1, (16, 1, 1, 16)).astype(np.float32))
    b = graph.add_constant("b", rng.uniform(-1, 1, 16).astype(np.float32))
    conv = graph.add_tensor("conv", [1, 6, 7, 16])
    graph.add_operator(B.CONV_2D, [x, w, b], [conv], Conv2DParams(stride_h=1, stride_w=1))
    out = graph.add_tensor("out", [1, 6, 7, 16])
    graph.add_operator(B.ADD, [conv, x], [out], AddParams(fused_activation_function=Act.RELU))
    graph.add_output(out)
    return builder.build()


@pytest.mark.parametrize("precision", ["float32", "float16"])
def test_a_fused_pointwise_convolution_on_the_vendor_gemm_equals_the_cpu_path_in_a_graph(precision):
    from test_tactics import run

    name = "cuBLAS float16" if precision == "float16" else "cuBLAS float32"
    delegate = GpuDelegate(emulated_cuda_device(), precision, tactic_timing=prefer(name), placement_cache=PlacementCache())
    interpreter = Interpreter(model_content=pointwise_model())
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    (line,) = delegate.tactic_report()
    assert line.startswith(f"fused: CONV_2D v1 (node 0) + ADD v1 (node 1): {name} 1.0 µs")
    for _ in range(3):  # the second invoke captures the graph, the third replays it
        ours = run(interpreter)
    (stats,) = delegate.partition_stats()
    assert stats.graph == "replaying"
    reference = Interpreter(model_content=pointwise_model())
    reference.allocate_tensors()
    tolerance = 1e-5 if precision == "float32" else 1e-2
    np.testing.assert_allclose(ours, run(reference), rtol=tolerance, atol=tolerance)


# -- int8: cuBLAS's int8 x int8 -> int32 GEMM, then the requantization ------------------------------------

FC_INT8 = __import__("pathlib").Path(__file__).parents[1] / "data" / "models" / "converter" / "fully_connected_int8.tflite"


def int8_outputs(interpreter: Interpreter, invokes: int = 3) -> list[np.ndarray]:
    outputs = []
    for k in range(invokes):
        for detail in interpreter.get_input_details():
            values = np.random.default_rng(k).integers(-128, 128, detail["shape"]).astype(detail["dtype"])
            interpreter.set_tensor(detail["index"], values)
        interpreter.invoke()
        outputs.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).copy())
    return outputs


@pytest.mark.parametrize("make_device", [lambda: "host", emulated_cuda_device], ids=["host", "emulated-cuda"])
def test_the_int8_vendor_gemm_equals_the_cpu_path_bit_for_bit_in_a_graph(make_device):
    delegate = GpuDelegate(make_device(), tactic_timing=prefer("cuBLAS int8"), placement_cache=PlacementCache())
    interpreter = Interpreter(model_path=str(FC_INT8))
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    assert any(line.startswith("FULLY_CONNECTED v4 (node 0): cuBLAS int8 1.0 µs") for line in delegate.tactic_report())
    ours = int8_outputs(interpreter)
    assert delegate.partition_stats()[0].graph == "replaying"
    reference = Interpreter(model_path=str(FC_INT8))
    reference.allocate_tensors()
    for got, want in zip(ours, int8_outputs(reference)):
        np.testing.assert_array_equal(got, want)


def test_the_int8_vendor_gemm_applies_to_signed_zero_centred_exact_products_with_aligned_sides():
    from backends.gpu.cuda.cublas import FullyConnectedInt8Problem, fully_connected_int8_tactics

    def reason(**changes):
        fields = {"rows": 2, "depth": 64, "units": 32, "dtype": "int8", "filter_offset": 0, "exact": True, "vendor_gemm": True}
        problem = FullyConnectedInt8Problem(**{**fields, **changes})
        return fully_connected_int8_tactics()[1].reason(problem)

    assert reason() is None
    assert "signed int8" in reason(dtype="uint8")
    assert "zero point" in reason(filter_offset=-3)
    assert "multiples of 4" in reason(units=30)
    assert "could wrap" in reason(exact=False)
    assert "vendor_gemm=False" in reason(vendor_gemm=False)
