"""DEPTHWISE_CONV_2D on float32: each input channel convolved with its own filters.

Input ``[N, H, W, C]``, filter ``[1, KH, KW, C*M]`` (M = depth multiplier, taken from
the shapes as TFLite does: the ``depth_multiplier`` field is redundant), optional
bias ``[C*M]``. Output channel ``o = c*M + m`` reads input channel ``c``:

    out[n, y, x, c*M + m] = bias[c*M + m]
        + sum_{ky, kx} in[n, y*sh + ky*dh - pad_top, x*sw + kx*dw - pad_left, c] * filter[0, ky, kx, c*M + m]

with dilation ``(dh, dw)`` (version 2; 1 in version 1), positions outside the input
reading 0 and the fused activation applied last (TFLite's reference ``DepthwiseConv``).

How: the padded input (buffer allocated at prepare, interior refreshed at invoke;
with M > 1 each input channel is also repeated M times there, so that channel o of
the buffer feeds output channel o) is viewed as all its windows
``[N, OH, OW, KH, KW, C*M]`` (``sliding_window_view``), and one ``einsum`` multiplies
each window by its channel's filter and sums over the taps.

Measured on a 2-core x86 (numpy 2.4, 3x3 filters), against a loop over the KH*KW
taps accumulating ``out += slice * w_tap`` (two passes over the output per tap):
the einsum is 1.3-2x faster; with fewer than 64 channels it is faster still on a
contiguous im2col copy of the windows ([1, 64, 64, 32]: 0.66 ms copy+einsum, 0.98 ms
einsum on the view, 1.25 ms tap loop), with 64 or more directly on the view
([1, 16, 16, 512]: 0.41 ms view, 0.73 ms copy+einsum). Repeating channels for M > 1
beats an einsum with a separate multiplier axis (1.6 ms vs 4.7 ms, [1, 64, 64, 32], M=2).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import PaddedInput, WindowGeometry, activation_bounds, clamp, window_view
from schema.enums import BuiltinOperator, TensorType


# Version 1: float32 depthwise convolution (depth multiplier, strides, SAME/VALID,
#            optional bias, fused activation).
# Version 2 added dilation (DepthwiseConv2DOptions.dilation_w_factor and
#            dilation_h_factor). Files written before version 2 have no such fields
#            and read as dilation 1 (the DepthwiseConv2DParams defaults), which is
#            exactly version 1's behaviour, so one kernel serves both versions.
# Versions 3-7 are quantized or hybrid (int8/int16/int4 filters): not this kernel.
@register(BuiltinOperator.DEPTHWISE_CONV_2D, 1, 2)
class DepthwiseConv2D(CpuKernel):
    """DEPTHWISE_CONV_2D versions 1-2 (float32; version 2 adds dilation)."""

    def prepare(self) -> None:
        self.require_num_inputs(2, 3)
        x, filters = self.inputs[0], self.inputs[1]
        bias = self.inputs[2] if len(self.inputs) == 3 else None
        output = self.outputs[0]
        self.require_types(x, TensorType.FLOAT32, role="input")
        self.require_types(filters, TensorType.FLOAT32, role="filter")
        if bias is not None:
            self.require_types(bias, TensorType.FLOAT32, role="bias")
        self.require_types(output, TensorType.FLOAT32, role="output")
        if len(x.shape) != 4 or len(filters.shape) != 4 or filters.shape[0] != 1:
            raise self.unsupported(
                f"input must be 4-D NHWC and filter [1, KH, KW, C*M], got {list(x.shape)} and {list(filters.shape)}"
            )
        params = self.params
        self.bounds = activation_bounds(params.fused_activation_function)
        dilation = (params.dilation_h_factor, params.dilation_w_factor)

        _, kh, kw, out_channels = filters.shape
        in_channels = x.shape[3]
        if in_channels <= 0 or out_channels % in_channels:
            raise self.unsupported(
                f"filter channels ({out_channels}) must be a multiple of the input channels ({in_channels})"
            )
        self.multiplier = out_channels // in_channels
        if bias is not None and bias.num_elements != out_channels:
            raise self.unsupported(f"bias has {bias.num_elements} elements, expected {out_channels}")
        try:
            # The windows are taken over the input with every channel repeated M times.
            geometry = WindowGeometry.of(
                (*x.shape[:3], out_channels), (kh, kw), params.padding, (params.stride_h, params.stride_w), dilation
            )
        except ValueError as error:
            raise self.unsupported(str(error)) from None
        output.resize((*geometry.output_shape, out_channels))

        self.geometry = geometry
        self.pad = PaddedInput(geometry, repeat=self.multiplier)
        # Below 64 channels the einsum is faster on a contiguous copy of the windows.
        self.columns = None
        if out_channels < 64:
            self.columns = np.empty((*geometry.output_shape, kh, kw, out_channels), np.float32)
        self.tap_weights = filters.data[0] if filters.is_constant else None

    def invoke(self) -> None:
        out = self.outputs[0].data
        weights = self.tap_weights if self.tap_weights is not None else self.inputs[1].data[0]  # [KH, KW, C*M]
        windows = window_view(self.geometry, self.pad(self.inputs[0].data))  # [N, OH, OW, KH, KW, C*M]
        if self.columns is not None:
            np.copyto(self.columns, windows)
            windows = self.columns
        np.einsum("nyxhwc,hwc->nyxc", windows, weights, out=out, optimize=False)
        if len(self.inputs) == 3 and self.inputs[2] is not None:
            np.add(out, self.inputs[2].data.reshape(-1), out=out)
        clamp(out, self.bounds)
