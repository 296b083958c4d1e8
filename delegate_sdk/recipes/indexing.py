"""Recipes of the indexing, scatter and segment ops of issue 32 (BROADCAST_ARGS, DILATE,
DYNAMIC_UPDATE_SLICE, MATRIX_DIAG, MATRIX_SET_DIAG, REVERSE_SEQUENCE, SCATTER_ND,
SEGMENT_SUM, UNSORTED_SEGMENT_*, SPARSE_TO_DENSE). Indices, segment ids and lengths are
constants (valid for every input the kit draws); the data are graph inputs. The type of the
data (or of the start indices) makes the version."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import BF16, F16, F32, I4, I8, I8Q, I16Q, I32, I64, S2, U8Q, B, Graph, Kind, Recipe

FAMILY = "indexing and scatter"


def dynamic_update_slice(t: Kind, starts: Kind = I32) -> bytes:
    """A [2, 2] update into a [3, 4] operand at starts drawn by the kit (clamped into it)."""
    m = Graph()
    operand, update, begin = m.input("operand", (3, 4), t), m.input("update", (2, 2), t), m.input("starts", (2,), starts)
    y = m.tensor("y", (3, 4), t)
    m.op(B.DYNAMIC_UPDATE_SLICE, [operand, update, begin], [y])
    return m.build(y)


def dynamic_update_slice_int4() -> bytes:
    """int4 operand and update (constants: LiteRT's set_tensor takes only int4 values in range)."""
    m = Graph()
    operand, update, begin = m.const("operand", (3, 4), I4), m.const("update", (2, 2), I4), m.i32("starts", [1, 1])
    y = m.tensor("y", (3, 4), I4)
    m.op(B.DYNAMIC_UPDATE_SLICE, [operand, update, begin], [y])
    return m.build(y)


def dynamic_update_slice_bfloat16() -> bytes:
    """bfloat16 operand (node 1): LiteRT's Python API neither feeds nor reads bfloat16, so the
    operand is a float32 input cast to bfloat16 (node 0) and the result is cast back (node 2)."""
    m = Graph()
    x = m.input("x", (3, 4), F32)
    operand = m.tensor("operand", (3, 4), BF16)
    update, begin = m.const("update", (2, 2), BF16), m.i32("starts", [1, 1])
    result, y = m.tensor("result", (3, 4), BF16), m.tensor("y", (3, 4), F32)
    m.op(B.CAST, [x], [operand])
    m.op(B.DYNAMIC_UPDATE_SLICE, [operand, update, begin], [result])
    m.op(B.CAST, [result], [y])
    return m.build(y)


def sparse_to_dense(t: Kind) -> bytes:
    m = Graph()
    indices = m.i32("indices", [[0, 1], [2, 3], [1, 0]])
    shape = m.i32("shape", [3, 4])
    values = m.input("values", (3,), t)
    default = m.g.add_constant("default", np.array(5, values_dtype(t)), quantization=t.q)
    y = m.tensor("y", (3, 4), t)
    m.op(B.SPARSE_TO_DENSE, [indices, shape, values, default], [y])
    return m.build(y)


def values_dtype(t: Kind) -> np.dtype:
    from schema.enums import numpy_dtype

    return numpy_dtype(t.type)


def unary(op: int, shape, out_shape, t: Kind = F32) -> bytes:
    m = Graph()
    x = m.input("x", shape, t)
    y = m.tensor("y", out_shape, t)
    m.op(op, [x], [y])
    return m.build(y)


def broadcast_args() -> bytes:
    """A drawn shape against a constant [1, 1] (every shape broadcasts with it)."""
    m = Graph()
    shape, ones = m.input("shape", (3,), I32), m.i32("ones", [1, 1])
    y = m.tensor("y", (3,), I32)
    m.op(B.BROADCAST_ARGS, [shape, ones], [y])
    return m.build(y)


def dilate() -> bytes:
    m = Graph()
    x = m.input("x", S2)
    factors, padding = m.i32("dilations", [2, 3]), m.g.add_constant("padding", np.array(-1.0, np.float32))
    y = m.tensor("y", (3, 7))
    m.op(B.DILATE, [x, factors, padding], [y])
    return m.build(y)


def matrix_set_diag() -> bytes:
    m = Graph()
    x, diagonal = m.input("x", (2, 3, 4)), m.input("diagonal", (2, 3))
    y = m.tensor("y", (2, 3, 4))
    m.op(B.MATRIX_SET_DIAG, [x, diagonal], [y])
    return m.build(y)


def reverse_sequence() -> bytes:
    m = Graph()
    x, lengths = m.input("x", (3, 4)), m.i32("lengths", [1, 4, 2])
    y = m.tensor("y", (3, 4))
    m.op(B.REVERSE_SEQUENCE, [x, lengths], [y], seq_dim=1, batch_dim=0)
    return m.build(y)


def scatter_nd() -> bytes:
    m = Graph()
    indices, shape = m.i32("indices", [[1], [3], [1]]), m.i32("shape", [4, 2])
    updates = m.input("updates", (3, 2))
    y = m.tensor("y", (4, 2))
    m.op(B.SCATTER_ND, [indices, updates, shape], [y])
    return m.build(y)


def segment(op: int) -> bytes:
    """Five rows into three segments (the unsorted ops: four, one left empty, one id skipped)."""
    m = Graph()
    data = m.input("data", (5, 2))
    if op == B.SEGMENT_SUM:
        ids, inputs, rows = m.i32("ids", [0, 0, 1, 1, 2]), [], 3
    else:
        ids, inputs, rows = m.i32("ids", [3, 0, -1, 3, 1]), [m.i32("num_segments", 4)], 4
    y = m.tensor("y", (rows, 2))
    m.op(op, [data, ids, *inputs], [y])
    return m.build(y)


def recipes() -> Iterator[Recipe]:
    def r(op, version, description, build):
        return Recipe(op, version, build, description, FAMILY)

    yield r(B.BROADCAST_ARGS, 1, "int32 shapes", broadcast_args)
    yield r(B.DILATE, 1, "float32, dilations [2, 3]", dilate)
    for version, (t, starts) in {1: (F32, I32), 2: (F32, I64), 3: (F16, I32), 4: (I16Q.same(), I32)}.items():
        yield r(B.DYNAMIC_UPDATE_SLICE, version, f"{t.name}, {starts.name} starts",
                lambda t=t, starts=starts: dynamic_update_slice(t, starts))
    yield r(B.DYNAMIC_UPDATE_SLICE, 5, "int4 constants", dynamic_update_slice_int4)
    yield Recipe(B.DYNAMIC_UPDATE_SLICE, 6, dynamic_update_slice_bfloat16, "bfloat16 (between CASTs, node 1)", FAMILY,
                 subject=1)
    yield r(B.MATRIX_DIAG, 1, "float32 [2, 3] -> [2, 3, 3]", lambda: unary(B.MATRIX_DIAG, S2, (2, 3, 3)))
    yield r(B.MATRIX_SET_DIAG, 1, "float32 [2, 3, 4]", matrix_set_diag)
    yield r(B.REVERSE_SEQUENCE, 1, "float32, seq_dim 1, batch_dim 0", reverse_sequence)
    yield r(B.SCATTER_ND, 1, "float32 updates, a repeated index", scatter_nd)
    for op in (B.SEGMENT_SUM, B.UNSORTED_SEGMENT_MAX, B.UNSORTED_SEGMENT_MIN, B.UNSORTED_SEGMENT_PROD,
               B.UNSORTED_SEGMENT_SUM):
        yield r(op, 1, "float32, constant segment ids", lambda op=op: segment(op))
    for version, t in {1: F32, 2: I64, 3: I8}.items():
        yield r(B.SPARSE_TO_DENSE, version, f"{t.name} values", lambda t=t: sparse_to_dense(t))


def variants() -> Iterator[Recipe]:
    """DYNAMIC_UPDATE_SLICE on quantized int8 and uint8 (version 1: the bytes move unchanged)."""
    for name, t in (("int8", I8Q.same()), ("uint8", U8Q.same())):
        yield Recipe(B.DYNAMIC_UPDATE_SLICE, 1, lambda t=t: dynamic_update_slice(t), f"{name} quantized", dtype=name)
