"""Recipes of the shape and data movement ops (CONCATENATION, PACK, SPLIT, SLICE, GATHER,
PAD, TRANSPOSE, RESHAPE, RESIZE_*, SELECT, SHAPE, ONE_HOT...): the type and the rank make
the version, and a few params (``batch_dims``, ``new_axis_mask``, ``half_pixel_centers``)."""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from delegate_sdk.recipes.base import (
    BF16,
    BOOL,
    F16,
    F32,
    I4,
    I8,
    I8Q,
    I16,
    I16Q,
    I32,
    I64,
    S2,
    STR,
    U8Q,
    U16,
    U32,
    B,
    Graph,
    Kind,
    Recipe,
    hand_stamped,
    litert_only,
    one_input,
    values,
    with_constant,
)
from schema.enums import MirrorPadMode, numpy_dtype
from schema.enums import TensorType as T

UNBUILDABLE = {
    (B.CONCATENATION, 6): litert_only("CONCATENATION", 6, "adds float16 and bfloat16", "float16"),
    (B.CONCATENATION, 7): litert_only("CONCATENATION", 7, "adds float16 and bfloat16", "float16"),
    (B.PACK, 5): litert_only("PACK", 5, "takes the types of v1-v4 and no other", "float32"),
    (B.UNPACK, 6): litert_only("UNPACK", 6, "takes the types of v1-v5 and no other", "float32"),
    (B.SPLIT, 5): litert_only("SPLIT", 5, "takes the types of v1-v4 and no other", "float32"),
    (B.SPLIT_V, 3): litert_only("SPLIT_V", 3, "takes the types of v1-v2 and no other", "float32"),
    (B.GATHER, 8): litert_only("GATHER", 8, "adds float16 and bfloat16", "float16"),
    (B.GATHER_ND, 6): litert_only("GATHER_ND", 6, "adds float16 and bfloat16", "float16"),
    (B.PAD, 6): litert_only("PAD", 6, "adds float16 and bfloat16", "float16"),
    (B.PADV2, 6): litert_only("PADV2", 6, "adds float16 and bfloat16", "float16"),
    (B.REVERSE_V2, 4): litert_only("REVERSE_V2", 4, "adds float16 and bfloat16", "float16"),
    (B.SLICE, 8): litert_only("SLICE", 8, "adds float16, bfloat16, uint16 and float64", "float16"),
    (B.TRANSPOSE, 9): litert_only("TRANSPOSE", 9, "adds float16, uint4, uint16, uint32 and float64", "float16"),
    (B.FILL, 5): litert_only("FILL", 5, "adds bfloat16, uint16, uint32 and float64 values", "a uint16 value"),
    (B.BROADCAST_TO, 4): litert_only("BROADCAST_TO", 4, "adds float16, bfloat16, uint16, uint32, float64 and the sub-byte "
                                "types", "float16"),
    (B.SELECT, 2): "TFLite's rule tests input 0 for int8, and input 0 of SELECT is the bool condition: the rules "
                   "never give v2 (the recipe selects int8 quantized values, stamped v2 by hand)",
    (B.SELECT, 4): "TFLite's rule tests input 0 for uint32, and input 0 of SELECT is the bool condition: the rules "
                   "never give v4 (the recipe selects uint32 values, stamped v4 by hand)",
    (B.SELECT_V2, 2): "TFLite's rule tests input 0 for uint32, and input 0 of SELECT_V2 is the bool condition: the "
                      "rules never give v2 (the recipe selects uint32 values, stamped v2 by hand)",
}

FAMILY = "data movement"

# -- builders ----------------------------------------------------------------------------------------


def concatenation(t: Kind) -> bytes:
    m = Graph()
    x, y = m.input("x", S2, t), m.input("y", S2, t)
    z = m.tensor("z", (2, 6), t)
    m.op(B.CONCATENATION, [x, y], [z], axis=1)
    return m.build(z)


