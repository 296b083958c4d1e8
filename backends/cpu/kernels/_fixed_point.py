"""gemmlowp's fixed-point arithmetic and TFLite's lookup tables, vectorized over numpy.

The quantized activations and softmax of TFLite's reference kernels compute in gemmlowp
fixed point (``fixedpoint/fixedpoint.h``: ``FixedPoint<int32_t, IntegerBits>``, a raw
int32 ``x`` standing for ``x / 2**(31 - IntegerBits)``) or through lookup tables built
at Prepare (``internal/common.h``: ``LUTPopulate``, ``LUTLookup``). This module
reproduces both bit for bit. Every function takes and returns raw int32 values held in
int64 arrays (or Python ints); additions wrap like the compiled C (two's
complement), multiplications are gemmlowp's ``SaturatingRoundingDoublingHighMul``.
The exp/tanh/logistic functions also take ``bits=16``: gemmlowp's ``FixedPoint<int16_t>``
(the integer LSTM's gate activations), whose constants are the int32 ones
rounding-shifted right by 16 (``RescaleConstantInitializer``), whose products are the
16-bit ``SaturatingRoundingDoublingHighMul`` and whose one saturating addition is
``AddSaturatingIf16Bit``.
The arithmetic functions are written against the array namespace of their arguments
(``backends.cpu.quantization.namespace_of``): numpy on the CPU, CuPy (or the emulated
CuPy) on the GPU, whose quantized ops call them on device arrays (no host reads). The
table builders (``lut_populate_*``, the C library's float functions) run on the host.

The lookup tables call the same C math functions as TFLite (``expf``, ``tanhf``,
``expm1f``, ``logf`` from the C library, through ctypes; the double ones through
Python's ``math``, which calls the C library too), so that tables match entry for entry.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from typing import Callable

import numpy as np

from backends.cpu.quantization import (
    INT32_MAX,
    INT32_MIN,
    namespace_of,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)

__all__ = [
    "wrap32", "wrap16", "srdhm", "rdbpot", "saturating_shift_left", "rounding_half_sum",
    "exp_on_negative_values", "one_over_one_plus_x_for_x_in_0_1",
    "one_minus_x_over_one_plus_x_for_x_in_0_1", "fixed_point_tanh", "fixed_point_logistic",
    "log_x_for_x_greater_than_or_equal_to_1", "count_leading_zeros32", "get_reciprocal",
    "c_expf", "c_tanhf", "c_expm1f", "c_logf", "c_erfcf", "round_half_away_f32",
    "lut_populate_8bit", "lut_populate_int16", "lut_populate_int16_f32", "lut_lookup_int16", "checked_log2",
    "sigmoid_table_uint16", "per_value", "pair_table", "rescale", "int16_logistic_table",
    "int16_tanh_table", "inv_sqrt_quantized_multiplier",
]

# Every function below takes Python ints (one value: plain integer arithmetic, fast for
# per-row quantities) or int64 arrays of any namespace (vectorized: numpy, or device
# arrays); the results have the same kind.


def _where(condition, a, b):
    if condition.__class__ is bool:
        return a if condition else b
    if isinstance(condition, (np.ndarray, np.generic)):
        return np.where(condition, a, b)
    return namespace_of(condition).where(condition, a, b)  # device arrays


def _i64(x):
    if x.__class__ is int or isinstance(x, np.ndarray):
        return x
    if hasattr(x, "astype") and not isinstance(x, np.generic):  # a device array
        return x.astype(np.int64, copy=False)
    return np.asarray(x, dtype=np.int64)


def srdhm(a, b, bits: int = 32):
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` (int32, or int16 with ``bits=16``):
    a * b / 2**(bits - 1), rounded."""
    if bits == 16:
        a, b = _i64(a), _i64(b)
        high = (a * b + (1 << 14)) >> 15
        return _where((a == -32768) & (b == -32768), 32767, high)
    if a.__class__ is int and b.__class__ is int:
        return INT32_MAX if a == b == INT32_MIN else (a * b + (1 << 30)) >> 31
    return saturating_rounding_doubling_high_mul(a, b)


