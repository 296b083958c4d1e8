"""Convolutions and FULLY_CONNECTED with int4 / int2 weights, against LiteRT bit for bit:
CONV_2D v7 and DEPTHWISE_CONV_2D v7 (int8 activations, int4 filter), FULLY_CONNECTED v10
(int8 x int4), v13 (int16 x int4) and v14 (int2 weights, int8 or int16 activations).

The weights are constants packed in the file (``schema.packed``) and held one value an
element: TFLite unpacks them into int8 before its int8-weights kernels, so the arithmetic
is theirs (backends/cpu/kernels/conv2d_quantized.py, depthwise_conv2d_quantized.py,
fully_connected_quantized.py). DEPTHWISE_CONV_2D v7 is compared with LiteRT's default kernels
(its reference resolver stops at v6); the others with its reference kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import assert_invokes_match_litert
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType as T
from schema.params import Conv2DParams, DepthwiseConv2DParams, FullyConnectedParams

RANGES = {T.INT4: (-8, 7), T.INT2: (-2, 1)}


def layer(op, x_shape, w_shape, out_shape, params, weights_type=T.INT4, activations=np.int8, per_channel=True,
          weights_as_input=False) -> bytes:
    rng = np.random.default_rng(7)
    builder = ModelBuilder()
    graph = builder.subgraph()
    int16 = activations == np.int16
    x = graph.add_input("x", list(x_shape), activations, quantization=quantization(0.05, 0 if int16 else 3))
    axis = 3 if op == B.DEPTHWISE_CONV_2D else 0
    channels = w_shape[axis]
    scales = rng.uniform(0.01, 0.05, channels).astype(np.float32) if per_channel else np.float32([0.03])
    w_q = quantization(scales, [0] * scales.size, axis if per_channel else 0)
    low, high = RANGES[weights_type]
    values = rng.integers(low, high, w_shape, endpoint=True).astype(np.int8)
    if weights_as_input:
        w = graph.add_input("w", list(w_shape), weights_type, quantization=w_q)
    else:
        w = graph.add_constant("w", values, dtype=weights_type, quantization=w_q)
    bias_scales = (np.float32(0.05) * np.broadcast_to(scales, (channels,))).astype(np.float32)
    bias = graph.add_constant("b", rng.integers(-500, 500, channels).astype(np.int64 if int16 else np.int32),
                              quantization=quantization(bias_scales, [0] * channels, 0))
    y = graph.add_tensor("y", list(out_shape), activations, quantization=quantization(0.1, 0 if int16 else -2))
    graph.add_operator(op, [x, w, bias], [y], params)
    graph.add_output(y)
    return builder.build(), values


def inputs_for(model_shape, activations, seed=1) -> np.ndarray:
    info = np.iinfo(activations)
    low, high = max(int(info.min), -3000), min(int(info.max), 3000)
    return np.random.default_rng(seed).integers(low, high, model_shape, endpoint=True).astype(activations)


def assert_matches(model, feeds, resolver="BUILTIN_REF"):
    assert_invokes_match_litert(model, [feeds], rtol=0, atol=0, resolver=resolver)


CONV = Conv2DParams(stride_w=1, stride_h=1)


@pytest.mark.parametrize("per_channel", [True, False], ids=["per-channel", "per-tensor"])
def test_conv_2d_with_an_int4_filter_is_v7_and_matches_litert(per_channel):
    model, _ = layer(B.CONV_2D, (1, 6, 6, 3), (4, 3, 3, 3), (1, 6, 6, 4), CONV, per_channel=per_channel)
    assert stamped_version(model) == 7
    assert_matches(model, [inputs_for((1, 6, 6, 3), np.int8)])


@pytest.mark.parametrize("multiplier", [1, 2])
def test_depthwise_conv_2d_with_an_int4_filter_is_v7_and_matches_litert_default_kernels(multiplier):
    params = DepthwiseConv2DParams(stride_w=1, stride_h=1, depth_multiplier=multiplier)
    model, _ = layer(B.DEPTHWISE_CONV_2D, (1, 6, 6, 3), (1, 3, 3, 3 * multiplier), (1, 6, 6, 3 * multiplier), params)
    assert stamped_version(model) == 7
    assert_matches(model, [inputs_for((1, 6, 6, 3), np.int8)], resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")


FC_CASES = [(T.INT4, np.int8, 10), (T.INT4, np.int16, 13), (T.INT2, np.int8, 14), (T.INT2, np.int16, 14)]


@pytest.mark.parametrize("per_channel", [True, False], ids=["per-channel", "per-tensor"])
@pytest.mark.parametrize("weights_type, activations, version", FC_CASES,
                         ids=lambda v: getattr(v, "name", None) or (np.dtype(v).name if isinstance(v, type) else str(v)))
def test_fully_connected_with_sub_byte_weights_is_stamped_as_tflite_does_and_matches_litert(
        weights_type, activations, version, per_channel):
    model, _ = layer(B.FULLY_CONNECTED, (3, 10), (5, 10), (3, 5), FullyConnectedParams(), weights_type, activations,
                     per_channel)
    assert stamped_version(model) == version
    assert_matches(model, [inputs_for((3, 10), activations)])


def test_fully_connected_with_int4_weights_fed_at_run_time_matches_litert():
    # LiteRT's set_tensor takes int4 values in [-8, 7], as int8; so does ours.
    model, values = layer(B.FULLY_CONNECTED, (3, 10), (5, 10), (3, 5), FullyConnectedParams(), weights_as_input=True)
    assert_matches(model, [inputs_for((3, 10), np.int8), values])


def test_conv_2d_with_int16_activations_and_an_int4_filter_fails_naming_the_types_tflite_takes():
    # TFLite has no 16x4 convolution (its rules give v7 to int8 x int4 only).
    model, _ = layer(B.CONV_2D, (1, 4, 4, 2), (2, 3, 3, 2), (1, 4, 4, 2), CONV, activations=np.int16)
    with pytest.raises(KernelError, match="CONV_2D v1: filter 'w' has type INT4; this kernel supports INT8"):
        Interpreter(model_content=model).allocate_tensors()
