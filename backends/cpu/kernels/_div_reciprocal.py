"""Fixed-point pieces of TFLite's quantized DIV, vectorized over int64 arrays holding
int32 values: gemmlowp's ``one_over_one_plus_x_for_x_in_0_1`` (Newton-Raphson in Q2.29),
TFLite's ``GetReciprocal``, ``CountLeadingZeros`` and ``CountLeadingSignBits``
(``internal/common.h``, ``fixedpoint/fixedpoint.h``). Used by binary_quantized.py.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.quantization import INT32_MAX, INT32_MIN, saturating_rounding_doubling_high_mul

#: gemmlowp's Q2.29 constants 48/17 and -32/17.
CONSTANT_48_OVER_17 = 1515870810
CONSTANT_NEG_32_OVER_17 = -1010580540
ONE_Q2_29 = 1 << 29


def count_leading_zeros(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of uint32 values (32 for 0)."""
    x = np.asarray(x, np.int64)
    _, exponent = np.frexp(x.astype(np.float64))  # x = m * 2**e, 0.5 <= m < 1: e = bit length
    return np.where(x == 0, 32, 32 - exponent).astype(np.int64)


def count_leading_sign_bits(x: np.ndarray) -> np.ndarray:
    """Redundant leading sign bits of int32 values (31 for 0 and -1)."""
    x = np.asarray(x, np.int64)
    return count_leading_zeros(np.where(x >= 0, x, ~x)) - 1


def _truncating_half(x: np.ndarray) -> np.ndarray:
    """C's ``x / 2`` (toward zero)."""
    return np.where(x >= 0, x >> 1, -((-x) >> 1))


def rounding_half_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """gemmlowp's ``RoundingHalfSum`` on int32: (a + b + sign) / 2 in int64."""
    total = np.asarray(a, np.int64) + np.asarray(b, np.int64)
    return _truncating_half(total + np.where(total >= 0, 1, -1))


def saturating_rounding_multiply_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's ``SaturatingRoundingMultiplyByPOT<exponent>`` for exponent > 0: a left
    shift that saturates to the int32 range."""
    threshold = (1 << (31 - exponent)) - 1
    x = np.asarray(x, np.int64)
    shifted = x << exponent
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """gemmlowp's ``one_over_one_plus_x_for_x_in_0_1`` on Q0.31 raw values: 1 / (1 + a)
    as Q0.31, by three Newton-Raphson steps in Q2.29."""
    srdhm = saturating_rounding_doubling_high_mul
    half_denominator = rounding_half_sum(a, INT32_MAX)  # (a + 1) / 2, Q0.31 (One() is max)
    x = CONSTANT_48_OVER_17 + srdhm(half_denominator, CONSTANT_NEG_32_OVER_17)
    for _ in range(3):
        half_denominator_times_x = srdhm(half_denominator, x)  # Q2.29
        one_minus = ONE_Q2_29 - half_denominator_times_x
        x = x + saturating_rounding_multiply_by_pot(srdhm(x, one_minus), 2)  # Q4.27 -> Q2.29
    return saturating_rounding_multiply_by_pot(x, 1)  # ExactMulByPot<-1> then Rescale<0>


def get_reciprocal(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's ``GetReciprocal(x, x_integer_digits=31, &num_bits_over_unit)`` for x > 0:
    (Q0.31 reciprocal of x scaled into [0.5, 1), num_bits_over_unit)."""
    x = np.asarray(x, np.int64)
    headroom_plus_one = count_leading_zeros(x)
    num_bits_over_unit = 31 - headroom_plus_one
    shifted = ((x << headroom_plus_one) - (1 << 31)) & 0xFFFFFFFF  # uint32 arithmetic
    shifted_sum_minus_one = np.where(shifted >= 1 << 31, shifted - (1 << 32), shifted)  # as int32
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit
