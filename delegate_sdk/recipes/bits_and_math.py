"""Recipes of the elementwise math, bit and fake-quantization ops of issue 32 (ADD_N, ATAN2,
BITCAST, BITWISE_XOR, RIGHT_SHIFT, BUCKETIZE, FAKE_QUANT): one version each, except
FAKE_QUANT, whose version 2 (``narrow_range``) neither LiteRT nor the CPU runs (the recipe
is version 2 stamped by hand on a model without it)."""

from __future__ import annotations

from typing import Iterator

from delegate_sdk.recipes.base import F32, I8, I32, S2, B, Graph, Kind, Recipe, hand_stamped, one_input

FAMILY = "bits and math"

UNBUILDABLE = {
    (B.FAKE_QUANT, 2): "TFLite's rule gives FAKE_QUANT v2 only with narrow_range, which LiteRT's kernel refuses at "
                       "prepare (so does the CPU's); the recipe is a model without it, stamped v2 by hand",
}


def elementwise(op: int, t: Kind, count: int, out: Kind | None = None, **fields) -> bytes:
    """``op`` of ``count`` graph inputs of shape S2 and type ``t``."""
    m = Graph()
    inputs = [m.input(f"x{i}", S2, t) for i in range(count)]
    y = m.tensor("y", S2, out or t)
    m.op(op, inputs, [y], **fields)
    return m.build(y)


def fake_quant() -> bytes:
    return one_input(B.FAKE_QUANT, F32, S2, S2, min=-1.5, max=1.0, num_bits=8)


def recipes() -> Iterator[Recipe]:
    def r(op, version, description, build, **fields):
        return Recipe(op, version, build, description, FAMILY, **fields)

    yield r(B.ADD_N, 1, "float32, three inputs", lambda: elementwise(B.ADD_N, F32, 3))
    yield r(B.ATAN2, 1, "float32", lambda: elementwise(B.ATAN2, F32, 2))
    yield r(B.BITWISE_XOR, 1, "int32", lambda: elementwise(B.BITWISE_XOR, I32, 2))
    yield r(B.RIGHT_SHIFT, 1, "int32 (shift counts clamped to 0..31)", lambda: elementwise(B.RIGHT_SHIFT, I32, 2))
    yield r(B.BITCAST, 1, "float32 [2, 3] -> int8 [2, 3, 4]", lambda: one_input(B.BITCAST, F32, S2, (2, 3, 4), I8))
    yield r(B.BUCKETIZE, 1, "float32 -> int32 bucket indices",
            lambda: one_input(B.BUCKETIZE, F32, S2, S2, I32, boundaries=(-1.0, 0.0, 0.5, 1.5)))
    yield r(B.FAKE_QUANT, 1, "float32, 8 bits over [-1.5, 1]", fake_quant)
    yield r(B.FAKE_QUANT, 2, "float32, 8 bits over [-1.5, 1], without narrow_range", hand_stamped(fake_quant, 2),
            hand_stamped=UNBUILDABLE[(B.FAKE_QUANT, 2)])
