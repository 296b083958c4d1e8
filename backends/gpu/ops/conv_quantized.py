"""CONV_2D on int8 / uint8 tensors on the GPU, bit-exact with TFLite's reference kernels, in
one kernel launch per node (``cuda/conv2d_int8.cu``).

Semantics are the CPU kernel's (``backends/cpu/kernels/conv2d_quantized.py``):

- uint8 (version 1, per tensor): ``acc = sum (w - z_w) * (x - z_in) + bias``,
  ``out = clamp(MultiplyByQuantizedMultiplier(acc, m, s) + z_out)``;
- int8 (version 3, filter per channel or per tensor, filter zero points 0): the same with
  one multiplier per output channel;
- grouped (version 6, either type): output channel ``g * O + o`` reads the input channels
  of group ``g``.

The multipliers, shifts, zero points and the quantized clamp are the CPU kernel's own
(``ConvQuantization.of``); the kernel's integer arithmetic is ``cuda/fixed_point.cuh``,
tested equal to the CPU's. The kernel accumulates in int32 as TFLite does; a node whose
accumulators could leave int32 (``sum |w - z_w| * max |x - z_in| + |bias|``) is refused,
so that the result is also the CPU kernel's exact one. int16 (v4, v8), hybrid (v2, v5)
and int4 (v7) convolutions are not claimed.

What the quantized convolution family shares (``QuantizedConvOp``) lives here too: the
int32 bias, the per-channel multipliers and shifts, the accumulator bound.
"""

from __future__ import annotations

from backends.gpu.ops.base import fused_activation, fused_activation_reason
from typing import Any

import numpy as np

from backends.cpu.kernels._quantized_window import ConvQuantization, uint8_bias_scale_error, zero_point_of
from backends.cpu.quantization import INT32_MAX
from backends.gpu.ops.conv import conv_window_reason
from backends.gpu.ops.quantized_base import QuantizedOp, per_tensor
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


def input_abs_max(x, input_zero_point: int) -> int:
    """The largest ``|x - z_in|`` of the input's integer type."""
    info = np.iinfo(x.dtype)
    return max(abs(int(info.min) - input_zero_point), abs(int(info.max) - input_zero_point))


def accumulator_reason(filter_abs_sums: np.ndarray, x, bias) -> str | None:
    """Why the int32 accumulators of a convolution could leave int32 (the kernels wrap as
    TFLite's; the CPU kernel computes exactly), or None: ``filter_abs_sums`` is
    ``sum |w - z_w|`` per output channel."""
    bound = np.asarray(filter_abs_sums, np.int64) * input_abs_max(x, zero_point_of(x))
    if bias is not None:
        bound = bound + np.abs(np.asarray(bias.data, np.int64).reshape(-1))
    largest = int(np.max(bound, initial=0))
    if largest > INT32_MAX:
        return f"the int32 accumulators could overflow (sum |w| * max |x| + |bias| = {largest})"
    return None


def bias_reason(node, tensors, channels: int) -> str | None:
    bias = tensors[node.inputs[2]] if len(node.inputs) > 2 and node.inputs[2] >= 0 else None
    if bias is None:
        return None
    if bias.type != T.INT32 or not bias.is_constant:
        return f"the bias must be a constant INT32 tensor, got {'a runtime' if not bias.is_constant else bias.type_name} tensor"
    if bias.num_elements != channels:
        return f"bias has {bias.num_elements} elements, expected {channels}"
    return None


