"""TinyDSP: an int8-only delegate written from the formulas, as a new author would.

It takes int8 CONV_2D (versions 1 to 3), DEPTHWISE_CONV_2D (1 to 3, depth multiplier 1),
ADD (1 and 2) and FULLY_CONNECTED (1 to 4), and computes them with its own numpy
arithmetic, bit-exact with LiteRT's reference kernels (the facts it needs are in
docs/WRITING_A_DELEGATE.md, and ``interpreter.testing.quantized_reference`` shows them
for any node):

- CONV_2D and DEPTHWISE_CONV_2D rescale their int32 accumulators with the fixed-point
  ``MultiplyByQuantizedMultiplier`` (gemmlowp's two roundings), one multiplier per output
  channel: ``s_in * s_w[c] / s_out`` in double;
- FULLY_CONNECTED rescales in double: ``round(double(acc) * s_in * s_w / s_out)``;
- ADD shifts both inputs left by 20 bits and rescales them to twice the larger input scale.

Its tests (tests/examples/test_tiny_dsp.py) prove every int8 version up to its caps with
the SDK's recipes (``check_delegate(TinyDsp, dtype="int8")``) and run five real int8
models against the CPU.

    litedelegate diff tests/data/models/real/mltk_keyword_spotting_alexa_int8.tflite --delegate examples/tiny_dsp.py:TinyDsp
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from delegate_sdk import DelegateKernel, SimpleDelegate
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding, TensorType

B = BuiltinOperator


# -- the integer arithmetic ---------------------------------------------------------------------------


def quantize_multiplier(real: float) -> tuple[int, int]:
    """(multiplier, shift) with real ~= multiplier * 2**(shift - 31) (TFLite's QuantizeMultiplier)."""
    if real == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real)
    fixed = math.floor(fraction * 2**31 + 0.5)  # fraction > 0: halves away from zero
    if fixed == 2**31:
        fixed, shift = fixed // 2, shift + 1
    return int(fixed), int(shift)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul then RoundingDivideByPOT, in int64."""
    x = x.astype(np.int64) << np.maximum(shift, 0)
    high = (x * multiplier + (1 << 30)) >> 31  # the nudge and a floor: gemmlowp's truncation, both signs
    right = np.maximum(-shift, 0)
    half = (np.int64(1) << right) >> 1
    return (high + half - ((high < 0) & (half > 0))) >> right


def clamp_range(activation: int, scale: float, zero_point: int) -> tuple[int, int]:
    """The fused activation's range in the int8 output's domain."""
    def quantize(value: float) -> int:
        return zero_point + int(round(value / scale))

    if activation == ActivationFunctionType.RELU:
        return max(-128, quantize(0.0)), 127
    if activation == ActivationFunctionType.RELU6:
        return max(-128, quantize(0.0)), min(127, quantize(6.0))
    if activation == ActivationFunctionType.RELU_N1_TO_1:
        return max(-128, quantize(-1.0)), min(127, quantize(1.0))
    return -128, 127


def _scale(tensor) -> np.ndarray:
    return np.asarray(tensor.quantization.scale, np.float64)


def _zero_point(tensor) -> int:
    return int(tensor.quantization.zero_point[0]) if len(tensor.quantization.zero_point) else 0


# -- one function per op: (context, node) -> a function of the input arrays -----------------------------


def _windows(x: np.ndarray, kh: int, kw: int, params, out_shape, pad_value: int) -> np.ndarray:
    """[n, out_h, out_w, kh, kw, c] patches of ``x`` (stride, dilation, SAME or VALID padding)."""
    n, h, w, c = x.shape
    out_h, out_w = out_shape[1], out_shape[2]
    dh, dw = params.dilation_h_factor, params.dilation_w_factor
    top = left = 0
    if params.padding == Padding.SAME:
        top = max((out_h - 1) * params.stride_h + (kh - 1) * dh + 1 - h, 0) // 2
        left = max((out_w - 1) * params.stride_w + (kw - 1) * dw + 1 - w, 0) // 2
    need_h = (out_h - 1) * params.stride_h + (kh - 1) * dh + 1
    need_w = (out_w - 1) * params.stride_w + (kw - 1) * dw + 1
    padded = np.full((n, max(need_h, top + h), max(need_w, left + w), c), pad_value, np.int64)
    padded[:, top:top + h, left:left + w] = x
    rows = (np.arange(out_h) * params.stride_h)[:, None] + np.arange(kh) * dh  # [out_h, kh]
    cols = (np.arange(out_w) * params.stride_w)[:, None] + np.arange(kw) * dw  # [out_w, kw]
    return padded[:, rows[:, None, :, None], cols[None, :, None, :], :]  # [n, out_h, out_w, kh, kw, c]


def _requantize_per_channel(acc, x, w, y, activation) -> np.ndarray:
    in_scale = float(np.float32(_scale(x)[0]))
    reals = in_scale * np.broadcast_to(_scale(w), (acc.shape[-1],)) / float(np.float32(_scale(y)[0]))
    pairs = [quantize_multiplier(float(r)) for r in reals]
    multipliers = np.array([p[0] for p in pairs], np.int64)
    shifts = np.array([p[1] for p in pairs], np.int64)
    low, high = clamp_range(activation, float(_scale(y)[0]), _zero_point(y))
    return np.clip(multiply_by_quantized_multiplier(acc, multipliers, shifts) + _zero_point(y), low, high)


def conv_2d(context, node) -> Callable:
    x, w, b = (context.tensors[t] for t in node.inputs[:3])
    y = context.tensors[node.outputs[0]]
    filters = w.data.astype(np.int64)  # [out_c, kh, kw, in_c]
    bias = b.data.astype(np.int64)

    def run(x_value: np.ndarray) -> np.ndarray:
        patches = _windows(x_value.astype(np.int64) - _zero_point(x), filters.shape[1], filters.shape[2],
                           node.params, y.shape, 0)
        acc = np.einsum("nhwijc,oijc->nhwo", patches, filters) + bias
        return _requantize_per_channel(acc, x, w, y, node.params.fused_activation_function)

    return run


def depthwise_conv_2d(context, node) -> Callable:
    x, w, b = (context.tensors[t] for t in node.inputs[:3])
    y = context.tensors[node.outputs[0]]
    filters = w.data.astype(np.int64)[0]  # [kh, kw, c]
    bias = b.data.astype(np.int64)

    def run(x_value: np.ndarray) -> np.ndarray:
        patches = _windows(x_value.astype(np.int64) - _zero_point(x), filters.shape[0], filters.shape[1],
                           node.params, y.shape, 0)
        acc = np.einsum("nhwijc,ijc->nhwc", patches, filters) + bias
        return _requantize_per_channel(acc, x, w, y, node.params.fused_activation_function)

    return run


def fully_connected(context, node) -> Callable:
    x, w = (context.tensors[t] for t in node.inputs[:2])
    b = context.tensors[node.inputs[2]] if len(node.inputs) > 2 and node.inputs[2] >= 0 else None
    y = context.tensors[node.outputs[0]]
    weights = w.data.astype(np.int64)  # [units, depth]
    bias = b.data.astype(np.int64) if b is not None else 0
    # LiteRT's reference FULLY_CONNECTED rescales in double (no fixed-point multiply)
    real = float(np.float32(_scale(x)[0])) * _scale(w) / float(np.float32(_scale(y)[0]))
    low, high = clamp_range(node.params.fused_activation_function, float(_scale(y)[0]), _zero_point(y))

    def run(x_value: np.ndarray) -> np.ndarray:
        acc = (x_value.reshape(-1, weights.shape[1]).astype(np.int64) - _zero_point(x)) @ weights.T + bias
        scaled = acc.astype(np.float64) * real
        rounded = np.where(scaled >= 0, np.floor(scaled + 0.5), np.ceil(scaled - 0.5)).astype(np.int64)
        return np.clip(rounded + _zero_point(y), low, high).reshape(y.shape)

    return run


def add(context, node) -> Callable:
    a, b = (context.tensors[t] for t in node.inputs)
    y = context.tensors[node.outputs[0]]
    s1, s2, so = (float(np.float32(_scale(t)[0])) for t in (a, b, y))
    twice_max = 2 * max(s1, s2)  # both inputs are rescaled to twice the larger input scale
    left_shift = 20
    m1, m2 = quantize_multiplier(s1 / twice_max), quantize_multiplier(s2 / twice_max)
    mo = quantize_multiplier(twice_max / ((1 << left_shift) * so))
    low, high = clamp_range(node.params.fused_activation_function, so, _zero_point(y))

    def run(a_value: np.ndarray, b_value: np.ndarray) -> np.ndarray:
        left = multiply_by_quantized_multiplier((a_value.astype(np.int64) - _zero_point(a)) << left_shift, *map(np.int64, m1))
        right = multiply_by_quantized_multiplier((b_value.astype(np.int64) - _zero_point(b)) << left_shift, *map(np.int64, m2))
        total = multiply_by_quantized_multiplier(left + right, *map(np.int64, mo))
        return np.clip(total + _zero_point(y), low, high)

    return run


OPS: dict[int, Callable] = {B.CONV_2D: conv_2d, B.DEPTHWISE_CONV_2D: depthwise_conv_2d,
                            B.FULLY_CONNECTED: fully_connected, B.ADD: add}


# -- the delegate ------------------------------------------------------------------------------------


class TinyDspKernel(DelegateKernel):
    """One partition: its nodes in order, on buffers of its own (the "DSP memory")."""

    ops: dict[int, Callable] = OPS

    def prepare(self, context, node) -> None:
        self.steps = []
        for index in self.params.nodes_to_replace:
            inner, registration = context.get_node_and_registration(index)
            self.steps.append((self.ops[registration.builtin_code](context, inner), inner))

    def eval(self, context, node) -> None:
        memory: dict[int, np.ndarray] = {}
        for run, inner in self.steps:
            inputs = [memory[t] if t in memory else context.tensors[t].data for t in inner.inputs
                      if t >= 0 and not context.tensors[t].is_constant]
            memory[inner.outputs[0]] = run(*inputs).astype(np.int8)
        for t in node.outputs:
            context.tensors[t].data[...] = memory[t]


class TinyDsp(SimpleDelegate):
    """int8 CONV_2D <= 3, DEPTHWISE_CONV_2D <= 3, ADD <= 2, FULLY_CONNECTED <= 4."""

    name = "TinyDsp"
    support_table = {B.CONV_2D: 3, B.DEPTHWISE_CONV_2D: 3, B.ADD: 2, B.FULLY_CONNECTED: 4}
    kernel_class = TinyDspKernel

    def node_rejection_reason(self, context, node, registration) -> str | None:
        tensors = [context.tensors[t] if t >= 0 else None for t in node.inputs]
        output = context.tensors[node.outputs[0]]
        if any(t is not None and t.type != TensorType.INT8 and i != 2 for i, t in enumerate(tensors)) or output.type != TensorType.INT8:
            return "TinyDsp computes int8 tensors only (int32 bias)"
        activation = getattr(node.params, "fused_activation_function", ActivationFunctionType.NONE)
        if activation not in (ActivationFunctionType.NONE, ActivationFunctionType.RELU, ActivationFunctionType.RELU6,
                              ActivationFunctionType.RELU_N1_TO_1):
            return f"fused activation {ActivationFunctionType(activation).name} is not supported"
        op = registration.builtin_code
        if op in (B.CONV_2D, B.DEPTHWISE_CONV_2D, B.FULLY_CONNECTED):
            weights = tensors[1]
            if not weights.is_constant or any(int(z) != 0 for z in weights.quantization.zero_point):
                return "weights must be constant and symmetric (zero point 0)"
            if len(tensors) < 3 or tensors[2] is None or tensors[2].type != TensorType.INT32:
                return "an int32 bias is required"
        if op == B.CONV_2D and weights.shape[3] != tensors[0].shape[3]:
            return "grouped convolutions are not supported"
        if op == B.DEPTHWISE_CONV_2D and weights.shape[3] != tensors[0].shape[3]:
            return "depth multipliers other than 1 are not supported"
        if op == B.FULLY_CONNECTED and (getattr(node.params, "keep_num_dims", False) or len(weights.shape) != 2):
            return "keep_num_dims and weights of rank other than 2 are not supported"
        if op == B.ADD and tuple(tensors[0].shape) != tuple(tensors[1].shape):
            return "broadcasting is not supported"
        return None
