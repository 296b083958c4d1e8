"""TFLite's integer requantization arithmetic, vectorized over numpy int64.

Real multipliers (such as ``input_scale * filter_scale / output_scale``) become a 32-bit
fixed-point multiplier and a power-of-two shift (``quantize_multiplier``), and
accumulators are rescaled with ``multiply_by_quantized_multiplier``, rounding exactly as
TFLite's reference kernels do. TFLite has two rounding schemes (``TFLITE_SINGLE_ROUNDING``
or not); :data:`SINGLE_ROUNDING` says which one the official runtime we match uses, a fact
established by the tests, not assumed.

Not every reference kernel rescales this way: in the LiteRT we match, the reference
FULLY_CONNECTED (uint8/int8/int16, per tensor and per channel) rescales in double,
``round(double(acc) * (double(s_in) * s_w / s_out))`` (see :func:`round_half_away`),
and never calls ``MultiplyByQuantizedMultiplier``.

All functions take Python ints or integer arrays (per-channel multipliers broadcast)
and compute in int64, where the intermediate products fit. They are written against the
array namespace of their arguments (:func:`namespace_of`): numpy on the CPU, CuPy (or the
emulated CuPy) on the GPU, so both backends share one copy of these rules. With device
arrays nothing here waits for the device (no value is read back to decide a branch):
decisions that depend on the multipliers are taken on the host, where they are known
(:class:`Requantizer`).
"""

from __future__ import annotations

import functools
import math
from types import ModuleType
from typing import Any, Callable, Union

import numpy as np

from schema.enums import ActivationFunctionType, TensorType

try:  # the clip ufunc itself (np.clip adds a Python wrapper)
    from numpy._core.umath import clip as _clip
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as _clip

IntArray = Union[int, np.ndarray]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

#: Whether TFLite's ``MultiplyByQuantizedMultiplier`` uses single rounding in the
#: runtime we match (ai-edge-litert 2.3.0's reference kernels). It does not: the wheel
#: is built without ``TFLITE_SINGLE_ROUNDING``, so it uses gemmlowp's double rounding
#: (``SaturatingRoundingDoublingHighMul`` then ``RoundingDivideByPOT``); established by
#: tests/cpu/test_quantization.py (an int8 -> int8 QUANTIZE whose results differ
#: between the two schemes).
SINGLE_ROUNDING = False


def namespace_of(*values: Any) -> ModuleType:
    """The array namespace of ``values``: numpy, or the module of the first array that is
    not numpy's (CuPy; the emulated CuPy of ``backends.gpu.emulation``)."""
    for value in values:
        if isinstance(value, (np.ndarray, np.generic)) or not hasattr(value, "dtype"):
            continue
        if type(value).__module__.split(".")[0] == "cupy":
            import cupy

            return cupy
        namespace = getattr(value, "__array_namespace__", None)
        if namespace is not None:
            return namespace()
    return np


def _int64(xp: ModuleType, value: IntArray) -> Any:
    """``value`` as int64: arrays converted (no copy when they are), Python ints kept."""
    if isinstance(value, int):
        return value
    if xp is np:
        return np.asarray(value, np.int64)
    return value.astype(np.int64, copy=False) if hasattr(value, "astype") else np.int64(value)


def _c_round(value: float) -> int:
    """C's ``std::round`` on a double: halves away from zero (exact, no ``x + 0.5`` error)."""
    whole = math.trunc(value)
    if abs(value - whole) >= 0.5:  # value - trunc(value) is exact in binary floating point
        whole += 1 if value > 0 else -1
    return int(whole)


_round_half_away = _c_round  # former name, kept for callers


def quantize_multiplier(real_multiplier: float, *, single_rounding: bool | None = None) -> tuple[int, int]:
    """(quantized_multiplier, shift) with ``real ~= quantized * 2**(shift - 31)``
    (TFLite's ``QuantizeMultiplier``; shift > 0 means a left shift).

    ``real_multiplier`` is a double (compute it with Python floats in TFLite's order);
    ``single_rounding`` defaults to :data:`SINGLE_ROUNDING`.
    """
    if single_rounding is None:
        single_rounding = SINGLE_ROUNDING
    real_multiplier = float(real_multiplier)
    if not math.isfinite(real_multiplier):
        raise ValueError(
            f"quantization: the effective scale {real_multiplier} is not finite (the tensors' scales are too far "
            "apart for integer requantization)"
        )
    if real_multiplier == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real_multiplier)
    fixed = _c_round(fraction * (1 << 31))
    if fixed == (1 << 31):
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if single_rounding and shift > 30:
        return (1 << 31) - 1, 30
    return int(fixed), int(shift)


