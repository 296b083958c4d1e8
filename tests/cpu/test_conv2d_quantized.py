"""Quantized CONV_2D (uint8, int8, int16x8, hybrid; versions 1-6 and 8) against LiteRT's
reference kernels: integer outputs bit for bit, hybrid (float) outputs within 1e-5."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.cpu import quantization
from backends.cpu.kernels._quantized_window import ConvQuantization
from delegate_sdk.context import KernelError
from delegate_sdk.op_resolver import UnsupportedOperatorError
from interpreter import Interpreter
from model_helpers import random_quantized_input as random_input, stamped_version
from oracle import MODELS_DIR, assert_matches_litert, assert_outputs_equal, random_inputs, run_litert, run_ours
from schema.builder import ModelBuilder, quantization as qparams
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding, TensorType
from schema.params import Conv2DParams

Act = ActivationFunctionType
T = TensorType


def conv_params(padding=Padding.SAME, stride=(1, 1), dilation=(1, 1), activation=Act.NONE, bias_type=T.FLOAT32):
    return Conv2DParams(
        padding=padding,
        stride_h=stride[0],
        stride_w=stride[1],
        dilation_h_factor=dilation[0],
        dilation_w_factor=dilation[1],
        fused_activation_function=activation,
        quantized_bias_type=bias_type,
    )


def conv_model(
    kind: str,
    input_shape,
    filter_shape,
    params: Conv2DParams,
    *,
    per_channel: bool = True,
    bias: str = "constant",  # "constant", "zeros", "none"
    bias_type=None,  # int16 only: T.INT32 or T.INT64 (default int64)
    filter_is_input: bool = False,
    filter_scales=None,
    filter_values=None,
    zero_points=None,  # (input, output) zero points
    io_scales=None,  # (input, output) scales
    version: int | None = None,
    seed: int = 0,
) -> bytes:
    """One CONV_2D node. ``kind``: "uint8", "int8", "int16" (x int8 filter) or "hybrid"
    (float32 input and output, int8 filter). Scales are random in [0.001, 0.1]."""
    rng = np.random.default_rng(seed)
    out_channels = filter_shape[0]
    input_scale, output_scale = io_scales or rng.uniform(0.001, 0.1, 2)
    if filter_scales is None:
        filter_scales = rng.uniform(0.001, 0.1, out_channels if per_channel else 1)
    filter_scales = np.asarray(filter_scales, np.float32)
    bias_scales = np.float32(input_scale) * filter_scales
    builder = ModelBuilder()
    graph = builder.subgraph()
    if kind == "uint8":
        z_in, z_out = zero_points or tuple(int(v) for v in rng.integers(0, 256, 2))
        z_w = int(rng.integers(0, 256))
        x = graph.add_input("x", input_shape, T.UINT8, quantization=qparams(input_scale, z_in))
        values = rng.integers(0, 256, filter_shape).astype(np.uint8)
        filter_q = qparams(filter_scales, z_w)
        bias_values = rng.integers(-20000, 20000, out_channels).astype(np.int32)
        y = graph.add_tensor("y", [1], T.UINT8, quantization=qparams(output_scale, z_out))
    elif kind in ("int8", "int16"):
        io_type = T.INT8 if kind == "int8" else T.INT16
        if kind == "int8":
            z_in, z_out = zero_points or tuple(int(v) for v in rng.integers(-128, 128, 2))
        else:
            z_in = z_out = 0
        x = graph.add_input("x", input_shape, io_type, quantization=qparams(input_scale, z_in))
        values = rng.integers(-127, 128, filter_shape).astype(np.int8)
        filter_q = qparams(filter_scales, 0)
        if kind == "int8" or bias_type == T.INT32:
            bias_values = rng.integers(-20000, 20000, out_channels).astype(np.int32)
        else:
            bias_values = rng.integers(-(1 << 24), 1 << 24, out_channels).astype(np.int64)
        y = graph.add_tensor("y", [1], io_type, quantization=qparams(output_scale, z_out))
    else:
        x = graph.add_input("x", input_shape)
        values = rng.integers(-127, 128, filter_shape).astype(np.int8)
        filter_q = qparams(filter_scales, 0)
        bias_values = rng.uniform(-1, 1, out_channels).astype(np.float32)
        y = graph.add_tensor("y", [1])
    if filter_values is not None:
        values = np.asarray(filter_values).astype(values.dtype).reshape(filter_shape)
    if filter_is_input:
        w = graph.add_input("w", filter_shape, T.UINT8 if kind == "uint8" else T.INT8, quantization=filter_q)
    else:
        w = graph.add_constant("w", values, quantization=filter_q)
    inputs = [x, w]
    bias_q = None if kind == "hybrid" else qparams(bias_scales, 0)
    if bias == "constant":
        inputs.append(graph.add_constant("b", bias_values, quantization=bias_q))
    elif bias == "zeros":
        inputs.append(graph.add_constant("b", np.zeros_like(bias_values), quantization=bias_q))
    graph.add_operator(BuiltinOperator.CONV_2D, inputs, [y], params, version=version)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()




def check(model: bytes, kind: str, input_shape, seed: int = 1) -> list[np.ndarray]:
    return assert_matches_litert(model, [random_input(kind, input_shape, seed)])


# --- int8 (v3) -----------------------------------------------------------------------


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("stride", [(1, 1), (2, 2), (2, 1)], ids=str)
@pytest.mark.parametrize("dilation", [(1, 1), (2, 2), (1, 3)], ids=str)
def test_int8_per_channel_conv_is_v3_and_bit_exact(padding, stride, dilation):
    model = conv_model("int8", [2, 11, 10, 3], [5, 3, 3, 3], conv_params(padding, stride, dilation))
    assert stamped_version(model) == 3
    check(model, "int8", [2, 11, 10, 3])


def test_int8_per_tensor_filter_is_bit_exact():
    model = conv_model("int8", [1, 9, 8, 6], [7, 3, 2, 6], conv_params(stride=(2, 1)), per_channel=False)
    assert stamped_version(model) == 3
    check(model, "int8", [1, 9, 8, 6])


@pytest.mark.parametrize(
    "activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH], ids=lambda a: a.name
)
def test_int8_conv_with_fused_activation_is_bit_exact(activation):
    # output zero point and scale chosen so the RELU6 / N1_TO_1 bounds clip inside int8
    model = conv_model("int8", [1, 8, 8, 4], [6, 3, 3, 4], conv_params(activation=activation), zero_points=(5, -20))
    check(model, "int8", [1, 8, 8, 4])


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
def test_int8_pointwise_conv_is_bit_exact(padding):
    model = conv_model("int8", [2, 7, 9, 16], [24, 1, 1, 16], conv_params(padding, activation=Act.RELU))
    check(model, "int8", [2, 7, 9, 16])


def test_int8_strided_pointwise_conv_is_bit_exact():
    model = conv_model("int8", [1, 9, 9, 8], [4, 1, 1, 8], conv_params(stride=(2, 2)))
    check(model, "int8", [1, 9, 9, 8])


def test_int8_filter_larger_than_input_with_same_padding_is_bit_exact():
    model = conv_model("int8", [1, 2, 3, 2], [3, 5, 5, 2], conv_params(Padding.SAME))
    check(model, "int8", [1, 2, 3, 2])


def test_int8_conv_with_extreme_zero_points_is_bit_exact():
    model = conv_model("int8", [1, 6, 7, 5], [4, 3, 3, 5], conv_params(), zero_points=(-128, 127))
    check(model, "int8", [1, 6, 7, 5])


@pytest.mark.parametrize("kind", ["int8", "uint8"])
def test_conv_whose_rescale_is_above_one_is_bit_exact(kind):
    # s_in * s_w / s_out between 1 and 16 for some channels: left shifts in the rescale
    model = conv_model(
        kind, [1, 5, 5, 2], [4, 1, 1, 2], conv_params(), filter_scales=[0.05, 0.5, 0.9, 0.02][: 4 if kind == "int8" else 1],
        io_scales=(0.02, 0.004), per_channel=kind == "int8",
    )
    check(model, kind, [1, 5, 5, 2])


def test_int8_conv_with_accumulators_beyond_float32_is_bit_exact():
    # |w| = 127 everywhere over 3x3x256 taps: sums reach 2**25, past float32's exact
    # integers, so the kernel must accumulate in float64.
    shape = [4, 3, 3, 256]
    signs = np.where(np.random.default_rng(3).random(shape) < 0.5, -127, 127)
    model = conv_model("int8", [1, 5, 5, 256], shape, conv_params(), filter_values=signs)
    x = np.full([1, 5, 5, 256], -128, np.int8)
    x[0, ::2] = 127
    assert_matches_litert(model, [x])


def test_int8_conv_with_filter_as_input_is_bit_exact():
    model = conv_model("int8", [1, 6, 6, 3], [4, 3, 3, 3], conv_params(), filter_is_input=True)
    weights = np.random.default_rng(5).integers(-127, 128, [4, 3, 3, 3]).astype(np.int8)
    assert_matches_litert(model, [random_input("int8", [1, 6, 6, 3]), weights])


def test_int8_conv_without_bias_equals_litert_with_zero_bias():
    # LiteRT's CONV_2D requires the bias input; ours runs a node without one as a zero bias.
    x = random_input("int8", [1, 8, 8, 3])
    no_bias = conv_model("int8", [1, 8, 8, 3], [4, 3, 3, 3], conv_params(stride=(2, 2)), bias="none")
    zero_bias = conv_model("int8", [1, 8, 8, 3], [4, 3, 3, 3], conv_params(stride=(2, 2)), bias="zeros")
    assert_outputs_equal(run_ours(no_bias, [x]), run_litert(zero_bias, [x]))


def test_int8_conv_after_resizing_the_batch_is_bit_exact():
    model = conv_model("int8", [1, 8, 8, 3], [4, 3, 3, 3], conv_params(stride=(2, 2)))
    check(model, "int8", [3, 8, 8, 3])


def test_int8_conv_runs_twice_with_the_same_result():
    model = conv_model("int8", [1, 8, 8, 3], [4, 3, 3, 3], conv_params())
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    x = random_input("int8", [1, 8, 8, 3])
    results = []
    for _ in range(2):
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        results.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).copy())
    np.testing.assert_array_equal(results[0], results[1])


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 2),
    height=st.integers(1, 9),
    width=st.integers(1, 9),
    in_channels=st.integers(1, 6),
    out_channels=st.integers(1, 6),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from([Padding.SAME, Padding.VALID]),
    activation=st.sampled_from([Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1]),
    per_channel=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_int8_conv_property_bit_exact(
    batch, height, width, in_channels, out_channels, kernel, stride, dilation, padding, activation, per_channel, seed
):
    if padding == Padding.VALID:  # the dilated window must fit
        height = max(height, (kernel[0] - 1) * dilation[0] + 1)
        width = max(width, (kernel[1] - 1) * dilation[1] + 1)
    shape = [batch, height, width, in_channels]
    model = conv_model(
        "int8", shape, [out_channels, *kernel, in_channels],
        conv_params(padding, stride, dilation, activation), per_channel=per_channel, seed=seed,
    )
    check(model, "int8", shape, seed=seed + 1)


# --- uint8 (v1) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "padding, stride, dilation",
    [(Padding.SAME, (1, 1), (1, 1)), (Padding.VALID, (2, 1), (1, 1)), (Padding.SAME, (1, 2), (2, 2))],
    ids=["same", "valid-strided", "dilated"],
)
def test_uint8_conv_is_v1_and_bit_exact(padding, stride, dilation):
    model = conv_model("uint8", [2, 9, 10, 4], [5, 3, 3, 4], conv_params(padding, stride, dilation), per_channel=False)
    assert stamped_version(model) == 1
    check(model, "uint8", [2, 9, 10, 4])


def test_uint8_conv_with_relu6_is_bit_exact():
    model = conv_model("uint8", [1, 7, 7, 3], [4, 3, 3, 3], conv_params(activation=Act.RELU6), per_channel=False)
    check(model, "uint8", [1, 7, 7, 3])


def test_uint8_pointwise_conv_is_bit_exact():
    model = conv_model("uint8", [1, 6, 5, 12], [7, 1, 1, 12], conv_params(), per_channel=False)
    check(model, "uint8", [1, 6, 5, 12])


def test_float_conv_v1_still_runs_on_the_float_kernel():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 5, 5, 2])
    w = graph.add_constant("w", np.random.default_rng(0).uniform(-1, 1, [3, 3, 3, 2]).astype(np.float32))
    b = graph.add_constant("b", np.zeros(3, np.float32))
    y = graph.add_tensor("y", [1])
    graph.add_operator(BuiltinOperator.CONV_2D, [x, w, b], [y], conv_params())
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    model = builder.build()
    assert stamped_version(model) == 1
    assert_matches_litert(model)


# --- grouped (v6) --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["int8", "uint8", "int16", "hybrid"])
def test_grouped_quantized_conv_is_v6_and_matches(kind):
    # 6 input channels, filter in-channels 2: 3 groups of 2 output channels each
    model = conv_model(kind, [2, 7, 6, 6], [6, 3, 3, 2], conv_params(stride=(2, 1)), per_channel=kind != "uint8")
    assert stamped_version(model) == 6
    check(model, kind, [2, 7, 6, 6])


# --- int16 x int8 (v1, v4, v8) -------------------------------------------------------


@pytest.mark.parametrize("dilation", [(1, 1), (2, 2)], ids=str)
def test_int16x8_conv_without_bias_type_is_v1_and_bit_exact(dilation):
    # TFLite's version rule gives 16x8 version 1 (its v4 asks for an int16 filter)
    model = conv_model("int16", [2, 8, 9, 4], [5, 3, 3, 4], conv_params(dilation=dilation, activation=Act.RELU))
    assert stamped_version(model) == 1
    check(model, "int16", [2, 8, 9, 4])


def test_int16x8_conv_stamped_v4_is_bit_exact():
    model = conv_model("int16", [1, 7, 7, 3], [4, 3, 3, 3], conv_params(stride=(2, 2)), version=4)
    assert stamped_version(model) == 4
    check(model, "int16", [1, 7, 7, 3])


@pytest.mark.parametrize("bias_type", [T.INT32, T.INT64], ids=["int32", "int64"])
def test_int16x8_conv_with_quantized_bias_type_is_v8_and_bit_exact(bias_type):
    model = conv_model(
        "int16", [1, 8, 7, 5], [6, 3, 3, 5], conv_params(activation=Act.RELU6, bias_type=bias_type), bias_type=bias_type
    )
    assert stamped_version(model) == 8
    check(model, "int16", [1, 8, 7, 5])


def test_int16x8_conv_with_int32_bias_needs_quantized_bias_type():
    # Without quantized_bias_type LiteRT reads the bias as int64; ours refuses it.
    model = conv_model("int16", [1, 5, 5, 2], [3, 3, 3, 2], conv_params(), bias_type=T.INT32)
    assert stamped_version(model) == 1
    with pytest.raises(KernelError, match="CONV_2D"):
        Interpreter(model_content=model).allocate_tensors()


# --- hybrid (v2 per tensor, v5 per channel) ------------------------------------------


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("stride, dilation", [((1, 1), (1, 1)), ((2, 2), (1, 1)), ((1, 1), (2, 3))], ids=["plain", "strided", "dilated"])
def test_hybrid_per_tensor_conv_is_v2_and_matches(padding, stride, dilation):
    model = conv_model("hybrid", [2, 9, 8, 3], [4, 3, 3, 3], conv_params(padding, stride, dilation), per_channel=False)
    assert stamped_version(model) == 2
    check(model, "hybrid", [2, 9, 8, 3])


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("stride, dilation", [((1, 1), (1, 1)), ((2, 1), (1, 1)), ((1, 1), (3, 2))], ids=["plain", "strided", "dilated"])
def test_hybrid_per_channel_conv_is_v5_and_matches(padding, stride, dilation):
    model = conv_model("hybrid", [2, 9, 8, 3], [4, 3, 3, 3], conv_params(padding, stride, dilation))
    assert stamped_version(model) == 5
    check(model, "hybrid", [2, 9, 8, 3])


@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1], ids=lambda a: a.name)
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_hybrid_conv_with_fused_activation_matches(activation, per_channel):
    model = conv_model("hybrid", [1, 7, 7, 4], [5, 3, 3, 4], conv_params(activation=activation), per_channel=per_channel)
    check(model, "hybrid", [1, 7, 7, 4])


def test_hybrid_conv_with_equal_per_channel_scales_takes_the_per_tensor_path():
    # Stamped v5 (one scale per channel), but TFLite runs the per-tensor (symmetric) kernel.
    model = conv_model("hybrid", [2, 6, 6, 3], [4, 3, 3, 3], conv_params(), filter_scales=[0.02] * 4)
    assert stamped_version(model) == 5
    check(model, "hybrid", [2, 6, 6, 3])


def test_hybrid_pointwise_conv_of_a_zero_batch_matches():
    model = conv_model("hybrid", [2, 4, 4, 8], [3, 1, 1, 8], conv_params())
    x = random_input("hybrid", [2, 4, 4, 8])
    x[1] = 0.0  # a batch of zeros: scale 1, offset 0
    assert_matches_litert(model, [x])


def test_hybrid_grouped_conv_with_one_filter_scale_is_refused_like_litert():
    model = conv_model("hybrid", [1, 5, 5, 4], [4, 3, 3, 2], conv_params(), per_channel=False)
    with pytest.raises(KernelError, match="CONV_2D"):
        Interpreter(model_content=model).allocate_tensors()


# --- errors --------------------------------------------------------------------------


def test_int8_filter_with_nonzero_zero_point_fails_clearly():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4, 4, 2], T.INT8, quantization=qparams(0.1, 0))
    w = graph.add_constant("w", np.ones([2, 3, 3, 2], np.int8), quantization=qparams([0.1, 0.1], [0, 3]))
    y = graph.add_tensor("y", [1], T.INT8, quantization=qparams(0.1, 0))
    graph.add_operator(BuiltinOperator.CONV_2D, [x, w], [y], conv_params())
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    with pytest.raises(KernelError, match="CONV_2D.*zero point"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_int8_input_without_scale_fails_clearly():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4, 4, 2], T.INT8)
    w = graph.add_constant("w", np.ones([2, 3, 3, 2], np.int8), quantization=qparams([0.1, 0.1], 0))
    y = graph.add_tensor("y", [1], T.INT8, quantization=qparams(0.1, 0))
    graph.add_operator(BuiltinOperator.CONV_2D, [x, w], [y], conv_params(), version=3)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    with pytest.raises(KernelError, match="CONV_2D"):
        Interpreter(model_content=builder.build()).allocate_tensors()


# --- the output stage ----------------------------------------------------------------


@pytest.mark.parametrize("single_rounding", [False, True], ids=["double-rounding", "single-rounding"])
@pytest.mark.parametrize("narrow", [False, True], ids=["int64", "int32-tail"])
def test_requantize_equals_multiply_by_quantized_multiplier(monkeypatch, single_rounding, narrow):
    monkeypatch.setattr(quantization, "SINGLE_ROUNDING", single_rounding)
    rng = np.random.default_rng(7)
    channels = 9
    multipliers = rng.integers(1 << 30, 1 << 31, channels)
    multipliers[0] = 1 << 30
    shifts = -rng.integers(0, 20, channels)
    shifts[1] = 0  # no rounding step
    sums = rng.integers(-(1 << 22), 1 << 22, (400, channels))
    sums[:200] = rng.integers(-3000, 3000, (200, channels))  # many exact halves
    offset = rng.integers(-5000, 5000, channels)
    stage = ConvQuantization(multipliers, shifts, 0, 3, -128, 127, wide=False)
    if narrow:
        stage.accumulator_bound = int(np.abs(sums).max() + np.abs(offset).max())
    got = np.empty(sums.shape, np.int8)
    stage.requantize(sums.astype(np.float64), offset, got)
    want = quantization.multiply_by_quantized_multiplier(sums + offset, multipliers, shifts)
    want = np.clip(want + 3, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, want)


def test_requantize_with_left_shifts_uses_the_shared_function():
    multipliers, shifts = np.array([1 << 30, 1500000000]), np.array([2, 1])
    sums = np.arange(-600, 600).reshape(-1, 2)
    stage = ConvQuantization(multipliers, shifts, 0, 0, -32768, 32767, wide=False)
    got = np.empty(sums.shape, np.int16)
    stage.requantize(sums, np.zeros(2, np.int64), got)
    want = quantization.multiply_by_quantized_multiplier(sums, multipliers, shifts)
    np.testing.assert_array_equal(got, np.clip(want, -32768, 32767))


# --- the float64 output stage bound at allocation (FloatOutputStage) ----------------


def bound_node(model: bytes):
    """The kernel of a one-node model and the step the interpreter calls at invoke."""
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    return interpreter._main.nodes[0].user_data, dict(interpreter._main._steps)[0]


@pytest.mark.parametrize(
    "filter_shape, layout",
    [([6, 3, 3, 4], "folded"), ([24, 3, 3, 16], "scaled"), ([8, 1, 1, 8], "folded"), ([40, 1, 1, 64], "scaled")],
    ids=["3x3-folded", "3x3-scaled", "1x1-folded", "1x1-scaled"],
)
@pytest.mark.parametrize(
    "activation, zero_points, fast",
    [(Act.RELU, (3, -20), True), (Act.NONE, (3, -128), True), (Act.NONE, (-7, 10), False), (Act.RELU6, (0, 0), True)],
    ids=["relu", "zero-point-at-min", "general", "relu6"],
)
def test_int8_conv_output_stage_paths_are_bit_exact(filter_shape, layout, activation, zero_points, fast):
    """Both layouts (scale and constant in a float64 matmul, or a float32 matmul then
    two passes) and both paths (the rounding step skipped when ``low >= z_out``, or
    applied), with many outputs on both sides of the zero point."""
    input_shape = [1, 7, 6, filter_shape[3]]
    model = conv_model(
        "int8", input_shape, filter_shape, conv_params(activation=activation), zero_points=zero_points,
        io_scales=(0.05, 0.5), filter_scales=np.linspace(0.02, 0.08, filter_shape[0]), seed=5,
    )
    kernel, step = bound_node(model)
    assert kernel.output_stage.fast is fast
    assert f"bind_{layout}" in step.__qualname__
    for seed in (1, 2):
        check(model, "int8", input_shape, seed=seed)
    # invoke() on its own (constant folding, delegates) still runs the prepare-time path
    x = random_input("int8", input_shape, seed=3)
    kernel.inputs[0].data[...] = x
    step()
    bound = kernel.outputs[0].data.copy()
    kernel.invoke()
    np.testing.assert_array_equal(kernel.outputs[0].data, bound)


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU], ids=lambda a: a.name)
def test_uint8_conv_output_stage_is_bit_exact(activation):
    """An unsigned output: no sign bit to flip back."""
    model = conv_model(
        "uint8", [1, 6, 5, 3], [5, 3, 3, 3], conv_params(activation=activation), per_channel=False,
        zero_points=(120, 131), io_scales=(0.05, 0.5), filter_scales=[0.05], seed=4,
    )
    kernel, _ = bound_node(model)
    assert kernel.output_stage.fast is (activation == Act.RELU)
    check(model, "uint8", [1, 6, 5, 3])


# --- converter models ----------------------------------------------------------------


def run_model_file(name: str) -> None:
    """Compare a model of tests/data/models (``converter/...`` or ``real/...``); skip,
    saying why, when another op it needs is not implemented yet."""
    model = (MODELS_DIR / f"{name}.tflite").read_bytes()
    inputs = random_inputs(model, seed=3)
    try:
        ours = run_ours(model, inputs)
    except UnsupportedOperatorError as error:
        pytest.skip(f"{name}: another op is not implemented yet: {error}")
    except KernelError as error:
        if not any(op in str(error) for op in ("(CONV_2D", "(DEPTHWISE_CONV_2D", "(TRANSPOSE_CONV")):
            pytest.skip(f"{name}: another op is not implemented yet: {error}")
        raise
    assert_outputs_equal(ours, run_litert(model, inputs))


@pytest.mark.parametrize("name", ["conv2d_dil2_int8", "concat_int8", "mini_mobilenet_int8"])
def test_converter_int8_model_is_bit_exact(name):
    run_model_file(f"converter/{name}")


def test_real_int8_keyword_spotting_model_is_bit_exact():
    # CONV_2D v3 and DEPTHWISE_CONV_2D v3 between QUANTIZE, AVERAGE_POOL_2D,
    # FULLY_CONNECTED and SOFTMAX (see tests/data/models/SOURCES.md)
    run_model_file("real/mltk_keyword_spotting_dscnn_int8")


@pytest.mark.parametrize(
    "input_shape, filter_shape, dilation, layout, expect_column_major",
    [
        ([1, 12, 10, 1], [6, 3, 3, 1], (1, 1), "folded", True),  # window rows of 3 values
        ([1, 10, 16, 4], [64, 3, 3, 4], (2, 2), "scaled", True),  # dilated: one pixel per run
        ([2, 9, 11, 2], [6, 3, 2, 2], (1, 1), "folded", True),
        ([1, 10, 16, 3], [80, 3, 3, 3], (1, 1), "scaled", False),  # window rows of 9 values
    ],
    ids=["1-channel-folded", "dilated-scaled", "batch-folded", "row-major-scaled"],
)
def test_int8_conv_column_major_im2col_is_bit_exact(input_shape, filter_shape, dilation, layout, expect_column_major):
    """im2col into a column-major matrix (``conv2d.column_major``) on both layouts of
    the bound step; ``invoke`` (row-major) gives the same bytes."""
    from backends.cpu.kernels.conv2d import column_major

    model = conv_model(
        "int8", input_shape, filter_shape, conv_params(dilation=dilation), zero_points=(5, -3),
        io_scales=(0.05, 0.5), filter_scales=np.linspace(0.02, 0.08, filter_shape[0]), seed=7,
    )
    kernel, step = bound_node(model)
    assert column_major(kernel.geometry) is expect_column_major
    assert f"bind_{layout}" in step.__qualname__
    check(model, "int8", input_shape, seed=2)
    kernel.inputs[0].data[...] = random_input("int8", input_shape, seed=3)
    step()
    bound = kernel.outputs[0].data.copy()
    kernel.invoke()
    np.testing.assert_array_equal(kernel.outputs[0].data, bound)


@pytest.mark.parametrize(
    "kind, activation, zero_points, output_scale, clamp_type",
    [
        ("int8", Act.NONE, (-7, 10), 0.5, np.int16),  # the rounding step applied
        ("int8", Act.RELU, (3, -20), 0.5, np.int16),  # skipped
        ("uint8", Act.NONE, (120, 131), 0.5, np.int16),
        ("int8", Act.NONE, (-7, 10), 0.02, None),  # |t| may pass 2**15: the float64 clamp
    ],
    ids=["int8-general", "int8-relu", "uint8", "float-clamp"],
)
def test_conv_output_stage_clamps_in_integers_on_large_outputs(kind, activation, zero_points, output_scale, clamp_type):
    """From ``INTEGER_CLAMP_MIN`` outputs the stage stores ``t`` truncated to int16 and
    clamps that (equal to the float clamp then the floor) when every ``t`` fits."""
    from backends.cpu.kernels import _quantized_window

    input_shape, filter_shape = [1, 16, 12, 4], [8, 3, 3, 4]
    model = conv_model(
        kind, input_shape, filter_shape, conv_params(activation=activation), per_channel=kind != "uint8",
        zero_points=zero_points, io_scales=(0.05, output_scale),
        filter_scales=np.linspace(0.02, 0.08, 8) if kind != "uint8" else [0.05], seed=6,
    )
    kernel, _ = bound_node(model)
    stage = kernel.output_stage
    assert stage.clamp_type is clamp_type
    assert stage.t.size >= _quantized_window.INTEGER_CLAMP_MIN
    for seed in (1, 2):
        check(model, kind, input_shape, seed=seed)
