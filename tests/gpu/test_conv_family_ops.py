"""Products and transposed convolutions on the GPU delegate (issue 15, helper F):
BATCH_MATMUL v1, TRANSPOSE_CONV v1/v3/v4 and MediaPipe's custom ``Convolution2DTransposeBias``
v1, through ``GpuDelegate`` on host emulation (the ops' numpy branch) and on the emulated
CUDA device (the branch a GPU runs: ``cuda/matmul.cu`` through the host shim).

Each parity case runs four invokes with new inputs against the CPU path, checks that every
node was delegated and that the partition replays its CUDA graph, then compares one more
invoke with LiteRT's reference kernels (for the custom op, which LiteRT lacks, with the
equivalent TRANSPOSE_CONV v3 model). Each version the GPU does not claim is refused with a
reason that names it.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu.kernels.mediapipe_custom import (
    CONVOLUTION_2D_TRANSPOSE_BIAS,
    TFLITE_PADDING_SAME,
    TFLITE_PADDING_UNKNOWN,
    TFLITE_PADDING_VALID,
    TransposeConvBiasOptions,
    TransposeConvGeometry,
)
from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.ops import gpu_custom_support_table, gpu_support_table
from delegate_sdk.testing import plan_delegation
from interpreter.testing import assert_matches_cpu
from oracle import assert_outputs_equal, run_litert
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding, TensorType
from schema.model import Model
from schema.params import AddParams, BatchMatMulParams, TransposeConvParams

B = BuiltinOperator
Act = ActivationFunctionType
T = TensorType
NAME = CONVOLUTION_2D_TRANSPOSE_BIAS

DEVICES = [lambda: "host", emulated_cuda_device]
DEVICE_IDS = ["host", "emulated-cuda"]


def finish(builder: ModelBuilder, graph, out: int) -> bytes:
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


def stamped(model: bytes) -> tuple[str, int]:
    op = Model.from_bytes(model).subgraphs[0].operators[0]
    return op.op_name, op.version


# -- models -----------------------------------------------------------------------------------------


def bmm_model(x_shape, y_shape, *, adj_x=False, adj_y=False, const_x=False, const_y=False, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    operands = []
    for name, shape, constant in (("x", x_shape, const_x), ("y", y_shape, const_y)):
        if constant:
            operands.append(graph.add_constant(name, rng.uniform(-1, 1, shape).astype(np.float32)))
        else:
            operands.append(graph.add_input(name, list(shape)))
    out = graph.add_tensor("out", [1])
    graph.add_operator(B.BATCH_MATMUL, operands, [out], BatchMatMulParams(adj_x=adj_x, adj_y=adj_y))
    return finish(builder, graph, out)


def tconv_model(input_shape, kernel, out_channels, output_hw, *, stride=(2, 2), padding=Padding.SAME,
                activation=Act.NONE, bias="none", weights_are_input=False, shape_is_input=False, seed=0) -> bytes:
    """TRANSPOSE_CONV (output_shape, weights, input[, bias]); bias "none", "constant" or "input"."""
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(input_shape))
    output_shape = np.array([input_shape[0], *output_hw, out_channels], np.int32)
    shape = graph.add_input("shape", [4], np.int32) if shape_is_input else graph.add_constant("shape", output_shape)
    weights_shape = [out_channels, *kernel, input_shape[3]]
    if weights_are_input:
        w = graph.add_input("w", weights_shape)
    else:
        w = graph.add_constant("w", rng.uniform(-1, 1, weights_shape).astype(np.float32))
    inputs = [shape, w, x]
    if bias == "constant":
        inputs.append(graph.add_constant("b", rng.uniform(-1, 1, out_channels).astype(np.float32)))
    elif bias == "input":
        inputs.append(graph.add_input("b", [out_channels]))
    out = graph.add_tensor("out", [int(d) for d in output_shape])
    params = TransposeConvParams(padding=padding, stride_h=stride[0], stride_w=stride[1], fused_activation_function=activation)
    graph.add_operator(B.TRANSPOSE_CONV, inputs, [out], params)
    return finish(builder, graph, out)


def mediapipe_weights(input_shape, kernel, out_channels, seed=0):
    rng = np.random.default_rng(seed)
    weights = rng.uniform(-1, 1, (out_channels, *kernel, input_shape[3])).astype(np.float32)
    return weights, rng.uniform(-1, 1, out_channels).astype(np.float32)


def mediapipe_model(input_shape, kernel, out_channels, options: TransposeConvBiasOptions, *, then_add=False,
                    weights_are_input=False, raw_options: bytes | None = None, version: int = 1) -> bytes:
    """One Convolution2DTransposeBias node (then an ADD of its output to itself, as the
    upsampling layers of a segmentation model feed further ops)."""
    weights, bias = mediapipe_weights(input_shape, kernel, out_channels)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(input_shape))
    w = graph.add_input("w", list(weights.shape)) if weights_are_input else graph.add_constant("w", weights)
    b = graph.add_constant("b", bias)
    out = graph.add_tensor("up", [1])
    graph.add_operator(NAME, [x, w, b], [out], version=version,
                       custom_options=options.to_bytes() if raw_options is None else raw_options)
    if then_add:
        up, out = out, graph.add_tensor("out", [1])
        graph.add_operator(B.ADD, [up, up], [out], AddParams())
    return finish(builder, graph, out)


def mediapipe_equivalent(input_shape, kernel, out_channels, options: TransposeConvBiasOptions) -> bytes:
    """The builtin model LiteRT runs: TRANSPOSE_CONV v3, same weights, bias, output shape, padding."""
    weights, bias = mediapipe_weights(input_shape, kernel, out_channels)
    geometry = TransposeConvGeometry.of(input_shape, weights.shape, options)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(input_shape))
    shape = graph.add_constant("shape", np.array(geometry.output_shape, np.int32))
    w = graph.add_constant("w", weights)
    b = graph.add_constant("b", bias)
    out = graph.add_tensor("out", list(geometry.output_shape))
    padding = Padding.SAME if options.padding == TFLITE_PADDING_SAME else Padding.VALID
    graph.add_operator(B.TRANSPOSE_CONV, [shape, w, x, b], [out],
                       TransposeConvParams(padding=padding, stride_h=options.stride_h, stride_w=options.stride_w))
    return finish(builder, graph, out)


# -- the parity check ------------------------------------------------------------------------------


def check_on_gpu(model: bytes, make_device, *, oracle_model: bytes | None = None, precision: str = "float32",
                 extra_inputs=None) -> GpuDelegate:
    """Four invokes against the CPU path (every node delegated, the graph replayed), then one
    against LiteRT's reference kernels (float32 only)."""
    tolerance = {"rtol": 1e-2, "atol": 1e-2} if precision == "float16" else {"rtol": 1e-5, "atol": 1e-5}
    delegate = GpuDelegate(device=make_device(), precision=precision)
    interpreter = assert_matches_cpu(model, lambda: delegate, invokes=4, **tolerance)
    placements = interpreter.node_placements()
    assert all(p.delegated for p in placements), [(p.op, p.rejections) for p in placements]
    (stats,) = delegate.partition_stats()
    assert stats.graph == "replaying" and stats.invokes == 4, stats.graph
    if precision == "float32":
        rng = np.random.default_rng(99)
        inputs = [rng.uniform(-2, 2, tuple(d["shape"])).astype(d["dtype"]) for d in interpreter.get_input_details()]
        for detail, value in zip(interpreter.get_input_details(), inputs):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        ours = [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
        assert_outputs_equal(ours, run_litert(oracle_model or model, inputs), rtol=1e-5, atol=1e-5)
    return delegate


# -- BATCH_MATMUL v1 --------------------------------------------------------------------------------

BMM_CASES = {
    "rank2": dict(x_shape=(3, 4), y_shape=(4, 5)),
    "rank3": dict(x_shape=(2, 3, 4), y_shape=(2, 4, 5)),
    "rank4": dict(x_shape=(2, 3, 4, 5), y_shape=(2, 3, 5, 6)),
    "adj_x": dict(x_shape=(2, 4, 3), y_shape=(2, 4, 5), adj_x=True),
    "adj_y": dict(x_shape=(2, 3, 4), y_shape=(2, 5, 4), adj_y=True),
    "adj_both-partial-broadcast": dict(x_shape=(2, 1, 5, 4), y_shape=(3, 6, 5), adj_x=True, adj_y=True),
    "shared_lhs": dict(x_shape=(3, 4), y_shape=(2, 3, 4, 5)),
    "shared_rhs-broadcast-ones": dict(x_shape=(2, 3, 3, 4), y_shape=(1, 1, 4, 5)),
    "constant_rhs": dict(x_shape=(2, 3, 6), y_shape=(6, 5), const_y=True),
    "constant_rhs_adj": dict(x_shape=(2, 3, 4), y_shape=(2, 5, 4), adj_y=True, const_y=True),
    "constant_lhs-partial-broadcast": dict(x_shape=(2, 1, 3, 4), y_shape=(3, 4, 5), const_x=True),
}


@pytest.mark.parametrize("make_device", DEVICES, ids=DEVICE_IDS)
@pytest.mark.parametrize("case", list(BMM_CASES))
def test_batch_matmul_v1_matches_cpu_and_litert(case, make_device):
    model = bmm_model(**BMM_CASES[case])
    assert stamped(model) == ("BATCH_MATMUL", 1)
    check_on_gpu(model, make_device)


# -- TRANSPOSE_CONV v1, v3, v4 ------------------------------------------------------------------------

TCONV_CASES = {
    "v1-same-s2": (1, dict(input_shape=[1, 4, 5, 3], kernel=(3, 3), out_channels=2, output_hw=(8, 10))),
    "v1-valid-s32-batch2": (1, dict(input_shape=[2, 3, 4, 2], kernel=(2, 4), out_channels=3, output_hw=(8, 10),
                                    stride=(3, 2), padding=Padding.VALID)),
    "v1-1x1-s1": (1, dict(input_shape=[1, 4, 4, 3], kernel=(1, 1), out_channels=4, output_hw=(4, 4), stride=(1, 1))),
    "v1-runtime-weights": (1, dict(input_shape=[1, 3, 4, 2], kernel=(3, 3), out_channels=2, output_hw=(6, 8),
                                   weights_are_input=True)),
    "v3-bias-odd-output": (3, dict(input_shape=[1, 4, 4, 2], kernel=(3, 3), out_channels=3, output_hw=(7, 8),
                                   bias="constant")),
    "v3-valid-larger-output": (3, dict(input_shape=[1, 5, 5, 2], kernel=(3, 3), out_channels=2, output_hw=(12, 11),
                                       padding=Padding.VALID, bias="constant")),
    "v3-runtime-bias": (3, dict(input_shape=[1, 4, 4, 2], kernel=(4, 4), out_channels=2, output_hw=(8, 8), bias="input")),
    "v4-relu": (4, dict(input_shape=[1, 4, 5, 2], kernel=(3, 3), out_channels=3, output_hw=(8, 10),
                        activation=Act.RELU, bias="constant")),
    "v4-relu6-no-bias": (4, dict(input_shape=[1, 4, 5, 2], kernel=(3, 3), out_channels=3, output_hw=(8, 10),
                                 activation=Act.RELU6)),
    "v4-relu_n1_to_1": (4, dict(input_shape=[2, 3, 3, 2], kernel=(2, 2), out_channels=2, output_hw=(6, 6),
                                activation=Act.RELU_N1_TO_1, bias="constant")),
    # LiteRT's float kernel does not apply a fused TANH (CalculateActivationRange): neither do we.
    "v4-tanh-not-applied": (4, dict(input_shape=[1, 4, 5, 2], kernel=(3, 3), out_channels=3, output_hw=(8, 10),
                                    activation=Act.TANH, bias="constant")),
}


@pytest.mark.parametrize("make_device", DEVICES, ids=DEVICE_IDS)
@pytest.mark.parametrize("case", list(TCONV_CASES))
def test_transpose_conv_matches_cpu_and_litert(case, make_device):
    version, kwargs = TCONV_CASES[case]
    model = tconv_model(**kwargs)
    assert stamped(model) == ("TRANSPOSE_CONV", version)
    check_on_gpu(model, make_device)


# -- MediaPipe's Convolution2DTransposeBias v1 -----------------------------------------------------------

MEDIAPIPE_CASES = {
    "same-s2-k3": ([1, 4, 5, 3], (3, 3), 2, TransposeConvBiasOptions(TFLITE_PADDING_SAME, 2, 2)),
    "same-s2-k4-batch2": ([2, 4, 4, 2], (4, 4), 3, TransposeConvBiasOptions(TFLITE_PADDING_SAME, 2, 2)),
    "valid-s12": ([1, 3, 4, 2], (2, 3), 3, TransposeConvBiasOptions(TFLITE_PADDING_VALID, 2, 1)),
    "unknown-padding": ([1, 4, 4, 2], (3, 3), 2, TransposeConvBiasOptions(TFLITE_PADDING_UNKNOWN, 2, 2)),
}


@pytest.mark.parametrize("make_device", DEVICES, ids=DEVICE_IDS)
@pytest.mark.parametrize("case", list(MEDIAPIPE_CASES))
def test_convolution_2d_transpose_bias_matches_cpu_and_litert(case, make_device):
    input_shape, kernel, out_channels, options = MEDIAPIPE_CASES[case]
    model = mediapipe_model(input_shape, kernel, out_channels, options)
    assert stamped(model) == (NAME, 1)
    check_on_gpu(model, make_device, oracle_model=mediapipe_equivalent(input_shape, kernel, out_channels, options))


@pytest.mark.parametrize("make_device", DEVICES, ids=DEVICE_IDS)
def test_convolution_2d_transpose_bias_shares_a_partition_with_builtin_ops(make_device):
    model = mediapipe_model([1, 4, 4, 3], (4, 4), 2, TransposeConvBiasOptions(TFLITE_PADDING_SAME, 2, 2), then_add=True)
    delegate = GpuDelegate(device=make_device())
    assert_matches_cpu(model, lambda: delegate, invokes=4, rtol=1e-5, atol=1e-5)
    (stats,) = delegate.partition_stats()
    assert stats.nodes == (0, 1) and stats.graph == "replaying"
    assert stats.last_invoke.uploads == 1 and stats.last_invoke.downloads == 1  # x in, the ADD's output out


# -- float16 storage, one case per family --------------------------------------------------------------

FLOAT16_CASES = {
    "batch_matmul": lambda: bmm_model((2, 3, 4), (4, 5), const_y=True),
    "transpose_conv": lambda: tconv_model([1, 4, 4, 3], (3, 3), 2, (8, 8), bias="constant", activation=Act.RELU6),
    "convolution_2d_transpose_bias": lambda: mediapipe_model(
        [1, 4, 4, 3], (3, 3), 2, TransposeConvBiasOptions(TFLITE_PADDING_SAME, 2, 2)),
}


@pytest.mark.parametrize("make_device", DEVICES, ids=DEVICE_IDS)
@pytest.mark.parametrize("case", list(FLOAT16_CASES))
def test_float16_storage(case, make_device):
    delegate = check_on_gpu(FLOAT16_CASES[case](), make_device, precision="float16")
    assert delegate.storage == np.float16


# -- support tables and version caps -----------------------------------------------------------------


def test_claimed_versions():
    table = gpu_support_table()
    assert table[B.BATCH_MATMUL] == 2  # v2: int8 (test_int8_conv_kernels.py)
    assert table[B.TRANSPOSE_CONV] == frozenset({1, 3, 4})
    assert gpu_custom_support_table()[NAME] == 1
    assert NAME not in table
    assert GpuDelegate(device="host").custom_support_table[NAME] == 1


def int16_bmm_model() -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3, 4], T.INT16, quantization=quantization(0.05, 0))
    y = graph.add_input("y", [2, 4, 5], T.INT16, quantization=quantization(0.04, 0))
    out = graph.add_tensor("out", [2, 3, 5], T.INT16, quantization=quantization(0.1, 0))
    graph.add_operator(B.BATCH_MATMUL, [x, y], [out], BatchMatMulParams())
    return finish(builder, graph, out)


