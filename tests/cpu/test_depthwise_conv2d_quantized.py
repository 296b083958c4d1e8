"""Quantized DEPTHWISE_CONV_2D (uint8, int8, int16x8, hybrid; versions 1-6) against
LiteRT's reference kernels: integer outputs bit for bit, hybrid outputs within 1e-5."""

from __future__ import annotations

import numpy as np
import pytest

from schema.errors import ModelError
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from delegate_sdk.op_resolver import UnsupportedOperatorError
from interpreter import Interpreter
from model_helpers import random_quantized_input as random_input, stamped_version
from oracle import MODELS_DIR, assert_matches_litert, assert_outputs_equal, random_inputs, run_litert, run_ours
from schema.builder import ModelBuilder, quantization as qparams
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding, TensorType
from schema.model import Model
from schema.params import DepthwiseConv2DParams

Act = ActivationFunctionType
T = TensorType


def dw_params(multiplier=1, padding=Padding.SAME, stride=(1, 1), dilation=(1, 1), activation=Act.NONE):
    return DepthwiseConv2DParams(
        padding=padding,
        stride_h=stride[0],
        stride_w=stride[1],
        depth_multiplier=multiplier,
        fused_activation_function=activation,
        dilation_h_factor=dilation[0],
        dilation_w_factor=dilation[1],
    )


def dw_model(
    kind: str,
    input_shape,
    kernel,
    params: DepthwiseConv2DParams,
    *,
    per_channel: bool = True,
    filter_scales=None,
    quantized_dimension: int = 3,
    bias: str = "constant",  # "constant", "zeros", "none"
    bias_dtype=None,
    filter_is_input: bool = False,
    zero_points=None,
    version: int | None = None,
    seed: int = 0,
) -> bytes:
    """One DEPTHWISE_CONV_2D node with filter ``[1, KH, KW, C * params.depth_multiplier]``.
    ``kind``: "uint8", "int8", "int16" (x int8 filter) or "hybrid" (float x int8)."""
    rng = np.random.default_rng(seed)
    channels = input_shape[3] * params.depth_multiplier
    filter_shape = [1, *kernel, channels]
    input_scale, output_scale = rng.uniform(0.001, 0.1, 2)
    if filter_scales is None:
        filter_scales = rng.uniform(0.001, 0.1, channels if per_channel else 1)
    filter_scales = np.asarray(filter_scales, np.float32)
    bias_q = qparams(np.float32(input_scale) * filter_scales, 0)
    builder = ModelBuilder()
    graph = builder.subgraph()
    if kind == "uint8":
        z_in, z_out = zero_points or tuple(int(v) for v in rng.integers(0, 256, 2))
        x = graph.add_input("x", input_shape, T.UINT8, quantization=qparams(input_scale, z_in))
        values = rng.integers(0, 256, filter_shape).astype(np.uint8)
        filter_q = qparams(filter_scales, int(rng.integers(0, 256)), quantized_dimension)
        bias_values = rng.integers(-20000, 20000, channels).astype(np.int32)
        y = graph.add_tensor("y", [1], T.UINT8, quantization=qparams(output_scale, z_out))
    elif kind in ("int8", "int16"):
        io_type = T.INT8 if kind == "int8" else T.INT16
        z_in, z_out = (zero_points or tuple(int(v) for v in rng.integers(-128, 128, 2))) if kind == "int8" else (0, 0)
        x = graph.add_input("x", input_shape, io_type, quantization=qparams(input_scale, z_in))
        values = rng.integers(-127, 128, filter_shape).astype(np.int8)
        filter_q = qparams(filter_scales, 0, quantized_dimension)
        if kind == "int8":
            bias_values = rng.integers(-20000, 20000, channels).astype(np.int32)
        else:
            bias_values = rng.integers(-(1 << 24), 1 << 24, channels).astype(bias_dtype or np.int64)
        y = graph.add_tensor("y", [1], io_type, quantization=qparams(output_scale, z_out))
    else:
        x = graph.add_input("x", input_shape)
        values = rng.integers(-127, 128, filter_shape).astype(np.int8)
        filter_q = qparams(filter_scales, 0, quantized_dimension)
        bias_values = rng.uniform(-1, 1, channels).astype(np.float32)
        bias_q = None
        y = graph.add_tensor("y", [1])
    if filter_is_input:
        w = graph.add_input("w", filter_shape, T.UINT8 if kind == "uint8" else T.INT8, quantization=filter_q)
    else:
        w = graph.add_constant("w", values, quantization=filter_q)
    inputs = [x, w]
    if bias == "constant":
        inputs.append(graph.add_constant("b", bias_values, quantization=bias_q))
    elif bias == "zeros":
        inputs.append(graph.add_constant("b", np.zeros_like(bias_values), quantization=bias_q))
    graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, inputs, [y], params, version=version)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()




