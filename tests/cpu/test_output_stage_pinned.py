"""The convolutions' own output stages are pinned, bit for bit, to ``quantization.py``.

The int8 CONV_2D / DEPTHWISE_CONV_2D / TRANSPOSE_CONV kernels do not call
``backends.cpu.quantization.multiply_by_quantized_multiplier`` at invoke: they run the
same arithmetic in place (``ConvQuantization.requantize``: int64 or int32 passes, or
exact float64) or as exact float64 on buffers bound at allocation
(``FloatOutputStage``). The integer math is written once, in ``quantization.py``
(TFLite's ``MultiplyByQuantizedMultiplier``, checked against LiteRT elsewhere); these
tests require every faster stage to give its bits over the edge cases: accumulators
at INT32_MIN / INT32_MAX and at the largest bound a stage accepts, every right shift
0..31 and left shift 1..30, exact ties (.5) at both roundings, negatives, several
output zero points and clamps, int8 and uint8 outputs, small and large arrays (the
integer clamp of ``FloatOutputStage`` starts at ``INTEGER_CLAMP_MIN`` values). A stage
that cannot be exact for some case must refuse it (``make`` returns None) rather than
round differently. Changing the rounding in ``quantization.py`` alone fails here.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import quantization
from backends.cpu.kernels._quantized_window import INTEGER_CLAMP_MIN, ConvQuantization, FloatOutputStage

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

#: Multipliers as ``quantize_multiplier`` makes them (in [2**30, 2**31)): the smallest
#: (every odd accumulator a tie of the first rounding), the largest, and two between.
MULTIPLIERS = [1 << 30, INT32_MAX, 1518500250, 1 << 30 | 12345]

#: (output zero point, clamp low, clamp high, output dtype): the general path (low <
#: z_out: the rounding step applies) and the fast one (low >= z_out: RELU, RELU6,
#: a zero point at the type's minimum), signed and unsigned.
OUTPUTS = [
    (3, -128, 127, np.int8),
    (-10, -128, 20, np.int8),
    (-128, -128, 127, np.int8),
    (5, 5, 127, np.int8),
    (128, 0, 255, np.uint8),
    (0, 0, 255, np.uint8),
]


def reference(acc: np.ndarray, multipliers, shifts, zero_point: int, low: int, high: int, dtype) -> np.ndarray:
    """``clamp(MultiplyByQuantizedMultiplier(acc, m, s) + z_out)``: the shared arithmetic."""
    scaled = quantization.multiply_by_quantized_multiplier(acc, np.asarray(multipliers), np.asarray(shifts))
    return np.clip(np.asarray(scaled, np.int64) + zero_point, low, high).astype(dtype)


def edge_accumulators(right: int, bound: int, rows: int = 1200, seed: int = 0) -> np.ndarray:
    """Accumulators in [-bound, bound] (int64, one column): 0, +-1, +-bound, +-(bound-1),
    every value near 0, both signs of the ties of the second rounding (odd multiples of
    2**(right-1) and their neighbours, times 2: the first rounding's ties for m = 2**30),
    and random values."""
    rng = np.random.default_rng(seed)
    values = [0, 1, -1, bound, -bound, bound - 1, -(bound - 1)]
    values += list(range(-64, 65))
    for k in range(1, 40):
        tie = (2 * k + 1) << right  # acc * 2**30 / 2**31 = tie / 2 = an odd multiple of 2**(right-1)
        values += [tie, tie - 1, tie + 1, -tie, -tie + 1, -tie - 1]
    values = [v for v in values if -bound <= v <= bound]
    values += rng.integers(-bound, bound + 1, max(0, rows - len(values))).tolist()
    return np.array(values[:rows], np.int64)


def largest_float_bound(multipliers, right: int, zero_point: int, dtype, floors: bool) -> int:
    """The largest accumulator bound ``FloatOutputStage.make`` can accept (0: none): with
    ``z_out`` and the type's base inside ``t`` (``floors=False``), or on the path that
    floors ``t`` first (large right shifts)."""
    base = -int(np.iinfo(dtype).min)
    rest = 2 if floors else abs(zero_point) + base + 2
    room = (1 << 53) - (1 << 31) - (rest << (31 + right)) - 1
    return max(0, min(INT32_MAX, room // (2 * max(multipliers))))


def stage_of(multipliers, shifts, zero_point, low, high, bound) -> ConvQuantization:
    stage = ConvQuantization(multipliers, shifts, 0, zero_point, low, high, wide=False)
    stage.accumulator_bound = bound
    return stage


def columns(right: int, bound: int, channels: int) -> np.ndarray:
    return np.stack([edge_accumulators(right, bound, seed=c) for c in range(channels)], axis=1)


@pytest.mark.parametrize("right", range(32), ids=lambda r: f"right{r}")
@pytest.mark.parametrize("zero_point, low, high, dtype", OUTPUTS, ids=lambda v: str(v) if not isinstance(v, type) else v.__name__)
def test_the_float64_stage_equals_multiply_by_quantized_multiplier_or_refuses(right, zero_point, low, high, dtype):
    """``FloatOutputStage`` (what the bound kernels run): equal bits wherever ``make``
    accepts; where the float64 sums could round (large bounds, shifts), it refuses."""
    multipliers, shifts = MULTIPLIERS, [-right] * len(MULTIPLIERS)
    largest = largest_float_bound(multipliers, right, zero_point, dtype, floors=True)
    refused = stage_of(multipliers, shifts, zero_point, low, high, largest + 1)
    assert FloatOutputStage.make(refused, np.zeros(len(multipliers), np.int64), np.empty((4, len(multipliers)), dtype)) is None
    with_base = largest_float_bound(multipliers, right, zero_point, dtype, floors=False)
    for bound in sorted({with_base, with_base + 1, largest}):
        if bound == 0 or bound > largest:
            continue
        check_float_stage(multipliers, shifts, right, zero_point, low, high, dtype, bound, floors=bound > with_base)


def check_float_stage(multipliers, shifts, right, zero_point, low, high, dtype, bound, floors) -> None:
    offset = np.array([0, 7, -(bound // 3), bound // 5], np.int64)
    acc = columns(right, bound, len(multipliers))
    sums = acc - offset  # so that sums + offset = acc, every |acc| <= bound
    stage = stage_of(multipliers, shifts, zero_point, low, high, bound)
    want = reference(acc, multipliers, shifts, zero_point, low, high, dtype)
    for rows in (len(acc), 8):  # integer clamp (>= INTEGER_CLAMP_MIN values) and float clamp
        assert (rows * len(multipliers) >= INTEGER_CLAMP_MIN) == (rows == len(acc))
        for sums_type in (np.float64, np.float32):
            if sums_type == np.float32 and np.abs(sums).max() >= (1 << 24):
                continue  # (float32 sums hold exact integers only below 2**24)
            out = np.zeros((rows, len(multipliers)), dtype)
            float_stage = FloatOutputStage.make(stage, offset, out)
            assert float_stage is not None and float_stage.floors is floors
            fixed_sums = np.ascontiguousarray(sums[:rows], sums_type)
            float_stage.from_sums(fixed_sums)()
            np.testing.assert_array_equal(
                out, want[:rows], err_msg=f"bound {bound}, floors {floors}, {sums_type.__name__} sums, {rows} rows"
            )


@pytest.mark.parametrize("shift", [*range(-31, 0), 0, *range(1, 31)], ids=lambda s: f"shift{s}")
@pytest.mark.parametrize("bound_kind", ["none", "exact", "int32-extremes"])
def test_the_in_place_stage_equals_multiply_by_quantized_multiplier(shift, bound_kind):
    """``ConvQuantization.requantize`` (the prepare-time path, and every node the float64
    stage refuses) for every shift, its int64, int32-tail and float64 passes included,
    down to INT32_MIN."""
    multipliers, shifts = MULTIPLIERS, [shift] * len(MULTIPLIERS)
    right = max(0, -shift)
    if bound_kind == "int32-extremes":
        bound = INT32_MAX
    else:
        bound = (1 << 20) if shift <= 0 else (1 << 8)
    acc = columns(right, bound, len(multipliers))
    if bound_kind == "int32-extremes":
        acc[0] = INT32_MIN
        acc[1] = INT32_MAX
    offset = np.array([0, 3, -5, 11], np.int64)
    for zero_point, low, high, dtype in OUTPUTS:
        stage = stage_of(multipliers, shifts, zero_point, low, high, None if bound_kind == "none" else int(np.abs(acc).max()))
        out = np.zeros(acc.shape, dtype)
        stage.requantize((acc - offset).astype(np.float64), offset, out)
        want = reference(acc, multipliers, shifts, zero_point, low, high, dtype)
        np.testing.assert_array_equal(out, want, err_msg=f"z_out {zero_point}, [{low}, {high}] {dtype.__name__}")


@pytest.mark.parametrize("single_rounding", [False, True], ids=["double", "single"])
def test_a_rounding_scheme_the_float64_stage_does_not_implement_is_refused(monkeypatch, single_rounding):
    """``TFLITE_SINGLE_ROUNDING``: the float64 stage refuses it (the in-place stage and
    the shared function then give the single-rounding bits)."""
    monkeypatch.setattr(quantization, "SINGLE_ROUNDING", single_rounding)
    stage = stage_of(MULTIPLIERS, [-5] * 4, 3, -128, 127, 1 << 16)
    made = FloatOutputStage.make(stage, np.zeros(4, np.int64), np.empty((4, 4), np.int8))
    assert (made is None) is single_rounding
    acc = columns(5, 1 << 16, 4)
    out = np.zeros(acc.shape, np.int8)
    stage.requantize(acc.astype(np.float64), np.zeros(4, np.int64), out)
    np.testing.assert_array_equal(out, reference(acc, MULTIPLIERS, [-5] * 4, 3, -128, 127, np.int8))
