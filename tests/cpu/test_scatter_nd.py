"""SCATTER_ND against ai-edge-litert (BUILTIN_REF): every update type, index depths from
scalars to whole slices, repeated indices summed in order, a shape given at run time (a
dynamic output with LiteRT's shape), and indices outside the output refused."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, litert_interpreter, run_interpreter

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator

B = BuiltinOperator


def scatter_model(index_shape, update_shape, shape, dtype=np.float32, shape_at_run_time=False):
    shape_spec = In([len(shape)], np.int32) if shape_at_run_time else Const(np.array(shape, np.int32))
    out = Out([1] * len(shape) if shape_at_run_time else shape, dtype)
    return single_op_model(B.SCATTER_ND, [In(index_shape, np.int32), In(update_shape, dtype), shape_spec], out)


def updates(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.dtype(dtype).kind == "f":
        return rng.normal(size=shape).astype(dtype)
    return rng.integers(-100, 100, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.int32, np.int64, np.bool_])
def test_scatter_nd_of_each_type_with_repeated_indices_matches_litert(dtype):
    model = scatter_model([5, 1], [5, 3], [4, 3], dtype)
    assert stamped_version(model) == 1
    indices = np.array([[1], [3], [1], [0], [1]], np.int32)
    assert_matches_litert(model, [indices, updates([5, 3], dtype)])


@pytest.mark.parametrize("index_shape, update_shape, shape", [
    ([4, 2], [4], [3, 5]),            # single elements
    ([2, 3, 2], [2, 3, 6], [4, 5, 6]),  # rows of a 3-D output, indices with two outer axes
    ([3, 3], [3], [2, 3, 4]),         # full-depth tuples
    ([2, 0], [2, 3, 2], [3, 2]),      # depth 0: each update is the whole output
    ([0, 1], [0, 4], [3, 4]),         # no updates
])
def test_scatter_nd_of_each_index_depth_matches_litert(index_shape, update_shape, shape):
    depth = index_shape[-1]
    rng = np.random.default_rng(1)
    indices = np.zeros(index_shape, np.int32)
    for k in range(depth):
        indices[..., k] = rng.integers(0, shape[k], index_shape[:-1])
    assert_matches_litert(scatter_model(index_shape, update_shape, shape), [indices, updates(update_shape, np.float32, 2)])


def test_repeated_float_updates_sum_in_order_like_litert():
    indices = np.zeros([64, 1], np.int32)
    values = np.random.default_rng(3).normal(0, 1e4, [64, 1]).astype(np.float32)
    assert_matches_litert(scatter_model([64, 1], [64, 1], [2, 1]), [indices, values], rtol=0, atol=0)


def test_int32_updates_wrap_like_litert():
    indices = np.zeros([3, 1], np.int32)
    values = np.full([3], 2**30, np.int32)
    assert_matches_litert(scatter_model([3, 1], [3], [2], np.int32), [indices, values])


def test_a_shape_given_at_run_time_gives_litert_s_output_and_shape():
    model = scatter_model([2, 1], [2, 3], [4, 3], shape_at_run_time=True)
    inputs = [np.array([[0], [2]], np.int32), updates([2, 3], np.float32, 4), np.array([4, 3], np.int32)]
    ours, theirs = Interpreter(model_content=model), litert_interpreter(model)
    expected, got = run_interpreter(theirs, inputs), run_interpreter(ours, inputs)
    np.testing.assert_array_equal(got[0], expected[0])
    assert list(ours.get_output_details()[0]["shape"]) == list(theirs.get_output_details()[0]["shape"]) == [4, 3]


@pytest.mark.parametrize("index", [[0, 5], [1, -1], [3, 0], [-1, 2]])
def test_an_index_outside_its_axis_is_refused_at_invoke_as_litert_refuses_it(index):
    model = scatter_model([1, 2], [1], [3, 4])
    with pytest.raises(RuntimeError, match="index out of bounds"):
        run_interpreter(litert_interpreter(model), [np.array([index], np.int32), np.ones([1], np.float32)])
    with pytest.raises(KernelError, match=r"node 0 \(SCATTER_ND v1\) failed: ValueError: SCATTER_ND: index -?\d+ is out of range \[0, [34]\) for axis [01]"):
        run_interpreter(Interpreter(model_content=model), [np.array([index], np.int32), np.ones([1], np.float32)])


def test_updates_of_the_wrong_shape_are_refused():
    with pytest.raises(KernelError, match=r"SCATTER_ND v1: updates \[2, 4\] do not fit .* must have shape .* = \[2, 3\]"):
        Interpreter(model_content=scatter_model([2, 1], [2, 4], [5, 3])).allocate_tensors()


@pytest.mark.parametrize("dtype", [np.int16, np.float16])
def test_scatter_nd_refuses_the_update_types_litert_refuses(dtype):
    with pytest.raises(KernelError, match="SCATTER_ND v1: updates 'x1' has type"):
        Interpreter(model_content=scatter_model([2, 1], [2], [3], dtype)).allocate_tensors()
