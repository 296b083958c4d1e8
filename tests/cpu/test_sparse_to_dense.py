"""SPARSE_TO_DENSE against ai-edge-litert (BUILTIN_REF): each version's value types, 0-D
to 2-D indices (int32 and int64), scalar and per-index values, repeated indices (the last
wins), an output shape given at run time (a dynamic output with LiteRT's shape), and
indices outside the output refused (LiteRT writes out of bounds there)."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, assert_outputs_equal, litert_interpreter, run_interpreter

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator

B = BuiltinOperator


def sparse_model(index_shape, shape, value_shape, dtype=np.float32, index_type=np.int32, default=-1, shape_at_run_time=False):
    shape_spec = In([len(shape)], index_type) if shape_at_run_time else Const(np.array(shape, index_type))
    inputs = [In(index_shape, index_type), shape_spec, In(value_shape, dtype), Const(np.array(default, dtype))]
    return single_op_model(B.SPARSE_TO_DENSE, inputs, Out([1] * len(shape) if shape_at_run_time else shape, dtype))


@pytest.mark.parametrize("dtype, version", [
    (np.float32, 1), (np.int32, 1), (np.int64, 2), (np.int8, 3), (np.uint8, 3),
])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_each_version_matches_litert(dtype, version, index_type):
    model = sparse_model([3, 2], [3, 4], [3], dtype, index_type, default=9)
    assert stamped_version(model) == version
    indices = np.array([[0, 1], [2, 3], [1, 0]], index_type)
    assert_matches_litert(model, [indices, np.array([5, 6, 7], dtype)])


@pytest.mark.parametrize("index_shape, shape, value_shape, indices", [
    ([], [5], [], np.array(2)),
    ([3], [6], [3], np.array([0, 5, 2])),
    ([3], [6], [], np.array([4, 1, 3])),
    ([2, 1], [4], [2], np.array([[3], [0]])),
    ([4, 3], [2, 3, 4], [4], np.array([[0, 0, 0], [1, 2, 3], [0, 1, 2], [1, 0, 3]])),
    ([2, 4], [2, 1, 3, 2], [], np.array([[1, 0, 2, 1], [0, 0, 0, 0]])),
    ([0, 2], [2, 2], [0], np.zeros([0, 2])),
])
def test_each_index_and_value_layout_matches_litert(index_shape, shape, value_shape, indices):
    model = sparse_model(index_shape, shape, value_shape)
    values = np.arange(1, 1 + int(np.prod(value_shape)), dtype=np.float32).reshape(value_shape)
    assert_matches_litert(model, [indices.astype(np.int32), values])


def test_a_repeated_index_keeps_its_last_value_like_litert():
    model = sparse_model([4, 2], [3, 4], [4])
    indices = np.array([[1, 1], [2, 3], [1, 1], [2, 3]], np.int32)
    ours = assert_matches_litert(model, [indices, np.array([5, 6, 7, 8], np.float32)])
    assert ours[0][1, 1] == 7 and ours[0][2, 3] == 8


def test_an_output_shape_given_at_run_time_gives_litert_s_output_and_shape():
    model = sparse_model([3], [1], [3], np.int8, np.int64, shape_at_run_time=True)
    ours, theirs = Interpreter(model_content=model), litert_interpreter(model)
    for size in (6, 9):
        inputs = [np.array([0, 4, 2], np.int64), np.array([size], np.int64), np.array([5, 6, 7], np.int8)]
        assert_outputs_equal(run_interpreter(ours, inputs), run_interpreter(theirs, inputs))
        assert list(ours.get_output_details()[0]["shape"]) == list(theirs.get_output_details()[0]["shape"]) == [size]


@pytest.mark.parametrize("index", [[0, 4], [3, 0], [-1, 2]])
def test_an_index_outside_the_output_is_a_clear_error(index):
    model = sparse_model([1, 2], [3, 4], [1])
    with pytest.raises(KernelError, match=r"SPARSE_TO_DENSE v1\) failed: ValueError: SPARSE_TO_DENSE: index -?\d+ is out of range"):
        run_interpreter(Interpreter(model_content=model), [np.array([index], np.int32), np.ones([1], np.float32)])


def test_more_than_4_dimensions_are_refused_as_litert_refuses_them():
    with pytest.raises(KernelError, match=r"SPARSE_TO_DENSE v1: indices \[1, 5\] give 5-D positions; .* at most 4"):
        Interpreter(model_content=sparse_model([1, 5], [1, 1, 1, 1, 2], [1])).allocate_tensors()


def test_values_of_another_count_than_the_indices_are_refused():
    with pytest.raises(KernelError, match="SPARSE_TO_DENSE v1: values has 2 elements for 3 indices"):
        Interpreter(model_content=sparse_model([3], [5], [2])).allocate_tensors()


def test_sparse_to_dense_refuses_bool_values():
    with pytest.raises(KernelError, match="SPARSE_TO_DENSE v1: values 'x2' has type BOOL"):
        Interpreter(model_content=sparse_model([2], [3], [2], np.bool_, default=False)).allocate_tensors()
