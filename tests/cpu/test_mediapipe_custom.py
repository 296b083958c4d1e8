"""MediaPipe's custom op ``Convolution2DTransposeBias`` on the CPU.

LiteRT has no kernel for it, so the oracle runs the equivalent builtin model: a
TRANSPOSE_CONV with a bias (version 3) with the same weights, the output shape the
custom op computes and the same padding (an unknown TfLitePadding as VALID). A direct
port of MediaPipe's loops (``mediapipe/util/tflite/operations/transpose_conv_bias.cc``)
checks the option layout and the output-size arithmetic independently of LiteRT.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from backends.cpu import builtin_op_resolver
from backends.cpu.kernels.mediapipe_custom import (
    CONVOLUTION_2D_TRANSPOSE_BIAS,
    CustomOptionsError,
    TFLITE_PADDING_SAME,
    TFLITE_PADDING_UNKNOWN,
    TFLITE_PADDING_VALID,
    TransposeConvBiasOptions,
    TransposeConvGeometry,
)
from delegate_sdk.context import KernelError
from delegate_sdk.op_resolver import UnsupportedOperatorError
from interpreter import Interpreter
from oracle import assert_outputs_equal, run_litert, run_ours
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator, Padding
from schema.model import Model
from schema.params import TransposeConvParams

NAME = CONVOLUTION_2D_TRANSPOSE_BIAS


def weights_and_bias(input_shape, kernel, out_channels, seed=0):
    rng = np.random.default_rng(seed)
    weights = rng.uniform(-1, 1, (out_channels, *kernel, input_shape[3])).astype(np.float32)
    bias = rng.uniform(-1, 1, out_channels).astype(np.float32)
    return weights, bias


def custom_model(input_shape, weights, bias, options: bytes, *, version: int = 1, weights_are_input: bool = False,
                 output_shape=(1,)) -> bytes:
    """One ``Convolution2DTransposeBias`` node: (input, weights, bias) -> output."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(input_shape))
    w = graph.add_input("w", list(weights.shape)) if weights_are_input else graph.add_constant("w", weights)
    b = graph.add_constant("b", bias)
    y = graph.add_tensor("y", list(output_shape))
    graph.add_operator(NAME, [x, w, b], [y], version=version, custom_options=options)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def builtin_equivalent(input_shape, weights, bias, options: TransposeConvBiasOptions) -> bytes:
    """TRANSPOSE_CONV v3 with the same weights and bias, the output shape the custom op computes."""
    geometry = TransposeConvGeometry.of(input_shape, weights.shape, options)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(input_shape))
    shape = graph.add_constant("shape", np.array(geometry.output_shape, np.int32))
    w = graph.add_constant("w", weights)
    b = graph.add_constant("b", bias)
    y = graph.add_tensor("y", list(geometry.output_shape))
    padding = Padding.SAME if options.padding == TFLITE_PADDING_SAME else Padding.VALID
    params = TransposeConvParams(padding=padding, stride_h=options.stride_h, stride_w=options.stride_w)
    graph.add_operator(BuiltinOperator.TRANSPOSE_CONV, [shape, w, x, b], [y], params)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    model = builder.build()
    assert Model.from_bytes(model).subgraphs[0].operators[0].version == 3
    return model


def mediapipe_reference(x, weights, bias, padding: int, stride_w: int, stride_h: int) -> np.ndarray:
    """MediaPipe's Prepare and Eval, loop for loop (float64 sums; tolerance covers the order)."""
    batches, in_h, in_w, in_c = x.shape
    out_c, kh, kw, _ = weights.shape
    pad_h = pad_w = 0
    if padding == TFLITE_PADDING_SAME:
        pad_h = max(0, kh - (in_h - 1) % stride_h - 1)
        pad_w = max(0, kw - (in_w - 1) % stride_w - 1)
    out_h = stride_h * (in_h - 1) + kh - pad_h
    out_w = stride_w * (in_w - 1) + kw - pad_w
    out = np.empty((batches, out_h, out_w, out_c), np.float64)
    out[...] = bias
    for n in range(batches):
        for iy in range(in_h):
            for ix in range(in_w):
                for ic in range(in_c):
                    oy0, ox0 = iy * stride_h - pad_h // 2, ix * stride_w - pad_w // 2
                    for fy in range(kh):
                        for fx in range(kw):
                            oy, ox = oy0 + fy, ox0 + fx
                            if 0 <= oy < out_h and 0 <= ox < out_w:
                                out[n, oy, ox, :] += x[n, iy, ix, ic] * weights[:, fy, fx, ic].astype(np.float64)
    return out.astype(np.float32)


CASES = [  # input shape, kernel, out channels, stride (h, w), TfLitePadding
    ([1, 4, 5, 3], (3, 3), 2, (2, 2), TFLITE_PADDING_SAME),
    ([2, 5, 4, 2], (4, 4), 3, (2, 2), TFLITE_PADDING_SAME),
    ([1, 3, 3, 4], (2, 2), 5, (2, 2), TFLITE_PADDING_SAME),
    ([1, 4, 4, 2], (3, 2), 2, (3, 2), TFLITE_PADDING_SAME),
    ([1, 5, 5, 3], (1, 1), 2, (1, 1), TFLITE_PADDING_SAME),
    ([1, 4, 5, 3], (3, 3), 2, (2, 2), TFLITE_PADDING_VALID),
    ([2, 3, 4, 2], (2, 3), 3, (1, 2), TFLITE_PADDING_VALID),
    ([1, 4, 4, 2], (3, 3), 2, (2, 2), TFLITE_PADDING_UNKNOWN),
]
IDS = [f"{'x'.join(map(str, c[0]))}-k{c[1][0]}{c[1][1]}-s{c[3][0]}{c[3][1]}-p{c[4]}" for c in CASES]


