"""AVERAGE_POOL_2D and MAX_POOL_2D on int8 / uint8 tensors on the GPU, bit-exact with
TFLite's reference kernels.

Semantics are the CPU kernel's (``backends/cpu/kernels/pool2d_quantized.py``): the output
has the input's scale and zero point (TFLite's Prepare checks it: the CPU kernel's
``quantization_mismatch``), so the pools work on raw values over each window clipped to
the input:

- AVERAGE: ``acc = sum(window)`` in int32, ``count`` = the window's elements inside the
  input, ``out = sign(acc) * ((|acc| + count/2) // count)`` (the CPU kernel's
  ``rounded_average``, called here on device arrays);
- MAX: ``out = max(window)``;

then the fused activation's quantized clamp (``CalculateActivationRangeQuantized``: TANH
clamps nothing).

How: as the float pools (``pool.py``), a loop over the filter taps; each tap combines the
strided block of input it reads into the block of outputs where it falls inside the
input (``WindowGeometry.clipped_taps``, planned at prepare), so no padded copy; the window
counts (``WindowGeometry.valid_counts``) are uploaded once. Versions: 1 (uint8) and 2
(int8); v3 (int16) is not claimed.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels._window import WindowGeometry
from backends.cpu.kernels.pool2d_quantized import quantization_mismatch, rounded_average
from backends.cpu.quantization import activation_range_quantized, legacy_params
from backends.gpu.ops.conv import window_reason
from backends.gpu.ops.elementwise import fused_activation, fused_activation_reason
from backends.gpu.ops.quantized_base import QuantizedOp, per_tensor
from schema.enums import BuiltinOperator

B = BuiltinOperator


class QuantizedPool2D(QuantizedOp):
    """AVERAGE_POOL_2D and MAX_POOL_2D v1 (uint8) and v2 (int8)."""

    ops = {B.AVERAGE_POOL_2D: 2, B.MAX_POOL_2D: 2}  # float32 v1: pool.py

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        x, out = tensors[node.inputs[0]], tensors[node.outputs[0]]
        if len(x.shape) != 4:
            return f"input must be 4-D NHWC, got {list(x.shape)}"
        if not per_tensor(x) or not per_tensor(out):
            return "the input and the output must be quantized per tensor"
        reason = quantization_mismatch(x, out)
        if reason:
            return reason
        params = node.params
        if params.filter_height <= 0 or params.filter_width <= 0:
            return f"filter size must be positive, got {[params.filter_height, params.filter_width]}"
        geometry, reason = window_reason(x.shape, (params.filter_height, params.filter_width), params)
        if reason:
            return reason
        if op == B.AVERAGE_POOL_2D and np.any(geometry.valid_counts() == 0):
            return "a pooling window lies entirely in the padding"
        return fused_activation_reason(params)

    def prepare(self) -> None:
        params = self.params
        x, out = self.inputs[0], self.outputs[0]
        g = WindowGeometry.of(
            x.shape, (params.filter_height, params.filter_width), params.padding, (params.stride_h, params.stride_w)
        ).cropped_to_input()
        self.geometry = g
        self.tap_blocks = g.clipped_taps()
        self.is_max = self.op == B.MAX_POOL_2D
        scale, zero_point = legacy_params(out)
        self.low, self.high = activation_range_quantized(fused_activation(params), scale, zero_point, out.dtype)
        self.counts = None if self.is_max else self.upload(g.valid_counts().astype(np.int32), np.int32)  # [OH, OW, 1]

    def run(self, args):
        xp, g = self.xp, self.geometry
        shape = (g.batch, g.out_h, g.out_w, g.channels)
        if self.is_max:
            x = args[0]
            out = xp.full(shape, np.iinfo(x.dtype).min, dtype=x.dtype)
            for out_block, in_block in self.tap_blocks:
                out[out_block] = xp.maximum(out[out_block], x[in_block])
            return [self.to_output(out, self.low, self.high)]
        x = args[0].astype(np.int32)
        acc = xp.zeros(shape, dtype=np.int32)
        for out_block, in_block in self.tap_blocks:
            acc[out_block] += x[in_block]
        return [self.to_output(rounded_average(acc, self.counts), self.low, self.high)]