def quantized_tconv_model(kind: str) -> bytes:
    """int8 (TRANSPOSE_CONV v2) or int16 x int8 with a quantized bias type (v5)."""
    rng = np.random.default_rng(0)
    io_type = T.INT8 if kind == "int8" else T.INT16
    builder = ModelBuilder()
    graph = builder.subgraph()
    shape = graph.add_constant("shape", np.array([1, 8, 8, 2], np.int32))
    w = graph.add_constant("w", rng.integers(-127, 128, (2, 3, 3, 3)).astype(np.int8), quantization=quantization([0.02, 0.03], 0))
    x = graph.add_input("x", [1, 4, 4, 3], io_type, quantization=quantization(0.05, 0))
    bias_dtype = np.int32 if kind == "int8" else np.int64
    b = graph.add_constant("b", np.zeros(2, bias_dtype), quantization=quantization([0.001, 0.0015], 0))
    out = graph.add_tensor("out", [1, 8, 8, 2], io_type, quantization=quantization(0.1, 0))
    params = TransposeConvParams(padding=Padding.SAME, stride_h=2, stride_w=2,
                                 quantized_bias_type=T.FLOAT32 if kind == "int8" else T.INT64)
    # TFLite's rule tests input 0 (the shape) for int16, so it never stamps v5 itself: explicit.
    graph.add_operator(B.TRANSPOSE_CONV, [shape, w, x, b], [out], params, version=None if kind == "int8" else 5)
    return finish(builder, graph, out)