def rdbpot(x, exponent):
    """gemmlowp's ``RoundingDivideByPOT``: x / 2**exponent, rounding halves away from zero."""
    if x.__class__ is int and exponent.__class__ is int:
        mask = (1 << exponent) - 1
        return (x >> exponent) + ((x & mask) > (mask >> 1) + (x < 0))
    return rounding_divide_by_pot(x, exponent)


def wrap32(x):
    """Two's-complement wrap to int32 (C's int32 addition/subtraction overflow)."""
    x = _i64(x)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def wrap16(x):
    """Two's-complement wrap to int16 (a C conversion to ``int16_t``)."""
    x = _i64(x)
    return ((x + (1 << 15)) & 0xFFFF) - (1 << 15)


def _wrap(x, bits: int):
    return wrap16(x) if bits == 16 else wrap32(x)


def _constant(int32_value: int, bits: int) -> int:
    """gemmlowp's ``RescaleConstantInitializer``: an int32 constant in the raw type."""
    return int32_value if bits == 32 else int(rdbpot(int32_value, 32 - bits))


def saturating_shift_left(x, exponent, bits: int = 32):
    """gemmlowp's ``SaturatingRoundingMultiplyByPOT`` with exponent >= 0 (also TFLite's
    ``SaturatingRoundingMultiplyByPOTParam``): ``x * 2**exponent`` saturated to int32
    (int16 with ``bits=16``). ``exponent`` may be an array (broadcast against ``x``)."""
    x, exponent = _i64(x), _i64(exponent)
    threshold = (1 << (bits - 1 - exponent)) - 1
    result = _where(x > threshold, (1 << (bits - 1)) - 1, x << exponent)
    return _where(x < -threshold, -(1 << (bits - 1)), result)


def rescale(x, src_integer_bits: int, dst_integer_bits: int, bits: int = 32):
    """gemmlowp's ``Rescale<dst>(FixedPoint<int32, src>)`` (``int16_t`` with ``bits=16``)."""
    exponent = src_integer_bits - dst_integer_bits
    if exponent > 0:
        return saturating_shift_left(x, exponent, bits)
    if exponent < 0:
        return rdbpot(x, -exponent)
    return _i64(x)


def rounding_half_sum(a, b):
    """gemmlowp's ``RoundingHalfSum`` (int32): (a + b) / 2 rounded half away from zero."""
    total = _i64(a) + _i64(b)
    numerator = total + _where(total >= 0, 1, -1)
    # C's division truncates toward zero.
    return _where(numerator >= 0, numerator // 2, -((-numerator) // 2))


# --- exp, 1/(1+x), tanh, logistic ------------------------------------------------------

_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401), (4, 242))


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a, bits: int = 32):
    """exp(a) for a in [-1/4, 0), Q0.31 (Q0.15) in and out (Taylor expansion around -1/8)."""
    constant_term = _constant(1895147668, bits)  # exp(-1/8)
    constant_1_over_3 = _constant(715827883, bits)
    x = _wrap(_i64(a) + (1 << (bits - 4)), bits)
    x2 = srdhm(x, x, bits)
    x3 = srdhm(x2, x, bits)
    x4 = srdhm(x2, x2, bits)
    x4_over_4 = rdbpot(x4, 2)
    poly = rdbpot(_wrap(srdhm(_wrap(x4_over_4 + x3, bits), constant_1_over_3, bits) + x2, bits), 1)
    total = constant_term + srdhm(constant_term, _wrap(x + poly, bits), bits)
    if bits == 16:  # AddSaturatingIf16Bit
        return _where(total > 32767, 32767, _where(total < -32768, -32768, total))
    return wrap32(total)


