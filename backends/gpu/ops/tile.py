"""TILE on the GPU (float32, int8, uint8, int32), bit-exact (values are moved, never
computed).

Semantics are the CPU kernel's (``backends/cpu/kernels/tile_broadcast.py``):
``multiples[i]`` copies along each axis (constant multiples). The output is a new array
(never a view of the input).

Versions claimed: 1 (float32, uint8, int32) and 3 (int8); not 2 (string).
"""

from __future__ import annotations

from backends.gpu.ops.moving_base import (
    INDEX_TYPES,
    LayoutOp,
    constant_int_reason,
    int_list,
    named_inputs_reason,
)
from schema.enums import BuiltinOperator

B = BuiltinOperator


class Tile(LayoutOp):
    """TILE v1 (float32, uint8, int32) and v3 (int8), constant multiples."""

    ops = {B.TILE: frozenset({1, 3})}  # v2 is string
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = named_inputs_reason(node, ("input", "multiples"))
        if reason:
            return reason
        x, multiples = (tensors[i] for i in node.inputs)
        reason = constant_int_reason(multiples, "multiples", INDEX_TYPES)
        if reason:
            return reason
        values = int_list(multiples)
        if len(values) != len(x.shape):
            return f"multiples has {len(values)} values for a rank-{len(x.shape)} input"
        if any(m < 0 for m in values):
            return f"multiples {values} has a negative entry"
        return None

    def prepare(self) -> None:
        x = self.inputs[0]
        multiples = int_list(self.inputs[1])
        # The output seen as [m0, d0, m1, d1, ...] is the input [1, d0, 1, d1, ...] broadcast.
        self.interleaved = tuple(n for pair in zip(multiples, x.shape) for n in pair)
        self.expanded = tuple(n for d in x.shape for n in (1, d))
        self.out_shape = tuple(d * m for d, m in zip(x.shape, multiples))
        self.dtype = self.output_dtype()

    def run(self, args):
        out = self.xp.empty(self.interleaved, dtype=self.dtype)
        out[...] = args[0].reshape(self.expanded)
        return [out.reshape(self.out_shape)]