def of_constants(op: int, t: Kind, data_shapes, extras, out_shape, **fields) -> bytes:
    """``op`` over constants of type ``t`` (the sub-byte types: LiteRT's ``set_tensor`` takes
    only values in their range, which the kit's random inputs are not), then int32 ``extras``."""
    m = Graph()
    data = [m.const(f"x{i}", shape, t) for i, shape in enumerate(data_shapes)]
    others = [m.i32(f"c{i}", numbers) for i, numbers in enumerate(extras)]
    y = m.tensor("y", out_shape, t)
    m.op(op, data + others, [y], **fields)
    return m.build(y)


def pack(t: Kind) -> bytes:
    m = Graph()
    x, y = m.input("x", S2, t), m.input("y", S2, t)
    z = m.tensor("z", (2, 2, 3), t)
    m.op(B.PACK, [x, y], [z], values_count=2, axis=0)
    return m.build(z)


def unpack(t: Kind) -> bytes:
    m = Graph()
    x = m.input("x", S2, t)
    a, b = m.tensor("a", (3,), t), m.tensor("b", (3,), t)
    m.op(B.UNPACK, [x], [a, b], num=2, axis=0)
    return m.build(a, b)


def split(t: Kind) -> bytes:
    m = Graph()
    axis = m.g.add_constant("axis", np.array(1, np.int32))
    x = m.input("x", (2, 4), t)
    a, b = m.tensor("a", (2, 2), t), m.tensor("b", (2, 2), t)
    m.op(B.SPLIT, [axis, x], [a, b], num_splits=2)
    return m.build(a, b)


def split_v(t: Kind) -> bytes:
    m = Graph()
    x = m.input("x", (2, 4), t)
    sizes, axis = m.i32("size_splits", [1, 3]), m.g.add_constant("axis", np.array(1, np.int32))
    a, b = m.tensor("a", (2, 1), t), m.tensor("b", (2, 3), t)
    m.op(B.SPLIT_V, [x, sizes, axis], [a, b], num_splits=2)
    return m.build(a, b)


def slice_(t: Kind, rank: int = 2) -> bytes:
    m = Graph()
    shape = (2, 3) if rank == 2 else (1, 1, 1, 2, 3)
    x = m.input("x", shape, t)
    begin = m.i32("begin", [0] * (rank - 1) + [1])
    size = m.i32("size", list(shape[:-1]) + [2])
    y = m.tensor("y", (*shape[:-1], 2), t)
    m.op(B.SLICE, [x, begin, size], [y])
    return m.build(y)


def strided_slice(t: Kind, rank: int = 2, **fields) -> bytes:
    m = Graph()
    shape = (2, 3) if rank == 2 else (1, 1, 1, 2, 3)
    x = m.input("x", shape, t)
    begin = m.i32("begin", [0] * (rank - 1) + [1])
    if fields.get("offset"):
        end = m.i32("end", [d for d in shape[:-1]] + [2])  # with offset, end is begin + end
    else:
        end = m.i32("end", list(shape))
    strides = m.i32("strides", [1] * rank)
    out_shape = (*shape[:-1], 2)
    if fields.get("new_axis_mask"):
        out_shape = (1, *out_shape)
        begin = m.i32("begin_new", [0] + [0] * (rank - 1) + [1])
        end = m.i32("end_new", [1, *shape])
        strides = m.i32("strides_new", [1] * (rank + 1))
    y = m.tensor("y", out_shape, t)
    m.op(B.STRIDED_SLICE, [x, begin, end, strides], [y], **fields)
    return m.build(y)


def gather(t: Kind, indices: Kind = I32, **fields) -> bytes:
    m = Graph()
    if fields.get("batch_dims"):
        x = m.input("x", (2, 3), t)
        idx = m.g.add_constant("indices", np.array([[2], [0]], numpy_dtype(indices.type)))
        y = m.tensor("y", (2, 1), t)
        m.op(B.GATHER, [x, idx], [y], axis=1, **fields)
    else:
        x = m.input("x", (3, 2), t)
        idx = m.g.add_constant("indices", np.array([2, 0], numpy_dtype(indices.type)))
        y = m.tensor("y", (2, 2), t)
        m.op(B.GATHER, [x, idx], [y], axis=0, **fields)
    return m.build(y)


