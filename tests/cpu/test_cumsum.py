"""CUMSUM against ai-edge-litert."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_helpers import stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.params import CumsumParams

B = BuiltinOperator


def cumsum_model(shape, axis, exclusive=False, reverse=False, dtype=np.float32, axis_is_input=False, axis_shape=(1,)):
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape, dtype)
    if axis_is_input:
        a = graph.add_input("axis", list(axis_shape), np.int32)
    else:
        a = graph.add_constant("axis", np.full(axis_shape, axis, np.int32))
    y = graph.add_tensor("y", shape, dtype)
    graph.add_operator(B.CUMSUM, [x, a], [y], CumsumParams(exclusive=exclusive, reverse=reverse))
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()



def uniform(shape, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(np.float32)


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_float_cumsum_matches_litert(axis, exclusive, reverse):
    model = cumsum_model([3, 4, 5], axis, exclusive, reverse)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [uniform([3, 4, 5])])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("exclusive, reverse", [(False, False), (True, False), (False, True), (True, True)])
def test_integer_cumsum_matches_litert_exactly(dtype, exclusive, reverse):
    x = np.random.default_rng(1).integers(-100, 100, size=[4, 6]).astype(dtype)
    assert_matches_litert(cumsum_model([4, 6], 1, exclusive, reverse, dtype=dtype), [x])


def test_int32_cumsum_wraps_around_like_litert():
    x = np.full([10], 2**30, np.int32)
    assert_matches_litert(cumsum_model([10], 0, dtype=np.int32), [x])


@pytest.mark.parametrize("exclusive, reverse", [(False, False), (True, True)])
def test_cumsum_of_a_single_element_axis(exclusive, reverse):
    assert_matches_litert(cumsum_model([3, 1], 1, exclusive, reverse), [uniform([3, 1], seed=2)])


def test_cumsum_over_a_non_constant_axis_matches_litert():
    model = cumsum_model([3, 4, 5], 0, exclusive=True, axis_is_input=True)
    for axis in (0, 2, -2):
        assert_matches_litert(model, [uniform([3, 4, 5], seed=3), np.array([axis], np.int32)])


def test_scalar_axis_tensor_matches_litert():
    assert_matches_litert(cumsum_model([4, 3], -1, reverse=True, axis_shape=()), [uniform([4, 3], seed=4)])


def test_cumsum_of_an_empty_input_is_empty():
    assert_matches_litert(cumsum_model([0, 3], 1), [np.zeros([0, 3], np.float32)])


def test_long_float_cumsum_accumulates_sequentially_like_litert():
    assert_matches_litert(cumsum_model([2, 4000], 1), [uniform([2, 4000], seed=5)])


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    axis_choice=st.integers(0, 7),
    exclusive=st.booleans(),
    reverse=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_cumsum_property_matches_litert(shape, axis_choice, exclusive, reverse, seed):
    rank = len(shape)
    axis = axis_choice % (2 * rank) - rank
    assert_matches_litert(cumsum_model(shape, axis, exclusive, reverse), [uniform(shape, seed)])


def test_int8_cumsum_is_refused_with_the_op_name():
    with pytest.raises(KernelError, match="CUMSUM v1.*INT8"):
        Interpreter(model_content=cumsum_model([2, 3], 1, dtype=np.int8)).allocate_tensors()


def test_out_of_range_axis_is_refused_with_the_op_name():
    with pytest.raises(KernelError, match="CUMSUM.*axis 2 is out of range"):
        Interpreter(model_content=cumsum_model([2, 3], 2)).allocate_tensors()
