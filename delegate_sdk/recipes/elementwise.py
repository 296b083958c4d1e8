"""Recipes of the elementwise ops: unary (activations and math), binary (arithmetic,
logical) and comparisons. The input type makes most versions; a few take a param
(``pot_scale_int16``) or a 5-D broadcast."""

from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

import numpy as np

from delegate_sdk.recipes.base import (
    BOOL,
    C64,
    F16,
    F32,
    I8Q,
    I16,
    I16Q,
    I32,
    I64,
    S2,
    S4,
    STR,
    U8Q,
    B,
    Graph,
    Kind,
    Recipe,
    hand_stamped,
    litert_only,
    nonzero,
)
from schema.builder import quantization
from schema.enums import TensorType as T

#: int8 whose zero point is the type's minimum: every value is >= 0 (SQRT, RSQRT fail below 0)
I8Q_FROM_MIN = Kind("int8 quantized, zero point -128", T.INT8, quantization(0.05, -128), quantization(0.02, -128))

UNBUILDABLE = {
    (B.COS, 2): litert_only("COS", 2, "adds float16", "float16"),
    (B.SIN, 2): litert_only("SIN", 2, "adds float16", "float16"),
    (B.SOFTMAX, 4): litert_only("SOFTMAX", 4, "adds float16", "float16"),
    (B.GELU, 3): litert_only("GELU", 3, "adds int16 (quantized) to v2's int8 and uint8", "int16 quantized"),
    (B.EQUAL, 4): "no rule gives EQUAL v4 (int16 is v5, string v3, int8 v2), yet LiteRT registers and runs it (its "
                  "kernel ignores the version) and so does the CPU (the recipe compares strings, stamped v4 by hand)",
}


# -- builders ----------------------------------------------------------------------------------------


def unary(op: int, t: Kind, shape: Sequence[int] = S2, out: Kind | None = None, **fields) -> bytes:
    m = Graph()
    x = m.input("x", shape, t)
    y = m.tensor("y", shape, out or t)
    m.op(op, [x], [y], **fields)
    return m.build(y)


def rsqrt_of_abs(t: Kind) -> bytes:
    """ABS -> RSQRT (node 1): RSQRT fails on an input below its zero point, so the node under
    test gets ABS's output (symmetric int16, zero point 0: never below)."""
    m = Graph()
    x = m.input("x", S2, t)
    magnitude = m.tensor("magnitude", S2, t.same())
    y = m.tensor("y", S2, t)
    m.op(B.ABS, [x], [magnitude])
    m.op(B.RSQRT, [magnitude], [y])
    return m.build(y)


def binary(op: int, t: Kind, shapes=(S2, S2), out: Kind | None = None, const_second: bool = False,
           second: Kind | None = None, **fields) -> bytes:
    m = Graph()
    x = m.input("x", shapes[0], t)
    other = second or t
    if const_second:
        y = m.const("y", nonzero(m.rng, shapes[1], other), other)
    else:
        y = m.input("y", shapes[1], other)
    out_shape = np.broadcast_shapes(tuple(shapes[0]), tuple(shapes[1]))
    z = m.tensor("z", out_shape, out or t)
    m.op(op, [x, y], [z], **fields)
    return m.build(z)


def compare(op: int, t: Kind, shapes=(S2, S2)) -> bytes:
    return binary(op, t, shapes, out=BOOL)


def bitexact_binary(op: int, **fields) -> bytes:
    """An int8 ADD or MUL big enough, with scales that are not round numbers, that a kernel
    off by one step anywhere in its rescaling differs from the reference on some outputs."""
    m = Graph()
    a = m.g.add_input("a", [1, 8, 8, 8], T.INT8, quantization=quantization(0.0237, -7))
    b = m.g.add_input("b", [1, 8, 8, 8], T.INT8, quantization=quantization(0.0391, 11))
    out_q = quantization(0.0617 if op == B.ADD else 0.0317, 3)
    y = m.g.add_tensor("y", [1, 8, 8, 8], T.INT8, quantization=out_q)
    m.op(op, [a, b], [y], **fields)
    return m.build(y)


# -- the recipes -------------------------------------------------------------------------------------


