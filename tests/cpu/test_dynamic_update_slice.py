"""DYNAMIC_UPDATE_SLICE against ai-edge-litert (BUILTIN_REF): each version the rules
stamp (int32 and int64 starts, float16, int16), every other type LiteRT's kernel copies,
quantized int8 bytes unchanged, starts clamped into the operand, empty and whole updates."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import quantization
from schema.enums import BuiltinOperator

B = BuiltinOperator


def dus_model(shape, update_shape, dtype=np.float32, index_type=np.int32, starts=None, q=None):
    start_spec = In([len(shape)], index_type) if starts is None else Const(np.array(starts, index_type))
    return single_op_model(
        B.DYNAMIC_UPDATE_SLICE, [In(shape, dtype, q), In(update_shape, dtype, q), start_spec], Out(shape, dtype, q)
    )


def values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.dtype(dtype).kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    return rng.integers(-100, 100, shape).astype(dtype)


@pytest.mark.parametrize("dtype, index_type, version", [
    (np.float32, np.int32, 1), (np.int32, np.int32, 1), (np.int8, np.int32, 1), (np.bool_, np.int32, 1),
    (np.int64, np.int32, 1), (np.float32, np.int64, 2), (np.float16, np.int32, 3), (np.int16, np.int32, 4),
])
def test_each_version_matches_litert(dtype, index_type, version):
    model = dus_model([4, 5, 3], [2, 3, 3], dtype, index_type)
    assert stamped_version(model) == version
    inputs = [values([4, 5, 3], dtype, 0), values([2, 3, 3], dtype, 1), np.array([1, 2, 0], index_type)]
    assert_matches_litert(model, inputs)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.float64, np.complex64])
def test_other_fixed_size_types_match_litert(dtype):
    model = dus_model([3, 4], [2, 2], dtype, starts=[1, 1])
    assert_matches_litert(model, [values([3, 4], dtype, 2), values([2, 2], dtype, 3)])


def test_quantized_int8_bytes_move_unchanged_like_litert():
    model = dus_model([3, 4], [1, 4], np.int8, starts=[2, 0], q=quantization(0.25, -3))
    assert_matches_litert(model, [values([3, 4], np.int8, 4), values([1, 4], np.int8, 5)])


@pytest.mark.parametrize("starts", [[-5, 0], [3, 9], [100, -100], [2, 2], [0, 0]])
def test_starts_are_clamped_into_the_operand_like_litert(starts):
    model = dus_model([4, 5], [2, 3])
    assert_matches_litert(model, [values([4, 5], np.float32, 6), values([2, 3], np.float32, 7), np.array(starts, np.int32)])


def test_int64_starts_beyond_int32_are_clamped_like_litert():
    model = dus_model([4, 5], [2, 3], index_type=np.int64)
    starts = np.array([2**40, -(2**40)], np.int64)
    assert_matches_litert(model, [values([4, 5], np.float32, 8), values([2, 3], np.float32, 9), starts])


@pytest.mark.parametrize("update_shape", [[4, 5], [0, 5], [4, 0]])
def test_whole_and_empty_updates_match_litert(update_shape):
    model = dus_model([4, 5], update_shape)
    inputs = [values([4, 5], np.float32, 10), values(update_shape, np.float32, 11), np.array([1, 1], np.int32)]
    assert_matches_litert(model, inputs)


def test_a_scalar_operand_matches_litert():
    model = single_op_model(
        B.DYNAMIC_UPDATE_SLICE, [In([]), In([]), Const(np.zeros([0], np.int32))], Out([])
    )
    assert_matches_litert(model, [np.array(1.5, np.float32), np.array(-2.0, np.float32)])


def test_an_update_larger_than_the_operand_is_refused():
    with pytest.raises(KernelError, match=r"DYNAMIC_UPDATE_SLICE v1: update 'x1' of shape \[2, 6\] must .* fit in its shape \[4, 5\]"):
        Interpreter(model_content=dus_model([4, 5], [2, 6])).allocate_tensors()


def test_start_indices_of_the_wrong_length_are_refused():
    model = single_op_model(B.DYNAMIC_UPDATE_SLICE, [In([4, 5]), In([2, 2]), In([3], np.int32)], Out([4, 5]))
    with pytest.raises(KernelError, match=r"DYNAMIC_UPDATE_SLICE v1: start_indices 'x2' has shape \[3\]; it must be 1-D with one start per operand axis \(2\)"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("version", [5, 6])
def test_versions_5_and_6_run_float32_too_as_litert_s_kernel_does(version):
    # v5 adds int4, v6 bfloat16 (tests/cpu/test_layout_types.py); the kernel takes every type
    # at every version, as LiteRT's does.
    model = single_op_model(
        B.DYNAMIC_UPDATE_SLICE, [In([4, 3]), In([2, 3]), Const(np.array([1, 0], np.int32))], Out([4, 3]), version=version
    )
    assert_matches_litert(model)
