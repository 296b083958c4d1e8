"""TRANSPOSE_CONV (float32, versions 1, 3 and 4) against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import assert_matches_litert
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding
from schema.params import TransposeConvParams

Act = ActivationFunctionType


def transpose_conv_model(
    input_shape,
    kernel,
    out_channels: int,
    output_hw,
    params: TransposeConvParams,
    *,
    bias: bool = False,
    shape_is_input: bool = False,
    weights_are_input: bool = False,
    seed: int = 0,
) -> bytes:
    """One TRANSPOSE_CONV node: (output_shape, weights [O, KH, KW, I], input [N, H, W, I], bias?)."""
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", input_shape)
    output_shape = np.array([input_shape[0], *output_hw, out_channels], np.int32)
    shape = graph.add_input("shape", [4], np.int32) if shape_is_input else graph.add_constant("shape", output_shape)
    weights_shape = [out_channels, *kernel, input_shape[3]]
    if weights_are_input:
        w = graph.add_input("w", weights_shape)
    else:
        w = graph.add_constant("w", rng.uniform(-1, 1, weights_shape).astype(np.float32))
    inputs = [shape, w, x]
    if bias:
        inputs.append(graph.add_constant("b", rng.uniform(-1, 1, out_channels).astype(np.float32)))
    y = graph.add_tensor("y", [int(d) for d in output_shape])
    graph.add_operator(BuiltinOperator.TRANSPOSE_CONV, inputs, [y], params)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def tc_params(padding=Padding.SAME, stride=(1, 1), activation=Act.NONE) -> TransposeConvParams:
    return TransposeConvParams(
        padding=padding, stride_h=stride[0], stride_w=stride[1], fused_activation_function=activation
    )



def natural_output_hw(input_hw, kernel, stride, padding):
    """The output size whose CONV_2D (same kernel, stride, padding) gives back input_hw."""
    if padding == Padding.SAME:
        return tuple(i * s for i, s in zip(input_hw, stride))
    return tuple((i - 1) * s + k for i, k, s in zip(input_hw, kernel, stride))


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("stride", [(1, 1), (2, 2), (3, 2)], ids=str)
@pytest.mark.parametrize("kernel", [(3, 3), (2, 4), (1, 1)], ids=str)
def test_transpose_conv_v1_matches_litert(padding, stride, kernel):
    output_hw = natural_output_hw((5, 4), kernel, stride, padding)
    model = transpose_conv_model([2, 5, 4, 3], kernel, 4, output_hw, tc_params(padding, stride))
    assert stamped_version(model) == 1
    assert_matches_litert(model)


def test_transpose_conv_with_bias_is_version_3_and_matches_litert():
    model = transpose_conv_model([1, 4, 4, 2], (3, 3), 3, (8, 8), tc_params(stride=(2, 2)), bias=True)
    assert stamped_version(model) == 3
    assert_matches_litert(model)


@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1], ids=lambda a: a.name)
def test_transpose_conv_with_fused_activation_is_version_4_and_matches_litert(activation, bias):
    params = tc_params(stride=(2, 2), activation=activation)
    model = transpose_conv_model([1, 4, 5, 2], (3, 3), 3, (8, 10), params, bias=bias)
    assert stamped_version(model) == 4
    assert_matches_litert(model)


@pytest.mark.parametrize("output_hw", [(7, 7), (7, 8), (8, 7)], ids=str)
def test_transpose_conv_with_an_output_size_other_than_the_natural_one_matches_litert(output_hw):
    # With stride 2, 7 and 8 both give back 4 (odd padding totals put the extra pixel after).
    model = transpose_conv_model([1, 4, 4, 2], (3, 3), 2, output_hw, tc_params(Padding.SAME, (2, 2)), bias=True)
    assert_matches_litert(model)


def test_transpose_conv_valid_with_an_output_one_larger_than_natural_matches_litert():
    # VALID, stride 2: a CONV_2D of 12 rows gives 5 like one of 11; row 11 receives no patch.
    model = transpose_conv_model([1, 5, 5, 2], (3, 3), 2, (12, 11), tc_params(Padding.VALID, (2, 2)), bias=True)
    assert_matches_litert(model)


def test_transpose_conv_with_an_output_shape_that_does_not_match_the_input_fails_clearly():
    # A SAME stride-2 CONV_2D of 9 rows gives 5, not the input's 4 (LiteRT refuses it too).
    model = transpose_conv_model([1, 4, 4, 2], (3, 3), 2, (9, 8), tc_params(Padding.SAME, (2, 2)))
    with pytest.raises(KernelError, match="TRANSPOSE_CONV.*does not match the input"):
        Interpreter(model_content=model).allocate_tensors()


def test_transpose_conv_with_output_shape_as_input_matches_litert():
    model = transpose_conv_model([1, 3, 4, 2], (3, 3), 2, (6, 8), tc_params(stride=(2, 2)), shape_is_input=True)
    x = np.random.default_rng(1).uniform(-2, 2, [1, 3, 4, 2]).astype(np.float32)
    for output_hw in [(6, 8), (5, 7)]:
        assert_matches_litert(model, [x, np.array([1, *output_hw, 2], np.int32)])


def test_transpose_conv_with_an_output_shape_input_of_other_channels_fails_naming_them():
    model = transpose_conv_model([1, 3, 4, 2], (3, 3), 2, (6, 8), tc_params(stride=(2, 2)), shape_is_input=True)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    x = np.zeros([1, 3, 4, 2], np.float32)
    for detail, value in zip(interpreter.get_input_details(), [x, np.array([1, 6, 8, 5], np.int32)]):
        interpreter.set_tensor(detail["index"], value)
    with pytest.raises(KernelError, match=r"TRANSPOSE_CONV v1.*output_shape \[1, 6, 8, 5\].*batch 1 and the filter's 2 output channels"):
        interpreter.invoke()


def test_transpose_conv_with_weights_as_input_matches_litert():
    rng = np.random.default_rng(2)
    model = transpose_conv_model([1, 3, 3, 2], (2, 2), 3, (6, 6), tc_params(stride=(2, 2)), weights_are_input=True)
    inputs = [rng.uniform(-2, 2, [1, 3, 3, 2]).astype(np.float32), rng.uniform(-1, 1, [3, 2, 2, 2]).astype(np.float32)]
    assert_matches_litert(model, inputs)


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 2),
    height=st.integers(1, 6),
    width=st.integers(1, 6),
    in_channels=st.integers(1, 4),
    out_channels=st.integers(1, 4),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from([Padding.SAME, Padding.VALID]),
    activation=st.sampled_from([Act.NONE, Act.RELU]),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_transpose_conv_property_matches_litert(
    batch, height, width, in_channels, out_channels, kernel, stride, padding, activation, bias, seed
):
    output_hw = natural_output_hw((height, width), kernel, stride, padding)
    model = transpose_conv_model(
        [batch, height, width, in_channels], kernel, out_channels, output_hw,
        tc_params(padding, stride, activation), bias=bias, seed=seed,
    )
    assert_matches_litert(model, seed=seed)
