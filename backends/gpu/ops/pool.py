"""AVERAGE_POOL_2D and MAX_POOL_2D on the GPU: float32, and int8 / uint8 (bit-exact with
TFLite's reference kernels).

Semantics are the CPU kernels' (``backends/cpu/kernels/pool2d.py``,
``pool2d_quantized.py``), i.e. TFLite's reference kernels. Each window is clipped to the
input and only the inside elements count:

- float32: the average divides by that count (not the filter size); the max skips NaN
  (``std::max`` with the running value first: ``m < v ? v : m`` from -inf); then the
  fused activation as a clamp (TANH not applied) with TFLite's activation range, which is
  [-FLT_MAX, FLT_MAX] even with no activation (+-inf saturates; a max window of only NaN
  / -inf gives lowest). How: one launch of ``cuda/pool2d.cu`` (one thread per output,
  the window's taps in a loop, the clamp fused); host emulation runs its numpy twin
  (``cuda/windows.py``) as that one launch.
- int8 / uint8: the output has the input's scale and zero point (TFLite's Prepare checks
  it: the CPU kernel's ``quantization_mismatch``), so the pools work on raw values.
  AVERAGE: ``acc = sum(window)`` in int32, ``out = sign(acc) * ((|acc| + count/2) //
  count)`` (the CPU kernel's ``rounded_average``); MAX: ``out = max(window)``; then the
  fused activation's quantized clamp (``CalculateActivationRangeQuantized``: TANH clamps
  nothing). How: one launch of ``cuda/pool2d.cu``'s quantized pool (a thread per output, the
  window's taps in a loop, the average's rounding and the clamp fused); host emulation
  runs its numpy twin (``cuda/int8_windows.py``) as that one launch.

Versions claimed: 1 (float32, uint8) and 2 (int8); v3 (int16) is not claimed.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels.pool2d_quantized import quantization_mismatch
from backends.cpu.quantization import activation_range_quantized, legacy_params
from backends.gpu.cuda.int8_windows import QuantizedPool2DCuda
from backends.gpu.cuda.windows import Pool2DCuda
from backends.gpu.ops.base import FloatOp, fused_activation, fused_activation_reason
from backends.gpu.ops.conv import window_reason
from backends.gpu.ops.quantized_base import QuantizedOp, parameter_reason, per_tensor
from schema.enums import BuiltinOperator

B = BuiltinOperator


class Pool2D(FloatOp):
    """AVERAGE_POOL_2D and MAX_POOL_2D version 1 (float32)."""

    ops = {B.AVERAGE_POOL_2D: 1, B.MAX_POOL_2D: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        x = tensors[node.inputs[0]]
        if len(x.shape) != 4:
            return f"input must be 4-D NHWC, got {list(x.shape)}"
        params = node.params
        if params.filter_height <= 0 or params.filter_width <= 0:
            return f"filter size must be positive, got {[params.filter_height, params.filter_width]}"
        _, reason = window_reason(x.shape, (params.filter_height, params.filter_width), params)
        return reason or fused_activation_reason(params)

    def prepare(self) -> None:
        params = self.params
        self.launcher = Pool2DCuda(
            self.op == B.MAX_POOL_2D, (params.filter_height, params.filter_width), (params.stride_h, params.stride_w),
            params.padding, fused_activation(params), self.storage, **self.device.launcher_arguments("pool2d.cu"),
        )

    def run(self, args):
        return [self.launcher(args[0])]


class QuantizedPool2D(QuantizedOp):
    """AVERAGE_POOL_2D and MAX_POOL_2D v1 (uint8) and v2 (int8)."""

    ops = {B.AVERAGE_POOL_2D: 2, B.MAX_POOL_2D: 2}  # float32 v1: Pool2D above

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
        scale, zero_point = legacy_params(out)
        return fused_activation_reason(params) or parameter_reason(
            lambda: activation_range_quantized(fused_activation(params), scale, zero_point, out.dtype)
        )

    def prepare(self) -> None:
        params, out = self.params, self.outputs[0]
        scale, zero_point = legacy_params(out)
        bounds = activation_range_quantized(fused_activation(params), scale, zero_point, out.dtype)
        self.launcher = QuantizedPool2DCuda(
            self.op == B.MAX_POOL_2D, (params.filter_height, params.filter_width), (params.stride_h, params.stride_w),
            params.padding, bounds, out.dtype, **self.device.launcher_arguments(QuantizedPool2DCuda.source),
        )

    def run(self, args):
        return [self.launcher(args[0])]
