"""The requantization core (backends/cpu/quantization.py) against TFLite's C++ and the wheel.

First, which rounding the runtime we match uses in ``MultiplyByQuantizedMultiplier``
(an int8 -> int8 QUANTIZE is computed by ``reference_ops::Requantize``, which calls it;
the values are chosen so that single and double rounding give different outputs).
Then property tests of each primitive against a plain transcription of TFLite's C++
into Python's arbitrary-precision ints (C's truncating division written out).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from oracle import run_litert

from backends.cpu import quantization as q
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType
from schema.model import Model

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
int32s = st.integers(INT32_MIN, INT32_MAX)


# -- TFLite's C++, transcribed with Python ints ------------------------------------------
def c_div(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def c_round(x: float) -> int:
    """std::round: halves away from zero."""
    r = math.floor(abs(x))
    if abs(x) - r >= 0.5:
        r += 1
    return int(math.copysign(r, x)) if r else 0


def wrap32(x: int) -> int:
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def ref_srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul (fixedpoint.h)."""
    overflow = a == b and a == INT32_MIN
    ab_64 = a * b
    nudge = (1 << 30) if ab_64 >= 0 else (1 - (1 << 30))
    ab_x2_high32 = c_div(ab_64 + nudge, 1 << 31)
    return INT32_MAX if overflow else ab_x2_high32


