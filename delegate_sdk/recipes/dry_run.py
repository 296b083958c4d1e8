"""Recipes of versions the CPU does not register (int4, int2, uint4 and bfloat16 tensors,
sparse or shuffled weights): for dry runs of delegates whose cap is just below them
(``assert_takes_versions_up_to(..., max_version=N)`` needs a recipe for N + 1). Their
models hold graph inputs of types the runtime cannot hold, so they never run.

When a kernel comes to run one of these versions, its recipe moves to the op's family
module (as a model the kernel runs) and leaves this table."""

from __future__ import annotations

from typing import Iterator, Sequence

from delegate_sdk.recipes.base import BF16, F32, I2, I4, I8, I8Q, I16Q, I32, I64, S2, U4, U8Q, B, Graph, Kind, Recipe, repack

FAMILY = "dry run only"


def typed_inputs(op: int, types: Sequence[Kind], shapes: Sequence[Sequence[int]], out: Kind, out_shape, **fields) -> bytes:
    """``op`` over graph inputs of the given types (no constants)."""
    m = Graph()
    inputs = [m.input(f"x{i}", shape, t) for i, (t, shape) in enumerate(zip(types, shapes))]
    y = m.tensor("y", out_shape, out)
    m.op(op, inputs, [y], **fields)
    return m.build(y)


def recipes() -> Iterator[Recipe]:
    def r(op, version, description, build):
        return Recipe(op, version, build, description, FAMILY)

    w2, x24, o23 = (3, 4), (2, 4), (2, 3)
    yield r(B.FULLY_CONNECTED, 2, "shuffled 4x16 int8 weights format (uint8 input, int16 output)",
            lambda: typed_inputs(B.FULLY_CONNECTED, [U8Q, I8Q, I32], [x24, w2, (3,)], I16Q, o23, weights_format=1))
