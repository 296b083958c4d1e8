"""Recipes of the random-number ops of issue 32 (RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL,
MULTINOMIAL): seeded, so that both runtimes draw the same numbers (LiteRT's Philox
stream; see ``backends/cpu/kernels/random_ops.py``), with constant shapes and sample counts."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import F32, I64, B, Graph, Recipe

FAMILY = "random numbers"
SEEDS = dict(seed=7, seed2=13)


def random_of_shape(op: int) -> bytes:
    """``op`` drawing a [2, 3] float32 tensor."""
    m = Graph()
    shape = m.i32("shape", [2, 3])
    y = m.tensor("y", (2, 3), F32)
    m.op(op, [shape], [y], **SEEDS)
    return m.build(y)


def multinomial() -> bytes:
    """Six int64 class draws per row of drawn [2, 5] logits."""
    m = Graph()
    logits = m.input("logits", (2, 5), F32)
    count = m.g.add_constant("num_samples", np.array(6, np.int32))
    y = m.tensor("y", (2, 6), I64)
    m.op(B.MULTINOMIAL, [logits, count], [y], **SEEDS)
    return m.build(y)


def recipes() -> Iterator[Recipe]:
    yield Recipe(B.RANDOM_UNIFORM, 1, lambda: random_of_shape(B.RANDOM_UNIFORM), "float32 [2, 3], seeded", FAMILY)
    yield Recipe(B.RANDOM_STANDARD_NORMAL, 1, lambda: random_of_shape(B.RANDOM_STANDARD_NORMAL),
                 "float32 [2, 3], seeded", FAMILY)
    yield Recipe(B.MULTINOMIAL, 1, multinomial, "float32 [2, 5] logits, 6 int64 samples per row, seeded", FAMILY)