def recipes() -> Iterator[Recipe]:
    # unary ops: the type makes the version
    versions_of_unary = {
        B.ABS: {1: F32, 2: I8Q.same(), 3: I16Q.same(), 4: I16, 5: I32},
        B.CEIL: {1: F32}, B.COS: {1: F32}, B.ELU: {1: F32}, B.FLOOR: {1: F32}, B.HARD_SWISH: {1: F32},
        B.NEG: {1: F32}, B.ROUND: {1: F32}, B.SIN: {1: F32}, B.SQUARE: {1: F32}, B.ZEROS_LIKE: {1: F32},
        B.RELU_0_TO_1: {1: F32}, B.RELU_N1_TO_1: {1: F32}, B.LOGICAL_NOT: {1: BOOL},
        B.EXP: {1: F32, 2: I8Q}, B.LOG: {1: F32, 2: I8Q}, B.SQRT: {1: F32, 2: I8Q_FROM_MIN},
        B.RSQRT: {1: F32, 2: I8Q_FROM_MIN},
        B.GELU: {1: F32, 2: I8Q},
        B.RELU: {1: F32, 2: I8Q, 3: I16Q}, B.RELU6: {1: F32, 2: I8Q, 3: I16Q},
        B.LEAKY_RELU: {1: F32, 2: I16Q},
        B.SIGN: {1: F32, 2: I32},
        B.LOGISTIC: {1: F32, 2: I8Q.with_out(1 / 256, -128), 3: I16Q.with_out(1 / 32768, 0)},
        B.TANH: {1: F32, 2: I8Q.with_out(1 / 128, 0), 3: I16Q.with_out(1 / 32768, 0)},
        B.SOFTMAX: {1: F32, 2: I8Q.with_out(1 / 256, -128), 3: I16Q.with_out(1 / 32768, 0)},
        B.LOG_SOFTMAX: {1: F32, 2: I8Q.with_out(16 / 256, 127)},
        B.L2_NORMALIZATION: {1: F32, 2: I8Q.with_out(1 / 128, 0)},
    }
    fields = {B.LEAKY_RELU: {"alpha": 0.2}, B.SOFTMAX: {"beta": 1.0}}
    for op, versions in versions_of_unary.items():
        for version, t in versions.items():
            yield Recipe(op, version, lambda op=op, t=t: unary(op, t, **fields.get(op, {})), t.name, "unary")
    yield Recipe(B.RSQRT, 3, lambda: rsqrt_of_abs(I16Q), "int16 quantized (of ABS's output, node 1)", "unary", subject=1)
    for op, version, options in ((B.COS, 2, {}), (B.SIN, 2, {}), (B.SOFTMAX, 4, {"beta": 1.0})):
        yield Recipe(op, version, hand_stamped(lambda op=op, o=options: unary(op, F16, **o), version), "float16", "unary",
                     hand_stamped=UNBUILDABLE[(op, version)])
    yield Recipe(B.GELU, 3, hand_stamped(lambda: unary(B.GELU, I16Q), 3), "int16 quantized", "unary",
                 hand_stamped=UNBUILDABLE[(B.GELU, 3)])
    yield Recipe(B.LOCAL_RESPONSE_NORMALIZATION, 1,
                 lambda: unary(B.LOCAL_RESPONSE_NORMALIZATION, F32, S4, radius=1, bias=1.0, alpha=1.0, beta=0.5),
                 "float32, 4-D", "unary")

    # binary ops
    i16_general = {"pot_scale_int16": False}
    b5 = ((1, 1, 1, 2, 3), (1, 1, 1, 1, 3))  # broadcasting with 5 dimensions
    mul3 = dataclasses.replace(I8Q, q=quantization(0.5, 0), q_out=quantization(0.125, 0))
    versions_of_binary = [
        (B.ADD, 1, F32, {}), (B.ADD, 2, I8Q, {}), (B.ADD, 3, I16Q, i16_general), (B.ADD, 4, I64, {}),
        (B.ADD, 5, I16, {}), (B.ADD, 6, F16, {}),
        (B.SUB, 1, F32, {}), (B.SUB, 2, I8Q, {}), (B.SUB, 3, F32, {"shapes": b5}), (B.SUB, 4, I64, {}),
        (B.SUB, 5, I16Q, i16_general),
        (B.MUL, 1, F32, {}), (B.MUL, 2, I8Q, {}), (B.MUL, 3, mul3, {}), (B.MUL, 4, I16Q, {}), (B.MUL, 5, I64, {}),
        (B.MUL, 6, C64, {}), (B.MUL, 7, I16, {}), (B.MUL, 8, F16, {}),
        (B.DIV, 1, F32, {"const_second": True}), (B.DIV, 2, F32, {"shapes": b5, "const_second": True}),
        (B.MAXIMUM, 1, F32, {}), (B.MAXIMUM, 2, I8Q.same(), {}), (B.MAXIMUM, 3, F32, {"shapes": b5}),
        (B.MAXIMUM, 4, I16Q.same(), {}),
        (B.MINIMUM, 1, F32, {}), (B.MINIMUM, 2, I8Q.same(), {}), (B.MINIMUM, 3, F32, {"shapes": b5}),
        (B.MINIMUM, 4, I16Q.same(), {}),
        (B.FLOOR_DIV, 1, I32, {"const_second": True}), (B.FLOOR_DIV, 2, F32, {"const_second": True}),
        (B.FLOOR_DIV, 3, I16, {"const_second": True}),
        (B.FLOOR_MOD, 1, I32, {"const_second": True}), (B.FLOOR_MOD, 2, I16, {"const_second": True}),
        (B.SQUARED_DIFFERENCE, 1, F32, {}), (B.SQUARED_DIFFERENCE, 2, I8Q, {}),
        (B.POW, 1, F32, {}),
        (B.PRELU, 1, F32, {"const_second": True}),
        (B.LOGICAL_AND, 1, BOOL, {}), (B.LOGICAL_OR, 1, BOOL, {}),
    ]
    for op, version, t, options in versions_of_binary:
        options = dict(options)
        description = t.name + (", 5-D broadcast" if options.get("shapes") is b5 else "")
        if op in (B.ADD, B.SUB) and options.get("pot_scale_int16") is False:
            description += ", pot_scale_int16=False"
        if op == B.MUL and version == 3:
            description = "int8 quantized, input scales product / output scale >= 1"
        yield Recipe(op, version, lambda op=op, t=t, o=options: binary(op, t, **o), description, "binary")

    comparisons = {
        B.EQUAL: {1: F32, 2: I8Q, 3: STR, 5: I16Q}, B.NOT_EQUAL: {1: F32, 2: I8Q, 3: STR, 4: I16Q},
        B.LESS: {1: F32, 2: I8Q, 3: I16}, B.GREATER_EQUAL: {1: F32, 2: I8Q, 3: I16},
        B.GREATER: {1: F32, 2: I8Q}, B.LESS_EQUAL: {1: F32, 2: I8Q},
    }
    for op, versions in comparisons.items():
        for version, t in versions.items():
            yield Recipe(op, version, lambda op=op, t=t: compare(op, t), f"{t.name} -> bool", "comparison")
    yield Recipe(B.EQUAL, 4, hand_stamped(lambda: compare(B.EQUAL, STR), 4), "string -> bool", "comparison",
                 hand_stamped=UNBUILDABLE[(B.EQUAL, 4)])


