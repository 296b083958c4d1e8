"""CONV_2D on int8 / uint8 tensors on the GPU, bit-exact with TFLite's reference kernels.

Semantics are the CPU kernel's (``backends/cpu/kernels/conv2d_quantized.py``):

- uint8 (version 1, per tensor): ``acc = sum (w - z_w) * (x - z_in) + bias``,
  ``out = clamp(MultiplyByQuantizedMultiplier(acc, m, s) + z_out)``;
- int8 (version 3, filter per channel or per tensor, filter zero points 0): the same with
  one multiplier per output channel.

The multipliers, shifts, zero points and the quantized clamp are the CPU kernel's own
(``ConvQuantization.of``); the requantization is ``backends.cpu.quantization``'s
(:class:`~backends.cpu.quantization.Requantizer`) on device arrays.

How: the input minus its zero point in int32, padded with 0 (what the zero-point padding
of the reference becomes), im2col as the float kernel does, one int32 matrix product
(on a device ``cuda/matmul.cu``'s ``matmul_i32``, which wraps as TFLite's int32
accumulators; in host emulation a float64 matmul, exact below 2**53), then the output
stage in int64. Grouped (version 6), int16 (v4, v8), hybrid (v2, v5) and int4 (v7)
convolutions are not claimed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backends.cpu.kernels._quantized_window import ConvQuantization, zero_point_of
from backends.cpu.kernels._window import WindowGeometry
from backends.gpu.ops.conv import conv_window_reason, padded
from backends.gpu.ops.elementwise import fused_activation, fused_activation_reason
from backends.gpu.ops.quantized_base import QuantizedOp, per_tensor
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


class QuantizedMatmulOp(QuantizedOp):
    """Shared by the quantized CONV_2D and FULLY_CONNECTED: int32 products, the bias, the
    output stage."""

    def prepare_product(self) -> None:
        self.gemm = None
        if not self.device.is_host:
            from backends.gpu.cuda.sources import MatmulCuda

            self.gemm = MatmulCuda(xp=self.xp, module=self.device.module("matmul.cu"))

    def product(self, a: Any, b: Any) -> Any:
        """``a @ b`` of int32 arrays, as int64: matmul_i32 on a device; in host emulation a
        float64 matmul (exact: every sum stays far below 2**53)."""
        if self.gemm is not None:
            return self.gemm(a, b).astype(np.int64)
        return self.xp.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)

    def prepare_bias(self, channels: int) -> None:
        bias = self.inputs[2] if len(self.inputs) > 2 else None
        values = np.zeros(channels, np.int64) if bias is None else np.asarray(bias.data, np.int64).reshape(-1)
        self.bias = self.upload(values, np.int64)
        if bias is not None:
            self.prepared_inputs.add(2)

    def output_stage(self, acc: Any) -> Any:
        """``clamp(MultiplyByQuantizedMultiplier(acc + bias, m[c], s[c]) + z_out)``."""
        q = self.quantization
        scaled = self.rescale(acc + self.bias) + q.output_zero_point
        return self.to_output(scaled, q.low, q.high)


def _filter_reason(node, tensors) -> str | None:
    if len(node.inputs) not in (2, 3) or node.inputs[0] < 0 or node.inputs[1] < 0:
        return f"expected inputs (input, filter[, bias]), got {len(node.inputs)} inputs"
    x, w, out = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
    if not w.is_constant:
        return "the filter must be a constant tensor (the GPU kernel lays it out once, at prepare)"
    if not per_tensor(x) or not per_tensor(out):
        return "the input and the output must be quantized per tensor"
    if x.type == T.INT8 and np.any(np.asarray(w.quantization.zero_point) != 0):
        return "an int8 filter must have zero points 0"
    if x.type == T.UINT8 and not per_tensor(w):
        return "a uint8 filter must be quantized per tensor"
    bias = tensors[node.inputs[2]] if len(node.inputs) > 2 and node.inputs[2] >= 0 else None
    if bias is not None and (bias.type != T.INT32 or not bias.is_constant):
        return f"the bias must be a constant INT32 tensor, got {'a runtime' if not bias.is_constant else bias.type_name} tensor"
    return None


class QuantizedConv2D(QuantizedMatmulOp):
    """CONV_2D v1 (uint8) and v3 (int8, per-channel): strides, dilation, SAME/VALID, bias,
    fused activation as the quantized clamp."""

    ops = {B.CONV_2D: frozenset({1, 3})}
    data_inputs = (0, 1)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = _filter_reason(node, tensors)
        if reason:
            return reason
        x, w = tensors[node.inputs[0]], tensors[node.inputs[1]]
        if len(x.shape) != 4 or len(w.shape) != 4:
            return f"input and filter must be 4-D, got {list(x.shape)} and {list(w.shape)}"
        if x.shape[3] != w.shape[3]:
            return f"grouped convolution ({x.shape[3]} input channels, filter of {w.shape[3]}) is not supported on int8"
        params = node.params
        _, reason = conv_window_reason(x.shape, (w.shape[1], w.shape[2]), params, (params.dilation_h_factor, params.dilation_w_factor))
        return reason or fused_activation_reason(params)

    def prepare(self) -> None:
        x, filters, output = self.inputs[0], self.inputs[1], self.outputs[0]
        params = self.params
        out_channels, kh, kw, channels = filters.shape
        self.geometry = WindowGeometry.of(
            x.shape, (kh, kw), params.padding, (params.stride_h, params.stride_w),
            (params.dilation_h_factor, params.dilation_w_factor),
        )
        self.taps = kh * kw
        self.quantization = q = ConvQuantization.of(x, filters, output, out_channels, fused_activation(params))
        self.rescale = self.requantizer(q.multipliers, q.shifts)
        # OHWI -> [KH*KW*I, O] of (w - z_w), rows in the columns' (ky, kx, i) order.
        w = np.asarray(filters.data, np.int32) - zero_point_of(filters)
        self.weights = self.upload(w.transpose(1, 2, 3, 0).reshape(self.taps * channels, out_channels), np.int32)
        self.prepared_inputs.add(1)
        self.prepare_bias(out_channels)
        self.prepare_product()

    def run(self, args):
        xp, g, q = self.xp, self.geometry, self.quantization
        x = args[0].astype(np.int32) - q.input_zero_point  # zero-point padding becomes 0
        source = padded(xp, x, g)
        rows = g.batch * g.out_h * g.out_w
        if self.taps == 1 and not g.is_padded and g.stride_h == 1 and g.stride_w == 1:
            columns = x.reshape(rows, -1)
        else:
            columns = xp.empty((g.batch, g.out_h, g.out_w, self.taps, x.shape[3]), dtype=np.int32)
            for ky in range(g.filter_h):
                for kx in range(g.filter_w):
                    columns[:, :, :, ky * g.filter_w + kx, :] = source[g.tap_slices(ky, kx)]
            columns = columns.reshape(rows, -1)
        acc = self.product(columns, self.weights)
        return [self.output_stage(acc).reshape(g.batch, g.out_h, g.out_w, -1)]
