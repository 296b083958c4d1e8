"""MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL against ai-edge-litert."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_helpers import stamped_version
from oracle import MODELS_DIR, assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.params import ReducerParams

B = BuiltinOperator
NUMERIC_OPS = [B.MEAN, B.SUM, B.REDUCE_PROD, B.REDUCE_MAX, B.REDUCE_MIN]


def expected_shape(shape, axes, keep_dims):
    rank = len(shape)
    resolved = {a + rank if a < 0 else a for a in axes} if rank else set()
    if keep_dims:
        return [1 if i in resolved else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in resolved]


def reduce_model(op, shape, axes, keep_dims=False, dtype=np.float32, axis_is_input=False, version=None):
    """One reduction node; the axis is a constant, or a model input when ``axis_is_input``."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape, dtype)
    axes = np.asarray(axes, dtype=np.int32).reshape(-1)
    if axis_is_input:
        axis = graph.add_input("axis", [axes.size], np.int32)
    else:
        axis = graph.add_constant("axis", axes)
    y = graph.add_tensor("y", expected_shape(shape, axes.tolist(), keep_dims), dtype)
    graph.add_operator(op, [x, axis], [y], ReducerParams(keep_dims=keep_dims), version=version)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()



def uniform(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


# -- float32 -----------------------------------------------------------------------------------

AXIS_CASES = [
    pytest.param([1, 2], True, id="hw_keep_dims"),  # TFLite's special 4-D mean path
    pytest.param([1, 2], False, id="hw"),
    pytest.param([3], False, id="last_axis"),
    pytest.param([0], True, id="first_axis_keep_dims"),
    pytest.param([-1, -3], False, id="negative_axes"),
    pytest.param([2, -2, 2], True, id="duplicate_axes"),
    pytest.param([0, 1, 2, 3], False, id="all_axes"),
    pytest.param([3, 0, 2, 1], True, id="all_axes_unordered_keep_dims"),
    pytest.param([], False, id="no_axes"),
]


@pytest.mark.parametrize("op", NUMERIC_OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("axes, keep_dims", AXIS_CASES)
def test_float_reduction_over_constant_axes_matches_litert(op, axes, keep_dims):
    model = reduce_model(op, [2, 5, 4, 3], axes, keep_dims)
    assert stamped_version(model) == 1
    low = 0.5 if op == B.REDUCE_PROD else -2.0  # keep products away from underflow
    assert_matches_litert(model, [uniform([2, 5, 4, 3], low=low, high=1.5 if op == B.REDUCE_PROD else 2.0)])


@pytest.mark.parametrize("op", NUMERIC_OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("axes, keep_dims", [([1, -1], False), ([0, 1, 2], True), ([], False)])
def test_float_reduction_over_a_non_constant_axis_tensor_matches_litert(op, axes, keep_dims):
    model = reduce_model(op, [3, 4, 5], axes, keep_dims, axis_is_input=True)
    x = uniform([3, 4, 5], seed=1, low=0.5 if op == B.REDUCE_PROD else -2.0)
    assert_matches_litert(model, [x, np.array(axes, np.int32)])


def test_dynamic_axis_output_shape_follows_the_axis_values_between_invokes():
    model = reduce_model(B.SUM, [3, 4, 5], [0], axis_is_input=True)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    x = uniform([3, 4, 5], seed=2)
    (x_detail, axis_detail), (y_detail,) = interpreter.get_input_details(), interpreter.get_output_details()
    for axes in ([0], [2, 1], [-1]):
        interpreter.resize_tensor_input(axis_detail["index"], [len(axes)])
        interpreter.allocate_tensors()
        interpreter.set_tensor(x_detail["index"], x)
        interpreter.set_tensor(axis_detail["index"], np.array(axes, np.int32))
        interpreter.invoke()
        got = interpreter.get_tensor(y_detail["index"])
        np.testing.assert_allclose(got, x.sum(axis=tuple(axes)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", NUMERIC_OPS, ids=lambda op: op.name)
def test_float_reduction_of_a_scalar_copies_it(op):
    model = reduce_model(op, [], [0], False)
    assert_matches_litert(model, [np.array(-1.25, np.float32)])


@pytest.mark.parametrize("op", NUMERIC_OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("axes", [[0], [1], [0, 1]], ids=["empty_axis", "other_axis", "all_axes"])
def test_float_reduction_of_an_empty_input_gives_the_initial_value(op, axes):
    # MEAN gives NaN, SUM 0, PROD 1, MAX/MIN the lowest/highest finite float.
    model = reduce_model(op, [0, 3], axes, False)
    assert_matches_litert(model, [np.zeros([0, 3], np.float32)])


@pytest.mark.parametrize("op", [B.REDUCE_MAX, B.REDUCE_MIN], ids=lambda op: op.name)
@pytest.mark.parametrize("axes", [[1], [0, 1], []], ids=["some_axes", "all_axes", "no_axes"])
def test_float_max_min_skip_nan_and_infinities_like_litert(op, axes):
    inf = np.inf
    x = np.array(
        [
            [np.nan, 1.0, -2.0, np.nan],
            [3.0, np.nan, np.nan, -1.0],
            [np.nan, np.nan, np.nan, np.nan],
            [-inf, -inf, -inf, -inf],
            [inf, inf, inf, inf],
        ],
        np.float32,
    )
    assert_matches_litert(reduce_model(op, list(x.shape), axes, False), [x])


@pytest.mark.parametrize("op", [B.REDUCE_MAX, B.REDUCE_MIN], ids=lambda op: op.name)
@pytest.mark.parametrize("first", [np.nan, -np.inf, np.inf], ids=["nan", "-inf", "inf"])
def test_float_max_min_over_all_axes_start_from_the_first_element(op, first):
    x = uniform([3, 4], seed=3)
    x[0, 0] = first
    x[1, 2] = np.nan
    assert_matches_litert(reduce_model(op, [3, 4], [0, 1], True), [x])


def test_float_sum_of_many_elements_matches_litert():
    x = uniform([4, 1000], seed=4, low=0.0, high=1.0)
    assert_matches_litert(reduce_model(B.SUM, [4, 1000], [1], False), [x])


def test_mean_converter_model_matches_litert():
    # Three MEAN nodes (keep_dims over H,W; over H,W; over the last axis). The subgraph's
    # output order differs from its signature's: compare by position (both runtimes agree).
    assert_matches_litert(MODELS_DIR / "converter" / "mean_float32.tflite")


# -- integers and booleans ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", NUMERIC_OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("axes, keep_dims", [([1], False), ([0, 2], True), ([0, 1, 2], False), ([], False)])
def test_integer_reduction_matches_litert_exactly(op, dtype, axes, keep_dims):
    model = reduce_model(op, [3, 4, 5], axes, keep_dims, dtype=dtype)
    assert stamped_version(model) == 1
    rng = np.random.default_rng(5)
    high = 4 if op == B.REDUCE_PROD else 1000
    assert_matches_litert(model, [rng.integers(-high, high, size=[3, 4, 5]).astype(dtype)])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_mean_truncates_toward_zero(dtype):
    x = np.array([[-7, 1, 0], [7, -1, 0], [-5, -5, -5], [2, 2, 3]], dtype)
    assert_matches_litert(reduce_model(B.MEAN, [4, 3], [1], False, dtype=dtype), [x])


@pytest.mark.parametrize("op", [B.SUM, B.REDUCE_PROD], ids=lambda op: op.name)
def test_int32_sum_and_prod_wrap_around_like_litert(op):
    x = np.full([2, 8], 2**30 + 7, np.int32)
    assert_matches_litert(reduce_model(op, [2, 8], [1], False, dtype=np.int32), [x])


def test_int32_mean_sums_in_int64_without_overflow():
    x = np.full([2, 8], 2**30 + 7, np.int32)
    x[1] = -(2**31)
    assert_matches_litert(reduce_model(B.MEAN, [2, 8], [1], False, dtype=np.int32), [x])


@pytest.mark.parametrize("op", [B.REDUCE_ANY, B.REDUCE_ALL, B.REDUCE_MAX, B.REDUCE_MIN], ids=lambda op: op.name)
@pytest.mark.parametrize("axes, keep_dims", [([1], False), ([0, -1], True), ([0, 1, 2], False), ([], False)])
def test_bool_reduction_matches_litert_exactly(op, axes, keep_dims):
    model = reduce_model(op, [3, 4, 5], axes, keep_dims, dtype=np.bool_)
    assert stamped_version(model) == 1
    x = np.random.default_rng(6).random([3, 4, 5]) < 0.3
    x[0] = True  # some all-true and all-false slices
    x[1] = False
    assert_matches_litert(model, [x])


@pytest.mark.parametrize("op", [B.REDUCE_ANY, B.REDUCE_ALL], ids=lambda op: op.name)
def test_any_all_of_an_empty_input_give_false_and_true(op):
    assert_matches_litert(reduce_model(op, [2, 0], [1], False, dtype=np.bool_), [np.zeros([2, 0], np.bool_)])


@pytest.mark.parametrize("op", [B.REDUCE_ANY, B.REDUCE_ALL], ids=lambda op: op.name)
def test_any_all_over_a_non_constant_axis_tensor_match_litert(op):
    x = np.random.default_rng(7).random([3, 4]) < 0.5
    assert_matches_litert(reduce_model(op, [3, 4], [1], True, dtype=np.bool_, axis_is_input=True), [x, np.array([1], np.int32)])


# -- properties --------------------------------------------------------------------------------


@st.composite
def shapes_and_axes(draw):
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    rank = len(shape)
    axes = draw(st.lists(st.integers(-rank, rank - 1), min_size=0, max_size=rank + 1))
    return shape, axes


@settings(max_examples=30, deadline=None)
@given(
    case=shapes_and_axes(),
    keep_dims=st.booleans(),
    op=st.sampled_from([B.MEAN, B.SUM, B.REDUCE_MAX, B.REDUCE_MIN]),
    seed=st.integers(0, 2**16),
)
def test_float_reduction_property_matches_litert(case, keep_dims, op, seed):
    shape, axes = case
    assert_matches_litert(reduce_model(op, shape, axes, keep_dims), [uniform(shape, seed)])


# -- bad nodes ---------------------------------------------------------------------------------


def test_quantized_uint8_mean_is_refused_with_the_op_name():
    model = reduce_model(B.MEAN, [2, 3], [1], False, dtype=np.uint8)
    with pytest.raises(KernelError, match="MEAN.*quantized"):
        Interpreter(model_content=model).allocate_tensors()


def test_float_reduce_any_is_refused_with_the_op_name():
    model = reduce_model(B.REDUCE_ANY, [2, 3], [1], False, dtype=np.float32)
    with pytest.raises(KernelError, match="REDUCE_ANY.*FLOAT32"):
        Interpreter(model_content=model).allocate_tensors()


def test_out_of_range_axis_is_refused_with_the_op_name():
    model = reduce_model(B.SUM, [2, 3], [2], True)
    with pytest.raises(KernelError, match="SUM.*axis 2 is out of range"):
        Interpreter(model_content=model).allocate_tensors()
