"""The fixed-point helpers (backends/cpu/kernels/_fixed_point.py) against a scalar,
line-by-line port of gemmlowp's C code (plain Python ints with C's truncating division
and int32 wrap-around), and against the real functions they approximate.

The kernels built on them are checked bit for bit against LiteRT in
test_softmax_quantized.py and test_activations_quantized.py; these tests pin the
primitives one by one, including inputs those kernels rarely reach.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.cpu.kernels import _fixed_point as fp

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
int32s = st.integers(INT32_MIN, INT32_MAX)


# --- a scalar port of gemmlowp (fixedpoint.h), C semantics -------------------------------


def c_div(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def w32(x: int) -> int:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def s_srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return c_div(ab + nudge, 1 << 31)


def s_rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def s_srmbpot(x: int, exponent: int) -> int:
    if exponent < 0:
        return s_rdbpot(x, -exponent)
    if exponent == 0:
        return x
    threshold = (1 << (31 - exponent)) - 1
    if x > threshold:
        return INT32_MAX
    if x < -threshold:
        return INT32_MIN
    return w32(x << exponent)


def s_rounding_half_sum(a: int, b: int) -> int:
    total = a + b
    return c_div(total + (1 if total >= 0 else -1), 2)


def s_exp_quarter(a: int) -> int:
    constant_term, third = 1895147668, 715827883
    x = w32(a + (1 << 28))
    x2 = s_srdhm(x, x)
    x3 = s_srdhm(x2, x)
    x4 = s_srdhm(x2, x2)
    x4_over_4 = s_srmbpot(x4, -2)
    poly = s_srmbpot(w32(s_srdhm(w32(x4_over_4 + x3), third) + x2), -1)
    return w32(constant_term + s_srdhm(constant_term, w32(x + poly)))


def s_exp_on_negative_values(a: int, integer_bits: int) -> int:
    fractional_bits = 31 - integer_bits
    quarter = 1 << (fractional_bits - 2)
    a_mod = w32((a & (quarter - 1)) - quarter)
    result = s_exp_quarter(s_srmbpot(a_mod, integer_bits))
    remainder = w32(a_mod - a)
    for exponent, multiplier in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401), (4, 242)):
        if integer_bits > exponent and remainder & (1 << (fractional_bits + exponent)):
            result = s_srdhm(result, multiplier)
    if integer_bits > 5 and a < -(1 << (36 - integer_bits)):
        result = 0
    return INT32_MAX if a == 0 else result


def s_one_over_one_plus_x(a: int) -> int:
    half_denominator = s_rounding_half_sum(a, INT32_MAX)
    x = w32(1515870810 + s_srdhm(half_denominator, -1010580540))
    for _ in range(3):
        one_minus = w32((1 << 29) - s_srdhm(half_denominator, x))
        x = w32(x + s_srmbpot(s_srdhm(x, one_minus), 2))
    return s_srmbpot(x, 1)


# --- the vectorized helpers equal the scalar port ----------------------------------------


@settings(max_examples=200, deadline=None)
@given(a=int32s, b=int32s)
def test_saturating_rounding_doubling_high_mul_matches_gemmlowp(a, b):
    assert int(fp.srdhm(a, b)) == s_srdhm(a, b)


def test_saturating_rounding_doubling_high_mul_saturates_min_times_min():
    assert int(fp.srdhm(INT32_MIN, INT32_MIN)) == INT32_MAX


@settings(max_examples=200, deadline=None)
@given(x=int32s, exponent=st.integers(0, 31))
def test_rounding_divide_by_pot_matches_gemmlowp(x, exponent):
    assert int(fp.rdbpot(x, exponent)) == s_rdbpot(x, exponent)


@settings(max_examples=200, deadline=None)
@given(x=int32s, exponent=st.integers(0, 31))
def test_saturating_shift_left_matches_gemmlowp(x, exponent):
    assert int(fp.saturating_shift_left(x, exponent)) == s_srmbpot(x, exponent)


@settings(max_examples=200, deadline=None)
@given(a=int32s, b=int32s)
def test_rounding_half_sum_matches_gemmlowp(a, b):
    assert int(fp.rounding_half_sum(a, b)) == s_rounding_half_sum(a, b)


@pytest.mark.parametrize("integer_bits", [0, 1, 4, 5, 6, 12])
def test_exp_on_negative_values_matches_gemmlowp(integer_bits):
    rng = np.random.default_rng(integer_bits)
    a = np.concatenate([-rng.integers(0, 1 << 31, 3000), [0, -1, INT32_MIN, -(1 << (31 - integer_bits))]])
    got = fp.exp_on_negative_values(a, integer_bits)
    assert [int(v) for v in got] == [s_exp_on_negative_values(int(v), integer_bits) for v in a]


def test_one_over_one_plus_x_matches_gemmlowp():
    a = np.concatenate([np.random.default_rng(0).integers(0, 1 << 31, 3000), [0, 1, INT32_MAX]])
    got = fp.one_over_one_plus_x_for_x_in_0_1(a)
    assert [int(v) for v in got] == [s_one_over_one_plus_x(int(v)) for v in a]


# --- and approximate what they are named after --------------------------------------------


def test_exp_on_negative_values_approximates_exp():
    x = np.linspace(-31.9, 0, 4001)
    raw = np.round(x * 2**26).astype(np.int64)  # Q5.26
    got = fp.exp_on_negative_values(raw, 5) / 2**31
    np.testing.assert_allclose(got, np.exp(raw / 2**26), atol=5e-7)  # gemmlowp: ~2e-7


def test_tanh_and_logistic_approximate_the_real_functions():
    raw = np.round(np.linspace(-7.9, 7.9, 2001) * 2**27).astype(np.int64)  # Q4.27
    x = raw / 2**27
    np.testing.assert_allclose(fp.fixed_point_tanh(raw, 4) / 2**31, np.tanh(x), atol=1e-7)
    np.testing.assert_allclose(fp.fixed_point_logistic(raw, 4) / 2**31, 1 / (1 + np.exp(-x)), atol=1e-7)


def test_log_x_approximates_log():
    x = np.linspace(1, 4000, 5001)
    raw = np.round(x * 2**19).astype(np.int64)  # Q12.19
    got = fp.log_x_for_x_greater_than_or_equal_to_1(raw, 5, 12) / 2**26  # Q5.26
    np.testing.assert_allclose(got, np.log(raw / 2**19), atol=1e-6)


def test_get_reciprocal_gives_a_scale_and_the_bits_over_one():
    sums = np.array([1 << 19, 3 << 19, 100 << 19, (1 << 19) + 12345])  # Q12.19
    scale, bits_over_unit = fp.get_reciprocal(sums, 12)
    np.testing.assert_array_equal(bits_over_unit, [0, 1, 6, 0])
    np.testing.assert_allclose(scale / 2**31 / 2.0**bits_over_unit, 2**19 / sums, rtol=1e-8)


def test_count_leading_zeros32_of_int32_values():
    values = np.array([0, 1, 2, 3, 255, 1 << 30, INT32_MAX, -1, INT32_MIN])
    np.testing.assert_array_equal(fp.count_leading_zeros32(values), [32, 31, 30, 30, 24, 1, 1, 0, 0])


# --- lookup tables ----------------------------------------------------------------------


def test_int16_lut_of_exp_interpolates_exp_on_minus_10_to_0():
    lut = fp.lut_populate_int16(math.exp, 10.0 / 65535, 32767, 2.0 / 65535, 0)
    assert lut.shape == (513,) and lut.dtype == np.int16
    values = np.arange(-32768, 32768)
    got = fp.lut_lookup_int16(values, lut) / 32767.5
    x = (values - 32767) * (10.0 / 65535)
    np.testing.assert_allclose(got, np.exp(x), atol=2e-4)


def test_int16_lut_lookup_interpolates_between_entries():
    lut = np.zeros(513, np.int16)
    lut[256], lut[257] = 100, 228
    # value 0 is entry 256; each entry spans 128 values; halfway is 100 + 64
    np.testing.assert_array_equal(fp.lut_lookup_int16(np.array([0, 64, 127]), lut), [100, 164, 227])


def test_8bit_lut_rounds_half_away_from_zero_and_clamps():
    identity = lambda x: x  # noqa: E731
    lut = fp.lut_populate_8bit(identity, 0.5, 0, 1.0, 0, np.int8)
    # input q -> 0.5 q -> roundf: halves away from zero
    assert lut[128 + 1] == 1 and lut[128 - 1] == -1 and lut[128 + 3] == 2 and lut[128 - 3] == -2
    lut = fp.lut_populate_8bit(identity, 2.0, 0, 1.0, 0, np.int8)
    assert lut[0] == -128 and lut[255] == 127  # clamped


def test_checked_log2_recognises_powers_of_two():
    assert fp.checked_log2(2.0**-12) == (True, -12)
    assert fp.checked_log2(1 / 32768) == (True, -15)
    assert fp.checked_log2(0.0003)[0] is False
    assert fp.checked_log2(0.0) == (False, 0)


def test_c_math_functions_are_float32_and_close_to_numpy():
    x = np.linspace(-10, 10, 101, dtype=np.float32)
    for c_function, reference in ((fp.c_expf, np.exp), (fp.c_tanhf, np.tanh), (fp.c_expm1f, np.expm1)):
        got = c_function(x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, reference(x.astype(np.float64)), rtol=1e-6, atol=1e-7)


# --- one value as a Python int gives what the vectorized form gives ----------------------


@settings(max_examples=100, deadline=None)
@given(x=st.integers(1 << 19, (1 << 31) - 1))
def test_reciprocal_and_log_of_one_python_int_equal_the_vectorized_forms(x):
    """The kernels compute per-row values (few rows) with Python ints, many with arrays."""
    scale, bits = fp.get_reciprocal(x, 12)
    scales, bits_array = fp.get_reciprocal(np.array([x]), 12)
    assert (scale, bits) == (int(scales[0]), int(bits_array[0]))
    assert fp.log_x_for_x_greater_than_or_equal_to_1(x, 5, 12) == int(fp.log_x_for_x_greater_than_or_equal_to_1(np.array([x]), 5, 12)[0])


@settings(max_examples=100, deadline=None)
@given(a=st.integers(INT32_MIN, 0), integer_bits=st.sampled_from([0, 3, 4, 5, 6]))
def test_exp_tanh_logistic_of_one_python_int_equal_the_vectorized_forms(a, integer_bits):
    for function in (fp.exp_on_negative_values, fp.fixed_point_tanh, fp.fixed_point_logistic):
        assert function(a, integer_bits) == int(function(np.array([a]), integer_bits)[0])


def test_per_value_takes_the_scalar_path_for_few_values_and_keeps_shapes():
    sums = np.array([[1 << 19], [5 << 19], [77 << 19]])
    few = fp.per_value(fp.get_reciprocal, sums, 12)
    many = fp.per_value(fp.get_reciprocal, sums, 12, scalar_limit=0)
    for got, want in zip(few, many):
        assert got.shape == sums.shape
        np.testing.assert_array_equal(got, want)


def test_pair_table_looks_up_two_bytes_at_once():
    table = (np.arange(256, dtype=np.int64) * 7 % 256 - 128).astype(np.int8)
    pairs = fp.pair_table(table)
    x = np.random.default_rng(0).integers(-128, 128, size=1000).astype(np.int8)
    got = np.take(pairs, x.view(np.uint16)).view(np.int8)
    np.testing.assert_array_equal(got, table[x.view(np.uint8)])
