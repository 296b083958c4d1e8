"""ATAN2 against ai-edge-litert (BUILTIN_REF): float32 and float64 bit for bit (both call
the C library's atan2), float16 through float32; signed zeros, infinities and NaN."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator

B = BuiltinOperator

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-38, -3e38])


def atan2_model(shape, dtype=np.float32, x_shape=None):
    return single_op_model(B.ATAN2, [In(shape, dtype), In(x_shape or shape, dtype)], Out(shape, dtype))


def special_pairs(dtype):
    """Every pair of the special values: y and x of shape [81]."""
    y, x = np.meshgrid(SPECIAL, SPECIAL)
    with np.errstate(over="ignore"):
        return y.reshape(-1).astype(dtype), x.reshape(-1).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atan2_is_bit_exact_with_litert(dtype):
    model = atan2_model([3, 50], dtype)
    assert stamped_version(model) == 1
    rng = np.random.default_rng(0)
    y, x = (rng.normal(0, 10, [3, 50]).astype(dtype) for _ in range(2))
    assert_matches_litert(model, [y, x], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_atan2_of_zeros_infinities_and_nan_is_bit_exact_with_litert(dtype):
    y, x = special_pairs(dtype)
    ours = assert_matches_litert(atan2_model([y.size], dtype), [y, x], rtol=0, atol=0)
    np.testing.assert_array_equal(np.signbit(ours[0]), np.signbit(np.arctan2(y, x)))


def test_float16_atan2_is_bit_exact_with_litert():
    rng = np.random.default_rng(1)
    y, x = (rng.uniform(-4, 4, [64]).astype(np.float16) for _ in range(2))
    assert_matches_litert(atan2_model([64], np.float16), [y, x], rtol=0, atol=0)


def test_atan2_refuses_integer_inputs():
    with pytest.raises(KernelError, match="ATAN2 v1: input y 'x0' has type INT32"):
        Interpreter(model_content=atan2_model([3], np.int32)).allocate_tensors()


def test_atan2_refuses_x_of_another_size_which_litert_would_read_past():
    with pytest.raises(KernelError, match=r"ATAN2 v1: y \[2, 3\] and x \[2, 2\] must have the same rank and number"):
        Interpreter(model_content=atan2_model([2, 3], x_shape=[2, 2])).allocate_tensors()
