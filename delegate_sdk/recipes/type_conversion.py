"""Recipes of the type conversions: CAST, DEQUANTIZE, QUANTIZE and DENSIFY (a constant
stored sparse); the source and target types make the version."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import (
    BF16, F16, F32, I2, I4, I8, I8Q, I16Q, I32, S2, U4, U8Q, U16, U32, B, Graph, Kind, Recipe, hand_stamped,
    litert_only, one_input, repack,
)
from schema.builder import quantization

I4Q = Kind("int4 quantized", I4.type, quantization(0.5, 1))
I2Q = Kind("int2 quantized", I2.type, quantization(0.5, 0))
U4Q = Kind("uint4 quantized", U4.type, quantization(0.25, 8))

UNBUILDABLE = {
    (B.CAST, 9): litert_only("CAST", 9, "converts the types of v1-v8 and no other", "float32 -> int4"),
    (B.QUANTIZE, 6): "no rule gives QUANTIZE v6 (TFLite's rules stop at 5, its runtime table lists 6), yet LiteRT "
                      "registers it with the kernel of the others and so does the CPU (the recipe is float32 -> int4, "
                      "stamped v6 by hand)",
    (B.DEQUANTIZE, 9): litert_only("DEQUANTIZE", 9, "takes the types of v1-v8 and no other", "the int4 constant of v6"),
    (B.DEQUANTIZE, 4): "no rule gives DEQUANTIZE v4: TFLite's GetBuiltinOperatorVersion returns 1, 2, 3, 5, 6, 7 or 8 "
                       "for it (v4 exists in the runtime tables), yet LiteRT registers it with the kernel of the others and "
                       "so does the CPU (the recipe is the int8 model of v2, stamped v4 by hand)",
}

FAMILY = "type conversion"


def cast(source: Kind, target: Kind) -> bytes:
    return one_input(B.CAST, source, S2, S2, out=target, in_data_type=source.type, out_data_type=target.type)


def cast_constant(source: Kind, target: Kind, numbers) -> bytes:
    """CAST of a constant (int4, int2: types LiteRT's ``set_tensor`` refuses or limits)."""
    m = Graph()
    x = m.const("x", np.asarray(numbers), source)
    y = m.tensor("y", np.shape(numbers), target)
    m.op(B.CAST, [x], [y], in_data_type=source.type, out_data_type=target.type)
    return m.build(y)


def cast_through_bfloat16() -> bytes:
    """float32 -> CAST -> bfloat16 -> CAST -> float32: LiteRT's Python API neither feeds nor
    reads bfloat16, so the node under test (node 0) is followed by its way back."""
    m = Graph()
    x = m.input("x", S2, F32)
    half = m.tensor("half", S2, BF16)
    y = m.tensor("y", S2, F32)
    m.op(B.CAST, [x], [half], in_data_type=F32.type, out_data_type=BF16.type)
    m.op(B.CAST, [half], [y], in_data_type=BF16.type, out_data_type=F32.type)
    return m.build(y)


def dequantize(t: Kind, per_channel: bool = False) -> bytes:
    m = Graph()
    if per_channel:
        x = m.g.add_constant("x", m.rng.integers(-100, 100, (3, 2)).astype(np.int8),
                             quantization=quantization([0.1, 0.2, 0.3], 0, 0))
    else:
        x = m.input("x", S2, t)
    y = m.tensor("y", (3, 2) if per_channel else S2, F32)
    m.op(B.DEQUANTIZE, [x], [y])
    return m.build(y)


def dequantize_constant(t: Kind, numbers) -> bytes:
    """DEQUANTIZE of a constant of a sub-byte type (packed in the file)."""
    m = Graph()
    x = m.const("x", np.asarray(numbers), t)
    y = m.tensor("y", np.shape(numbers), F32)
    m.op(B.DEQUANTIZE, [x], [y])
    return m.build(y)


def quantize(target: Kind, per_channel: bool = False) -> bytes:
    m = Graph()
    x = m.input("x", (3, 2), F32)
    q = quantization([0.1, 0.2, 0.3], 0, 0) if per_channel else target.q
    y = m.g.add_tensor("y", [3, 2], target.type, quantization=q)
    m.op(B.QUANTIZE, [x], [y])
    return m.build(y)


def densify() -> bytes:
    """DENSIFY of a constant stored sparse (every dimension dense: the simplest format)."""
    from schema import schema_generated as fb

    dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], np.float32)
    m = Graph()
    w = m.g.add_constant("w", dense)
    y = m.tensor("y", dense.shape, F32)
    m.op(B.DENSIFY, [w], [y])
    model = fb.ModelT.InitFromPackedBuf(m.build(y), 0)
    tensor = next(t for t in model.subgraphs[0].tensors if t.name.decode() == "w")
    sparsity = fb.SparsityParametersT()
    sparsity.traversalOrder = [0, 1]
    sparsity.blockMap = []
    sparsity.dimMetadata = []
    for size in dense.shape:
        dim = fb.DimensionMetadataT()
        dim.format = 0  # DENSE
        dim.denseSize = size
        sparsity.dimMetadata.append(dim)
    tensor.sparsity = sparsity
    return repack(model)


