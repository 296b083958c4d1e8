"""DEPTHWISE_CONV_2D (float32, versions 1 and 2: dilation) against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import MODELS_DIR, assert_matches_litert
from schema import schema_generated as fb
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding
from schema.model import Model
from schema.params import DepthwiseConv2DParams

Act = ActivationFunctionType
CONVERTER = MODELS_DIR / "converter"


def depthwise_model(
    input_shape,
    kernel,
    multiplier: int,
    params: DepthwiseConv2DParams,
    *,
    bias: bool = True,
    filter_is_input: bool = False,
    seed: int = 0,
) -> bytes:
    """One DEPTHWISE_CONV_2D node: input [N, H, W, C], filter [1, KH, KW, C*M]."""
    rng = np.random.default_rng(seed)
    channels = input_shape[3] * multiplier
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", input_shape)
    filter_shape = [1, *kernel, channels]
    if filter_is_input:
        w = graph.add_input("w", filter_shape)
    else:
        w = graph.add_constant("w", rng.uniform(-1, 1, filter_shape).astype(np.float32))
    inputs = [x, w]
    if bias:
        inputs.append(graph.add_constant("b", rng.uniform(-1, 1, channels).astype(np.float32)))
    y = graph.add_tensor("y", [1])
    graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, inputs, [y], params)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def dw_params(padding=Padding.SAME, stride=(1, 1), dilation=(1, 1), multiplier=1, activation=Act.NONE):
    return DepthwiseConv2DParams(
        padding=padding,
        stride_h=stride[0],
        stride_w=stride[1],
        depth_multiplier=multiplier,
        fused_activation_function=activation,
        dilation_h_factor=dilation[0],
        dilation_w_factor=dilation[1],
    )



@pytest.mark.parametrize("multiplier", [1, 2, 3])
@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("stride", [(1, 1), (2, 2), (1, 2)], ids=str)
def test_depthwise_conv_v1_matches_litert(multiplier, padding, stride):
    model = depthwise_model([2, 9, 8, 3], (3, 3), multiplier, dw_params(padding, stride, multiplier=multiplier))
    assert stamped_version(model) == 1
    assert_matches_litert(model)


@pytest.mark.parametrize("dilation", [(2, 2), (3, 1), (1, 2)], ids=str)
@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
def test_depthwise_conv_with_dilation_is_version_2_and_matches_litert(dilation, padding):
    model = depthwise_model([1, 11, 10, 4], (3, 3), 2, dw_params(padding, (1, 1), dilation, multiplier=2))
    assert stamped_version(model) == 2
    assert_matches_litert(model)


def test_depthwise_conv_with_dilation_2_and_stride_2_matches_litert():
    model = depthwise_model([1, 13, 13, 5], (3, 3), 1, dw_params(Padding.SAME, (2, 2), (2, 2)))
    assert stamped_version(model) == 2
    assert_matches_litert(model)


def test_depthwise_file_without_dilation_fields_is_version_1_and_runs_as_before():
    # Default params (dilation 1) are written the way a pre-version-2 writer wrote them:
    # the options table has no dilation fields at all, and the node is stamped v1.
    model = depthwise_model([1, 8, 8, 4], (3, 3), 1, DepthwiseConv2DParams(stride_w=1, stride_h=1))
    raw = fb.Model.GetRootAs(model, 0).Subgraphs(0).Operators(0)
    options = fb.DepthwiseConv2DOptions()
    table = raw.BuiltinOptions()
    options.Init(table.Bytes, table.Pos)
    assert options._tab.Offset(14) == 0 and options._tab.Offset(16) == 0  # dilation_w/h_factor absent
    operator = Model.from_bytes(model).subgraphs[0].operators[0]
    assert operator.version == 1
    assert (operator.params.dilation_w_factor, operator.params.dilation_h_factor) == (1, 1)
    assert_matches_litert(model)


@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH], ids=lambda a: a.name)
def test_depthwise_conv_with_fused_activation_matches_litert(activation):
    # TANH: TFLite's float kernels treat it as no clamp (CalculateActivationRange).
    model = depthwise_model([1, 7, 7, 3], (3, 3), 1, dw_params(activation=activation))
    assert_matches_litert(model, [np.random.default_rng(5).uniform(-3, 3, [1, 7, 7, 3]).astype(np.float32)])


def test_depthwise_conv_without_bias_matches_litert():
    model = depthwise_model([1, 7, 6, 4], (3, 3), 2, dw_params(multiplier=2), bias=False)
    assert_matches_litert(model)


@pytest.mark.parametrize("channels", [64, 96], ids=lambda c: f"{c}ch")
def test_depthwise_conv_with_many_channels_matches_litert(channels):
    # 64 channels and more take the path without the im2col copy.
    model = depthwise_model([1, 9, 9, channels], (3, 3), 1, dw_params(Padding.SAME, (2, 2), (2, 1)))
    assert_matches_litert(model)


@pytest.mark.parametrize(
    "input_shape, multiplier, flat",
    [([1, 9, 7, 8], 1, True), ([2, 6, 6, 3], 2, True), ([1, 9, 7, 24], 1, False), ([1, 3, 3, 8], 1, False)],
    ids=["flat", "flat-batch2-x2", "long-rows", "wide-padding"],
)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU6], ids=lambda a: a.name)
def test_depthwise_conv_flat_and_row_layouts_match_litert(input_shape, multiplier, flat, bias, activation):
    """Stride 1: all rows as one run (FlatTaps, short rows) or one run per row; the
    bound step and invoke() on its own give the same bits."""
    model = depthwise_model(
        input_shape, (3, 3), multiplier, dw_params(multiplier=multiplier, activation=activation), bias=bias
    )
    x = np.random.default_rng(8).uniform(-4, 4, input_shape).astype(np.float32)
    assert_matches_litert(model, [x])
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    kernel, step = interpreter._main.nodes[0].user_data, dict(interpreter._main._steps)[0]
    assert (kernel.flat is not None) is flat
    kernel.inputs[0].data[...] = x
    step()
    bound = kernel.outputs[0].data.copy()
    kernel.invoke()
    np.testing.assert_array_equal(kernel.outputs[0].data, bound)


def test_depthwise_conv_with_filter_as_input_matches_litert():
    rng = np.random.default_rng(6)
    model = depthwise_model([1, 6, 6, 2], (3, 3), 2, dw_params(multiplier=2), filter_is_input=True)
    inputs = [rng.uniform(-2, 2, [1, 6, 6, 2]).astype(np.float32), rng.uniform(-1, 1, [1, 3, 3, 4]).astype(np.float32)]
    assert_matches_litert(model, inputs)


def test_depthwise_conv_after_resizing_the_input_matches_litert():
    model = depthwise_model([1, 8, 8, 3], (3, 3), 1, dw_params(dilation=(2, 2)))
    x = np.random.default_rng(7).uniform(-2, 2, [2, 11, 5, 3]).astype(np.float32)
    assert_matches_litert(model, [x])


@pytest.mark.parametrize(
    "name", ["dwconv_dil1_float32", "dwconv_dil2_float32", "dwconv_dil2_odd_float32"]
)
def test_converter_model_matches_litert(name):
    assert_matches_litert(CONVERTER / f"{name}.tflite")


def test_filter_channels_not_a_multiple_of_input_channels_fail_clearly():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4, 4, 2])
    w = graph.add_constant("w", np.ones([1, 3, 3, 3], np.float32))
    y = graph.add_tensor("y", [1, 4, 4, 3])
    graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, [x, w], [y], dw_params())
    graph.add_output(y)
    with pytest.raises(KernelError, match="DEPTHWISE_CONV_2D.*multiple"):
        Interpreter(model_content=builder.build()).allocate_tensors()


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 2),
    height=st.integers(1, 13),
    width=st.integers(1, 13),
    channels=st.integers(1, 5),
    multiplier=st.integers(1, 3),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    stride=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dilation=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from([Padding.SAME, Padding.VALID]),
    activation=st.sampled_from([Act.NONE, Act.RELU, Act.RELU6]),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_depthwise_conv_property_matches_litert(
    batch, height, width, channels, multiplier, kernel, stride, dilation, padding, activation, bias, seed
):
    span_h = (kernel[0] - 1) * dilation[0] + 1
    span_w = (kernel[1] - 1) * dilation[1] + 1
    if padding == Padding.VALID and (span_h > height or span_w > width):
        return  # no output: not a valid node
    model = depthwise_model(
        [batch, height, width, channels],
        kernel,
        multiplier,
        dw_params(padding, stride, dilation, multiplier, activation),
        bias=bias,
        seed=seed,
    )
    assert stamped_version(model) == (1 if dilation == (1, 1) else 2)
    assert_matches_litert(model, seed=seed)