def quantize_multipliers(real_multipliers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``quantize_multiplier`` per channel: (multipliers int64[C], shifts int64[C]).

    The same steps on whole arrays (``frexp``, C's ``round`` of the fraction times
    2**31, the carry, the underflow to (0, 0), the single-rounding cap), each exact in
    float64, so every pair equals ``quantize_multiplier``'s."""
    reals = np.asarray(real_multipliers, dtype=np.float64).ravel()
    if not np.isfinite(reals).all():
        quantize_multiplier(float(reals[~np.isfinite(reals)][0]))  # raises, naming the scale
    fraction, exponent = np.frexp(reals)
    scaled = np.abs(fraction * float(1 << 31))  # exact: a power of two
    # halves away from zero: floor(|x| + 1/2) (exact: |x| < 2**31 has a 2**-22 ulp at most)
    fixed = np.copysign(np.floor(scaled + 0.5, out=scaled), fraction).astype(np.int64)
    shifts = exponent.astype(np.int64)
    if fixed.size == 0:
        return fixed, shifts
    if fixed.max() == (1 << 31):  # the carry (of a positive multiplier, as quantize_multiplier)
        carry = fixed == (1 << 31)
        fixed[carry] //= 2
        shifts[carry] += 1
    if shifts.min() < -31:
        underflow = shifts < -31
        fixed[underflow] = 0
        shifts[underflow] = 0
    if SINGLE_ROUNDING and shifts.max() > 30:
        capped = shifts > 30
        fixed[capped] = (1 << 31) - 1
        shifts[capped] = 30
    return fixed, shifts


def saturating_rounding_doubling_high_mul(a: IntArray, b: IntArray, *, may_saturate: bool | None = None) -> Any:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` on int32 values held in int64.

    gemmlowp adds a nudge of ``2**30`` (``1 - 2**30`` for a negative product) and
    divides by ``2**31`` truncating toward zero; for a negative product that is the
    same as ``(a*b + 2**30) >> 31`` (a floor), so one shift serves both signs. The one
    overflow, ``INT32_MIN * INT32_MIN``, saturates to ``INT32_MAX``; ``may_saturate=False``
    says the caller knows it cannot happen (a quantized multiplier is positive), so the
    check is left out (with numpy arrays it is looked for otherwise; with device arrays
    it is always applied).
    """
    xp = namespace_of(a, b)
    a, b = _int64(xp, a), _int64(xp, b)
    high = a * b + (1 << 30)
    high >>= 31
    if may_saturate is None:
        if xp is not np:
            may_saturate = True
        else:
            small, large = (a, b) if np.size(a) <= np.size(b) else (b, a)
            may_saturate = bool(np.size(small) and np.min(small) == INT32_MIN and np.size(large) and np.min(large) == INT32_MIN)
    if may_saturate:
        high = xp.where((a == INT32_MIN) & (b == INT32_MIN), np.int64(INT32_MAX), high)
    return high


def rounding_divide_by_pot(x: IntArray, exponent: IntArray) -> Any:
    """gemmlowp's ``RoundingDivideByPOT``: x / 2**exponent, rounding halves away from zero.

    gemmlowp adds one when the remainder exceeds ``(mask >> 1) + (x < 0)``; that is
    ``(x + half - (x < 0)) >> exponent`` with ``half = 2**exponent / 2`` (and no nudge
    at all for exponent 0).
    """
    xp = namespace_of(x, exponent)
    x = _int64(xp, x)
    if isinstance(exponent, (int, np.integer)) or (isinstance(exponent, np.ndarray) and exponent.ndim == 0):
        exponent = int(exponent)  # a scalar known on the host
        if exponent == 0:
            return x.copy() if hasattr(x, "copy") else x
        return (x + ((1 << (exponent - 1)) - (x < 0))) >> exponent
    exponent = _int64(xp, exponent)
    half = (np.int64(1) << exponent) >> 1
    negative = (x < 0) & (half > 0)
    return (x + (half - negative)) >> exponent


def _wrap_int32(x: Any) -> Any:
    """Two's-complement wrap of int64 values to int32 (what C's int32 arithmetic does)."""
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def multiply_by_quantized_multiplier(
    x: IntArray, multiplier: IntArray, shift: IntArray, *, single_rounding: bool | None = None
) -> Any:
    """TFLite's ``MultiplyByQuantizedMultiplier(int32 x, multiplier, shift)`` elementwise.

    ``x`` holds int32 values (e.g. accumulators); ``multiplier``/``shift`` may be
    scalars or per-channel arrays broadcast against ``x``, known on the host (device
    arrays of them: use :class:`Requantizer`). ``single_rounding`` defaults to
    :data:`SINGLE_ROUNDING` (the scheme of the runtime we match).
    """
    return Requantizer(multiplier, shift, single_rounding=single_rounding)(x)


class Requantizer:
    """``MultiplyByQuantizedMultiplier`` with multipliers and shifts fixed in advance
    (per tensor, or per channel broadcast along the last axis of ``x``).

    Everything that depends on their values alone (whether any shift is a left shift,
    whether the saturation case can occur) is decided once, on the host, so that a call
    on device arrays is pure device work. ``to_device`` copies per-channel arrays to where
    ``x`` will live (default: they stay numpy arrays).
    """

    def __init__(
        self,
        multiplier: IntArray,
        shift: IntArray,
        *,
        single_rounding: bool | None = None,
        to_device: Callable[[np.ndarray], Any] = lambda array: array,
    ) -> None:
        self.single_rounding = SINGLE_ROUNDING if single_rounding is None else single_rounding
        multiplier = np.asarray(multiplier, np.int64)
        shift = np.asarray(shift, np.int64)
        self.may_saturate = bool(multiplier.size and (multiplier == INT32_MIN).any())

        def place(values: np.ndarray) -> Any:
            return int(values) if values.ndim == 0 else to_device(np.ascontiguousarray(values))

        if self.single_rounding:
            total_shift = 31 - shift
            self.multiplier = place(multiplier)
            self.total_shift = place(total_shift)
            self.rounding = place(np.left_shift(np.int64(1), total_shift - 1))
            return
        left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
        self.left_shift = place(left) if (left > 0).any() else None
        self.multiplier = place(multiplier)
        self.right_shift = place(right)

    def __call__(self, x: IntArray) -> Any:
        xp = namespace_of(x, self.multiplier)
        x = _int64(xp, x)
        if self.single_rounding:
            return (x * self.multiplier + self.rounding) >> self.total_shift
        if self.left_shift is not None:
            # x * (1 << left_shift) in int32: wraps on overflow as the compiled C does.
            x = _wrap_int32(x << self.left_shift)
        high = saturating_rounding_doubling_high_mul(x, self.multiplier, may_saturate=self.may_saturate)
        return rounding_divide_by_pot(high, self.right_shift)


def multiply_by_quantized_multiplier_int64(x: IntArray, multiplier: IntArray, shift: IntArray) -> np.ndarray:
    """TFLite's ``MultiplyByQuantizedMultiplier(int64 x, multiplier, shift)`` (the
    overload of the 16x8 kernels, with int64 accumulators; the same in both rounding
    schemes): the multiplier is reduced to 16 bits, ``(multiplier + 2**15) >> 16``
    (``0x7FFF`` from ``0x7FFF0000`` up), then ``(x * reduced + 2**(14 - shift)) >>
    (15 - shift)``, truncated to int32. ``x`` must lie in ``[-2**47, 2**47)``."""
    x = np.asarray(x, np.int64)
    multiplier = np.asarray(multiplier, np.int64)
    shift = np.asarray(shift, np.int64)
    reduced = np.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, np.int64(0x7FFF))
    total_shift = 15 - shift
    return _wrap_int32((x * reduced + (np.int64(1) << (total_shift - 1))) >> total_shift)


def requantize_outer_sum(
    first: np.ndarray, second: np.ndarray, multiplier: int, shift: int, zero_point: int, low: int, high: int,
    out: np.ndarray, *, single_rounding: bool | None = None,
) -> bool:
    """``out[i, j] = clamp(MultiplyByQuantizedMultiplier(first[i] + second[j], m, s) + zero_point,
    low, high)`` for int32 values ``first`` [I] and ``second`` [J] (int64 arrays) and an
    integer ``out`` [I, J], in at most six passes over ``out`` (the table of a quantized
    ADD or SUB: every pair of rescaled inputs). Returns False, writing nothing, where it
    does not apply (a left shift, a negative multiplier, a sum leaving int32, a folded
    constant leaving int64): then :func:`multiply_by_quantized_multiplier` is the way.

    Double rounding, ``r = -shift``: ``h = (x*m + 2**30) >> 31``, then ``(h + 2**(r-1) -
    [h < 0]) >> r`` (``h`` for r = 0). Adding ``c * 2**31`` before the shift adds ``c``
    after it, so with ``c = 2**(r-1) + z * 2**r`` (``z`` for r = 0) one outer sum
    ``X = first*m + 2**30 + c*2**31 + second*m`` gives ``g = X >> 31 = h + c``; ``h < 0``
    exactly when ``g < c``, and ``(g - [g < c]) >> r`` is the rounded value plus ``z``.
    Single rounding: ``(X + 2**(30+r) + z * 2**(31+r)) >> (31 + r)``, the same way.
    ``single_rounding`` defaults to :data:`SINGLE_ROUNDING`."""
    multiplier, shift, zero_point = int(multiplier), int(shift), int(zero_point)
    right = -shift
    if multiplier < 0 or right < 0 or right > 31 or first.size == 0 or second.size == 0:
        return False
    largest = int(np.abs(first).max()) + int(np.abs(second).max())
    if largest >= (1 << 31):
        return False
    if SINGLE_ROUNDING if single_rounding is None else single_rounding:
        constant, total_shift, threshold = (1 << (30 + right)) + (zero_point << (31 + right)), 31 + right, None
    else:
        lift = ((1 << (right - 1)) + (zero_point << right)) if right else zero_point
        constant, total_shift, threshold = (1 << 30) + (lift << 31), 31, (lift if right else None)
    largest = largest * multiplier + abs(constant)
    if largest >= (1 << 63):
        return False
    sums = np.empty(out.shape, np.int64)
    np.add.outer(first * multiplier + constant, second * multiplier, out=sums)
    # After the first shift the values (and g - c) fit int32 when X and c are small enough:
    # the last passes then move half the bytes.
    narrow = largest < (1 << 61) and (threshold is None or abs(threshold) < (1 << 29))
    values = np.empty(out.shape, np.int32) if narrow else sums
    np.right_shift(sums, total_shift, out=values, casting="unsafe")
    if threshold is not None:
        below = np.subtract(values, threshold, out=np.empty_like(values))
        np.right_shift(below, values.dtype.itemsize * 8 - 1, out=below)  # -1 where g < c
        np.add(values, below, out=values)
        np.right_shift(values, right, out=values)
    _clip(values, np.array(low, values.dtype), np.array(high, values.dtype), out=out, casting="unsafe")
    return True


def round_half_away(
    values: np.ndarray,
    out: np.ndarray | None = None,
    scratch: np.ndarray | None = None,
    *,
    finite: bool = False,
) -> np.ndarray:
    """C's ``round``/``roundf`` elementwise on a float array (halves away from zero),
    in the array's own float type.

    ``np.rint`` (fast, but halves to even) and then a fix of the ties only: with
    ``d = x - rint(x)`` (exact), a tie ``d = +0.5`` at ``rint(x) >= 0`` goes up one and
    ``d = -0.5`` at ``rint(x) <= 0`` down one; the fix runs only when some ``|d|`` is
    0.5. ``out`` and ``scratch`` are optional preallocated arrays of the shape and type
    of ``values`` for a hot path (``out`` may be ``values``; ``scratch`` must be
    distinct from both); ``finite=True`` promises no inf/NaN (skips an ``errstate``).
    """
    xp = namespace_of(values)
    if xp is not np:  # device arrays: the same rule, with no look at the values from the host
        rounded = xp.rint(values)
        _fix_ties_everywhere(rounded, values - rounded)
        return rounded
    values = np.asarray(values)
    if scratch is None:
        scratch = np.empty_like(values)
    rounded = np.rint(values, out=scratch)
    if finite:
        difference = np.subtract(values, rounded, out=out)  # exact, in [-0.5, 0.5]
    else:
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, ignored below
            difference = np.subtract(values, rounded, out=out)
    if difference.size:
        high, low = difference.max(), difference.min()
        if not (high < 0.5 and low > -0.5):  # ties (or inf/NaN: left as rint gives them)
            _fix_ties(rounded, difference)
    difference[...] = rounded
    return difference


def _fix_ties_everywhere(rounded: Any, difference: Any) -> None:
    """Move the halves that ``rint`` sent to even away from zero: a tie ``d = +0.5`` at
    ``rint(x) >= 0`` goes up one, ``d = -0.5`` at ``rint(x) <= 0`` down one."""
    rounded += (difference == 0.5) & (rounded >= 0)
    rounded -= (difference == -0.5) & (rounded <= 0)


def _fix_ties(rounded: np.ndarray, difference: np.ndarray) -> None:
    """Move the halves that ``rint`` sent to even away from zero (at the few tie indices)."""
    if not (rounded.flags.c_contiguous and difference.flags.c_contiguous):
        _fix_ties_everywhere(rounded, difference)
        return
    flat_rounded, flat_difference = rounded.reshape(-1), difference.reshape(-1)
    for half, step in ((0.5, 1), (-0.5, -1)):
        ties = np.flatnonzero(flat_difference == half)
        if ties.size:
            values = flat_rounded[ties]
            flat_rounded[ties] = values + step * ((values >= 0) if step > 0 else (values <= 0))


def activation_range_quantized(activation: int, scale: float, zero_point: int, dtype: np.dtype) -> tuple[int, int]:
    """(min, max) of a fused activation in the quantized domain of the output
    (TFLite's ``CalculateActivationRangeQuantized``: ``zero_point +
    roundf(f / scale)`` in float32, clamped to the type's range).

    As in the LiteRT we match, a bound whose ``roundf(f / scale)`` lies outside
    ``[-2**31, 2**31]`` (or is NaN) is refused: :class:`QuantizationParameterError`
    naming the output scale. Within it, the int32 conversion and the addition of the
    zero point wrap as the compiled C does, so both bounds are int32 values. (Remembered
    per arguments: many nodes of a model share them.)"""
    return _activation_range_quantized(int(activation), float(scale), int(zero_point), np.dtype(dtype))


@functools.lru_cache(maxsize=1024)
def _activation_range_quantized(activation: int, scale: float, zero_point: int, dtype: np.dtype) -> tuple[int, int]:
    info = np.iinfo(dtype)
    low, high = int(info.min), int(info.max)
    scale32 = np.float32(scale)

    def quantize(value: float) -> int:
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            q = float(np.float32(value) / scale32)  # float / float in C: float32
        if not math.isfinite(q) or not INT32_MIN <= _c_round(q) <= 1 << 31:
            raise QuantizationParameterError(
                f"the output scale {float(scale32):.7g} puts the fused activation's bound {value} at {q:.6g} steps "
                f"from the zero point, outside int32 (TFLite's CalculateActivationRangeQuantized refuses it); "
                f"the output scale must be at least {abs(value) / 2.0**31:.6g}"
            )
        whole = _c_round(q)
        if whole == 1 << 31:
            whole = INT32_MIN  # static_cast<int32_t>(2**31): x86 gives INT32_MIN
        return int(_wrap_int32(int(zero_point) + whole))

    if activation == ActivationFunctionType.RELU:
        return max(low, quantize(0.0)), high
    if activation == ActivationFunctionType.RELU6:
        return max(low, quantize(0.0)), min(high, quantize(6.0))
    if activation == ActivationFunctionType.RELU_N1_TO_1:
        return max(low, quantize(-1.0)), min(high, quantize(1.0))
    if activation in (ActivationFunctionType.NONE, ActivationFunctionType.TANH, ActivationFunctionType.SIGN_BIT):
        return low, high
    raise ValueError(f"unknown fused activation {activation}")


def exact_float_dtype(max_abs_sum: int) -> np.dtype | None:
    """The float type in which integer dot products up to ``max_abs_sum`` are exact
    (float32 below 2**24, float64 below 2**53), so BLAS can compute them; None if neither."""
    if max_abs_sum < (1 << 24):
        return np.dtype(np.float32)
    if max_abs_sum < (1 << 53):
        return np.dtype(np.float64)
    return None


QUANTIZED_TYPES = (TensorType.INT8, TensorType.UINT8, TensorType.INT16)


def is_quantized(tensor) -> bool:
    """True for an int8/uint8/int16 tensor that carries a scale (a quantized tensor)."""
    return (
        tensor is not None
        and tensor.type in QUANTIZED_TYPES
        and tensor.quantization is not None
        and tensor.quantization.is_quantized
    )


def legacy_params(tensor) -> tuple[float, int]:
    """(scale, zero_point) as TFLite's ``tensor->params`` holds them: the single scale and
    zero point of a per-tensor quantization, (0.0, 0) otherwise (per-channel or none)."""
    q = getattr(tensor, "quantization", None)
    if q is None or q.scale.size != 1 or np.asarray(q.zero_point).size != 1:
        return 0.0, 0
    return float(np.float32(q.scale[0])), int(np.asarray(q.zero_point).ravel()[0])


def wrap_int32(x: IntArray) -> Any:
    """Two's-complement wrap of integer values to int32, in int64 (C's int32 overflow)."""
    return _wrap_int32(_int64(namespace_of(x), x))


# -- Prepare-time checks of quantization parameters, shared by the CPU kernels and the GPU ops


class QuantizationParameterError(ValueError):
    """A node's quantization parameters are outside what TFLite's integer arithmetic
    computes: the LiteRT we match refuses them at Prepare, or its result would be
    undefined behaviour in C (an int32 shifted by 32 bits or more), which a CPU and a GPU
    compute differently. Raised at Prepare; the message names the parameter."""


#: The widest left shift of an int32 accumulator that TFLite's requantization
#: (``x * (1 << shift)`` in MultiplyByQuantizedMultiplier) defines.
MAX_LEFT_SHIFT = 31


def requantization_multiplier(real_multiplier: float, what: str) -> tuple[int, int]:
    """``quantize_multiplier(real_multiplier)`` for a node's Prepare, refusing what
    TFLite's integer requantization cannot compute with a
    :class:`QuantizationParameterError` that names ``what`` (the ratio of scales that
    ``real_multiplier`` is, e.g. ``"input scale x filter scale / output scale"``):

    - a ratio that is not finite;
    - a ratio of 2**31 or more: its shift is a left shift of 32 bits or more, which C
      leaves undefined (x86 shifts by the count modulo 32, CUDA's ``shl`` gives 0).

    A ratio below 2**-32 flushes to (0, 0) as in TFLite, and is computed."""
    real = float(real_multiplier)
    if not math.isfinite(real):
        raise QuantizationParameterError(
            f"{what} is {real!r}: TFLite's requantization needs a finite ratio of scales"
        )
    multiplier, shift = quantize_multiplier(real)
    if shift > MAX_LEFT_SHIFT:
        raise QuantizationParameterError(
            f"{what} is {real:.6g}, not below 2**31: TFLite's requantization would shift int32 values left by "
            f"{shift} bits, which C leaves undefined; the scales must make the ratio smaller than 2**31"
        )
    return multiplier, shift


def requantization_multipliers(real_multipliers: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`requantization_multiplier` per channel: (multipliers int64[C], shifts
    int64[C]), computed on the whole array (:func:`quantize_multipliers`); a refusal names
    the first channel refused, with :func:`requantization_multiplier`'s message."""
    reals = np.asarray(real_multipliers, dtype=np.float64).ravel()

    def refuse_first(bad: np.ndarray) -> None:
        channel = int(np.flatnonzero(bad)[0])
        requantization_multiplier(float(reals[channel]), what if reals.size == 1 else f"{what} of channel {channel}")

    if not np.isfinite(reals).all():
        refuse_first(~np.isfinite(reals))
    multipliers, shifts = quantize_multipliers(reals)
    if shifts.size and shifts.max() > MAX_LEFT_SHIFT:
        refuse_first(shifts > MAX_LEFT_SHIFT)
    return multipliers, shifts