def exp_on_negative_values(a, integer_bits: int, bits: int = 32):
    """gemmlowp's ``exp_on_negative_values``: exp(a) for a <= 0 in Q``integer_bits``,
    result in Q0.31 (Q0.15 with ``bits=16``)."""
    a = _i64(a)
    fractional_bits = bits - 1 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_one_quarter = _wrap((a & (one_quarter - 1)) - one_quarter, bits)
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0, bits), bits
    )
    remainder = _wrap(a_mod_quarter_minus_one_quarter - a, bits)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = 1 << (fractional_bits + exponent)
            result = _where((remainder & bit) != 0, srdhm(result, _constant(multiplier, bits), bits), result)
    if integer_bits > 5:
        clamp = _constant(-(1 << (36 - integer_bits)), bits)  # -32.0
        result = _where(a < clamp, 0, result)
    return _where(a == 0, (1 << (bits - 1)) - 1, result)


_CONSTANT_48_OVER_17 = 1515870810
_CONSTANT_NEG_32_OVER_17 = -1010580540


def _newton_raphson_reciprocal_of_half_denominator(a, bits: int = 32):
    """The shared body of gemmlowp's 1/(1+x) and (1-x)/(1+x): x ~ 1 / ((1 + a) / 2) in Q2.29
    (Q2.13)."""
    one = (1 << (bits - 1)) - 1
    f2_one = 1 << (bits - 3)
    half_denominator = rounding_half_sum(a, one)
    x = _wrap(_constant(_CONSTANT_48_OVER_17, bits) + srdhm(half_denominator, _constant(_CONSTANT_NEG_32_OVER_17, bits), bits), bits)
    for _ in range(3):
        half_denominator_times_x = srdhm(half_denominator, x, bits)
        one_minus_half_denominator_times_x = _wrap(f2_one - half_denominator_times_x, bits)
        x = _wrap(x + rescale(srdhm(x, one_minus_half_denominator_times_x, bits), 4, 2, bits), bits)
    return half_denominator, x


def one_over_one_plus_x_for_x_in_0_1(a, bits: int = 32):
    """gemmlowp's ``one_over_one_plus_x_for_x_in_0_1``: 1 / (1 + a), Q0.31 in and out."""
    _, x = _newton_raphson_reciprocal_of_half_denominator(a, bits)
    return rescale(x, 1, 0, bits)  # ExactMulByPot<-1> makes it Q1.30, then Rescale<0>


def one_minus_x_over_one_plus_x_for_x_in_0_1(a, bits: int = 32):
    """gemmlowp's ``one_minus_x_over_one_plus_x_for_x_in_0_1``: (1 - a) / (1 + a)."""
    _, x = _newton_raphson_reciprocal_of_half_denominator(a, bits)
    return rescale(_wrap(x - (1 << (bits - 3)), bits), 2, 0, bits)


def fixed_point_tanh(a, integer_bits: int, bits: int = 32):
    """gemmlowp's ``tanh`` of a Q``integer_bits`` value, result in Q0.31 (Q0.15)."""
    a = _i64(a)
    negative = a < 0
    n = _where(negative, a, _wrap(-a, bits))
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1, bits), bits)
    return _where(a == 0, 0, _where(negative, _wrap(-t, bits), t))


def fixed_point_logistic(a, integer_bits: int, bits: int = 32):
    """gemmlowp's ``logistic`` of a Q``integer_bits`` value, result in Q0.31 (Q0.15)."""
    a = _i64(a)
    positive = a > 0
    abs_input = _where(positive, a, _wrap(-a, bits))
    exp = exp_on_negative_values(_wrap(-abs_input, bits), integer_bits, bits)
    result_if_positive = one_over_one_plus_x_for_x_in_0_1(exp, bits)
    result_if_negative = _wrap((1 << (bits - 1)) - 1 - result_if_positive, bits)
    return _where(a == 0, 1 << (bits - 2), _where(positive, result_if_positive, result_if_negative))


_INT16_TABLES: dict[tuple[str, int], np.ndarray] = {}


