"""TRANSPOSE: permute the axes (``output.shape[i] = input.shape[perm[i]]``)."""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import INDEX_TYPES, MOVABLE_TYPES, inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

#: TFLite's kTransposeMaxDimensions.
MAX_DIMS = 8


# v1: float32/int32/int64/uint8, up to 4-D; v2: int8; v3: bool; v4: 5-D; v5: int16; v6: 6-D.
# (v7 is int4, not implemented.)
@register(BuiltinOperator.TRANSPOSE, 1, 6)
# v8: more than 6 dimensions (up to 8); its other feature, bfloat16, is not supported.
@register(BuiltinOperator.TRANSPOSE, 8, 8)
class Transpose(CpuKernel):
    """TRANSPOSE v1-v6 and v8 (rank up to 8, no int4 or bfloat16)."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, perm = self.inputs[0], self.inputs[1]
        if x.type == TensorType.BFLOAT16:
            raise self.unsupported("bfloat16 input is not supported (float32, integer and bool types are)")
        self.require_types(x, *MOVABLE_TYPES, TensorType.COMPLEX64)
        self.require_types(perm, *INDEX_TYPES, role="perm")
        self.require_types(self.outputs[0], x.type, role="output")
        if len(x.shape) > MAX_DIMS:
            raise self.unsupported(f"input rank {len(x.shape)} is above {MAX_DIMS}")
        self.perm_from_values = not perm.is_constant
        if self.perm_from_values:
            self.outputs[0].set_dynamic()
            return
        self.perm = self.permutation(int_values(perm), len(x.shape))
        self.outputs[0].resize([x.shape[p] for p in self.perm])

    def permutation(self, perm: list[int], rank: int) -> tuple[int, ...]:
        if len(perm) != rank:
            raise self.unsupported(f"perm {perm} has {len(perm)} entries for a rank-{rank} input")
        if any(not -rank <= p < rank for p in perm):
            raise self.unsupported(f"perm {perm} is out of bounds for rank {rank}")
        perm = tuple(p + rank if p < 0 else p for p in perm)
        if len(set(perm)) != rank:
            raise self.unsupported(f"perm {perm} has duplicate entries")
        return perm

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0]
        if self.perm_from_values:
            perm = self.permutation(int_values(self.inputs[1]), x.ndim)
            out.set_data(np.ascontiguousarray(x.transpose(perm)))
        else:
            np.copyto(out.data, x.transpose(self.perm))