def check(model: bytes, kind: str, input_shape, seed: int = 1) -> list[np.ndarray]:
    return assert_matches_litert(model, [random_input(kind, input_shape, seed)])


# --- int8 (v3, dilated or not) -------------------------------------------------------


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("stride", [(1, 1), (2, 2), (1, 2)], ids=str)
@pytest.mark.parametrize("dilation", [(1, 1), (2, 2), (3, 1)], ids=str)
@pytest.mark.parametrize("multiplier", [1, 2, 3])
def test_int8_depthwise_is_v3_and_bit_exact(padding, stride, dilation, multiplier):
    params = dw_params(multiplier, padding, stride, dilation)
    model = dw_model("int8", [2, 10, 9, 3], (3, 3), params)
    assert stamped_version(model) == 3  # dilated int8 is v3 too
    check(model, "int8", [2, 10, 9, 3])


def test_int8_depthwise_with_per_tensor_filter_is_bit_exact():
    model = dw_model("int8", [1, 8, 8, 5], (3, 3), dw_params(2, stride=(2, 2)), per_channel=False)
    check(model, "int8", [1, 8, 8, 5])


@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH], ids=lambda a: a.name)
def test_int8_depthwise_with_fused_activation_is_bit_exact(activation):
    model = dw_model("int8", [1, 7, 7, 4], (3, 3), dw_params(activation=activation), zero_points=(3, -30))
    check(model, "int8", [1, 7, 7, 4])


@pytest.mark.parametrize("channels, multiplier", [(80, 1), (40, 2), (1, 8)], ids=["80ch", "40x2", "1x8"])
def test_int8_depthwise_with_many_or_one_input_channels_is_bit_exact(channels, multiplier):
    model = dw_model("int8", [1, 6, 7, channels], (3, 3), dw_params(multiplier, dilation=(2, 1)))
    check(model, "int8", [1, 6, 7, channels])


def test_int8_depthwise_with_large_odd_kernel_is_bit_exact():
    model = dw_model("int8", [1, 9, 9, 3], (5, 4), dw_params(2, Padding.SAME, (2, 1), (1, 2)))
    check(model, "int8", [1, 9, 9, 3])


def test_int8_depthwise_with_filter_as_input_is_bit_exact():
    model = dw_model("int8", [1, 6, 6, 4], (3, 3), dw_params(2), filter_is_input=True)
    weights = np.random.default_rng(2).integers(-127, 128, [1, 3, 3, 8]).astype(np.int8)
    assert_matches_litert(model, [random_input("int8", [1, 6, 6, 4]), weights])


def test_int8_depthwise_without_bias_equals_litert_with_zero_bias():
    x = random_input("int8", [1, 7, 7, 3])
    no_bias = dw_model("int8", [1, 7, 7, 3], (3, 3), dw_params(2), bias="none")
    zero_bias = dw_model("int8", [1, 7, 7, 3], (3, 3), dw_params(2), bias="zeros")
    assert_outputs_equal(run_ours(no_bias, [x]), run_litert(zero_bias, [x]))


def test_int8_depthwise_after_resizing_the_batch_is_bit_exact():
    model = dw_model("int8", [1, 8, 8, 3], (3, 3), dw_params(stride=(2, 2)))
    check(model, "int8", [3, 8, 8, 3])


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 2),
    height=st.integers(1, 10),
    width=st.integers(1, 10),
    channels=st.integers(1, 5),
    multiplier=st.integers(1, 3),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from([Padding.SAME, Padding.VALID]),
    activation=st.sampled_from([Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1]),
    per_channel=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_int8_depthwise_property_bit_exact(
    batch, height, width, channels, multiplier, kernel, stride, dilation, padding, activation, per_channel, seed
):
    if padding == Padding.VALID:  # the dilated window must fit
        height = max(height, (kernel[0] - 1) * dilation[0] + 1)
        width = max(width, (kernel[1] - 1) * dilation[1] + 1)
    shape = [batch, height, width, channels]
    params = dw_params(multiplier, padding, stride, dilation, activation)
    model = dw_model("int8", shape, kernel, params, per_channel=per_channel, seed=seed)
    check(model, "int8", shape, seed=seed + 1)


# --- converter models ----------------------------------------------------------------


# --- the float64 output stage bound at allocation (FloatOutputStage) ----------------


def bound_node(model: bytes):
    """The kernel of a one-node model and the step the interpreter calls at invoke."""
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    return interpreter._main.nodes[0].user_data, dict(interpreter._main._steps)[0]