def _int16_table(name: str, function: Callable, integer_bits: int) -> np.ndarray:
    key = (name, integer_bits)
    if key not in _INT16_TABLES:
        values = np.arange(-32768, 32768, dtype=np.int64)
        _INT16_TABLES[key] = np.asarray(function(values, integer_bits, bits=16), np.int64).astype(np.int16)
    return _INT16_TABLES[key]


def int16_logistic_table(integer_bits: int) -> np.ndarray:
    """gemmlowp's 16-bit ``logistic`` (``FixedPoint<int16_t, integer_bits>`` in, Q0.15 out)
    of every int16, as a table indexed by ``value + 32768`` (TFLite's ``ApplySigmoid``
    with ``integer_bits=3``)."""
    return _int16_table("logistic", fixed_point_logistic, integer_bits)


def int16_tanh_table(integer_bits: int) -> np.ndarray:
    """gemmlowp's 16-bit ``tanh`` of every int16 (TFLite's ``ApplyTanh(integer_bits)``),
    as a table indexed by ``value + 32768``."""
    return _int16_table("tanh", fixed_point_tanh, integer_bits)


# --- log, reciprocal --------------------------------------------------------------------


def count_leading_zeros32(x):
    """``CountLeadingZeros(static_cast<uint32_t>(x))`` (32 for 0)."""
    unsigned = _i64(x) & 0xFFFFFFFF
    if isinstance(unsigned, int):
        return 32 - unsigned.bit_length()
    xp = namespace_of(unsigned)
    bit_length = xp.frexp(unsigned.astype(np.float64))[1].astype(np.int64)  # exact below 2**53
    return 32 - bit_length


def _saturating_add(a, b):
    total = _i64(a) + _i64(b)
    if isinstance(total, int):
        return min(max(total, INT32_MIN), INT32_MAX)
    return namespace_of(total).clip(total, INT32_MIN, INT32_MAX)


def log_x_for_x_greater_than_or_equal_to_1(x, output_integer_bits: int, input_integer_bits: int):
    """TFLite's ``log_x_for_x_greater_than_or_equal_to_1<Out, In>`` (``internal/common.h``):
    log(x) of a Q``input_integer_bits`` value >= 1, result in Q``output_integer_bits``."""
    log_2 = 1488522236
    sqrt_sqrt_half = 1805811301
    sqrt_half = 1518500250
    one_quarter = 536870912
    alpha_n = 117049297
    alpha_d = 127690142
    alpha_i = 1057819769
    alpha_f = 638450708
    accum_integer_bits = output_integer_bits + 1
    shifted_quarter = int(rescale(one_quarter, 0, accum_integer_bits))

    z_a = _i64(x)
    z_a_headroom_plus_1 = count_leading_zeros32(z_a)
    r_a_tmp = saturating_shift_left(z_a, z_a_headroom_plus_1 - 1)
    r_a_raw = saturating_shift_left(srdhm(r_a_tmp, sqrt_half), 1)
    z_a_pow_2_adj = _saturating_add(
        saturating_shift_left(input_integer_bits - z_a_headroom_plus_1, 31 - accum_integer_bits), shifted_quarter
    )
    z_b = srdhm(z_a, sqrt_half)
    z_b_headroom = count_leading_zeros32(z_b) - 1
    r_b_raw = saturating_shift_left(z_a, z_b_headroom)
    z_b_pow_2_adj = _saturating_add(
        saturating_shift_left(input_integer_bits - z_b_headroom, 31 - accum_integer_bits), -shifted_quarter
    )
    r = _where(r_a_raw < r_b_raw, r_a_raw, r_b_raw)
    z_pow_2_adj = _where(z_a_pow_2_adj > z_b_pow_2_adj, z_a_pow_2_adj, z_b_pow_2_adj)

    p = rounding_half_sum(r, sqrt_sqrt_half)
    q = wrap32(r - sqrt_sqrt_half)
    q = wrap32(q + q)
    common_sq = srdhm(q, q)
    num = wrap32(srdhm(q, r) + srdhm(srdhm(q, common_sq), alpha_n))
    denom_minus_one_0 = wrap32(srdhm(p, wrap32(wrap32(alpha_i + q) + srdhm(alpha_d, common_sq))) + srdhm(alpha_f, q))
    recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one_0)
    num_scaled = rescale(num, 0, accum_integer_bits)
    total = wrap32(srdhm(z_pow_2_adj, log_2) + srdhm(num_scaled, recip_denom))
    return rescale(total, accum_integer_bits, output_integer_bits)


