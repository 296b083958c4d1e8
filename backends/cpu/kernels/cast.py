"""CAST and ZEROS_LIKE.

CAST follows TFLite's ``kernels/cast.cc`` (the tensor types decide; ``CastOptions`` are
ignored, as TFLite ignores them):

- float (or complex, float16) -> integer saturates: NaN -> the type's max, below the
  range -> min, above -> max, otherwise truncation toward zero;
- complex64 -> anything else uses the real part (so complex -> bool tests real != 0);
- anything -> float16 goes through float32 first (float64 -> float16 rounds twice);
- -> bool is ``value != 0``; integer -> integer wraps; the rest is a C++ static_cast,
  which numpy's ``astype`` matches.

Not implemented: int4/int2/uint4 and bfloat16 (CAST v6-v8), which have no numpy dtype here.
ONES_LIKE is not a TFLite builtin (TF's OnesLike converts to FILL), so there is none here.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator

#: Types CAST converts between, with the version that adds each (v1 unless listed).
CAST_TYPES = (
    T.FLOAT32, T.INT32, T.INT64, T.INT16, T.UINT8, T.BOOL, T.COMPLEX64,  # v1
    T.UINT32,  # v2
    T.INT8,  # v3
    T.UINT16,  # v4
    T.FLOAT64, T.FLOAT16,  # v5
)


def saturation_bounds(source: np.dtype, target: np.dtype) -> tuple:
    """(lo, hi) in the float ``source`` type: values within convert by truncation.

    ``hi`` is the largest source value not above the target's max (TFLite steps back with
    nextafter when the max itself rounds up, e.g. float32(2**31 - 1) == 2**31).
    """
    info = np.iinfo(target)
    lo = source.type(info.min)
    hi = source.type(info.max)
    if int(hi) > info.max:
        hi = np.nextafter(hi, source.type(0))
    return lo, hi


@register(B.CAST, 1, 5)  # v1: float32/int32/int64/int16/uint8/bool/complex64; v2 uint32; v3 int8; v4 uint16; v5 float64/float16
class Cast(CpuKernel):
    """CAST v1-v5 between float16/32/64, (u)int8/16/32, int64, bool and complex64."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(x, *CAST_TYPES)
        self.require_types(out, *CAST_TYPES, role="output")
        out.resize(x.shape)
        source, target = x.dtype, out.dtype
        self.take_real = source.kind == "c" and target.kind != "c"
        if self.take_real:
            source = np.dtype(np.float32)
        self.via_float32 = target == np.float16 and source != np.float16
        self.saturate = source.kind == "f" and target.kind in "iu"
        if self.saturate:
            if source == np.float16:  # TFLite converts half to float first
                self.compute_dtype = np.dtype(np.float32)
            else:
                self.compute_dtype = source
            self.lo, self.hi = saturation_bounds(self.compute_dtype, target)
            self.target_max = np.iinfo(target).max

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        if self.take_real:
            x = x.real
        # Narrowing to a float type overflows to inf and NaN converts to an integer as
        # fixed up below: both are the defined result, not something to warn about.
        with np.errstate(over="ignore", invalid="ignore"):
            if self.saturate:
                x = x.astype(self.compute_dtype, copy=False)
                np.copyto(out, np.clip(x, self.lo, self.hi), casting="unsafe")
                # NaN and values above hi become the max (clip kept NaN; hi may be < max).
                np.copyto(out, self.target_max, where=~(x <= self.hi))
            elif self.via_float32:
                np.copyto(out, x.astype(np.float32, copy=False), casting="unsafe")
            else:
                np.copyto(out, x, casting="unsafe")


@register(B.ZEROS_LIKE, 1, 1)  # v1: int64, int32, float32
class ZerosLike(CpuKernel):
    """ZEROS_LIKE v1: zeros of the input's shape and type (int64, int32, float32)."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x = self.inputs[0]
        self.require_types(x, T.INT64, T.INT32, T.FLOAT32)
        if self.outputs[0].type != x.type:
            raise self.unsupported(f"output has type {self.outputs[0].type_name}; it must be the input type {x.type_name}")
        self.outputs[0].resize(x.shape)

    def invoke(self) -> None:
        self.outputs[0].data.fill(0)