@pytest.mark.parametrize(
    "channels, stride, multiplier, layout",
    [
        (8, (1, 1), 1, "flat"),
        (6, (1, 1), 2, "flat"),
        (24, (1, 1), 1, "rows"),
        (8, (2, 2), 1, "row-im2col"),
        (64, (2, 2), 1, "row-im2col"),
    ],
    ids=["flat", "flat-x2", "rows", "row-im2col", "row-im2col-64"],
)
@pytest.mark.parametrize(
    "activation, zero_points, fast",
    [(Act.RELU, (3, -20), True), (Act.NONE, (3, -128), True), (Act.NONE, (-7, 10), False), (Act.RELU6, (0, 0), True)],
    ids=["relu", "zero-point-at-min", "general", "relu6"],
)
def test_int8_depthwise_output_stage_paths_are_bit_exact(
    channels, stride, multiplier, layout, activation, zero_points, fast
):
    """Both paths of the output stage (the rounding step skipped when ``low >= z_out``,
    or applied) over each layout of the sums (all rows as one run, FlatTaps, for short
    rows; one run per row; the row im2col of a stride > 1)."""
    input_shape = [1, 9, 7, channels]
    params = dw_params(multiplier, stride=stride, activation=activation)
    model = dw_model("int8", input_shape, (3, 3), params, zero_points=zero_points, seed=6)
    kernel, step = bound_node(model)
    assert kernel.output_stage.fast is fast
    assert (kernel.flat is not None) is (layout == "flat")
    assert bool(kernel.column_copies) is (layout == "row-im2col")
    for seed in (1, 2):
        check(model, "int8", input_shape, seed=seed)
    # invoke() on its own (constant folding, delegates) still runs the prepare-time path
    kernel.inputs[0].data[...] = random_input("int8", input_shape, seed=3)
    step()
    bound = kernel.outputs[0].data.copy()
    kernel.invoke()
    np.testing.assert_array_equal(kernel.outputs[0].data, bound)


def run_converter_model(name: str) -> None:
    """Compare a converter-made model; skip (saying why) when another op it needs is
    not implemented yet."""
    model = (MODELS_DIR / "converter" / f"{name}.tflite").read_bytes()
    inputs = random_inputs(model, seed=4)
    try:
        ours = run_ours(model, inputs)
    except UnsupportedOperatorError as error:
        pytest.skip(f"{name}: another op is not implemented yet: {error}")
    except KernelError as error:
        if "(DEPTHWISE_CONV_2D" not in str(error):
            pytest.skip(f"{name}: another op is not implemented yet: {error}")
        raise
    assert_outputs_equal(ours, run_litert(model, inputs))


@pytest.mark.parametrize("name", ["dwconv_dil2_int8", "dwconv_dil2_odd_int8", "dwconv_dil1_int8"])
def test_converter_dilated_int8_depthwise_is_v3_and_bit_exact(name):
    model = Model.from_bytes((MODELS_DIR / "converter" / f"{name}.tflite").read_bytes())
    operators = model.subgraphs[0].operators
    assert {op.version for op in operators if op.builtin_code == BuiltinOperator.DEPTHWISE_CONV_2D} == {3}
    run_converter_model(name)


# --- uint8 (v1, v2 dilated) ----------------------------------------------------------


@pytest.mark.parametrize(
    "dilation, version", [((1, 1), 1), ((2, 2), 2)], ids=["v1", "v2-dilated"]
)
@pytest.mark.parametrize("multiplier", [1, 2])
def test_uint8_depthwise_is_bit_exact(dilation, version, multiplier):
    params = dw_params(multiplier, Padding.SAME, (1, 2), dilation, Act.RELU6)
    model = dw_model("uint8", [2, 8, 9, 3], (3, 3), params, per_channel=False)
    assert stamped_version(model) == version
    check(model, "uint8", [2, 8, 9, 3])


@pytest.mark.parametrize("dilation, version", [((1, 1), 1), ((2, 1), 2)], ids=["v1", "v2-dilated"])
def test_float_depthwise_still_runs_on_the_float_kernel(dilation, version):
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 6, 6, 2])
    w = graph.add_constant("w", np.random.default_rng(0).uniform(-1, 1, [1, 3, 3, 4]).astype(np.float32))
    y = graph.add_tensor("y", [1])
    graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, [x, w], [y], dw_params(2, dilation=dilation))
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    model = builder.build()
    assert stamped_version(model) == version
    assert_matches_litert(model)


# --- int16 x int8 (v1/v2 by TFLite's rule, v5) ---------------------------------------