def inv_sqrt_quantized_multiplier(value: int, reverse_shift: int) -> tuple[int, int]:
    """TFLite's ``GetInvSqrtQuantizedMultiplierExp`` (``internal/common.h``) of one int32
    ``value`` >= 0, step for step: the (multiplier, shift) pair its integer layer norm
    rescales by (``value`` is normalized into [2**27, 2**29) by pairs of bits, then a
    Newton-Raphson iteration for the inverse square root in Q3.28)."""
    if value <= 1:
        return INT32_MAX, 0
    shift = 11
    while value >= (1 << 29):
        value //= 4
        shift += 1
    left_shift_bit_pairs = (count_leading_zeros32(value) - 1) // 2 - 1
    shift -= left_shift_bit_pairs
    value <<= 2 * left_shift_bit_pairs
    half_input = rdbpot(value >> 1, 1)  # F3 input / 2
    half_three = (1 << 28) + (1 << 27)  # 1.5 in Q3.28
    x = 1 << 28  # F3::One()
    for _ in range(5):
        x3 = rescale(srdhm(srdhm(x, x), x), 9, 3)
        x = rescale(wrap32(srdhm(half_three, x) - srdhm(half_input, x3)), 6, 3)
    x = srdhm(x, 1518500250)  # * sqrt(2) / 2 (F0)
    if shift < 0:
        x = wrap32(x << -shift)
        shift = 0
    return int(x), shift * reverse_shift


def get_reciprocal(x, x_integer_digits: int):
    """TFLite's ``GetReciprocal``: (1/x as a Q0.31 scale, num_bits_over_unit)."""
    x = _i64(x)
    headroom_plus_one = count_leading_zeros32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted = ((x & 0xFFFFFFFF) << headroom_plus_one) & 0xFFFFFFFF  # uint32 shift
    shifted_sum_minus_one = wrap32(shifted - (1 << 31))
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit


def per_value(function: Callable, values: np.ndarray, *args, scalar_limit: int = 8):
    """``function(values, *args)`` on an int64 array. A few values (e.g. one per softmax
    row) go one by one as Python ints: that beats the ~50 tiny numpy calls of the
    vectorized form. Tuple results are returned as a tuple of arrays."""
    if values.size > scalar_limit:
        return function(values, *args)
    results = [function(int(v), *args) for v in values.ravel()]
    if results and isinstance(results[0], tuple):
        return tuple(np.array([r[i] for r in results], np.int64).reshape(values.shape) for i in range(len(results[0])))
    return np.array(results, np.int64).reshape(values.shape)


# --- the C library's float functions ----------------------------------------------------


def _load_libm():
    name = ctypes.util.find_library("m")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


_LIBM = _load_libm()


def _float_function(c_name: str, numpy_function: Callable) -> Callable[[np.ndarray], np.ndarray]:
    """Elementwise float32 ``c_name`` from the C library (what TFLite's ``std::<fn>(float)``
    calls); numpy's float32 function where no C library is found (may differ by an ulp)."""
    function = getattr(_LIBM, c_name, None) if _LIBM is not None else None
    if function is None:
        return lambda values: numpy_function(np.asarray(values, np.float32)).astype(np.float32)
    function.restype = ctypes.c_float
    function.argtypes = [ctypes.c_float]

    def apply(values) -> np.ndarray:
        values = np.asarray(values, np.float32)
        return np.array([function(float(v)) for v in values.ravel()], np.float32).reshape(values.shape)

    return apply


