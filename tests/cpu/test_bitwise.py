"""BITWISE_XOR and RIGHT_SHIFT against ai-edge-litert (BUILTIN_REF), bit for bit: every
integer type each takes, broadcasting up to 6-D, shift counts outside [0, bits)."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator

B = BuiltinOperator

BIT_TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32]


def bit_model(op, x_shape, y_shape, out_shape, dtype):
    return single_op_model(op, [In(x_shape, dtype), In(y_shape, dtype)], Out(out_shape, dtype))


def full_range(shape, dtype, seed):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, int(info.max) + 1, shape, dtype=np.int64).astype(dtype)


@pytest.mark.parametrize("dtype", BIT_TYPES)
def test_bitwise_xor_of_each_type_matches_litert(dtype):
    model = bit_model(B.BITWISE_XOR, [4, 5], [4, 5], [4, 5], dtype)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [full_range([4, 5], dtype, 0), full_range([4, 5], dtype, 1)])


@pytest.mark.parametrize("dtype", BIT_TYPES)
def test_right_shift_of_each_type_matches_litert(dtype):
    bits = np.dtype(dtype).itemsize * 8
    counts = np.arange(-3, bits + 5).astype(dtype)  # negative ones (signed types) and past the width
    values = full_range([counts.size], dtype, 2)
    model = bit_model(B.RIGHT_SHIFT, [counts.size], [counts.size], [counts.size], dtype)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [values, counts])


@pytest.mark.parametrize("op", [B.BITWISE_XOR, B.RIGHT_SHIFT])
@pytest.mark.parametrize(
    "x_shape, y_shape, out_shape",
    [([2, 3], [1], [2, 3]), ([3, 1], [1, 4], [3, 4]), ([2, 1, 3, 1, 2], [1, 1, 1, 4, 2], [2, 1, 3, 4, 2]),
     ([2, 1, 2, 1, 2, 3], [1, 3, 1, 2, 1, 3], [2, 3, 2, 2, 2, 3]), ([], [2, 2], [2, 2])],
)
def test_broadcasting_bit_ops_match_litert(op, x_shape, y_shape, out_shape):
    x = full_range(x_shape, np.int16, 3)
    y = np.random.default_rng(4).integers(0, 16, y_shape).astype(np.int16)
    assert_matches_litert(bit_model(op, x_shape, y_shape, out_shape, np.int16), [x, y])


@pytest.mark.parametrize("op", [B.BITWISE_XOR, B.RIGHT_SHIFT])
@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_bit_ops_refuse_the_types_litert_refuses(op, dtype):
    with pytest.raises(KernelError, match=f"{op.name} v1: input 1 'x0' has type"):
        Interpreter(model_content=bit_model(op, [2], [2], [2], dtype)).allocate_tensors()


def test_bit_ops_refuse_shapes_that_do_not_broadcast():
    with pytest.raises(KernelError, match=r"node 0 \(BITWISE_XOR v1\).*shapes \[\[2, 3\], \[2\]\] cannot be broadcast"):
        Interpreter(model_content=bit_model(B.BITWISE_XOR, [2, 3], [2], [2, 3], np.int32)).allocate_tensors()