def test_batch_matmul_v3_is_refused_naming_the_version():
    model = int16_bmm_model()
    assert stamped(model) == ("BATCH_MATMUL", 3)
    plan = plan_delegation(GpuDelegate(device="host"), model)
    assert plan.taken == []
    assert plan.reason(0) == "BATCH_MATMUL v3: max version supported by GpuDelegate is 2"


def test_transpose_conv_v5_is_refused_naming_the_version():
    model = quantized_tconv_model("int16")
    assert stamped(model) == ("TRANSPOSE_CONV", 5)
    plan = plan_delegation(GpuDelegate(device="host"), model)
    assert plan.taken == []
    assert plan.reason(0) == "TRANSPOSE_CONV v5: max version supported by GpuDelegate is 4"


def test_int8_transpose_conv_at_a_claimed_version_is_refused_naming_the_type():
    model = quantized_tconv_model("int8")
    assert stamped(model) == ("TRANSPOSE_CONV", 3)  # int8 with a bias: v3 by the bias rule
    # The int8 node is v3 (its bias) yet not float: the type check names the type.
    plan = plan_delegation(GpuDelegate(device="host"), model)
    assert plan.taken == [] and "INT8" in plan.reason(0) and "FLOAT32 tensors only" in plan.reason(0)


def test_transpose_conv_v2_is_refused_naming_the_version():
    rng = np.random.default_rng(0)
    builder = ModelBuilder()
    graph = builder.subgraph()
    shape = graph.add_constant("shape", np.array([1, 8, 8, 2], np.int32))
    w = graph.add_constant("w", rng.integers(-127, 128, (2, 3, 3, 3)).astype(np.int8), quantization=quantization([0.02, 0.03], 0))
    x = graph.add_input("x", [1, 4, 4, 3], T.INT8, quantization=quantization(0.05, 0))
    out = graph.add_tensor("out", [1, 8, 8, 2], T.INT8, quantization=quantization(0.1, 0))
    graph.add_operator(B.TRANSPOSE_CONV, [shape, w, x], [out], TransposeConvParams(padding=Padding.SAME, stride_h=2, stride_w=2))
    model = finish(builder, graph, out)
    assert stamped(model) == ("TRANSPOSE_CONV", 2)
    plan = plan_delegation(GpuDelegate(device="host"), model)
    assert plan.taken == []
    assert plan.reason(0) == "TRANSPOSE_CONV v2: GpuDelegate supports TRANSPOSE_CONV versions 1, 3, 4 only"