c_expf = _float_function("expf", np.exp)
c_tanhf = _float_function("tanhf", np.tanh)
c_expm1f = _float_function("expm1f", np.expm1)
c_logf = _float_function("logf", np.log)
c_erfcf = _float_function(
    "erfcf", lambda x: np.asarray([math.erfc(float(v)) for v in np.ravel(x)], np.float32).reshape(np.shape(x))
)


def round_half_away_f32(values) -> np.ndarray:
    """``roundf`` elementwise on float32 (halves away from zero)."""
    values = np.asarray(values, np.float32)
    whole = np.trunc(values)
    return (whole + np.trunc((values - whole) * np.float32(2))).astype(np.float32)


# --- lookup tables ----------------------------------------------------------------------


def lut_populate_8bit(
    transform: Callable[[np.ndarray], np.ndarray],
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
    dtype: np.dtype,
) -> np.ndarray:
    """TFLite's ``LUTPopulate<uint8_t/int8_t>`` (``detail::LUTPopulateInt8``), in float32.

    ``transform`` maps a float32 array to float32 (the C lambda). Returns the table in
    value order: entry ``i`` is the output for input ``iinfo(dtype).min + i``.
    """
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1, dtype=np.int64)
    inverse_scale = np.float32(1) / np.float32(output_scale)
    dequantized = np.float32(input_scale) * (values - input_zero_point).astype(np.float32)
    transformed = np.asarray(transform(dequantized), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        rescaled = round_half_away_f32(transformed * inverse_scale)
        shifted = rescaled + np.float32(output_zero_point)
    # static_cast<int32_t>(float): truncation; out-of-range (and NaN) give INT32_MIN on x86.
    finite = np.isfinite(shifted) & (shifted > -2147483904.0) & (shifted < 2147483648.0)
    quantized = np.where(finite, np.trunc(np.where(finite, shifted, 0)), INT32_MIN).astype(np.int64)
    return np.clip(quantized, info.min, info.max).astype(dtype)


def lut_populate_int16(
    transform: Callable[[float], float],
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
) -> np.ndarray:
    """TFLite's ``LUTPopulate<int16_t>`` with ``FloatT = double`` (``detail::LUTPopulateInt16``):
    513 entries, 512 samples plus one to interpolate the last. ``transform`` takes and
    returns a Python float (a double)."""
    input_min = input_scale * (-32768 - input_zero_point)
    input_max = input_scale * (32767 - input_zero_point)
    output_min = output_scale * (-32768 - output_zero_point)
    output_max = output_scale * (32767 - output_zero_point)
    steps = 512
    step = (input_max - input_min) / steps
    half_step = step / 2
    output_scaling_inv = 65536.0 / (output_max - output_min)
    round_ = _c_round_double

    lut = np.empty(steps + 1, np.int16)
    for i in range(steps):
        val = transform(input_min + i * step)
        val_midpoint = transform(input_min + i * step + half_step)
        val_next = transform(input_min + (i + 1) * step)
        sample_val = round_(val * output_scaling_inv)
        midpoint_interp_val = round_((val_next * output_scaling_inv + round_(val * output_scaling_inv)) / 2)
        midpoint_val = round_(val_midpoint * output_scaling_inv)
        midpoint_err = midpoint_interp_val - midpoint_val
        bias = round_(midpoint_err / 2)
        lut[i] = int(min(max(sample_val - bias, -32768.0), 32767.0))
    lut[steps] = int(min(max(round_(transform(input_max) * output_scaling_inv), -32768.0), 32767.0))
    return lut


def lut_populate_int16_f32(
    transform: Callable[[np.ndarray], np.ndarray],
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
) -> np.ndarray:
    """TFLite's ``LUTPopulate<int16_t>`` with ``FloatT = float`` (``detail::LUTPopulateInt16``
    for a transform of float, as EXP's, LOG's, RSQRT's and GELU's lambdas are): the steps of
    :func:`lut_populate_int16`, each rounded to float32. ``transform`` maps a float32 array
    to float32 (the C lambda)."""
    f = np.float32
    input_min = f(input_scale) * f(-32768 - input_zero_point)
    input_max = f(input_scale) * f(32767 - input_zero_point)
    output_min = f(output_scale) * f(-32768 - output_zero_point)
    output_max = f(output_scale) * f(32767 - output_zero_point)
    steps = np.arange(513, dtype=np.float32)
    step = (input_max - input_min) / f(512)
    half_step = step / f(2)
    inverse = f(65536) / (output_max - output_min)
    with np.errstate(over="ignore", invalid="ignore"):
        at = (input_min + steps[:512] * step).astype(np.float32)
        value = np.asarray(transform(at), np.float32)
        value_midpoint = np.asarray(transform((at + half_step).astype(np.float32)), np.float32)
        value_next = np.asarray(transform((input_min + steps[1:] * step).astype(np.float32)), np.float32)
        sample = round_half_away_f32(value * inverse)
        midpoint_interpolated = round_half_away_f32((value_next * inverse + sample) / f(2))
        midpoint_error = midpoint_interpolated - round_half_away_f32(value_midpoint * inverse)
        bias = round_half_away_f32(midpoint_error / f(2))
        last = round_half_away_f32(np.asarray(transform(np.array([input_max], np.float32)), np.float32) * inverse)
    entries = np.concatenate([sample - bias, last]).astype(np.float32)
    return np.clip(entries, -32768.0, 32767.0).astype(np.int16)


def _c_round_double(value: float) -> float:
    """``std::round`` on a double, as a double."""
    if not math.isfinite(value):
        return value
    whole = float(math.trunc(value))
    if abs(value - whole) >= 0.5:
        whole += math.copysign(1.0, value)
    return whole


def lut_lookup_int16(values, lut: np.ndarray) -> np.ndarray:
    """TFLite's ``LUTLookup(int16_t, const int16_t*)``: 9 bits index, 7 bits interpolate."""
    values = _i64(values)
    lut = lut.astype(np.int64)
    index = 256 + (values >> 7)
    offset = values & 0x7F
    base = lut[index]
    slope = wrap16(lut[index + 1] - base)  # an int16 in TFLite
    delta = (slope * offset + 64) >> 7
    return wrap16(base + delta)


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLite's ``CheckedLog2`` (float32 math with ``logf``): (is a power of two, log2)."""
    x = np.float32(x)
    if x <= 0:
        return False, 0
    log2 = c_logf(np.array([x]))[0] * (np.float32(1) / c_logf(np.array([np.float32(2)]))[0])
    rounded = round_half_away_f32(log2)
    return bool(abs(np.float32(log2 - rounded)) < np.float32(1e-3)), int(rounded)


#: TFLite's ``sigmoid_table_uint16`` (``internal/common.h``): sigmoid(i / 24) in 0.16.
sigmoid_table_uint16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498,
    40149, 40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255,
    46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865,
    52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174,
    56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288,
    59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441,
    61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886,
    62990, 63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835,
    63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450,
    64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845,
    64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097,
    65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465,
    65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508,
    65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517, 65517, 65518,
    65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525,
    65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529,
    65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531,
    65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533,
    65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65535,
], dtype=np.int64)


def pair_table(table: np.ndarray) -> np.ndarray:
    """From a 256-entry table of one-byte values (indexed by the input's code), a
    65536-entry uint16 table that maps two adjacent input bytes, read as one uint16 in
    native byte order, to the two output bytes: one ``take`` then does two lookups."""
    codes = np.arange(1 << 16, dtype=np.uint16)
    return np.ascontiguousarray(table.view(np.uint8)[codes.view(np.uint8)]).view(np.uint16)