def gather_nd(t: Kind, indices: Kind = I32) -> bytes:
    m = Graph()
    x = m.input("x", (2, 3), t)
    idx = m.g.add_constant("indices", np.array([[1], [0]], numpy_dtype(indices.type)))
    y = m.tensor("y", (2, 3), t)
    m.op(B.GATHER_ND, [x, idx], [y])
    return m.build(y)


def pad(op: int, t: Kind, rank: int = 2, **fields) -> bytes:
    m = Graph()
    shape = (2, 3) if rank == 2 else (1, 1, 1, 2, 3)
    x = m.input("x", shape, t)
    paddings = m.i32("paddings", [[0, 0]] * (rank - 1) + [[1, 1]])
    inputs = [x, paddings]
    if op == B.PADV2:
        inputs.append(m.const("value", np.zeros((), numpy_dtype(t.type)) if t.type != T.STRING else np.array(b"", object), t.same()))
    y = m.tensor("y", (*shape[:-1], 5), t)
    m.op(op, inputs, [y], **fields)
    return m.build(y)


def space_batch(op: int, t: Kind, rank: int = 4) -> bytes:
    m = Graph()
    if op == B.SPACE_TO_BATCH_ND:
        shape, out_shape = ((1, 4, 4, 1), (4, 2, 2, 1)) if rank == 4 else ((1, 4, 1), (2, 2, 1))
        block = m.i32("block", [2, 2] if rank == 4 else [2])
        pads = m.i32("paddings", [[0, 0], [0, 0]] if rank == 4 else [[0, 0]])
    else:
        shape, out_shape = ((4, 2, 2, 1), (1, 4, 4, 1)) if rank == 4 else ((2, 2, 1), (1, 4, 1))
        block = m.i32("block", [2, 2] if rank == 4 else [2])
        pads = m.i32("crops", [[0, 0], [0, 0]] if rank == 4 else [[0, 0]])
    x = m.input("x", shape, t)
    y = m.tensor("y", out_shape, t)
    m.op(op, [x, block, pads], [y])
    return m.build(y)


def space_depth(op: int, t: Kind) -> bytes:
    shape, out_shape = ((1, 2, 2, 1), (1, 1, 1, 4)) if op == B.SPACE_TO_DEPTH else ((1, 1, 1, 4), (1, 2, 2, 1))
    return one_input(op, t, shape, out_shape, block_size=2)


def resize(op: int, t: Kind, **fields) -> bytes:
    return with_constant(op, t, (1, 2, 2, 1), [4, 4], (1, 4, 4, 1), **fields)


def fill(t: Kind) -> bytes:
    m = Graph()
    dims = m.i32("dims", [2, 3])
    value = m.const("value", values(m.rng, (), t), t)
    y = m.tensor("y", (2, 3), t)
    m.op(B.FILL, [dims, value], [y])
    return m.build(y)


def fill_from_input(t: Kind) -> bytes:
    """FILL of a value fed at run time (a graph input scalar)."""
    m = Graph()
    dims = m.i32("dims", [2, 3])
    value = m.input("value", (), t)
    y = m.tensor("y", (2, 3), t)
    m.op(B.FILL, [dims, value], [y])
    return m.build(y)


def range_(t: Kind) -> bytes:
    m = Graph()
    dtype = numpy_dtype(t.type)
    start, limit, delta = (m.g.add_constant(n, np.array(v, dtype)) for n, v in (("start", 0), ("limit", 5), ("delta", 1)))
    y = m.tensor("y", (5,), t)
    m.op(B.RANGE, [start, limit, delta], [y])
    return m.build(y)


