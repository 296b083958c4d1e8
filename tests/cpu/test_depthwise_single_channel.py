"""Quantized DEPTHWISE_CONV_2D of one input channel (an ordinary convolution: im2col
and one BLAS call, ``SingleChannelMatmul``) against LiteRT's reference kernels
(``BUILTIN_REF``), bit for bit: through ``invoke`` and through the step bound at
allocation, over paddings, strides, dilations, multipliers, both im2col layouts
(column-major for wide output rows, row-major for narrow ones), uint8 and int8."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import random_quantized_input as random_input
from test_depthwise_conv2d_quantized import bound_node, check, dw_model, dw_params

from schema.enums import ActivationFunctionType as Act
from schema.enums import Padding


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("stride", [(1, 1), (2, 2), (1, 3)], ids=str)
@pytest.mark.parametrize("dilation", [(1, 1), (2, 3)], ids=str)
@pytest.mark.parametrize("multiplier", [2, 8])
@pytest.mark.parametrize(
    "input_shape, window", [([1, 23, 21, 1], (5, 5)), ([2, 30, 7, 1], (3, 3))], ids=["wide-rows", "narrow-rows"]
)
def test_a_single_channel_int8_depthwise_is_bit_exact(input_shape, window, padding, stride, dilation, multiplier):
    params = dw_params(multiplier, padding, stride, dilation, activation=Act.RELU)
    model = dw_model("int8", input_shape, window, params, seed=multiplier)
    kernel, step = bound_node(model)
    assert kernel.single_channel is not None and "run_single_channel" in step.__qualname__
    wide = kernel.single_channel.columns.strides[0] == kernel.single_channel.columns.itemsize
    assert wide is (kernel.single_channel.geometry.out_w >= 8)
    for seed in (1, 2):
        check(model, "int8", input_shape, seed=seed)
    # invoke() on its own (constant folding, delegates) gives the bound step's bits
    kernel.inputs[0].data[...] = random_input("int8", input_shape, seed=3)
    step()
    bound = kernel.outputs[0].data.copy()
    kernel.invoke()
    np.testing.assert_array_equal(kernel.outputs[0].data, bound)


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU6], ids=lambda a: a.name)
def test_a_single_channel_uint8_depthwise_is_bit_exact(activation):
    params = dw_params(4, Padding.SAME, (2, 2), activation=activation)
    model = dw_model("uint8", [1, 17, 19, 1], (3, 3), params, per_channel=False, seed=3)
    kernel, _ = bound_node(model)
    assert kernel.single_channel is not None
    check(model, "uint8", [1, 17, 19, 1])


def test_a_multiplier_of_one_or_several_channels_keeps_the_taps_einsum():
    for shape, multiplier in (([1, 9, 9, 1], 1), ([1, 9, 9, 2], 4)):
        kernel, _ = bound_node(dw_model("int8", shape, (3, 3), dw_params(multiplier)))
        assert kernel.single_channel is None