@pytest.mark.parametrize("input_shape, kernel, out_channels, stride, padding", CASES, ids=IDS)
def test_matches_litert_on_the_equivalent_transpose_conv(input_shape, kernel, out_channels, stride, padding):
    weights, bias = weights_and_bias(input_shape, kernel, out_channels)
    options = TransposeConvBiasOptions(padding, stride_w=stride[1], stride_h=stride[0])
    model = custom_model(input_shape, weights, bias, options.to_bytes())
    reference = builtin_equivalent(input_shape, weights, bias, options)
    rng = np.random.default_rng(1)
    for _ in range(2):
        x = rng.uniform(-2, 2, input_shape).astype(np.float32)
        ours = run_ours(model, [x])
        assert_outputs_equal(ours, run_litert(reference, [x]))
        np.testing.assert_allclose(ours[0], mediapipe_reference(x, weights, bias, padding, stride[1], stride[0]), rtol=1e-5, atol=1e-5)


def test_output_shape_is_mediapipes():
    # SAME, stride 2, kernel 3: 4 rows -> 8, 5 columns -> 9 (MediaPipe's pad = K - (in-1) % s - 1).
    weights, bias = weights_and_bias([1, 4, 5, 3], (3, 3), 2)
    options = TransposeConvBiasOptions(TFLITE_PADDING_SAME, 2, 2)
    interpreter = Interpreter(model_content=custom_model([1, 4, 5, 3], weights, bias, options.to_bytes()))
    interpreter.allocate_tensors()
    assert tuple(interpreter.get_output_details()[0]["shape"]) == (1, 8, 9, 2)
    valid = Interpreter(model_content=custom_model([1, 4, 5, 3], weights, bias, TransposeConvBiasOptions(TFLITE_PADDING_VALID, 2, 2).to_bytes()))
    valid.allocate_tensors()
    assert tuple(valid.get_output_details()[0]["shape"]) == (1, 9, 11, 2)


def test_options_are_a_tflite_transpose_conv_params_struct():
    # What the MLIR converter writes for padding SAME, stride_w 2, stride_h 1.
    options = TransposeConvBiasOptions.parse(bytes([1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0]))
    assert (options.padding_name, options.stride_w, options.stride_h) == ("SAME", 2, 1)
    # Later fields of the struct (activation, bias type) are there in newer files: ignored.
    longer = struct.pack("<iiiii", 2, 3, 2, 1, 0)
    assert TransposeConvBiasOptions.parse(longer) == TransposeConvBiasOptions(TFLITE_PADDING_VALID, 3, 2)


@pytest.mark.parametrize(
    "options, message",
    [
        (None, "got 0 bytes"),
        (struct.pack("<ii", 1, 2), "got 8 bytes"),
        (struct.pack("<iii", 7, 2, 2), "padding 7 is not a TfLitePadding"),
        (struct.pack("<iii", 1, 0, 2), "strides must be positive"),
    ],
    ids=["none", "short", "bad-padding", "zero-stride"],
)
def test_bad_options_fail_clearly(options, message):
    with pytest.raises(CustomOptionsError, match=message):
        TransposeConvBiasOptions.parse(options)
    weights, bias = weights_and_bias([1, 3, 3, 2], (3, 3), 2)
    with pytest.raises(KernelError, match=f"{NAME} v1: .*{message}"):
        Interpreter(model_content=custom_model([1, 3, 3, 2], weights, bias, options)).allocate_tensors()


def test_mismatched_bias_fails_clearly():
    weights, _ = weights_and_bias([1, 3, 3, 2], (3, 3), 2)
    model = custom_model([1, 3, 3, 2], weights, np.zeros(3, np.float32), TransposeConvBiasOptions(1, 2, 2).to_bytes())
    with pytest.raises(KernelError, match="bias has 3 elements, expected 2"):
        Interpreter(model_content=model).allocate_tensors()


def test_runtime_weights_match_constant_weights():
    weights, bias = weights_and_bias([1, 4, 4, 3], (3, 3), 2)
    options = TransposeConvBiasOptions(TFLITE_PADDING_SAME, 2, 2).to_bytes()
    x = np.random.default_rng(3).uniform(-2, 2, [1, 4, 4, 3]).astype(np.float32)
    constant = run_ours(custom_model([1, 4, 4, 3], weights, bias, options), [x])
    runtime = run_ours(custom_model([1, 4, 4, 3], weights, bias, options, weights_are_input=True), [x, weights])
    np.testing.assert_array_equal(runtime[0], constant[0])


def test_the_builtin_resolver_registers_it_as_a_custom_op():
    resolver = builtin_op_resolver()
    assert resolver.custom_versions(NAME) == (1,)
    registration = resolver.find_custom(NAME, 1)
    assert registration.builtin_code == BuiltinOperator.CUSTOM and registration.op_name == NAME


def test_a_version_the_runtime_lacks_is_refused_naming_it():
    weights, bias = weights_and_bias([1, 3, 3, 2], (3, 3), 2)
    model = custom_model([1, 3, 3, 2], weights, bias, TransposeConvBiasOptions(1, 2, 2).to_bytes(), version=2)
    with pytest.raises(UnsupportedOperatorError, match=f"{NAME} version 2: this runtime supports {NAME} versions 1"):
        Interpreter(model_content=model)