@pytest.mark.parametrize("dilation, version", [((1, 1), 1), ((2, 2), 2)], ids=["v1", "v2-dilated"])
@pytest.mark.parametrize("multiplier", [1, 3])
def test_int16x8_depthwise_is_bit_exact(dilation, version, multiplier):
    # TFLite's rule stamps 16x8 as a float node would be (its v5 asks for an int16 filter)
    params = dw_params(multiplier, Padding.SAME, (2, 1), dilation, Act.RELU)
    model = dw_model("int16", [1, 9, 8, 3], (3, 3), params)
    assert stamped_version(model) == version
    check(model, "int16", [1, 9, 8, 3])


def test_int16x8_depthwise_stamped_v5_is_bit_exact():
    model = dw_model("int16", [2, 7, 7, 4], (3, 3), dw_params(2, Padding.VALID), version=5)
    assert stamped_version(model) == 5
    check(model, "int16", [2, 7, 7, 4])


def test_int16x8_depthwise_with_int32_bias_fails_clearly():
    model = dw_model("int16", [1, 5, 5, 2], (3, 3), dw_params(), bias_dtype=np.int32)
    with pytest.raises(KernelError, match="DEPTHWISE_CONV_2D.*bias"):
        Interpreter(model_content=model).allocate_tensors()


# --- hybrid (v4 per tensor, v6 per channel) ------------------------------------------


@pytest.mark.parametrize("multiplier", [1, 2])
@pytest.mark.parametrize(
    "padding, stride, dilation",
    [(Padding.SAME, (1, 1), (1, 1)), (Padding.VALID, (2, 2), (1, 1)), (Padding.SAME, (1, 2), (2, 3))],
    ids=["same", "valid-strided", "dilated"],
)
def test_hybrid_per_channel_depthwise_is_v6_and_matches(multiplier, padding, stride, dilation):
    params = dw_params(multiplier, padding, stride, dilation)
    model = dw_model("hybrid", [2, 9, 8, 3], (3, 3), params)
    assert stamped_version(model) == 6
    check(model, "hybrid", [2, 9, 8, 3])


@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1], ids=lambda a: a.name)
def test_hybrid_depthwise_with_fused_activation_matches(activation):
    model = dw_model("hybrid", [1, 7, 7, 4], (3, 3), dw_params(activation=activation))
    check(model, "hybrid", [1, 7, 7, 4])


def test_hybrid_per_tensor_depthwise_is_v4_and_equals_the_scale_repeated_per_channel():
    # LiteRT's v4 kernel reads scale[c] past the one-element array for c > 0, so only
    # channel 0 can be compared with it; every channel must equal the v6 node whose
    # filter repeats that scale per channel.
    x = random_input("hybrid", [2, 7, 6, 3])
    params = dw_params(2)
    per_tensor = dw_model("hybrid", [2, 7, 6, 3], (3, 3), params, filter_scales=[0.03], quantized_dimension=0)
    repeated = dw_model("hybrid", [2, 7, 6, 3], (3, 3), params, filter_scales=[0.03] * 6)
    assert (stamped_version(per_tensor), stamped_version(repeated)) == (4, 6)
    ours = run_ours(per_tensor, [x])
    assert_outputs_equal(ours, run_litert(repeated, [x]))
    np.testing.assert_allclose(ours[0][..., 0], run_litert(per_tensor, [x])[0][..., 0], rtol=1e-5, atol=1e-6)


def test_hybrid_depthwise_of_a_zero_batch_matches():
    model = dw_model("hybrid", [2, 5, 5, 3], (3, 3), dw_params(2))
    x = random_input("hybrid", [2, 5, 5, 3])
    x[0] = 0.0
    assert_matches_litert(model, [x])


# --- errors --------------------------------------------------------------------------


def test_per_channel_filter_along_another_dimension_fails_clearly():
    # 3 scales along dimension 0 of a [1, 3, 3, 3] filter: refused when the model is read
    model = dw_model("int8", [1, 5, 5, 3], (3, 3), dw_params(), filter_scales=[0.1, 0.2, 0.3], quantized_dimension=0)
    with pytest.raises(ModelError, match="3 scales for the 1 channels of dimension 0"):
        Interpreter(model_content=model)


def test_uint8_input_with_int8_filter_fails_clearly():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4, 4, 2], T.UINT8, quantization=qparams(0.1, 128))
    w = graph.add_constant("w", np.ones([1, 3, 3, 2], np.int8), quantization=qparams(0.1, 0, 3))
    y = graph.add_tensor("y", [1], T.UINT8, quantization=qparams(0.1, 128))
    graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, [x, w], [y], dw_params())
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    with pytest.raises(KernelError, match="DEPTHWISE_CONV_2D"):
        Interpreter(model_content=builder.build()).allocate_tensors()
