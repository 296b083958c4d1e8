"""DYNAMIC_UPDATE_SLICE: the operand with a block overwritten by ``update``.

TFLite (``kernels/dynamic_update_slice.cc``, XLA's DynamicUpdateSlice): inputs
(operand, update, start_indices); update has the operand's rank and type and is no larger
along any axis; start_indices is 1-D int32 or int64 with one start per axis. Each start
is clamped to [0, operand_dim - update_dim], so the block always lies inside:

    out = operand;  out[s0 : s0 + u0, ..., sN : sN + uN] = update

The bytes move unchanged (a quantized operand keeps its stored values). Versions (by
TFLite's versioning rule): v1 int32 starts; v2 int64 starts; v3 float16; v4 int16; v5
int4; v6 bfloat16. LiteRT's kernel copies elements by size, so every version here takes
every fixed-size type (float32/16/64, bfloat16, the integer types, bool, complex) and int4
(one value an element here).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.bitcast import FIXED_SIZE_TYPES
from backends.cpu.kernels.reshape import INDEX_TYPES, inputs_pending
from schema.enums import BuiltinOperator, TensorType

T = TensorType


@register(BuiltinOperator.DYNAMIC_UPDATE_SLICE, 1, 6)
class DynamicUpdateSlice(CpuKernel):
    """DYNAMIC_UPDATE_SLICE v1-v6."""

    def prepare(self) -> None:
        self.require_num_inputs(3)
        if inputs_pending(self):
            return
        operand, update, starts = self.inputs
        self.require_types(operand, *FIXED_SIZE_TYPES, T.INT4, role="operand")
        self.require_types(update, operand.type, role="update")
        self.require_types(starts, *INDEX_TYPES, role="start_indices")
        self.require_types(self.outputs[0], operand.type, role="output")
        rank = len(operand.shape)
        if starts.shape != (rank,):
            raise self.unsupported(
                f"start_indices {starts.name!r} has shape {list(starts.shape)}; it must be 1-D with one start "
                f"per operand axis ({rank})"
            )
        if len(update.shape) != rank or any(u > o for u, o in zip(update.shape, operand.shape)):
            raise self.unsupported(
                f"update {update.name!r} of shape {list(update.shape)} must have the operand's rank and fit in "
                f"its shape {list(operand.shape)}"
            )
        self.highest_starts = np.array(operand.shape, np.int64) - np.array(update.shape, np.int64)
        self.outputs[0].resize(operand.shape)

    def invoke(self) -> None:
        operand, update, starts = (tensor.data for tensor in self.inputs)
        out = self.outputs[0].data
        out[...] = operand
        if update.size == 0:
            return
        clamped = np.clip(starts.astype(np.int64), 0, self.highest_starts).tolist()
        out[tuple(slice(s, s + u) for s, u in zip(clamped, update.shape))] = update
