"""ONE_HOT against ai-edge-litert (BUILTIN_REF): every output type, both index types,
each axis, indices outside [0, depth), and a depth known only at run time."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_matches_litert

from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.params import OneHotParams

B = BuiltinOperator


def one_hot_model(shape, depth, axis=-1, index_type=np.int32, dtype=np.float32, on=3, off=-1, depth_is_input=False):
    builder = ModelBuilder()
    graph = builder.subgraph()
    indices = graph.add_input("indices", shape, index_type)
    if depth_is_input:
        d = graph.add_input("depth", [], np.int32)
    else:
        d = graph.add_constant("depth", np.array(depth, np.int32))
    on_value = graph.add_constant("on", np.array(on, dtype))
    off_value = graph.add_constant("off", np.array(off, dtype))
    rank = len(shape) + 1
    where = rank - 1 if axis == -1 else axis
    out_shape = list(shape[:where]) + [depth] + list(shape[where:])
    out = graph.add_tensor("out", out_shape, dtype)
    graph.add_operator(B.ONE_HOT, [indices, d, on_value, off_value], [out], OneHotParams(axis=axis))
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


def indices(shape, depth, index_type=np.int32, seed=0):
    """Indices from -1 to depth + 1: some outside [0, depth), which give rows of off values."""
    return np.random.default_rng(seed).integers(-1, depth + 2, size=shape).astype(index_type)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.int8, np.uint8, np.bool_])
def test_one_hot_of_each_output_type_matches_litert(dtype):
    on, off = (True, False) if dtype == np.bool_ else (3, 1)
    model = one_hot_model([6], 5, dtype=dtype, on=on, off=off)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [indices([6], 5)])


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("shape, axis", [([4], 0), ([4], -1), ([2, 3], 0), ([2, 3], 1), ([2, 3], -1), ([2, 1, 3], 2)])
def test_one_hot_along_each_axis_matches_litert(shape, axis, index_type):
    assert_matches_litert(one_hot_model(shape, 4, axis, index_type), [indices(shape, 4, index_type, seed=1)])


def test_one_hot_refuses_int16_outputs_which_litert_fails_to_compute():
    model = one_hot_model([3], 4, dtype=np.int16)
    with pytest.raises(Exception, match="ONE_HOT v1: output 'out' has type INT16"):
        Interpreter(model_content=model).allocate_tensors()


def test_one_hot_of_depth_zero_matches_litert():
    assert_matches_litert(one_hot_model([3], 0), [indices([3], 1)])


def test_one_hot_with_a_depth_given_at_run_time_matches_litert():
    model = one_hot_model([5], 4, depth_is_input=True)
    assert_matches_litert(model, [indices([5], 4), np.array(4, np.int32)])


def test_one_hot_refuses_an_axis_other_than_minus_one_below_zero():
    model = one_hot_model([3], 4, axis=-2)
    with pytest.raises(Exception, match=r"ONE_HOT v1: axis -2 is out of range .*-1 means the last"):
        Interpreter(model_content=model).allocate_tensors()


def test_one_hot_refuses_on_and_off_values_of_another_type_than_the_output():
    builder = ModelBuilder()
    graph = builder.subgraph()
    i = graph.add_input("indices", [3], np.int32)
    d = graph.add_constant("depth", np.array(4, np.int32))
    on = graph.add_constant("on", np.array(1, np.int32))
    off = graph.add_constant("off", np.array(0, np.int32))
    out = graph.add_tensor("out", [3, 4], np.float32)
    graph.add_operator(B.ONE_HOT, [i, d, on, off], [out], OneHotParams(axis=-1))
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    with pytest.raises(Exception, match="on_value 'on' has type INT32; this kernel supports FLOAT32"):
        Interpreter(model_content=builder.build()).allocate_tensors()
