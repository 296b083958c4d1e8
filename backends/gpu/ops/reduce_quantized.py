"""MEAN and SUM on int8 / uint8 tensors on the GPU (over a constant axis list), bit-exact
with our CPU path (TFLite's reference arithmetic; LiteRT 2.3's reference SUM runs its uint8
code on int8 data, a bug of that build that the CPU kernel documents and does not
reproduce: int8 SUM equals the CPU path, uint8 SUM and MEAN equal BUILTIN_REF too).

Semantics are the CPU kernel's (``backends/cpu/kernels/reduce_quantized.py``,
``reference_ops::QuantizedMeanOrSum``), for each output element with ``n`` reduced input
elements::

    acc = sum(q)                                 (int32, wrapping like TFLite's temp_sum)
    (m, e) = QuantizeMultiplier(double(s_in) / double(s_out)), 1/n folded in (MEAN only)
    out = clamp(MultiplyByQuantizedMultiplier(int32(acc - z_in * n), m, e) + z_out)

with the type's range as the clamp (no fused activation). The multiplier
(``mean_sum_multiplier``), its fold (``folded_multiplier``) and the requantization
(``requantize_sums``) are the CPU kernel's own functions, called here on device arrays;
the axes are resolved as TFLite does (negative, repeated, ``keep_dims``). An empty input
gives 0.

How: one launch of ``cuda/int8_windows.cu``'s quantized mean (a thread per output, the
sum and the requantization fused); host emulation runs its twin as that one launch.
Versions: 1 (uint8) and 2 (int8) of both; MEAN v3 (int16) is not claimed.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels.reduce_quantized import folded_multiplier, mean_sum_multiplier
from backends.cpu.quantization import legacy_params
from backends.gpu.cuda.int8_windows import QuantizedMeanCuda, QuantizedMeanParams
from backends.gpu.ops.pool import resolve_axes
from backends.gpu.ops.reduce_more import require_reduced_shape
from backends.gpu.ops.quantized_base import QuantizedOp, per_tensor
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


class QuantizedMean(QuantizedOp):
    """MEAN and SUM v1 (uint8) and v2 (int8) over a constant axis list."""

    ops = {B.MEAN: 2, B.SUM: 2}  # float32 v1: pool.py (MEAN), reduce_more.py (SUM)
    data_inputs = (0,)
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected inputs (input, axes), got {len(node.inputs)} inputs"
        x, axes = (tensors[i] for i in node.inputs)
        out = tensors[node.outputs[0]]
        if axes.type != T.INT32:
            return f"axes {axes.name!r} is {axes.type_name}; it must be INT32"
        if axes.num_elements and not axes.is_constant:
            return "the axes must be a constant tensor (the output shape depends on them)"
        try:
            resolve_axes(axes.data if axes.num_elements else np.zeros(0, np.int32), len(x.shape))
        except ValueError as error:
            return str(error)
        if not per_tensor(x) or not per_tensor(out):
            return "the input and the output must be quantized per tensor"
        if legacy_params(out)[0] == 0.0:
            return f"output {out.name!r} has scale 0"
        return None

    def prepare(self) -> None:
        x, axes = self.inputs
        out = self.outputs[0]
        values = axes.data if axes.num_elements else np.zeros(0, np.int32)
        self.axes = resolve_axes(values, len(x.shape))
        self.keep_dims = bool(getattr(self.params, "keep_dims", False))
        self.count = int(np.prod([x.shape[a] for a in self.axes], dtype=np.int64))
        self.empty = x.num_elements == 0
        self.out_shape = tuple(out.shape)
        require_reduced_shape(x, out, self.axes, self.keep_dims)
        z_in, z_out = legacy_params(x)[1], legacy_params(out)[1]
        multiplier, shift = mean_sum_multiplier(x, out)
        if not self.empty:
            self.multiplier, self.shift = folded_multiplier(multiplier, shift, self.count, is_mean=self.op == B.MEAN)
        self.launcher = None
        if not self.empty:
            info = np.iinfo(x.dtype)
            params = QuantizedMeanParams(z_in * self.count, self.multiplier, self.shift, z_out, (int(info.min), int(info.max)))
            self.launcher = QuantizedMeanCuda(self.axes, params, x.dtype, **self.device.launcher_arguments(QuantizedMeanCuda.source))

    def run(self, args):
        if self.empty:
            return [self.xp.zeros(self.out_shape, dtype=self.outputs[0].dtype)]
        return [self.launcher(args[0], self.out_shape)]
