"""SHAPE, RANK, FILL, RANGE, WHERE against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreter import Interpreter
from oracle import assert_matches_litert, run_ours
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType
from schema.params import ShapeParams
from test_reshape import In, assert_fails_clearly, assert_matches_litert_builtin, single_op, values, version_of

# -- SHAPE / RANK -------------------------------------------------------------------------


@pytest.mark.parametrize("out_type, dtype", [(TensorType.INT32, np.int32), (TensorType.INT64, np.int64)])
def test_shape_with_each_out_type_matches_litert(out_type, dtype):
    m = single_op(B.SHAPE, [In([2, 3, 4])], [([3], dtype)], ShapeParams(out_type=out_type))
    assert version_of(m) == 1
    assert assert_matches_litert(m, [values([2, 3, 4])])[0].tolist() == [2, 3, 4]


def test_shape_follows_a_resized_input_matches_litert():
    m = single_op(B.SHAPE, [In([2, 3])], [([2], np.int32)], ShapeParams(out_type=TensorType.INT32))
    assert assert_matches_litert(m, [values([5, 1])])[0].tolist() == [5, 1]


def test_shape_is_a_constant_after_allocate():
    """As in TFLite, SHAPE is computed at prepare, so shape chains fold."""
    m = single_op(B.SHAPE, [In([2, 3])], [([2], np.int32)], ShapeParams(out_type=TensorType.INT32))
    interpreter = Interpreter(model_content=m)
    interpreter.allocate_tensors()
    output = interpreter.get_output_details()[0]["index"]
    assert interpreter.get_tensor(output).tolist() == [2, 3]


def test_shape_of_a_dynamic_tensor_is_computed_at_invoke_matches_litert():
    builder = ModelBuilder()
    g = builder.subgraph()
    x, s = g.add_input("x", [12]), g.add_input("s", [2], np.int32)
    mid, shape = g.add_tensor("mid", [1]), g.add_tensor("shape", [2], np.int32)
    g.add_operator(B.RESHAPE, [x, s], [mid])
    g.add_operator(B.SHAPE, [mid], [shape], ShapeParams(out_type=TensorType.INT32))
    g.add_output(shape)
    builder.add_signature("serving_default", g)
    m = builder.build()
    for new_shape in ([3, 4], [6, 2]):
        assert assert_matches_litert(m, [values([12]), np.array(new_shape, np.int32)])[0].tolist() == new_shape


def test_shape_with_float_out_type_fails_clearly():
    m = single_op(B.SHAPE, [In([2, 3])], [([2], np.float32)], ShapeParams(out_type=TensorType.FLOAT32))
    assert_fails_clearly(m, "SHAPE", match="not int32 or int64")


@pytest.mark.parametrize("shape", [[], [3], [2, 3, 4, 1]])
def test_rank_matches_litert(shape):
    m = single_op(B.RANK, [In(shape)], [([], np.int32)])
    assert version_of(m) == 1
    assert assert_matches_litert(m, [values(shape)])[0] == len(shape)


# -- FILL ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.bool_, 2), (np.int8, 3), (np.int16, 3), (np.float16, 4)],
)
def test_fill_of_each_type_matches_litert(dtype, version):
    m = single_op(B.FILL, [np.array([2, 3], np.int32), In([], dtype)], [([2, 3], dtype)])
    assert version_of(m) == version
    # LiteRT's BUILTIN_REF resolver stops at FILL v3; fill.cc has a single kernel.
    check = assert_matches_litert if version <= 3 else assert_matches_litert_builtin
    check(m, [values([], dtype)])


@pytest.mark.parametrize("dims_dtype", [np.int32, np.int64])
def test_fill_with_dims_as_model_input_is_dynamic_and_matches_litert(dims_dtype):
    m = single_op(B.FILL, [In([3], dims_dtype), In([], np.float32)], [([1, 1, 1], np.float32)])
    for dims in ([1, 2, 3], [4, 1, 2]):
        assert_matches_litert(m, [np.array(dims, dims_dtype), np.array(2.5, np.float32)])


def test_fill_of_int8_with_matching_quantization_matches_litert():
    q = quantization(0.5, -2)
    m = single_op(B.FILL, [np.array([3], np.int32), In([], np.int8, q)], [([3], np.int8, q)])
    assert_matches_litert(m, [np.array(-9, np.int8)])


def test_fill_of_int8_with_different_output_quantization_fails_clearly():
    m = single_op(B.FILL, [np.array([3], np.int32), In([], np.int8, quantization(0.5, -2))],
                  [([3], np.int8, quantization(0.5, 0))])
    assert_fails_clearly(m, "FILL", match="requires them equal")


def test_fill_with_negative_dims_fails_clearly():
    m = single_op(B.FILL, [np.array([2, -1], np.int32), In([], np.float32)], [([1], np.float32)])
    assert_fails_clearly(m, "FILL", match="must not be negative")


# -- RANGE --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, start, limit, delta, version",
    [
        (np.int32, 0, 10, 3, 1),
        (np.int32, 10, -3, -4, 1),
        (np.int64, -5, 5, 2, 2),
        (np.float32, 0.0, 1.0, 0.1, 1),  # accumulated float32 steps, as TFLite
        (np.float32, 3.5, -2.0, -0.7, 1),
    ],
)
def test_range_of_constants_matches_litert(dtype, start, limit, delta, version):
    m = single_op(B.RANGE, [np.array(start, dtype), np.array(limit, dtype), np.array(delta, dtype)], [([1], dtype)])
    assert version_of(m) == version
    # LiteRT's BUILTIN_REF resolver has only RANGE v1; range.cc has a single kernel.
    (assert_matches_litert if version == 1 else assert_matches_litert_builtin)(m, [])


def test_range_from_start_to_itself_is_empty():
    """(LiteRT's Python get_tensor cannot return an empty output: "Invalid tensor size".)"""
    m = single_op(B.RANGE, [np.array(1.0, np.float32), np.array(1.0, np.float32), np.array(0.5, np.float32)],
                  [([1], np.float32)])
    assert run_ours(m, [])[0].shape == (0,)


def test_range_with_model_inputs_is_dynamic_and_matches_litert():
    m = single_op(B.RANGE, [In([], np.float32), In([], np.float32), In([], np.float32)], [([1], np.float32)])
    for start, limit, delta in ((0.0, 2.0, 0.25), (5.0, 1.0, -1.5)):
        assert_matches_litert(m, [np.array(v, np.float32) for v in (start, limit, delta)])


def test_range_with_a_delta_going_the_wrong_way_fails_clearly():
    m = single_op(B.RANGE, [In([], np.int32), np.array(5, np.int32), np.array(-1, np.int32)], [([1], np.int32)])
    assert_fails_clearly(m, "RANGE", inputs=[np.array(0, np.int32)], match="does not lead from start")


@settings(max_examples=30, deadline=None)
@given(start=st.integers(-20, 20), limit=st.integers(-20, 20), delta=st.integers(-5, 5).filter(bool))
def test_range_property_matches_litert(start, limit, delta):
    if (limit - start) * delta < 0 or start == limit:
        return
    m = single_op(B.RANGE, [In([], np.int32), In([], np.int32), In([], np.int32)], [([1], np.int32)])
    assert_matches_litert(m, [np.array(v, np.int32) for v in (start, limit, delta)])


# -- WHERE --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version",
    [(np.bool_, 1), (np.float32, 2), (np.int32, 2), (np.int64, 2), (np.int8, 2), (np.uint8, 2), (np.uint32, 2)],
)
def test_where_of_each_condition_type_matches_litert(dtype, version):
    m = single_op(B.WHERE, [In([3, 4], dtype)], [([1, 2], np.int64)])
    assert version_of(m) == version
    condition = (np.random.default_rng(0).integers(0, 3, size=[3, 4]) == 0).astype(dtype)
    assert_matches_litert(m, [condition])


@pytest.mark.parametrize("shape", [[5], [2, 3, 2]])
def test_where_of_varying_conditions_matches_litert(shape):
    m = single_op(B.WHERE, [In(shape, np.bool_)], [([1, len(shape)], np.int64)])
    for seed in range(3):
        assert_matches_litert(m, [np.random.default_rng(seed).integers(0, 2, size=shape).astype(bool)])


def test_where_of_a_constant_condition_is_folded_matches_litert():
    m = single_op(B.WHERE, [np.array([[True, False], [False, True]])], [([2, 2], np.int64)])
    assert assert_matches_litert(m, [])[0].tolist() == [[0, 0], [1, 1]]


def test_where_of_a_scalar_fails_clearly():
    m = single_op(B.WHERE, [In([], np.bool_)], [([1, 0], np.int64)])
    assert_fails_clearly(m, "WHERE", match="rank > 0")
