"""CONV_2D (float32, versions 1 and 6) against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import MODELS_DIR, assert_matches_litert, assert_outputs_equal, run_litert, run_ours
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding
from schema.params import Conv2DParams

Act = ActivationFunctionType


def conv_model(
    input_shape,
    filter_shape,
    params: Conv2DParams,
    *,
    bias: str = "constant",  # "constant", "zeros", "none" (two inputs)
    filter_is_input: bool = False,
    seed: int = 0,
) -> bytes:
    """One CONV_2D node: input [N, H, W, C], filter [O, KH, KW, C/groups]."""
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", input_shape)
    weights = rng.uniform(-1, 1, filter_shape).astype(np.float32)
    w = graph.add_input("w", filter_shape) if filter_is_input else graph.add_constant("w", weights)
    inputs = [x, w]
    if bias == "constant":
        inputs.append(graph.add_constant("b", rng.uniform(-1, 1, filter_shape[0]).astype(np.float32)))
    elif bias == "zeros":
        inputs.append(graph.add_constant("b", np.zeros(filter_shape[0], np.float32)))
    y = graph.add_tensor("y", [1])
    graph.add_operator(BuiltinOperator.CONV_2D, inputs, [y], params)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()



def conv_params(padding=Padding.SAME, stride=(1, 1), dilation=(1, 1), activation=Act.NONE) -> Conv2DParams:
    return Conv2DParams(
        padding=padding,
        stride_h=stride[0],
        stride_w=stride[1],
        dilation_h_factor=dilation[0],
        dilation_w_factor=dilation[1],
        fused_activation_function=activation,
    )


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("stride", [(1, 1), (2, 2), (2, 1)], ids=str)
@pytest.mark.parametrize("dilation", [(1, 1), (2, 2), (1, 3)], ids=str)
def test_conv_v1_matches_litert(padding, stride, dilation):
    model = conv_model([2, 11, 10, 3], [5, 3, 3, 3], conv_params(padding, stride, dilation))
    assert stamped_version(model) == 1
    assert_matches_litert(model)


@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1], ids=lambda a: a.name)
def test_conv_with_fused_activation_matches_litert(activation):
    model = conv_model([1, 9, 9, 4], [6, 3, 3, 4], conv_params(activation=activation))
    assert_matches_litert(model)


@pytest.mark.parametrize("activation", [Act.TANH, Act.SIGN_BIT], ids=lambda a: a.name)
def test_conv_ignores_fused_tanh_and_sign_bit_like_litert(activation):
    # TFLite's CalculateActivationRange gives these no clamp in float kernels.
    model = conv_model([1, 6, 6, 2], [3, 3, 3, 2], conv_params(activation=activation))
    outputs = assert_matches_litert(model, [np.full([1, 6, 6, 2], 3.0, np.float32)])
    assert np.abs(outputs[0]).max() > 1.0


def test_grouped_conv_is_version_6_and_matches_litert():
    # 6 input channels, filter in-channels 2: 3 groups of 2 output channels each
    model = conv_model([2, 8, 7, 6], [6, 3, 3, 2], conv_params(stride=(2, 1)))
    assert stamped_version(model) == 6
    assert_matches_litert(model)


def test_grouped_pointwise_conv_matches_litert():
    model = conv_model([1, 5, 5, 8], [4, 1, 1, 2], conv_params(padding=Padding.VALID))
    assert stamped_version(model) == 6
    assert_matches_litert(model)


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
def test_pointwise_conv_matches_litert(padding):
    model = conv_model([2, 7, 9, 16], [24, 1, 1, 16], conv_params(padding, activation=Act.RELU))
    assert_matches_litert(model)


def test_strided_pointwise_conv_matches_litert():
    model = conv_model([1, 9, 9, 8], [4, 1, 1, 8], conv_params(Padding.SAME, stride=(2, 2)))
    assert_matches_litert(model)


@pytest.mark.parametrize(
    "input_shape, filter_shape, params, column_major",
    [
        ([2, 9, 10, 1], [5, 3, 3, 1], conv_params(Padding.VALID), True),  # runs of 3 values
        ([1, 16, 16, 4], [8, 3, 3, 4], conv_params(dilation=(2, 2), activation=Act.RELU6), True),  # one pixel
        ([1, 12, 16, 2], [3, 3, 2, 2], conv_params(stride=(2, 1), dilation=(1, 3)), True),
        ([1, 16, 7, 1], [4, 3, 3, 1], conv_params(), False),  # output rows too short
        ([1, 16, 16, 2], [4, 3, 3, 2], conv_params(), False),  # window rows of 6 values
    ],
    ids=["1-channel", "dilated", "dilated-across", "narrow", "long-runs"],
)
def test_column_major_im2col_matches_litert(input_shape, filter_shape, params, column_major):
    """im2col into a column-major matrix (short window runs, long output rows) or the
    row-major one, both through the bound step and ``invoke``."""
    model = conv_model(input_shape, filter_shape, params)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    kernel = interpreter._main.nodes[0].user_data
    assert kernel.column_matrices[0].flags.f_contiguous is column_major
    assert_matches_litert(model)
    x = np.random.default_rng(4).uniform(-1, 1, input_shape).astype(np.float32)
    kernel.inputs[0].data[...] = x
    kernel.invoke()
    np.testing.assert_array_equal(kernel.outputs[0].data, run_ours(model, [x])[0])


def test_filter_larger_than_input_with_same_padding_matches_litert():
    model = conv_model([1, 2, 3, 2], [3, 5, 5, 2], conv_params(Padding.SAME))
    assert_matches_litert(model)


def test_conv_without_bias_equals_litert_with_zero_bias():
    # LiteRT's CONV_2D requires the bias input; ours accepts a node without one, which
    # must give what a zero bias gives.
    x = np.random.default_rng(1).uniform(-2, 2, [1, 8, 8, 3]).astype(np.float32)
    no_bias = conv_model([1, 8, 8, 3], [4, 3, 3, 3], conv_params(stride=(2, 2)), bias="none")
    zero_bias = conv_model([1, 8, 8, 3], [4, 3, 3, 3], conv_params(stride=(2, 2)), bias="zeros")
    assert_outputs_equal(run_ours(no_bias, [x]), run_litert(zero_bias, [x]))


def test_conv_with_filter_as_input_matches_litert():
    rng = np.random.default_rng(2)
    model = conv_model([1, 6, 6, 3], [4, 3, 3, 3], conv_params(), filter_is_input=True)
    inputs = [rng.uniform(-2, 2, [1, 6, 6, 3]).astype(np.float32), rng.uniform(-1, 1, [4, 3, 3, 3]).astype(np.float32)]
    assert_matches_litert(model, inputs)


def test_conv_after_resizing_the_batch_matches_litert():
    model = conv_model([1, 8, 8, 3], [4, 3, 3, 3], conv_params(stride=(2, 2)))
    x = np.random.default_rng(3).uniform(-2, 2, [3, 8, 8, 3]).astype(np.float32)
    assert_matches_litert(model, [x])


def test_conv_runs_twice_with_the_same_result():
    model = conv_model([1, 8, 8, 3], [4, 3, 3, 3], conv_params())
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    x = np.random.default_rng(4).uniform(-2, 2, [1, 8, 8, 3]).astype(np.float32)
    results = []
    for _ in range(2):
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        results.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).copy())
    np.testing.assert_array_equal(results[0], results[1])


def test_converter_model_conv2d_dil2_matches_litert():
    assert_matches_litert(MODELS_DIR / "converter" / "conv2d_dil2_float32.tflite")


def test_input_channels_not_a_multiple_of_filter_channels_fail_clearly():
    model = conv_model([1, 4, 4, 5], [2, 3, 3, 2], conv_params())
    with pytest.raises(KernelError, match="CONV_2D.*multiple"):
        Interpreter(model_content=model).allocate_tensors()


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 2),
    height=st.integers(1, 12),
    width=st.integers(1, 12),
    groups=st.integers(1, 3),
    group_in=st.integers(1, 4),
    group_out=st.integers(1, 3),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from([Padding.SAME, Padding.VALID]),
    activation=st.sampled_from([Act.NONE, Act.RELU, Act.RELU6]),
    seed=st.integers(0, 2**16),
)
def test_conv_property_matches_litert(
    batch, height, width, groups, group_in, group_out, kernel, stride, dilation, padding, activation, seed
):
    span_h = (kernel[0] - 1) * dilation[0] + 1
    span_w = (kernel[1] - 1) * dilation[1] + 1
    if padding == Padding.VALID and (span_h > height or span_w > width):
        return  # no output: not a valid node
    model = conv_model(
        [batch, height, width, groups * group_in],
        [groups * group_out, *kernel, group_in],
        conv_params(padding, stride, dilation, activation),
        seed=seed,
    )
    assert stamped_version(model) == (6 if groups > 1 else 1)
    assert_matches_litert(model, seed=seed)
