"""Elementwise unary math: EXP, LOG, SQRT, RSQRT, SQUARE, ABS, NEG, SIN, COS, FLOOR, CEIL,
ROUND, SIGN.

Facts from TFLite (``kernels/elementwise.cc``, ``exp.cc``, ``neg.cc``, ``round.cc``,
``sign.cc``, ``floor.cc``, ``ceil.cc``): the float math is the C library's, so
LOG(0) = -inf, LOG(-1) = NaN, SQRT(-1) = NaN, RSQRT(0) = +inf, RSQRT(-0) = -inf.
ROUND rounds half to even (banker's rounding, as ``tf.round``), which is numpy's ``rint``.
SIGN keeps NaN and gives +-1 or 0. Integer ABS and NEG wrap at the type's minimum.
The quantized int8/int16 forms (EXP, LOG, SQRT v2; RSQRT v2-v3; ABS v2-v3) are
``unary_quantized.py``; the registrations below cover every version, as TFLite's kernels
look at the types only.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.binary import is_quantized
from schema.enums import BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator


def _rsqrt(x: np.ndarray, out: np.ndarray) -> None:
    np.sqrt(x, out=out)
    np.divide(1.0, out, out=out)


def _round_half_to_even(x: np.ndarray, out: np.ndarray) -> None:
    np.rint(x, out=out)


#: op -> (numpy function writing ``out`` from ``x``, whether it can raise FP warnings)
UNARY_FUNCTION = {
    B.EXP: (np.exp, True),
    B.LOG: (np.log, True),
    B.SQRT: (np.sqrt, True),
    B.RSQRT: (_rsqrt, True),
    B.SQUARE: (np.square, False),
    B.ABS: (np.absolute, False),
    B.NEG: (np.negative, False),
    B.SIN: (np.sin, True),
    B.COS: (np.cos, True),
    B.FLOOR: (np.floor, False),
    B.CEIL: (np.ceil, False),
    B.ROUND: (_round_half_to_even, False),
    B.SIGN: (np.sign, False),
}

#: Types each op takes (versions below say which version adds which).
UNARY_TYPES = {
    B.ABS: (T.FLOAT32, T.INT16, T.INT32),
    B.SIN: (T.FLOAT32, T.FLOAT16),  # v2: float16 (numpy's half loops compute in float32, as TFLite)
    B.COS: (T.FLOAT32, T.FLOAT16),
    B.NEG: (T.FLOAT32, T.INT32, T.INT64),
    B.SIGN: (T.FLOAT32, T.FLOAT64, T.INT32),
}


@register(B.EXP, 1, 2)  # v1: float32; v2 int8/int16 (quantized: unary_quantized.py)
@register(B.LOG, 1, 2)  # v1: float32; v2 int8/int16 (quantized: unary_quantized.py)
@register(B.SQRT, 1, 2)  # v1: float32; v2 int8/int16 (quantized: unary_quantized.py)
@register(B.RSQRT, 1, 3)  # v1: float32; v2 int8, v3 int16 (quantized: unary_quantized.py)
@register(B.SQUARE, 1, 1)  # v1: float32
@register(B.SIN, 1, 2)  # v1: float32; v2: float16
@register(B.COS, 1, 2)  # v1: float32; v2: float16
@register(B.FLOOR, 1, 1)  # v1: float32
@register(B.CEIL, 1, 1)  # v1: float32
@register(B.ROUND, 1, 1)  # v1: float32 (half to even)
@register(B.NEG, 1, 1)  # v1: float32, int32, int64
@register(B.ABS, 1, 5)  # v1: float32; v2 int8, v3 int16 (quantized: unary_quantized.py); v4: plain int16; v5: int32
@register(B.SIGN, 1, 2)  # v1: float32, float64; v2: int32
class Unary(CpuKernel):
    """SQUARE FLOOR CEIL ROUND NEG v1; SIN COS v1-v2 (float32, float16); EXP LOG SQRT v1-v2, RSQRT v1-v3 and ABS v1-v5 on
    float32 (and plain int16 / int32 for ABS); SIGN v1-v2."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(x, *UNARY_TYPES.get(self.op, (T.FLOAT32,)))
        if out.type != x.type:
            raise self.unsupported(f"output has type {out.type_name}; it must be the input type {x.type_name}")
        for tensor in (x, out):
            if is_quantized(tensor):
                raise self.unsupported(
                    f"tensor {tensor.name!r} is quantized ({tensor.type_name} with scales); "
                    "quantized kernels are not implemented yet, only plain (non-quantized) values"
                )
        out.resize(x.shape)
        self.function, self.may_warn = UNARY_FUNCTION[self.op]

    def invoke(self) -> None:
        if self.may_warn:
            with np.errstate(all="ignore"):
                self.function(self.inputs[0].data, out=self.outputs[0].data)
        else:
            self.function(self.inputs[0].data, out=self.outputs[0].data)
