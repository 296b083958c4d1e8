"""TRANSPOSE on the GPU (float32, int8, uint8, int32), bit-exact (values are moved, never
computed).

Semantics are the CPU kernel's (``backends/cpu/kernels/transpose.py``):
``output.shape[i] = input.shape[perm[i]]``, constant int32 perm, rank <= 4 (an int64 perm
is refused: LiteRT's reference kernel reads it as int32 values).

How: ``transpose`` and a copy: the output is a new array (never a view of the input).

Versions claimed: 1 (float32, uint8, int32, rank <= 4) and 2 (int8); not 3 (bool), 4
(rank 5) or later.
"""

from __future__ import annotations

from typing import Sequence

from backends.gpu.ops.moving_base import LayoutOp, constant_int_reason, int_list, named_inputs_reason
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


def permutation(values: Sequence[int], rank: int) -> tuple[int, ...]:
    """The CPU kernel's check of a perm (negative entries wrap); ValueError if invalid."""
    if len(values) != rank:
        raise ValueError(f"perm {list(values)} has {len(values)} entries for a rank-{rank} input")
    if any(not -rank <= p < rank for p in values):
        raise ValueError(f"perm {list(values)} is out of bounds for rank {rank}")
    perm = tuple(p + rank if p < 0 else p for p in values)
    if len(set(perm)) != rank:
        raise ValueError(f"perm {list(values)} has duplicate entries")
    return perm


class Transpose(LayoutOp):
    """TRANSPOSE v1 (float32, uint8, int32, rank <= 4) and v2 (int8), constant int32 perm."""

    ops = {B.TRANSPOSE: 2}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = named_inputs_reason(node, ("input", "perm"))
        if reason:
            return reason
        x, perm = (tensors[i] for i in node.inputs)
        reason = constant_int_reason(perm, "perm", (T.INT32,))
        if reason:
            return reason
        try:
            permutation(int_list(perm), len(x.shape))
        except ValueError as error:
            return str(error)
        return None

    def prepare(self) -> None:
        self.perm = permutation(int_list(self.inputs[1]), len(self.inputs[0].shape))

    def run(self, args):
        return [args[0].transpose(self.perm).copy()]  # copy(): C-contiguous, never the input
