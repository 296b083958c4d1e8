"""Recipes of the reductions (MEAN, SUM, REDUCE_*, ARG_MAX/ARG_MIN, CUMSUM): the input
type makes the version."""

from __future__ import annotations

from typing import Iterator, Sequence

from delegate_sdk.recipes.base import BOOL, F32, I8Q, I16Q, I32, S2, S4, U8Q, B, Graph, Kind, Recipe, with_constant
from schema.enums import TensorType as T

# -- builders ----------------------------------------------------------------------------------------


def reduce(op: int, t: Kind, shape: Sequence[int] = S4, axis=(1, 2), **fields) -> bytes:
    m = Graph()
    x = m.input("x", shape, t)
    a = m.i32("axis", list(axis))
    out_shape = [1 if d in axis else s for d, s in enumerate(shape)]
    y = m.tensor("y", out_shape, t)
    m.op(op, [x, a], [y], keep_dims=True, **fields)
    return m.build(y)


def arg(op: int, t: Kind) -> bytes:
    m = Graph()
    x = m.input("x", S2, t)
    axis = m.i32("axis", [1])
    y = m.tensor("y", (2,), I32)
    m.op(op, [x, axis], [y], output_type=T.INT32)
    return m.build(y)


# -- the recipes -------------------------------------------------------------------------------------


def recipes() -> Iterator[Recipe]:
    reductions = {
        B.MEAN: {1: F32, 2: I8Q, 3: I16Q}, B.REDUCE_MAX: {1: F32, 2: I8Q.same(), 3: I16Q.same()},
        B.REDUCE_MIN: {1: F32, 2: I8Q.same(), 3: I16Q.same()}, B.SUM: {1: F32, 2: I8Q},
        B.REDUCE_PROD: {1: F32, 2: I8Q}, B.REDUCE_ALL: {1: BOOL}, B.REDUCE_ANY: {1: BOOL},
    }
    for op, versions in reductions.items():
        for version, t in versions.items():
            yield Recipe(op, version, lambda op=op, t=t: reduce(op, t), f"{t.name}, axes 1 and 2, keep_dims", "reduction")
    yield Recipe(B.CUMSUM, 1, lambda: with_constant(B.CUMSUM, F32, S2, 1, S2), "float32", "reduction")
    for op in (B.ARG_MAX, B.ARG_MIN):
        for version, t in {1: F32, 2: I8Q, 3: BOOL}.items():
            yield Recipe(op, version, lambda op=op, t=t: arg(op, t), f"{t.name} -> int32", "reduction")


def variants() -> Iterator[Recipe]:
    types = {"uint8": U8Q, "int16": I16Q}
    reduction_types = {B.MEAN: ("uint8",), B.REDUCE_MAX: ("uint8",), B.REDUCE_MIN: ("uint8",), B.SUM: ("uint8", "int16")}
    for op, names in reduction_types.items():
        for name in names:
            t = types[name].same() if op in (B.REDUCE_MAX, B.REDUCE_MIN) else types[name]
            yield Recipe(op, 1, lambda op=op, t=t: reduce(op, t), f"{name} quantized, axes 1 and 2, keep_dims", dtype=name)
    for op in (B.ARG_MAX, B.ARG_MIN):
        yield Recipe(op, 1, lambda op=op: arg(op, U8Q), "uint8 quantized -> int32", dtype="uint8")
