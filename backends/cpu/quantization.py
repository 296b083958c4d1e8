"""TFLite's integer requantization arithmetic, vectorized over numpy int64.

Real multipliers (such as ``input_scale * filter_scale / output_scale``) become a 32-bit
fixed-point multiplier and a power-of-two shift (``quantize_multiplier``), and
accumulators are rescaled with ``multiply_by_quantized_multiplier``, rounding exactly as
TFLite's reference kernels do. TFLite has two rounding schemes (``TFLITE_SINGLE_ROUNDING``
or not); :data:`SINGLE_ROUNDING` says which one the official runtime we match uses, a fact
established by the tests, not assumed.

All functions take Python ints or numpy integer arrays (per-channel multipliers
broadcast) and compute in int64, where the intermediate products fit.
"""

from __future__ import annotations

import math
from typing import Union

import numpy as np

from schema.enums import ActivationFunctionType, TensorType

IntArray = Union[int, np.ndarray]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

#: Whether TFLite's ``MultiplyByQuantizedMultiplier`` uses single rounding in the
#: runtime we match (ai-edge-litert's reference kernels); established by
#: tests/cpu/test_quantization.py against the wheel.
SINGLE_ROUNDING = False


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """(quantized_multiplier, shift) with ``real ~= quantized * 2**(shift - 31)``
    (TFLite's ``QuantizeMultiplier``; shift > 0 means a left shift)."""
    if real_multiplier == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real_multiplier)
    fixed = _round_half_away(fraction * (1 << 31))
    if fixed == (1 << 31):
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if SINGLE_ROUNDING and shift > 30:
        return (1 << 31) - 1, 30
    return int(fixed), int(shift)


def quantize_multipliers(real_multipliers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``quantize_multiplier`` per channel: (multipliers int64[C], shifts int64[C])."""
    pairs = [quantize_multiplier(float(m)) for m in np.asarray(real_multipliers, dtype=np.float64).ravel()]
    return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)


def _round_half_away(value: float) -> int:
    """C's ``std::round``: halves away from zero."""
    return int(math.floor(abs(value) + 0.5)) * (1 if value >= 0 else -1)


def saturating_rounding_doubling_high_mul(a: IntArray, b: IntArray) -> IntArray:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` on int32 values held in int64."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    product = a * b
    nudge = np.where(product >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    total = product + nudge
    high = np.where(total >= 0, total >> 31, -((-total) >> 31))  # C division: toward zero
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, np.int64(INT32_MAX), high)


def rounding_divide_by_pot(x: IntArray, exponent: IntArray) -> IntArray:
    """gemmlowp's ``RoundingDivideByPOT``: x / 2**exponent, rounding halves away from zero."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x: IntArray, multiplier: IntArray, shift: IntArray) -> np.ndarray:
    """TFLite's ``MultiplyByQuantizedMultiplier(x, multiplier, shift)`` elementwise.

    ``multiplier``/``shift`` may be scalars or per-channel arrays broadcast against ``x``.
    """
    x = np.asarray(x, np.int64)
    multiplier = np.asarray(multiplier, np.int64)
    shift = np.asarray(shift, np.int64)
    if SINGLE_ROUNDING:
        total_shift = 31 - shift
        rounding = np.int64(1) << (total_shift - 1)
        return (x * multiplier + rounding) >> total_shift
    left_shift = np.maximum(shift, 0)
    right_shift = np.maximum(-shift, 0)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x << left_shift, multiplier), right_shift)


def activation_range_quantized(activation: int, scale: float, zero_point: int, dtype: np.dtype) -> tuple[int, int]:
    """(min, max) of a fused activation in the quantized domain of the output
    (TFLite's ``CalculateActivationRangeQuantized``)."""
    info = np.iinfo(dtype)
    low, high = int(info.min), int(info.max)

    def quantize(value: float) -> int:
        return zero_point + _round_half_away(value / scale)

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