def ref_rdbpot(x: int, exponent: int) -> int:
    """gemmlowp RoundingDivideByPOT."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def ref_mbqm_double(x: int, multiplier: int, shift: int) -> int:
    left_shift = shift if shift > 0 else 0
    right_shift = 0 if shift > 0 else -shift
    return ref_rdbpot(ref_srdhm(wrap32(x * (1 << left_shift)), multiplier), right_shift)


def ref_mbqm_single(x: int, multiplier: int, shift: int) -> int:
    total_shift = 31 - shift
    return (x * multiplier + (1 << (total_shift - 1))) >> total_shift


def ref_mbqm_int64(x: int, multiplier: int, shift: int) -> int:
    reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
    total_shift = 15 - shift
    return wrap32((x * reduced + (1 << (total_shift - 1))) >> total_shift)


def ref_quantize_multiplier(real: float, single_rounding: bool) -> tuple[int, int]:
    if real == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real)
    fixed = c_round(fraction * (1 << 31))
    assert fixed <= 1 << 31
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        shift, fixed = 0, 0
    if single_rounding and shift > 30:
        shift, fixed = 30, (1 << 31) - 1
    return fixed, shift


def ref_activation_range(activation, scale, zero_point, qmin, qmax):
    def quantize(f):
        return zero_point + c_round(float(np.float32(f) / np.float32(scale)))

    if activation == ActivationFunctionType.RELU:
        return max(qmin, quantize(0.0)), qmax
    if activation == ActivationFunctionType.RELU6:
        return max(qmin, quantize(0.0)), min(qmax, quantize(6.0))
    if activation == ActivationFunctionType.RELU_N1_TO_1:
        return max(qmin, quantize(-1.0)), min(qmax, quantize(1.0))
    return qmin, qmax


# -- which rounding the wheel uses ---------------------------------------------------------
def requantize_model(n: int, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [n], TensorType.INT8, quantization=quantization(in_scale, in_zp))
    y = graph.add_tensor("y", [n], TensorType.INT8, quantization=quantization(out_scale, out_zp))
    graph.add_operator(BuiltinOperator.QUANTIZE, [x], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


@pytest.mark.parametrize(
    "in_scale, in_zp, out_scale, out_zp",
    [(1 / 32, 0, 1.0, 0), (0.0123, 3, 0.0457, -7), (0.25, 5, 2.0, -3)],
)
def test_litert_multiply_by_quantized_multiplier_rounding_is_the_one_the_module_uses(in_scale, in_zp, out_scale, out_zp):
    # QUANTIZE int8 -> int8 runs reference_ops::Requantize:
    # clamp(MultiplyByQuantizedMultiplier(x - in_zp, M, s) + out_zp).
    values = np.arange(-128, 128, dtype=np.int8)
    model = requantize_model(values.size, in_scale, in_zp, out_scale, out_zp)
    assert Model.from_bytes(model).subgraphs[0].operators[0].version == 1
    real = float(np.float32(in_scale)) / float(np.float32(out_scale))

    def requantize(single_rounding):
        multiplier, shift = q.quantize_multiplier(real, single_rounding=single_rounding)
        scaled = q.multiply_by_quantized_multiplier(
            values.astype(np.int64) - in_zp, multiplier, shift, single_rounding=single_rounding
        )
        return np.clip(scaled + out_zp, -128, 127).astype(np.int8)

    single, double = requantize(True), requantize(False)
    assert np.count_nonzero(single != double) > 0, "the chosen values must tell the schemes apart"
    (theirs,) = run_litert(model, [values])
    np.testing.assert_array_equal(theirs, requantize(q.SINGLE_ROUNDING))
    np.testing.assert_array_equal(theirs, double)  # ai-edge-litert 2.3.0: double rounding
    assert q.SINGLE_ROUNDING is False


# -- the primitives against the transcription ----------------------------------------------
SETTINGS = settings(max_examples=200, deadline=None)


@SETTINGS
@given(a=int32s, b=int32s)
def test_saturating_rounding_doubling_high_mul_matches_gemmlowp(a, b):
    assert int(q.saturating_rounding_doubling_high_mul(a, b)) == ref_srdhm(a, b)


def test_saturating_rounding_doubling_high_mul_saturates_min_times_min():
    assert int(q.saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MIN)) == INT32_MAX
    got = q.saturating_rounding_doubling_high_mul(np.array([INT32_MIN, 5, -(1 << 30)]), INT32_MIN)
    assert got.tolist() == [ref_srdhm(INT32_MIN, INT32_MIN), ref_srdhm(5, INT32_MIN), ref_srdhm(-(1 << 30), INT32_MIN)]


@SETTINGS
@given(x=int32s, exponent=st.integers(0, 31))
def test_rounding_divide_by_pot_matches_gemmlowp(x, exponent):
    assert int(q.rounding_divide_by_pot(x, exponent)) == ref_rdbpot(x, exponent)


@settings(max_examples=50, deadline=None)
@given(xs=st.lists(int32s, min_size=1, max_size=8), exponents=st.lists(st.integers(0, 31), min_size=1, max_size=4))
def test_rounding_divide_by_pot_broadcasts_per_channel_exponents(xs, exponents):
    got = q.rounding_divide_by_pot(np.array(xs, np.int64)[:, None], np.array(exponents, np.int64))
    assert got.tolist() == [[ref_rdbpot(x, e) for e in exponents] for x in xs]


@settings(max_examples=50, deadline=None)
@given(a=st.lists(int32s, min_size=1, max_size=8), b=st.lists(st.sampled_from([INT32_MIN, INT32_MAX, -1, 0, 1 << 30]) | int32s, min_size=1, max_size=8))
def test_saturating_rounding_doubling_high_mul_elementwise_on_arrays(a, b):
    n = min(len(a), len(b))
    got = q.saturating_rounding_doubling_high_mul(np.array(a[:n]), np.array(b[:n]))
    assert got.tolist() == [ref_srdhm(x, y) for x, y in zip(a[:n], b[:n])]


@SETTINGS
@given(real=st.one_of(st.floats(0, 1e6, allow_nan=False), st.floats(1e-12, 2.0), st.just(2.0**-32), st.just(1 - 2.0**-40)),
       single=st.booleans())
def test_quantize_multiplier_matches_tflite(real, single):
    assert q.quantize_multiplier(real, single_rounding=single) == ref_quantize_multiplier(real, single)


def test_quantize_multiplier_rounds_up_to_the_next_power_of_two():
    assert q.quantize_multiplier(1 - 2.0**-40) == (1 << 30, 1)
    assert q.quantize_multiplier(2.0**-32) == (1 << 30, -31)
    assert q.quantize_multiplier(2.0**-33) == (0, 0)  # shift below -31: flushed to zero
    assert q.quantize_multiplier(0.0) == (0, 0)


def test_quantize_multipliers_is_elementwise_quantize_multiplier():
    reals = np.array([0.5, 0.0123, 3.75, 0.0], np.float64)
    multipliers, shifts = q.quantize_multipliers(reals)
    assert [(int(m), int(s)) for m, s in zip(multipliers, shifts)] == [q.quantize_multiplier(r) for r in reals]


multipliers = st.integers(0, INT32_MAX)
shifts = st.integers(-31, 30)


@SETTINGS
@given(x=int32s, multiplier=multipliers, shift=shifts)
def test_multiply_by_quantized_multiplier_double_rounding_matches_tflite(x, multiplier, shift):
    got = q.multiply_by_quantized_multiplier(x, multiplier, shift, single_rounding=False)
    assert int(got) == ref_mbqm_double(x, multiplier, shift)


@SETTINGS
@given(x=int32s, multiplier=multipliers, shift=shifts)
def test_multiply_by_quantized_multiplier_single_rounding_matches_tflite(x, multiplier, shift):
    got = q.multiply_by_quantized_multiplier(x, multiplier, shift, single_rounding=True)
    assert int(got) == ref_mbqm_single(x, multiplier, shift)


@SETTINGS
@given(x=st.integers(-(1 << 47), (1 << 47) - 1), multiplier=multipliers, shift=st.integers(-31, 7))
def test_multiply_by_quantized_multiplier_int64_matches_tflite(x, multiplier, shift):
    assert int(q.multiply_by_quantized_multiplier_int64(x, multiplier, shift)) == ref_mbqm_int64(x, multiplier, shift)


@settings(max_examples=25, deadline=None)
@given(
    xs=st.lists(int32s, min_size=1, max_size=16),
    channels=st.lists(st.tuples(multipliers, shifts), min_size=1, max_size=4),
    single=st.booleans(),
)
def test_multiply_by_quantized_multiplier_broadcasts_per_channel(xs, channels, single):
    x = np.array(xs, np.int64)[:, None]
    m = np.array([c[0] for c in channels], np.int64)
    s = np.array([c[1] for c in channels], np.int64)
    got = q.multiply_by_quantized_multiplier(x, m, s, single_rounding=single)
    ref = ref_mbqm_single if single else ref_mbqm_double
    assert got.tolist() == [[ref(int(v), int(mm), int(ss)) for mm, ss in zip(m, s)] for v in xs]


@settings(max_examples=40, deadline=None)
@given(
    first=st.lists(st.integers(-(1 << 29), (1 << 29)), min_size=1, max_size=6),
    second=st.lists(st.integers(-(1 << 29), (1 << 29)), min_size=1, max_size=6),
    multiplier=multipliers,
    shift=st.integers(-31, 0),
    zero_point=st.integers(-128, 255),
    single=st.booleans(),
)
def test_requantize_outer_sum_is_the_output_stage_of_every_pair(first, second, multiplier, shift, zero_point, single):
    out = np.empty((len(first), len(second)), np.int16)
    low, high = -300, 400
    applies = q.requantize_outer_sum(
        np.array(first), np.array(second), multiplier, shift, zero_point, low, high, out, single_rounding=single
    )
    # (declined only where a folded constant would leave int64: a large zero point and shift)
    assert applies or abs(zero_point) << (31 - shift) >= 1 << 62
    assume(applies)
    ref = ref_mbqm_single if single else ref_mbqm_double
    expected = [[min(high, max(low, ref(a + b, multiplier, shift) + zero_point)) for b in second] for a in first]
    assert out.tolist() == expected


def test_requantize_outer_sum_declines_left_shifts_and_sums_beyond_int32():
    out = np.empty((1, 1), np.int8)
    assert not q.requantize_outer_sum(np.array([1]), np.array([1]), 1 << 30, 1, 0, -128, 127, out)
    assert not q.requantize_outer_sum(np.array([1 << 30]), np.array([1 << 30]), 1 << 30, -1, 0, -128, 127, out)


def test_multiply_by_quantized_multiplier_defaults_to_the_module_scheme():
    x = np.arange(-300, 300)
    np.testing.assert_array_equal(
        q.multiply_by_quantized_multiplier(x, 1 << 30, -4),
        q.multiply_by_quantized_multiplier(x, 1 << 30, -4, single_rounding=q.SINGLE_ROUNDING),
    )


@SETTINGS
@given(values=st.lists(st.floats(-1e9, 1e9, allow_nan=False, width=32), min_size=1, max_size=8))
def test_round_half_away_is_c_round(values):
    for dtype in (np.float32, np.float64):
        array = np.array(values, dtype)
        got = q.round_half_away(array)
        assert got.dtype == dtype
        assert got.tolist() == [float(c_round(float(v))) for v in array]


def test_round_half_away_on_halves_and_the_largest_double_below_one_half():
    values = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994])
    assert q.round_half_away(values).tolist() == [1, -1, 2, -2, 3, -3, 0, 0]


def test_round_half_away_keeps_inf_and_nan_and_writes_into_out():
    values = np.array([np.inf, -np.inf, np.nan, 2.5, -7.5, 0.49999997], np.float32)
    out = np.empty_like(values)
    got = q.round_half_away(values, out=out, scratch=np.empty_like(values))
    assert got is out
    np.testing.assert_array_equal(out, np.array([np.inf, -np.inf, np.nan, 3, -8, 0], np.float32))
    in_place = values.copy()
    q.round_half_away(in_place, out=in_place)
    np.testing.assert_array_equal(in_place, out)


ACTIVATIONS = [
    ActivationFunctionType.NONE,
    ActivationFunctionType.RELU,
    ActivationFunctionType.RELU6,
    ActivationFunctionType.RELU_N1_TO_1,
]


@SETTINGS
@given(
    activation=st.sampled_from(ACTIVATIONS),
    scale=st.floats(float(np.float32(1e-4)), 1.0, width=32),
    dtype=st.sampled_from([np.int8, np.uint8, np.int16]),
    data=st.data(),
)
def test_activation_range_quantized_matches_tflite(activation, scale, dtype, data):
    info = np.iinfo(dtype)
    zero_point = data.draw(st.integers(int(info.min), int(info.max)))
    got = q.activation_range_quantized(activation, scale, zero_point, dtype)
    assert got == ref_activation_range(activation, scale, zero_point, int(info.min), int(info.max))


def test_activation_range_quantized_divides_in_float32():
    # float32(2.4) = 2.4000000953...: 6 / s is 2.49999990... in double but rounds to 2.5
    # in float32, and TFLite computes ``f / scale`` in float: the bound is 3, not 2.
    scale = float(np.float32(2.4))
    assert c_round(6.0 / scale) == 2
    assert q.activation_range_quantized(ActivationFunctionType.RELU6, scale, 0, np.int8) == (0, 3)


def test_is_quantized_and_exact_float_dtype():
    assert q.exact_float_dtype((1 << 24) - 1) == np.float32
    assert q.exact_float_dtype(1 << 24) == np.float64
    assert q.exact_float_dtype(1 << 53) is None
    assert not q.is_quantized(None)
