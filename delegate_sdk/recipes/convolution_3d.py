"""Recipes of the 3-D convolutions, CONV_3D and CONV_3D_TRANSPOSE: float32, version 1 (the
only one). Small filters (8 products per output), so that the comparison with LiteRT's
loop holds to float32 rounding at the default tolerance."""

from __future__ import annotations

from typing import Iterator

from delegate_sdk.recipes.base import F32, B, Graph, Recipe
from schema.enums import Padding


def conv3d() -> bytes:
    m = Graph()
    x = m.input("x", (1, 3, 4, 4, 2))
    w = m.const("w", (2, 2, 1, 2, 3), F32)  # [KD, KH, KW, I, O]
    b = m.const("b", (3,), F32)
    y = m.tensor("y", (1, 3, 2, 4, 3))
    m.op(B.CONV_3D, [x, w, b], [y], padding=Padding.SAME, stride_d=1, stride_h=2, stride_w=1)
    return m.build(y)


def conv3d_transpose() -> bytes:
    m = Graph()
    shape = m.i32("output_shape", [1, 4, 4, 3, 3])
    w = m.const("w", (2, 2, 1, 3, 2), F32)  # [KD, KH, KW, O, I]
    x = m.input("x", (1, 2, 2, 3, 2))
    y = m.tensor("y", (1, 4, 4, 3, 3))
    m.op(B.CONV_3D_TRANSPOSE, [shape, w, x], [y], padding=Padding.SAME, stride_d=2, stride_h=2, stride_w=1)
    return m.build(y)


def recipes() -> Iterator[Recipe]:
    yield Recipe(B.CONV_3D, 1, conv3d, "float32 with bias, SAME, stride 1x2x1", "convolution 3-D")
    yield Recipe(B.CONV_3D_TRANSPOSE, 1, conv3d_transpose, "float32, SAME, stride 2x2x1", "convolution 3-D")
