"""AVERAGE_POOL_2D and MAX_POOL_2D on quantized uint8, int8 and int16 (NHWC), bit-exact
with TFLite's reference kernels (``kernels/pooling.cc``, ``reference/pooling.h``,
``reference/integer_ops/pooling.h``).

The output has the input's scale and zero point (TFLite's Prepare asserts it), so the
pools work on raw values, over the window clipped to the input (as the float pools):

    AVERAGE: acc = sum(window), count = elements of the window inside the input,
             out = (acc + count/2) / count      if acc > 0   (C integer division)
                   (acc - count/2) / count      otherwise    (rounds halves away from 0)
             (uint8: (acc + count/2) / count, acc >= 0 always)
    MAX:     out = max(window)

then the fused activation clamps to its range in the output's quantized domain
(``CalculateActivationRangeQuantized``; TANH/SIGN_BIT clamp nothing).

How: like the float pools, a loop over the filter taps that combines each tap's input
block into its output block (sums in int32, exact for any window of 8/16-bit values
below 2^15 taps), or, when there are fewer output positions than taps (global pools),
one reduction over all windows of a padded copy.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import PaddedInput, WindowGeometry, window_view
from backends.cpu.quantization import activation_range_quantized, is_quantized
from schema.enums import BuiltinOperator, TensorType

T = TensorType

#: TFLite's Prepare: |input scale - output scale| <= 1e-6 and equal zero points.
SCALE_TOLERANCE = 1.0e-6


# v1: uint8 (v1 float32 is in pool2d.py); v2: int8; v3: int16.
@register(BuiltinOperator.AVERAGE_POOL_2D, 1, 3)
@register(BuiltinOperator.MAX_POOL_2D, 1, 3)
class QuantizedPool2D(CpuKernel):
    """AVERAGE_POOL_2D and MAX_POOL_2D v1 (uint8), v2 (int8), v3 (int16), quantized."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        first = node.inputs[0] if len(node.inputs) else -1
        return first >= 0 and context.tensors[first].type in (T.UINT8, T.INT8, T.INT16)

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(x, T.UINT8, T.INT8, T.INT16, role="input")
        self.require_types(out, x.type, role="output")
        if len(x.shape) != 4:
            raise self.unsupported(f"input must be 4-D NHWC, got {list(x.shape)}")
        for tensor in (x, out):
            if not is_quantized(tensor) or tensor.quantization.is_per_channel:
                raise self.unsupported(f"tensor {tensor.name!r} must be quantized per tensor (a scale and zero point)")
        (s_in, z_in), (s_out, z_out) = _params(x), _params(out)
        if abs(s_in - s_out) > SCALE_TOLERANCE or z_in != z_out:
            raise self.unsupported(
                f"input (scale {s_in}, zero point {z_in}) and output (scale {s_out}, zero point {z_out}) "
                "must have the same quantization: TFLite's quantized pools do not requantize"
            )
        params = self.params
        if params.filter_height <= 0 or params.filter_width <= 0:
            raise self.unsupported(f"filter size must be positive, got {[params.filter_height, params.filter_width]}")
        try:
            geometry = WindowGeometry.of(
                x.shape, (params.filter_height, params.filter_width), params.padding, (params.stride_h, params.stride_w)
            )
        except ValueError as error:
            raise self.unsupported(str(error)) from None
        out.resize((*geometry.output_shape, geometry.channels))
        self.geometry = geometry
        self.low, self.high = activation_range_quantized(params.fused_activation_function, s_out, z_out, out.dtype)

        self.is_max = self.op == BuiltinOperator.MAX_POOL_2D
        # Max works in the input type; sums in int32.
        self.work_dtype = x.dtype if self.is_max else np.dtype(np.int32)
        self.identity = np.iinfo(x.dtype).min if self.is_max else 0
        self.combine = np.maximum if self.is_max else np.add
        self.accumulator = None if self.is_max else np.empty(out.shape, np.int32)
        if not self.is_max:
            counts = geometry.valid_counts().astype(np.int32)  # [OH, OW, 1]
            if np.any(counts == 0):
                raise self.unsupported("a pooling window lies entirely in the padding")
            self.counts = counts
            self.half_counts = counts // 2
        if geometry.filter_h * geometry.filter_w <= geometry.out_h * geometry.out_w:
            self.tap_blocks = geometry.clipped_taps()
            self.pad = None
        else:
            self.tap_blocks = None
            self.pad = PaddedInput(geometry, dtype=self.work_dtype, fill=self.identity)

    def invoke(self) -> None:
        out = self.outputs[0].data
        x = self.inputs[0].data
        target = out if self.is_max else self.accumulator
        if self.tap_blocks is not None:
            target.fill(self.identity)
            for out_block, in_block in self.tap_blocks:
                block = target[out_block]
                self.combine(block, x[in_block], out=block)
        else:
            windows = window_view(self.geometry, self.pad(x))
            self.combine.reduce(windows, axis=(3, 4), out=target, dtype=self.work_dtype)
        if not self.is_max:
            self.round_divide(target)
            np.clip(target, self.low, self.high, out=target)
            out[...] = target
        else:
            np.clip(out, self.low, self.high, out=out)

    def round_divide(self, acc: np.ndarray) -> None:
        """``acc > 0 ? (acc + count/2) / count : (acc - count/2) / count`` with C's
        truncating division, in place: sign(acc) * ((|acc| + count/2) // count)."""
        negative = acc < 0
        np.abs(acc, out=acc)
        acc += self.half_counts
        np.floor_divide(acc, self.counts, out=acc)
        np.negative(acc, out=acc, where=negative)


def _params(tensor) -> tuple[float, int]:
    q = tensor.quantization
    return float(q.scale[0]), int(q.zero_point[0]) if q.zero_point.size else 0
