"""STABLEHLO_ADD, MULTIPLY, MAXIMUM, MINIMUM, AND and SHIFT_LEFT (v1) against ai-edge-litert:
every type LiteRT takes, edge values (integer wrap-around, NaN, signed zeros, bool), and the
errors. ADD, MULTIPLY, MAXIMUM and MINIMUM against the reference kernels (BUILTIN_REF); AND
and SHIFT_LEFT against LiteRT's default kernels, which its reference resolver lacks."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_invokes_match_litert, assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator as B

ARITHMETIC = [B.STABLEHLO_ADD, B.STABLEHLO_MULTIPLY, B.STABLEHLO_MAXIMUM, B.STABLEHLO_MINIMUM]
FLOATS = [np.float16, np.float32, np.float64]
INTEGERS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
SHAPE = (3, 17)


def model(op, dtype, shape=SHAPE):
    return single_op_model(op, [In(shape, dtype), In(shape, dtype)], Out(shape, dtype))


def operands(dtype, seed=0) -> list[np.ndarray]:
    """Two arrays of ``SHAPE``: random values, and the type's edge values in the first
    row of each (extremes that wrap; for floats NaN, +-inf and signed zeros, in both orders)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        a, b = rng.integers(0, 2, (2, *SHAPE)).astype(bool)
        return [a, b]
    if dtype.kind == "f":
        a, b = rng.uniform(-100, 100, (2, *SHAPE)).astype(dtype)
        edges = np.array([np.nan, 1.0, np.nan, -0.0, 0.0, np.inf, -np.inf, np.inf, 3.0, -0.0], dtype)
        partners = np.array([1.0, np.nan, np.nan, 0.0, -0.0, -np.inf, 2.0, np.inf, -0.0, -0.0], dtype)
    else:
        info = np.iinfo(dtype)
        a, b = rng.integers(info.min, info.max, (2, *SHAPE), endpoint=True, dtype=dtype)
        edges = np.array([info.max, info.min, info.max, info.min, 0, 1, info.max], dtype)
        partners = np.array([1, info.max, info.max, info.min, info.max, info.min, 2], dtype)
    a[0, : len(edges)], b[0, : len(partners)] = edges, partners
    return [a, b]


def assert_matches_litert_default_kernels(op_model, inputs):
    assert_invokes_match_litert(op_model, [inputs], resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS + [np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ARITHMETIC, ids=lambda op: op.name)
def test_arithmetic_op_of_each_type_matches_litert_reference(op, dtype):
    op_model = model(op, dtype)
    assert stamped_version(op_model) == 1
    ours = assert_matches_litert(op_model, operands(dtype), rtol=0, atol=0)  # bit for bit: one operation
    if dtype in (np.int8, np.uint8):
        assert ours[0].dtype == np.dtype(dtype)


def test_maximum_and_minimum_keep_the_first_operand_with_a_nan_as_std_max_and_min_do():
    a = np.array([np.nan, 1.0, -0.0, 0.0], np.float32)
    b = np.array([1.0, np.nan, 0.0, -0.0], np.float32)
    for op in (B.STABLEHLO_MAXIMUM, B.STABLEHLO_MINIMUM):
        ours = assert_matches_litert(model(op, np.float32, (4,)), [a, b], rtol=0, atol=0)
        np.testing.assert_array_equal(ours[0], a)  # (signed zeros too: a < b and b < a are both false)
        assert np.signbit(ours[0]).tolist() == [False, False, True, False]


@pytest.mark.parametrize("dtype", INTEGERS + [np.bool_], ids=lambda d: np.dtype(d).name)
def test_and_of_each_type_matches_litert_default_kernels(dtype):
    op_model = model(B.STABLEHLO_AND, dtype)
    assert stamped_version(op_model) == 1
    assert_matches_litert_default_kernels(op_model, operands(dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32], ids=lambda d: np.dtype(d).name)
def test_shift_left_by_counts_within_the_width_matches_litert_default_kernels(dtype):
    bits = np.dtype(dtype).itemsize * 8
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, SHAPE, endpoint=True, dtype=dtype)
    counts = rng.integers(0, bits, SHAPE).astype(dtype)
    counts[0, :4] = [0, bits - 1, 1, bits - 1]
    values[0, :4] = [info.min, -1, info.max, 1]
    op_model = model(B.STABLEHLO_SHIFT_LEFT, dtype)
    assert stamped_version(op_model) == 1
    assert_matches_litert_default_kernels(op_model, [values, counts])


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32], ids=lambda d: np.dtype(d).name)
def test_shift_left_by_a_count_outside_the_width_gives_0_as_stablehlo_defines(dtype):
    # C++'s << is undefined there; LiteRT's results depend on the element's position.
    bits = np.dtype(dtype).itemsize * 8
    counts = np.array([bits, bits + 1, 40, 127 if bits == 8 else 1000, -1, -bits], dtype)
    values = np.array([1, -1, 7, 3, 5, 1], dtype)
    interpreter = Interpreter(model_content=model(B.STABLEHLO_SHIFT_LEFT, dtype, (6,)))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], values)
    interpreter.set_tensor(interpreter.get_input_details()[1]["index"], counts)
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), 0)


def refused(op_model, pattern: str) -> None:
    with pytest.raises(KernelError, match=pattern):
        Interpreter(model_content=op_model).allocate_tensors()


def test_inputs_of_two_shapes_are_refused_without_broadcasting():
    op_model = single_op_model(B.STABLEHLO_ADD, [In([2, 3]), In([1, 3])], Out([2, 3]))
    refused(op_model, r"node 0 \(STABLEHLO_ADD v1\).*shapes \[2, 3\] and \[1, 3\]; StableHLO ops take one shape")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_and_of_floats_is_refused_as_litert_does(dtype):
    refused(model(B.STABLEHLO_AND, dtype), r"STABLEHLO_AND v1: input 1 'x0' has type FLOAT")


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.float32], ids=lambda d: np.dtype(d).name)
def test_shift_left_of_other_types_is_refused_as_litert_does(dtype):
    refused(model(B.STABLEHLO_SHIFT_LEFT, dtype), r"STABLEHLO_SHIFT_LEFT v1: input 1 'x0' has type .*supports INT8, INT16, INT32")


def test_inputs_of_two_types_are_refused():
    op_model = single_op_model(B.STABLEHLO_MULTIPLY, [In([3], np.int32), In([3], np.int64)], Out([3], np.int32))
    refused(op_model, r"STABLEHLO_MULTIPLY v1: input 2 'x1' has type INT64; this kernel supports INT32")


def test_an_output_of_another_type_is_refused():
    op_model = single_op_model(B.STABLEHLO_MAXIMUM, [In([3]), In([3])], Out([3], np.float64))
    refused(op_model, r"STABLEHLO_MAXIMUM v1: output 'y0' has type FLOAT64; this kernel supports FLOAT32")
