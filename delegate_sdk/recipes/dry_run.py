"""Recipes of versions the CPU does not register (types or formats no kernel here runs yet):
for dry runs of delegates whose cap is just below them (``assert_takes_versions_up_to(...,
max_version=N)`` needs a recipe for N + 1). Their models may hold what the runtime cannot
run, so they never run.

None is left: the int4, int2, uint4 and bfloat16 versions, sparse and shuffled weights
have moved to their families' modules (their kernels run them). A version TFLite adds before a kernel here
runs it gets its recipe here (``typed_inputs`` builds graph inputs of any type), and moves
when a kernel comes."""

from __future__ import annotations

from typing import Iterator, Sequence

from delegate_sdk.recipes.base import Graph, Kind, Recipe

FAMILY = "dry run only"


def typed_inputs(op: int, types: Sequence[Kind], shapes: Sequence[Sequence[int]], out: Kind, out_shape, **fields) -> bytes:
    """``op`` over graph inputs of the given types (no constants)."""
    m = Graph()
    inputs = [m.input(f"x{i}", shape, t) for i, (t, shape) in enumerate(zip(types, shapes))]
    y = m.tensor("y", out_shape, out)
    m.op(op, inputs, [y], **fields)
    return m.build(y)


def recipes() -> Iterator[Recipe]:
    return iter(())  # none: every version TFLite defines that LiteRT 2.3 registers runs on the CPU
