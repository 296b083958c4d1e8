"""Recipes of the 2-D pooling ops: the input type makes the version."""

from __future__ import annotations

from typing import Iterator

from delegate_sdk.recipes.base import F32, I8Q, I16Q, U8Q, B, Graph, Kind, Recipe
from schema.enums import Padding


def pool(op: int, t: Kind) -> bytes:
    m = Graph()
    x = m.input("x", (1, 4, 4, 2), t)
    y = m.tensor("y", (1, 2, 2, 2), t)
    m.op(op, [x], [y], padding=Padding.VALID, stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    return m.build(y)


def recipes() -> Iterator[Recipe]:
    for op in (B.MAX_POOL_2D, B.AVERAGE_POOL_2D):
        for version, t in {1: F32, 2: I8Q.same(), 3: I16Q.same()}.items():
            yield Recipe(op, version, lambda op=op, t=t: pool(op, t), f"{t.name}, 2x2 window, stride 2", "pooling")
    yield Recipe(B.L2_POOL_2D, 1, lambda: pool(B.L2_POOL_2D, F32), "float32, 2x2 window, stride 2", "pooling")


def typed() -> Iterator[Recipe]:
    for op in (B.MAX_POOL_2D, B.AVERAGE_POOL_2D):
        yield Recipe(op, 1, lambda op=op: pool(op, U8Q.same()), "uint8 quantized, 2x2 window, stride 2", dtype="uint8")