def test_convolution_2d_transpose_bias_v2_is_refused_naming_the_version():
    model = mediapipe_model([1, 4, 4, 3], (3, 3), 2, TransposeConvBiasOptions(TFLITE_PADDING_SAME, 2, 2), version=2)
    plan = plan_delegation(GpuDelegate(device="host"), model)
    assert plan.taken == []
    assert plan.reason(0) == f"{NAME} v2: max version supported by GpuDelegate is 1"


def test_convolution_2d_transpose_bias_caps_by_name():
    model = mediapipe_model([1, 4, 4, 3], (3, 3), 2, TransposeConvBiasOptions(TFLITE_PADDING_SAME, 2, 2))
    plan = plan_delegation(GpuDelegate(device="host", version_caps={NAME: 0}), model)
    assert plan.reason(0) == f"{NAME} v1: max version supported by GpuDelegate is 0 (capped by options)"
    plan = plan_delegation(GpuDelegate(device="host", excluded_ops=[NAME]), model)
    assert plan.reason(0) == f"{NAME} v1: excluded by the GpuDelegate options"


# -- other refusals, each naming what is wrong -------------------------------------------------------


def refusal(model: bytes) -> str:
    plan = plan_delegation(GpuDelegate(device="host"), model)
    assert plan.taken == [], "the node should not be delegated"
    return plan.reason(0)