class QuantizedConvOp(QuantizedOp):
    """What the quantized convolutions share: the bias and the output stage's per-channel
    parameters, uploaded once at prepare for their kernel."""

    def prepare_output_stage(self, filters, channels: int) -> None:
        """``self.quantization`` (the CPU kernel's ``ConvQuantization``), the kernel's
        ``OutputStage``, the int32 multipliers and shifts and the bias on the device."""
        from backends.gpu.cuda.conv_int8 import OutputStage

        x, output = self.inputs[0], self.outputs[0]
        self.quantization = q = ConvQuantization.of(x, filters, output, channels, fused_activation(self.params))
        filter_zero_point = zero_point_of(filters) if x.type == T.UINT8 else 0  # int8: zero points 0
        self.stage = OutputStage(-q.input_zero_point, -filter_zero_point, q.output_zero_point, q.low, q.high)
        self.multipliers = self.upload(q.multipliers, np.int32)
        self.shifts = self.upload(q.shifts, np.int32)
        bias = self.inputs[2] if len(self.inputs) > 2 else None
        self.bias = None if bias is None else self.upload(np.asarray(bias.data).reshape(-1), np.int32)
        if bias is not None:
            self.prepared_inputs.add(2)


class QuantizedConv2D(QuantizedConvOp):
    """CONV_2D v1 (uint8), v3 (int8, per-channel) and v6 (grouped, either): strides,
    dilation, SAME/VALID, bias, fused activation as the quantized clamp."""

    ops = {B.CONV_2D: frozenset({1, 3, 6})}
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
        if not per_tensor(x) or not per_tensor(out):
            return "the input and the output must be quantized per tensor"
        out_channels, kh, kw, group_in = (int(d) for d in w.shape)
        channels = int(x.shape[3])
        if group_in <= 0 or channels <= 0 or channels % group_in:
            return f"input channels ({channels}) must be a positive multiple of the filter's in-channels ({group_in})"
        if out_channels % (channels // group_in):
            return f"grouped convolution: output channels ({out_channels}) must be a multiple of groups ({channels // group_in})"
        q = w.quantization
        if x.type == T.UINT8:
            if not per_tensor(w):
                return "a uint8 filter must be quantized per tensor"
        else:
            if np.any(np.asarray(q.zero_point) != 0):
                return "an int8 filter must have zero points 0"
            if q.scale.size not in (1, out_channels):
                return f"the filter has {q.scale.size} scales; expected 1 or {out_channels}"
            if q.scale.size > 1 and int(q.quantized_dimension) != 0:
                return f"a per-channel filter must be quantized along dimension 0, not {q.quantized_dimension}"
        reason = bias_reason(node, tensors, out_channels)
        if reason:
            return reason
        bias = tensors[node.inputs[2]] if len(node.inputs) > 2 and node.inputs[2] >= 0 else None
        if x.type == T.UINT8:
            reason = uint8_bias_scale_error(x, w, bias, out)
            if reason:
                return reason
        params = node.params
        _, reason = conv_window_reason(x.shape, (kh, kw), params, (params.dilation_h_factor, params.dilation_w_factor))
        if reason:
            return reason
        z_w = zero_point_of(w) if x.type == T.UINT8 else 0
        abs_sums = np.abs(np.asarray(w.data, np.int64) - z_w).reshape(out_channels, -1).sum(axis=1)
        return accumulator_reason(abs_sums, x, bias) or fused_activation_reason(params)

    def prepare(self) -> None:
        from backends.gpu.cuda.conv2d import conv2d_filter_layout
        from backends.gpu.cuda.conv_int8 import Conv2DInt8Cuda

        x, filters = self.inputs[0], self.inputs[1]
        params = self.params
        out_channels = filters.shape[0]
        groups = x.shape[3] // filters.shape[3]
        self.prepare_output_stage(filters, out_channels)
        # OHWI -> [groups, KH, KW, I, O/groups], the filter's own type (conv2d_int8.cu).
        self.filter = self.upload(conv2d_filter_layout(np.asarray(filters.data), groups), filters.dtype)
        self.prepared_inputs.add(1)
        self.kernel = Conv2DInt8Cuda(
            (params.stride_h, params.stride_w), (params.dilation_h_factor, params.dilation_w_factor), params.padding,
            self.stage, **self.device.launcher_arguments("conv2d_int8.cu"),
        )

    def run(self, args: Any):
        return [self.kernel(args[0], self.filter, self.bias, self.multipliers, self.shifts)]
