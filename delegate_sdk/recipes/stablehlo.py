"""Recipes of the StableHLO builtins LiteRT runs (version 1 each, the only one), and of the
deprecated REDUCE_WINDOW: elementwise ops on two tensors of one shape, pad, gather and
scatter, window reductions, the bit generator, and the ops that call subgraphs (CASE,
COMPOSITE; a scatter's or reduce window's body)."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import F32, I32, B, Graph, Recipe


def elementwise(op: int, t=F32, counts=None) -> bytes:
    """``op(x, y)`` on two inputs of one shape (SHIFT_LEFT: a constant count per element,
    within the type's width, where C++'s shift is defined)."""
    m = Graph()
    x = m.input("x", (2, 3), t)
    y = m.input("y", (2, 3), t) if counts is None else m.g.add_constant("counts", np.asarray(counts, np.int32))
    z = m.tensor("z", (2, 3), t)
    m.op(op, [x, y], [z])
    return m.build(z)


def pad() -> bytes:
    """Edge padding, cropping (a negative edge) and interior padding on a [2, 3] tensor."""
    from schema.params import StablehloPadParams

    m = Graph()
    x = m.input("x", (2, 3))
    value = m.g.add_constant("value", np.array(-1.5, np.float32))
    y = m.tensor("y", (4, 7))
    params = StablehloPadParams(edge_padding_low=(1, -1), edge_padding_high=(0, 2), interior_padding=(1, 2))
    m.op(B.STABLEHLO_PAD, [x, value], [y], params)
    return m.build(y)


def recipes() -> Iterator[Recipe]:
    family = "stablehlo"
    for op, what in ((B.STABLEHLO_ADD, "add"), (B.STABLEHLO_MULTIPLY, "multiply"), (B.STABLEHLO_MAXIMUM, "maximum"),
                     (B.STABLEHLO_MINIMUM, "minimum")):
        yield Recipe(op, 1, lambda op=op: elementwise(op), f"float32 {what} of two [2, 3] tensors", family)
    yield Recipe(B.STABLEHLO_AND, 1, lambda: elementwise(B.STABLEHLO_AND, I32), "int32 bitwise and", family)
    yield Recipe(B.STABLEHLO_SHIFT_LEFT, 1, lambda: elementwise(B.STABLEHLO_SHIFT_LEFT, I32, [[0, 1, 5], [31, 2, 17]]),
                 "int32 shifted by constant counts within 0..31", family)
    yield Recipe(B.STABLEHLO_PAD, 1, pad, "float32, edge (one negative) and interior padding", family)