def test_batch_matmul_of_rank_5_is_refused():
    assert "has rank 5; at most 4" in refusal(bmm_model((2, 1, 2, 3, 4), (2, 1, 2, 4, 5)))


def test_batch_matmul_of_more_batches_than_one_launch_takes_is_refused():
    assert "more than CUDA allows" in refusal(bmm_model((70000, 2, 3), (3, 4)))


def test_transpose_conv_with_a_runtime_output_shape_is_refused():
    model = tconv_model([1, 3, 4, 2], (3, 3), 2, (6, 8), shape_is_input=True)
    assert "output_shape must be a constant tensor" in refusal(model)


def test_transpose_conv_with_sign_bit_is_refused():
    model = tconv_model([1, 3, 4, 2], (3, 3), 2, (6, 8), activation=Act.SIGN_BIT)
    assert "fused activation SIGN_BIT is not supported" in refusal(model)


def test_transpose_conv_whose_output_does_not_fit_its_input_is_refused():
    model = tconv_model([1, 4, 4, 2], (3, 3), 2, (9, 8))
    assert "does not match the input" in refusal(model)


def test_convolution_2d_transpose_bias_with_runtime_weights_is_refused():
    model = mediapipe_model([1, 4, 4, 3], (3, 3), 2, TransposeConvBiasOptions(TFLITE_PADDING_SAME, 2, 2), weights_are_input=True)
    assert "the weights must be a constant tensor" in refusal(model)


def test_convolution_2d_transpose_bias_with_short_options_is_refused():
    model = mediapipe_model([1, 4, 4, 3], (3, 3), 2, TransposeConvBiasOptions(TFLITE_PADDING_SAME, 2, 2), raw_options=b"\x01\x00")
    assert "got 2 bytes" in refusal(model)