def recipes() -> Iterator[Recipe]:
    int4, int2 = [[-8, -3, 0], [1, 5, 7]], [[-2, -1, 0], [1, 0, -2]]
    for version, (source, target) in {1: (F32, I32), 2: (U32, F32), 3: (I8, F32), 4: (U16, F32), 5: (F32, F16)}.items():
        yield Recipe(B.CAST, version, lambda s=source, t=target: cast(s, t), f"{source.name} -> {target.name}", FAMILY)
    yield Recipe(B.CAST, 6, lambda: cast_constant(I4, F32, int4), "int4 constant -> float32", FAMILY)
    yield Recipe(B.CAST, 7, cast_through_bfloat16, "float32 -> bfloat16 (and back, node 1)", FAMILY)
    yield Recipe(B.CAST, 8, lambda: cast_constant(I2, F32, int2), "int2 constant -> float32", FAMILY)
    yield Recipe(B.CAST, 9, hand_stamped(lambda: one_input(B.CAST, F32, S2, S2, out=I4), 9), "float32 -> int4", FAMILY,
                 hand_stamped=UNBUILDABLE[(B.CAST, 9)])
    dequantizations = {
        1: ("uint8 quantized -> float32", lambda: dequantize(U8Q)),
        2: ("int8 quantized -> float32", lambda: dequantize(I8Q)),
        3: ("int16 quantized -> float32", lambda: dequantize(I16Q)),
        5: ("int8 per channel (a constant) -> float32", lambda: dequantize(I8Q, per_channel=True)),
    }
    for version, (description, build) in dequantizations.items():
        yield Recipe(B.DEQUANTIZE, version, build, description, FAMILY)
    for version, (t, numbers) in {6: (I4Q, int4), 7: (I2Q, int2), 8: (U4Q, [[0, 15, 3], [9, 1, 2]])}.items():
        yield Recipe(B.DEQUANTIZE, version, lambda t=t, n=numbers: dequantize_constant(t, n),
                     f"{t.name} constant -> float32", FAMILY)
    yield Recipe(B.DEQUANTIZE, 9, hand_stamped(lambda: dequantize_constant(I4Q, int4), 9), "int4 constant -> float32",
                 FAMILY, hand_stamped=UNBUILDABLE[(B.DEQUANTIZE, 9)])
    yield Recipe(B.DEQUANTIZE, 4, hand_stamped(lambda: dequantize(I8Q), 4), "int8 quantized -> float32", FAMILY,
                 hand_stamped=UNBUILDABLE[(B.DEQUANTIZE, 4)])
    quantizations = {
        1: ("float32 -> int8", lambda: quantize(I8Q)),
        2: ("float32 -> int16", lambda: quantize(I16Q)),
        3: ("float32 -> int8 per channel", lambda: quantize(I8Q, per_channel=True)),
        4: ("float32 -> int4", lambda: quantize(I4Q)),
        5: ("float32 -> uint4", lambda: quantize(U4Q)),
    }
    for version, (description, build) in quantizations.items():
        yield Recipe(B.QUANTIZE, version, build, description, FAMILY)
    yield Recipe(B.QUANTIZE, 6, hand_stamped(lambda: quantize(I4Q), 6), "float32 -> int4", FAMILY,
                 hand_stamped=UNBUILDABLE[(B.QUANTIZE, 6)])
    yield Recipe(B.DENSIFY, 1, densify, "float32 constant stored sparse", FAMILY)