def select(op: int, t: Kind, rank: int = 2) -> bytes:
    m = Graph()
    shape = S2 if rank == 2 else (1, 1, 1, 2, 3)
    c = m.input("condition", shape, BOOL)
    x, y = m.input("x", shape, t), m.input("y", shape, t)
    z = m.tensor("z", shape, t)
    m.op(op, [c, x, y], [z])
    return m.build(z)


def where(t: Kind) -> bytes:
    m = Graph()
    c = m.input("condition", S2, t)
    y = m.tensor("y", (6, 2), I64)
    m.op(B.WHERE, [c], [y])
    return m.build(y)


def shape_of(op: int) -> bytes:
    out_shape = (2,) if op == B.SHAPE else ()
    return one_input(op, F32, S2, out_shape, out=I32, **({"out_type": T.INT32} if op == B.SHAPE else {}))


def one_hot() -> bytes:
    m = Graph()
    indices = m.input("indices", (3,), I32)
    depth = m.g.add_constant("depth", np.array(4, np.int32))
    on, off = m.g.add_constant("on", np.array(1.0, np.float32)), m.g.add_constant("off", np.array(0.0, np.float32))
    y = m.tensor("y", (3, 4), F32)
    m.op(B.ONE_HOT, [indices, depth, on, off], [y], axis=-1)
    return m.build(y)


# -- the recipes -------------------------------------------------------------------------------------


