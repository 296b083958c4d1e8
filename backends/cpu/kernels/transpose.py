"""TRANSPOSE: permute the axes (``output.shape[i] = input.shape[perm[i]]``)."""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import INDEX_TYPES, MOVABLE_TYPES, inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

#: TFLite's kTransposeMaxDimensions.
MAX_DIMS = 8
#: The types TRANSPOSE moves beyond MOVABLE_TYPES and complex64.
TRANSPOSE_EXTRA_TYPES = (
    TensorType.INT4, TensorType.UINT4, TensorType.FLOAT16, TensorType.BFLOAT16, TensorType.UINT16, TensorType.UINT32,
    TensorType.FLOAT64,
)


# v1: float32/int32/int64/uint8, up to 4-D; v2: int8; v3: bool; v4: 5-D; v5: int16; v6: 6-D;
# v7: int4 (one value an element here); v8: more than 6 dimensions (up to 8), bfloat16.
# v9: LiteRT 2.3 registers it (TFLite's tables predate it); its kernel moves elements by
# size, so it adds float16, uint4, uint16, uint32 and float64, and so does this one at every
# version.
@register(BuiltinOperator.TRANSPOSE, 1, 9)
class Transpose(CpuKernel):
    """TRANSPOSE v1-v9 (rank up to 8)."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, perm = self.inputs[0], self.inputs[1]
        self.require_types(x, *MOVABLE_TYPES, TensorType.COMPLEX64, *TRANSPOSE_EXTRA_TYPES)
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
