"""DEPTHWISE_CONV_2D on int8 / uint8 tensors on the GPU, bit-exact with TFLite's reference
kernels.

Semantics are the CPU kernel's (``backends/cpu/kernels/depthwise_conv2d_quantized.py``):
input ``[N, H, W, C]``, filter ``[1, KH, KW, C*M]`` (the depth multiplier M from the
shapes), output channel ``o = c*M + m`` reading input channel ``c``; strides, dilation,
SAME/VALID padding (positions outside the input contribute nothing);

- uint8 (versions 1 and 2, per tensor; v2 is a dilated uint8 node):
  ``acc = sum (w - z_w) * (x - z_in) + bias``,
  ``out = clamp(MultiplyByQuantizedMultiplier(acc, m, s) + z_out)``;
- int8 (version 3, filter per channel along dimension 3 or per tensor, zero points 0):
  the same with one multiplier per output channel.

The multipliers, shifts, zero points and the quantized clamp are the CPU kernels' own
(``ConvQuantization.of``), the requantization ``backends.cpu.quantization``'s
(:class:`~backends.cpu.quantization.Requantizer`) on device arrays, through
``QuantizedMatmulOp.output_stage`` (shared with the quantized CONV_2D: the bias, the
output stage).

How: the input minus its zero point in int32, padded with 0 (what the zero-point padding
of the reference becomes); a loop over the KH*KW taps accumulating
``slice[..., c, None] * w[ky, kx, c, :]`` into an int32 ``[N, OH, OW, C, M]`` (TFLite's
int32 accumulator; the node is refused when ``sum |w| * max |x - z_in|`` of a channel
could leave int32), then the output stage in int64. Hybrid (v4, v6), int16 (v5) and
int4 (v7) nodes are not claimed. (The float op's hand-written CUDA kernel is float-only;
integer xp code runs the same on a device and in host emulation.)
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels._quantized_window import ConvQuantization, uint8_bias_scale_error, zero_point_of
from backends.cpu.kernels._window import WindowGeometry
from backends.gpu.ops.conv import conv_window_reason, padded
from backends.gpu.ops.conv_quantized import QuantizedMatmulOp
from backends.gpu.ops.elementwise import fused_activation, fused_activation_reason
from backends.gpu.ops.quantized_base import per_tensor
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType
INT32_LIMIT = 1 << 31


def _centered_filter(filters) -> np.ndarray:
    """``[KH, KW, C*M]`` int64: the filter as the kernels multiply it, ``w - z_w`` (uint8;
    int8 filters have zero points 0)."""
    z_w = zero_point_of(filters) if filters.type == T.UINT8 else 0
    return np.asarray(filters.data, np.int64)[0] - z_w


class QuantizedDepthwiseConv2D(QuantizedMatmulOp):
    """DEPTHWISE_CONV_2D v1, v2 (uint8, v2 dilated) and v3 (int8, per-channel or
    per-tensor filter): depth multiplier, strides, dilation, SAME/VALID, bias, fused
    activation as the quantized clamp."""

    ops = {B.DEPTHWISE_CONV_2D: 3}  # v1/v2 uint8 (float32 v1/v2: conv.py), v3 int8
    data_inputs = (0, 1)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) not in (2, 3) or node.inputs[0] < 0 or node.inputs[1] < 0:
            return f"expected inputs (input, filter[, bias]), got {len(node.inputs)} inputs"
        x, w, out = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
        if not w.is_constant:
            return "the filter must be a constant tensor (the GPU kernel lays it out once, at prepare)"
        if len(x.shape) != 4 or len(w.shape) != 4:
            return f"input and filter must be 4-D, got {list(x.shape)} and {list(w.shape)}"
        if w.shape[0] != 1:
            return f"filter must be [1, KH, KW, C*M], got {list(w.shape)}"
        _, kh, kw, out_channels = w.shape
        channels = x.shape[3]
        if channels <= 0 or out_channels % channels:
            return f"filter channels ({out_channels}) must be a multiple of the input channels ({channels})"
        if not per_tensor(x) or not per_tensor(out):
            return "the input and the output must be quantized per tensor"
        scales = w.quantization.scale.size
        if x.type == T.UINT8:
            if not per_tensor(w):
                return "a uint8 filter must be quantized per tensor"
        else:
            if np.any(np.asarray(w.quantization.zero_point) != 0):
                return "an int8 filter must have zero points 0"
            if scales not in (1, out_channels):
                return f"the filter has {scales} scales; expected 1 or {out_channels}"
            if scales > 1 and int(w.quantization.quantized_dimension) != 3:
                return f"a per-channel filter must be quantized along dimension 3, not {w.quantization.quantized_dimension}"
        bias = tensors[node.inputs[2]] if len(node.inputs) > 2 and node.inputs[2] >= 0 else None
        if bias is not None:
            if bias.type != T.INT32 or not bias.is_constant:
                return f"the bias must be a constant INT32 tensor, got {'a runtime' if not bias.is_constant else bias.type_name} tensor"
            if bias.num_elements != out_channels:
                return f"bias has {bias.num_elements} elements, expected {out_channels}"
        if x.type == T.UINT8:
            reason = uint8_bias_scale_error(x, w, bias, out)
            if reason:
                return reason
        params = node.params
        _, reason = conv_window_reason(x.shape, (kh, kw), params, (params.dilation_h_factor, params.dilation_w_factor))
        if reason:
            return reason
        # TFLite's accumulator is int32; so is the tap loop's.
        info = np.iinfo(x.dtype)
        z_in = zero_point_of(x)
        max_x = max(abs(int(info.min) - z_in), abs(int(info.max) - z_in))
        bound = int(np.abs(_centered_filter(w)).reshape(-1, out_channels).sum(axis=0).max(initial=0)) * max_x
        if bound >= INT32_LIMIT:
            return f"the int32 accumulators could overflow (sum |w| * max |x| = {bound})"
        return fused_activation_reason(params)

    def prepare(self) -> None:
        x, filters, output = self.inputs[0], self.inputs[1], self.outputs[0]
        params = self.params
        _, kh, kw, out_channels = filters.shape
        channels = x.shape[3]
        self.multiplier = out_channels // channels
        self.geometry = WindowGeometry.of(
            x.shape, (kh, kw), params.padding, (params.stride_h, params.stride_w),
            (params.dilation_h_factor, params.dilation_w_factor),
        )
        self.quantization = q = ConvQuantization.of(x, filters, output, out_channels, fused_activation(params))
        self.rescale = self.requantizer(q.multipliers, q.shifts)
        taps = _centered_filter(filters).reshape(kh, kw, channels, self.multiplier)  # o = c*M + m
        self.taps = self.upload(taps, np.int32)
        self.prepared_inputs.add(1)
        self.prepare_bias(out_channels)

    def run(self, args):
        xp, g, q = self.xp, self.geometry, self.quantization
        x = args[0].astype(np.int32) - q.input_zero_point  # zero-point padding becomes 0
        source = padded(xp, x, g)[..., None]  # [N, Hp, Wp, C, 1]
        acc = None
        for ky in range(g.filter_h):
            for kx in range(g.filter_w):
                term = source[g.tap_slices(ky, kx)] * self.taps[ky, kx]  # [N, OH, OW, C, M]
                if acc is None:
                    acc = term
                else:
                    acc += term
        acc = acc.reshape(g.batch, g.out_h, g.out_w, -1)
        return [self.output_stage(acc)]