def recipes() -> Iterator[Recipe]:
    def r(op, version, description, build):
        return Recipe(op, version, build, description, FAMILY)

    by_type: list[tuple[int, dict[int, Kind], Callable[[Kind], bytes]]] = [
        (B.CONCATENATION, {1: F32, 2: I8Q.same(), 3: I16Q.same(), 4: U32}, concatenation),
        (B.PACK, {1: F32, 2: I8Q.same(), 3: I16Q.same(), 4: U32}, pack),
        (B.UNPACK, {1: F32, 2: I8Q.same(), 3: BOOL, 4: I16Q.same(), 5: F16}, unpack),
        (B.SPLIT, {1: F32, 2: I8Q.same(), 3: I32, 4: I16Q.same()}, split),
        (B.SPLIT_V, {1: F32, 2: I8Q.same()}, split_v),
        (B.GATHER_ND, {1: F32, 2: STR, 3: I16Q.same(), 5: BOOL}, gather_nd),
        (B.FILL, {1: F32, 2: BOOL, 3: I8, 4: F16}, fill),
        (B.RANGE, {1: I32, 2: I64}, range_),
        (B.WHERE, {1: BOOL, 2: F32}, where),
    ]
    for op, versions, builder in by_type:
        for version, t in versions.items():
            yield r(op, version, t.name, lambda builder=builder, t=t: builder(t))
    yield r(B.GATHER_ND, 4, "float32, int16 indices", lambda: gather_nd(F32, I16))
    for version, t in {1: F32, 2: I8Q.same(), 3: BOOL, 4: I16Q.same()}.items():
        yield r(B.GATHER, version, t.name, lambda t=t: gather(t))
    yield r(B.GATHER, 5, "float32, batch_dims=1", lambda: gather(F32, batch_dims=1))
    yield r(B.GATHER, 6, "float32, int16 indices", lambda: gather(F32, I16))
    for version, (t, rank) in {1: (F32, 2), 2: (I8Q.same(), 2), 3: (STR, 2), 4: (I16Q.same(), 2), 5: (F32, 5),
                               6: (U32, 2)}.items():
        yield r(B.SLICE, version, t.name + (", 5-D" if rank == 5 else ""), lambda t=t, rank=rank: slice_(t, rank))
    strided = {
        1: ("float32", lambda: strided_slice(F32)),
        2: ("int8 quantized", lambda: strided_slice(I8Q.same())),
        3: ("bool", lambda: strided_slice(BOOL)),
        4: ("float32, 5-D", lambda: strided_slice(F32, rank=5)),
        5: ("string", lambda: strided_slice(STR)),
        6: ("float32, new_axis_mask", lambda: strided_slice(F32, new_axis_mask=1)),
        7: ("uint32", lambda: strided_slice(U32)),
        8: ("float32, offset", lambda: strided_slice(F32, offset=True)),
    }
    for version, (description, build) in strided.items():
        yield r(B.STRIDED_SLICE, version, description, build)
    for version, (t, rank) in {1: (F32, 2), 2: (I8Q.same(), 2), 3: (BOOL, 2), 4: (F32, 5), 5: (I16Q.same(), 2),
                               6: (F32, 6), 8: (F32, 7)}.items():
        shape = (2, 3) if rank == 2 else (1,) * (rank - 2) + (2, 3)
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        out_shape = shape[:-2] + (3, 2)
        yield r(B.TRANSPOSE, version, t.name + (f", {rank}-D" if rank > 2 else ""),
                lambda t=t, shape=shape, perm=perm, out_shape=out_shape: with_constant(B.TRANSPOSE, t, shape, perm, out_shape))
    for version, t in {1: F32, 2: STR, 3: I8Q.same()}.items():
        yield r(B.TILE, version, t.name, lambda t=t: with_constant(B.TILE, t, S2, [2, 1], (4, 3)))
    for version, t in {1: F32, 2: BOOL, 3: I8Q.same()}.items():
        yield r(B.REVERSE_V2, version, t.name, lambda t=t: with_constant(B.REVERSE_V2, t, S2, [1], S2))
    for version, t in {2: F32, 3: I8Q.same()}.items():
        yield r(B.BROADCAST_TO, version, t.name, lambda t=t: with_constant(B.BROADCAST_TO, t, (1, 3), [2, 3], S2))
    yield r(B.EXPAND_DIMS, 1, "float32", lambda: with_constant(B.EXPAND_DIMS, F32, S2, 0, (1, 2, 3)))
    yield r(B.RESHAPE, 1, "float32", lambda: with_constant(B.RESHAPE, F32, S2, [3, 2], (3, 2), new_shape=(3, 2)))
    yield r(B.SQUEEZE, 1, "float32", lambda: one_input(B.SQUEEZE, F32, (1, 2, 1, 3), S2, squeeze_dims=(0, 2)))
    yield r(B.SQUEEZE, 2, "string", lambda: one_input(B.SQUEEZE, STR, (1, 2, 1, 3), S2, squeeze_dims=(0, 2)))
    for op in (B.PAD, B.PADV2):
        for version, (t, rank) in {1: (F32, 2), 2: (I8Q.same(), 2), 3: (I16Q.same(), 2), 4: (F32, 5), 5: (BOOL, 2)}.items():
            yield r(op, version, t.name + (", 5-D" if rank == 5 else ""), lambda op=op, t=t, rank=rank: pad(op, t, rank))
    for version, t in {1: F32, 2: I8Q.same(), 3: I16Q.same()}.items():
        yield r(B.MIRROR_PAD, version, f"{t.name}, REFLECT", lambda t=t: pad(B.MIRROR_PAD, t, mode=MirrorPadMode.REFLECT))
    for op in (B.SPACE_TO_BATCH_ND, B.BATCH_TO_SPACE_ND):
        for version, (t, rank) in {1: (F32, 4), 2: (I8Q.same(), 4), 3: (F32, 3), 4: (I16Q.same(), 4)}.items():
            yield r(op, version, t.name + (", 3-D" if rank == 3 else ""), lambda op=op, t=t, rank=rank: space_batch(op, t, rank))
    for op in (B.SPACE_TO_DEPTH, B.DEPTH_TO_SPACE):
        for version, t in {1: F32, 2: I8Q.same()}.items():
            yield r(op, version, f"{t.name}, block 2", lambda op=op, t=t: space_depth(op, t))
    resizes = {
        B.RESIZE_BILINEAR: {1: (F32, {}), 2: (I8Q.same(), {}), 3: (F32, {"half_pixel_centers": True}), 4: (I16Q.same(), {})},
        B.RESIZE_NEAREST_NEIGHBOR: {1: (F32, {}), 2: (I8Q.same(), {}), 3: (F32, {"align_corners": True}),
                                    4: (I16Q.same(), {})},
    }
    for op, versions in resizes.items():
        for version, (t, options) in versions.items():
            description = t.name + "".join(f", {k}" for k in options) + ", 2x2 -> 4x4"
            yield r(op, version, description, lambda op=op, t=t, o=options: resize(op, t, **o))
    for version, (t, rank) in {1: (F32, 2), 3: (F32, 5)}.items():
        yield r(B.SELECT, version, t.name + (", 5-D" if rank == 5 else ""), lambda t=t, rank=rank: select(B.SELECT, t, rank))
    yield r(B.SELECT_V2, 1, "float32", lambda: select(B.SELECT_V2, F32))
    yield r(B.SHAPE, 1, "float32 -> int32", lambda: shape_of(B.SHAPE))
    yield r(B.RANK, 1, "float32 -> int32", lambda: shape_of(B.RANK))
    yield r(B.ONE_HOT, 1, "int32 indices -> float32", one_hot)

    # int4 (v5 CONCATENATION, v7 GATHER / SLICE / TRANSPOSE): constants; GATHER's slices of whole bytes
    int4 = "int4 constants"
    yield r(B.CONCATENATION, 5, int4, lambda: of_constants(B.CONCATENATION, I4, [S2, S2], [], (2, 6), axis=1))
    yield r(B.GATHER, 7, int4, lambda: of_constants(B.GATHER, I4, [(3, 4)], [[2, 0]], (2, 4), axis=0))
    yield r(B.SLICE, 7, int4, lambda: of_constants(B.SLICE, I4, [S2], [[0, 1], [2, 2]], (2, 2)))
    yield r(B.TRANSPOSE, 7, int4, lambda: of_constants(B.TRANSPOSE, I4, [S2], [[1, 0]], (3, 2)))

    # the registered versions the rules never give (UNBUILDABLE)
    later = [
        (B.CONCATENATION, 6, "float16", lambda: concatenation(F16)),
        (B.CONCATENATION, 7, "float16", lambda: concatenation(F16)),
        (B.PACK, 5, "float32", lambda: pack(F32)),
        (B.UNPACK, 6, "float32", lambda: unpack(F32)),
        (B.SPLIT, 5, "float32", lambda: split(F32)),
        (B.SPLIT_V, 3, "float32", lambda: split_v(F32)),
        (B.GATHER, 8, "float16", lambda: gather(F16)),
        (B.GATHER_ND, 6, "float16", lambda: gather_nd(F16)),
        (B.PAD, 6, "float16", lambda: pad(B.PAD, F16)),
        (B.PADV2, 6, "float16", lambda: pad(B.PADV2, F16)),
        (B.REVERSE_V2, 4, "float16", lambda: with_constant(B.REVERSE_V2, F16, S2, [1], S2)),
        (B.SLICE, 8, "float16", lambda: slice_(F16)),
        (B.TRANSPOSE, 9, "float16", lambda: with_constant(B.TRANSPOSE, F16, S2, [1, 0], (3, 2))),
        (B.FILL, 5, "a uint16 value", lambda: fill_from_input(U16)),
        (B.BROADCAST_TO, 4, "float16", lambda: with_constant(B.BROADCAST_TO, F16, (1, 3), [2, 3], S2)),
    ]
    for op, version, description, build in later:
        yield Recipe(op, version, hand_stamped(build, version), description, FAMILY, hand_stamped=UNBUILDABLE[(op, version)])
    yield Recipe(B.SELECT, 2, hand_stamped(lambda: select(B.SELECT, I8Q.same()), 2), "int8 quantized values", FAMILY,
                 hand_stamped=UNBUILDABLE[(B.SELECT, 2)])
    for op, version in ((B.SELECT, 4), (B.SELECT_V2, 2)):
        yield Recipe(op, version, hand_stamped(lambda op=op: select(op, U32), version), "uint32 values", FAMILY,
                     hand_stamped=UNBUILDABLE[(op, version)])


