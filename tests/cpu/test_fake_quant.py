"""FAKE_QUANT against ai-edge-litert (BUILTIN_REF), bit for bit: TFLite's nudged range
(zero exactly representable), rounding of halves away from zero, values outside the
range and NaN, each bit width; narrow_range (version 2) refused as LiteRT refuses it."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from backends.cpu.kernels.fake_quant import nudged_range
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator
from schema.params import FakeQuantParams

B = BuiltinOperator


def fake_quant_model(low, high, num_bits=8, shape=(4, 25), narrow_range=False, version=None):
    params = FakeQuantParams(min=low, max=high, num_bits=num_bits, narrow_range=narrow_range)
    return single_op_model(B.FAKE_QUANT, [In(shape)], Out(shape), params, version=version)


def spread(low, high, shape=(4, 25), seed=0):
    """Values from below ``low`` to above ``high``."""
    margin = (high - low) * 0.25
    return np.random.default_rng(seed).uniform(low - margin, high + margin, shape).astype(np.float32)


@pytest.mark.parametrize("low, high", [(-1.0, 1.0), (0.0, 6.0), (-6.0, 0.0), (-0.3, 2.7), (-123.4, 5.678), (0.5, 3.0)])
def test_fake_quant_matches_litert_bit_for_bit(low, high):
    model = fake_quant_model(low, high)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [spread(low, high)], rtol=0, atol=0)


@pytest.mark.parametrize("num_bits", [2, 4, 7, 8, 12, 16])
def test_fake_quant_of_each_bit_width_matches_litert_bit_for_bit(num_bits):
    assert_matches_litert(fake_quant_model(-2.5, 1.75, num_bits), [spread(-2.5, 1.75, seed=num_bits)], rtol=0, atol=0)


def test_fake_quant_rounds_halfway_values_away_from_zero_like_litert():
    nudged_min, _, scale = nudged_range(-1.0, 1.0, 8)
    halves = (nudged_min + (np.arange(100, dtype=np.float32) + np.float32(0.5)) * scale).astype(np.float32)
    assert_matches_litert(fake_quant_model(-1.0, 1.0, shape=(100,)), [halves], rtol=0, atol=0)


def test_fake_quant_of_nan_and_infinities_matches_litert():
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30], np.float32)
    ours = assert_matches_litert(fake_quant_model(-1.0, 2.0, shape=(6,)), [x], rtol=0, atol=0)
    assert ours[0][0] == nudged_range(-1.0, 2.0, 8)[0]  # NaN clamps to nudged_min, as std::max does


def test_the_nudged_range_holds_zero_exactly():
    nudged_min, nudged_max, scale = nudged_range(-0.3, 2.7, 8)
    assert nudged_min <= 0 <= nudged_max
    assert float(-nudged_min / scale) == round(float(-nudged_min / scale))


def test_version_2_without_narrow_range_runs_like_litert():
    model = fake_quant_model(-1.0, 1.0, version=2)
    assert stamped_version(model) == 2
    assert_matches_litert(model, [spread(-1.0, 1.0)], rtol=0, atol=0)


def test_narrow_range_is_refused_as_litert_refuses_it():
    model = fake_quant_model(-1.0, 1.0, narrow_range=True)
    assert stamped_version(model) == 2
    with pytest.raises(KernelError, match="FAKE_QUANT v2: narrow_range is not supported"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("low, high, num_bits, message", [
    (1.0, 1.0, 8, "min 1.0 must be below max 1.0"),
    (-1.0, 1.0, 0, "num_bits is 0; it must be in 2..16"),
    (-1.0, 1.0, 17, "num_bits is 17"),
])
def test_fake_quant_refuses_a_range_it_cannot_nudge(low, high, num_bits, message):
    with pytest.raises(KernelError, match=f"FAKE_QUANT v1: {message}"):
        Interpreter(model_content=fake_quant_model(low, high, num_bits)).allocate_tensors()