def typed() -> Iterator[Recipe]:
    exact = "bit-exact: realistic per-channel scales, "
    yield Recipe(B.ADD, 2, lambda: bitexact_binary(B.ADD), exact + "1x8x8x8, scales 0.0237 and 0.0391", dtype="int8")
    yield Recipe(B.MUL, 2, lambda: bitexact_binary(B.MUL), exact + "1x8x8x8", dtype="int8")
    for op in (B.ADD, B.SUB, B.MUL):
        yield Recipe(op, 1, lambda op=op: binary(op, U8Q), "uint8 quantized", dtype="uint8")
    pot = Kind("int16 quantized", T.INT16, quantization(1 / 512, 0), quantization(1 / 512, 0))
    finer = dataclasses.replace(pot, q=quantization(1 / 1024, 0))
    for op in (B.ADD, B.SUB):
        yield Recipe(op, 1, lambda op=op: binary(op, pot, second=finer),
                     "int16 quantized, power-of-two scales (pot_scale_int16)", dtype="int16")
    yield Recipe(B.LOGISTIC, 1, lambda: unary(B.LOGISTIC, U8Q.with_out(1 / 256, 0)), "uint8 quantized", dtype="uint8")
    yield Recipe(B.SOFTMAX, 1, lambda: unary(B.SOFTMAX, U8Q.with_out(1 / 256, 0), beta=1.0), "uint8 quantized",
                 dtype="uint8")


def variants() -> Iterator[Recipe]:
    types = {"uint8": U8Q, "int8": I8Q, "int16": I16Q}
    unary_types = {B.RELU: ("uint8",), B.RELU6: ("uint8",), B.RELU_N1_TO_1: ("uint8", "int8"),
                   B.LEAKY_RELU: ("uint8", "int8"), B.HARD_SWISH: ("uint8", "int8"), B.TANH: ("uint8",),
                   B.ELU: ("int8",)}
    for op, names in unary_types.items():
        for name in names:
            options = {"alpha": 0.2} if op == B.LEAKY_RELU else {}
            version = 2 if (op, name) == (B.RELU, "uint8") else 1
            yield Recipe(op, version, lambda op=op, t=types[name], o=options: unary(op, t, **o), f"{name} quantized",
                         dtype=name)
    yield Recipe(B.DIV, 1, lambda: binary(B.DIV, U8Q, const_second=True), "uint8 quantized", dtype="uint8")
    for op in (B.MAXIMUM, B.MINIMUM):
        yield Recipe(op, 1, lambda op=op: binary(op, U8Q.same()), "uint8 quantized", dtype="uint8")
    comparison_types = {B.EQUAL: ("uint8",), B.NOT_EQUAL: ("uint8",), B.LESS: ("uint8",),
                        B.LESS_EQUAL: ("uint8", "int16"), B.GREATER: ("uint8", "int16"), B.GREATER_EQUAL: ("uint8",)}
    for op, names in comparison_types.items():
        for name in names:
            yield Recipe(op, 1, lambda op=op, t=types[name]: compare(op, t), f"{name} quantized -> bool", dtype=name)