def typed() -> Iterator[Recipe]:
    for name, t in (("int8", I8Q.same()), ("uint8", U8Q.same()), ("int16", I16Q.same())):
        yield Recipe(B.RESHAPE, 1, lambda t=t: with_constant(B.RESHAPE, t, S2, [3, 2], (3, 2), new_shape=(3, 2)),
                     f"{name} quantized", dtype=name)
        yield Recipe(B.SQUEEZE, 1, lambda t=t: one_input(B.SQUEEZE, t, (1, 2, 1, 3), S2, squeeze_dims=(0, 2)),
                     f"{name} quantized", dtype=name)
        yield Recipe(B.EXPAND_DIMS, 1, lambda t=t: with_constant(B.EXPAND_DIMS, t, S2, 0, (1, 2, 3)), f"{name} quantized",
                     dtype=name)
    yield Recipe(B.CONCATENATION, 1, lambda: concatenation(U8Q.same()), "uint8 quantized", dtype="uint8")


def variants() -> Iterator[Recipe]:
    same = {"uint8": U8Q.same(), "int8": I8Q.same(), "int16": I16Q.same()}
    by_type = {
        B.PACK: (pack, ("uint8",)), B.UNPACK: (unpack, ("uint8",)), B.SPLIT: (split, ("uint8",)),
        B.SPLIT_V: (split_v, ("uint8", "int16")), B.GATHER: (gather, ("uint8",)), B.SLICE: (slice_, ("uint8",)),
        B.STRIDED_SLICE: (strided_slice, ("uint8", "int16")), B.PAD: (lambda t: pad(B.PAD, t), ("uint8",)),
        B.PADV2: (lambda t: pad(B.PADV2, t), ("uint8",)),
        B.SPACE_TO_DEPTH: (lambda t: space_depth(B.SPACE_TO_DEPTH, t), ("uint8",)),
        B.DEPTH_TO_SPACE: (lambda t: space_depth(B.DEPTH_TO_SPACE, t), ("uint8",)),
        B.RESIZE_BILINEAR: (lambda t: resize(B.RESIZE_BILINEAR, t), ("uint8",)),
        B.RESIZE_NEAREST_NEIGHBOR: (lambda t: resize(B.RESIZE_NEAREST_NEIGHBOR, t), ("uint8",)),
        B.SPACE_TO_BATCH_ND: (lambda t: space_batch(B.SPACE_TO_BATCH_ND, t), ("uint8",)),
        B.BATCH_TO_SPACE_ND: (lambda t: space_batch(B.BATCH_TO_SPACE_ND, t), ("uint8",)),
        B.TRANSPOSE: (lambda t: with_constant(B.TRANSPOSE, t, S2, [1, 0], (3, 2)), ("uint8",)),
        B.TILE: (lambda t: with_constant(B.TILE, t, S2, [2, 1], (4, 3)), ("uint8", "int16")),
        B.REVERSE_V2: (lambda t: with_constant(B.REVERSE_V2, t, S2, [1], S2), ("uint8", "int16")),
        B.BROADCAST_TO: (lambda t: with_constant(B.BROADCAST_TO, t, (1, 3), [2, 3], S2), ("uint8", "int16")),
        B.MIRROR_PAD: (lambda t: pad(B.MIRROR_PAD, t, mode=MirrorPadMode.REFLECT), ("uint8",)),
        B.GATHER_ND: (gather_nd, ("uint8", "int8")),
    }
    versions = {(B.UNPACK, "uint8"): 2, (B.BROADCAST_TO, "uint8"): 2, (B.BROADCAST_TO, "int16"): 3}
    for op, (build, names) in by_type.items():
        for name in names:
            yield Recipe(op, versions.get((op, name), 1), lambda build=build, t=same[name]: build(t), f"{name} quantized",
                         dtype=name)
