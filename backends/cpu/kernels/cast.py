"""CAST and ZEROS_LIKE.

CAST follows TFLite's ``kernels/cast.cc`` (the tensor types decide; ``CastOptions`` are
ignored, as TFLite ignores them):

- float (or complex, float16) -> integer saturates: NaN -> the type's max, below the
  range -> min, above -> max, otherwise truncation toward zero;
- complex64 -> anything else uses the real part (so complex -> bool tests real != 0);
- anything -> float16 goes through float32 first (float64 -> float16 rounds twice);
- -> bool is ``value != 0``; integer -> integer wraps; the rest is a C++ static_cast,
  which numpy's ``astype`` matches.

- bfloat16 converts through float32 (to bfloat16: round to nearest even, as Eigen does);
- int4, int2 and uint4 convert to and from float32 only: from them exactly, to them by
  clamping to the type's range (NaN -> the max, as ``std::min(max, NaN)`` gives) and
  truncating toward zero (``castFloatToInt4`` / ``castFloatToInt2``). This runtime holds
  their values one an element (``schema.packed``).

ONES_LIKE is not a TFLite builtin (TF's OnesLike converts to FILL), so there is none here.
"""

from __future__ import annotations

import ml_dtypes
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
    T.INT4,  # v6 (int4 -> float32)
    T.BFLOAT16,  # v7
    T.INT2, T.UINT4,  # v8
)
#: The packed sub-byte types, which convert to and from float32 only.
SUB_BYTE_TYPES = (T.INT4, T.INT2, T.UINT4)
#: The values of each sub-byte type (TFLite clamps float32 into them).
SUB_BYTE_RANGES = {T.INT4: (-8.0, 7.0), T.INT2: (-2.0, 1.0), T.UINT4: (0.0, 15.0)}
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


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


# v1: float32/int32/int64/int16/uint8/bool/complex64; v2 uint32; v3 int8; v4 uint16; v5 float64/float16;
# v6 int4 -> float32; v7 bfloat16; v8 int2/uint4. v9 (LiteRT 2.3 registers it; the TFLite
# sources this project follows predate it) is the same kernel: LiteRT's converts every pair
# above and no other (tests/cpu/test_cast.py probes the others), whatever the version.
@register(B.CAST, 1, 9)
class Cast(CpuKernel):
    """CAST v1-v9 between float16/32/64, bfloat16, (u)int8/16/32, int64, bool and
    complex64, and between float32 and int4/int2/uint4."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(x, *CAST_TYPES)
        self.require_types(out, *CAST_TYPES, role="output")
        out.resize(x.shape)
        self.to_sub_byte = out.type in SUB_BYTE_TYPES
        if (x.type in SUB_BYTE_TYPES or self.to_sub_byte) and T.FLOAT32 not in (x.type, out.type):
            raise self.unsupported(
                f"{x.type_name} -> {out.type_name}: int4, int2 and uint4 convert to and from float32 only (as in TFLite)"
            )
        if self.to_sub_byte:
            self.lo, self.hi = SUB_BYTE_RANGES[out.type]
            return
        source, target = x.dtype, out.dtype
        self.take_real = source.kind == "c" and target.kind != "c"
        self.from_bfloat16 = source == BFLOAT16
        if self.take_real or self.from_bfloat16:
            source = np.dtype(np.float32)
        self.via_float32 = target in (np.float16, BFLOAT16) and source != target
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
        if self.to_sub_byte:
            # std::max(lo, std::min(hi, x)) with C++'s comparisons (NaN gives hi), then truncation.
            clamped = np.where(x < self.hi, x, self.hi)
            np.copyto(out, np.trunc(np.where(self.lo < clamped, clamped, self.lo)), casting="unsafe")
            return
        if self.take_real:
            x = x.real
        if self.from_bfloat16:
            x = x.astype(np.float32)
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
