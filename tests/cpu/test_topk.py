"""TOPK_V2 against ai-edge-litert (BUILTIN_REF), every registered version and type, with ties."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_matches_litert, litert_interpreter, run_interpreter, run_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B

VALUE_DTYPES = [np.float32, np.uint8, np.int8, np.int16, np.int32, np.int64]
#: The version the converter stamps for each input type (TFLite's op_version.cc).
VERSION_OF = {np.float32: 1, np.uint8: 1, np.int32: 1, np.int64: 1, np.int8: 2, np.int16: 3}


def topk_model(shape, k, dtype=np.float32, index_dtype=np.int32, k_dtype=np.int32, k_is_input=False) -> bytes:
    """main(x[, k]) = TOPK_V2(x, k) -> (values, indices)."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(shape), dtype)
    if k_is_input:
        k_tensor = graph.add_input("k", [], k_dtype)
    else:
        k_tensor = graph.add_constant("k", np.array(k, k_dtype))
    out_shape = [*shape[:-1], max(k, 0)]
    values = graph.add_tensor("values", out_shape, dtype)
    indices = graph.add_tensor("indices", out_shape, index_dtype)
    graph.add_operator(B.TOPK_V2, [x, k_tensor], [values, indices])
    graph.add_output(values)
    graph.add_output(indices)
    builder.add_signature("serving_default", graph)
    return builder.build()


def with_ties(shape, dtype, seed=0):
    """Values drawn from a few levels, so every row has ties (including across the k-th place)."""
    rng = np.random.default_rng(seed)
    levels = np.array([-3, -1, 0, 2, 5], np.int64)
    if np.dtype(dtype).kind == "u":
        levels = levels + 3
    return levels[rng.integers(0, len(levels), size=shape)].astype(dtype)


@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int16], ids=["int32_indices", "int16_indices"])
def test_topk_with_ties_matches_litert(dtype, index_dtype):
    model = topk_model([4, 9], 4, dtype, index_dtype)
    assert stamped_version(model) == (3 if index_dtype == np.int16 else VERSION_OF[dtype])
    ours = assert_matches_litert(model, [with_ties([4, 9], dtype)])
    assert ours[1].dtype == index_dtype


def test_topk_keeps_the_lower_index_first_among_equal_values_as_litert():
    x = np.array([[1, 3, 3, 2, 3, 1]], np.float32)
    values, indices = assert_matches_litert(topk_model([1, 6], 4), [x])
    assert indices.tolist() == [[1, 2, 4, 3]]


def test_topk_treats_minus_zero_as_zero_as_litert():
    x = np.array([[0.0, -0.0, 1.0, -0.0, 0.0]], np.float32)
    assert_matches_litert(topk_model([1, 5], 3), [x])


def test_topk_of_extreme_integers_matches_litert():
    """The order does not negate values (the smallest int8 would overflow)."""
    x = np.array([[-128, 127, -128, 0, 127, -1]], np.int8)
    assert_matches_litert(topk_model([1, 6], 6, np.int8), [x])


@pytest.mark.parametrize("shape, k", [([7], 3), ([2, 3, 8], 8), ([2, 1, 5], 1)], ids=str)
def test_topk_of_other_ranks_matches_litert(shape, k):
    assert_matches_litert(topk_model(shape, k), [with_ties(shape, np.float32, seed=2)])


def test_topk_of_random_floats_matches_litert():
    x = np.random.default_rng(3).standard_normal((16, 100)).astype(np.float32)
    assert_matches_litert(topk_model([16, 100], 10), [x])


@pytest.mark.parametrize("k", [0, -2])
def test_topk_with_k_not_positive_gives_empty_rows_as_litert(k):
    values, indices = assert_matches_litert(topk_model([3, 4], k), [with_ties([3, 4], np.float32)])
    assert values.shape == indices.shape == (3, 0)


def test_topk_with_int16_k_is_version_3_and_matches_litert():
    model = topk_model([3, 6], 2, k_dtype=np.int16)
    assert stamped_version(model) == 3
    assert_matches_litert(model, [with_ties([3, 6], np.float32)])


@pytest.mark.parametrize("k_dtype", [np.int32, np.int16])
def test_topk_with_k_as_input_has_dynamic_outputs_of_litert_shape(k_dtype):
    model = topk_model([3, 6], 1, k_dtype=k_dtype, k_is_input=True)
    x = with_ties([3, 6], np.float32, seed=4)
    for k in (1, 4, 6):
        ours = assert_matches_litert(model, [x, np.array(k, k_dtype)])
        assert ours[0].shape == (3, k)


def test_topk_dynamic_output_details_give_litert_shapes_after_invoke():
    model = topk_model([3, 6], 1, k_is_input=True)
    inputs = [with_ties([3, 6], np.float32), np.array(5, np.int32)]
    theirs = litert_interpreter(model)
    ours = Interpreter(model_content=model)
    run_interpreter(theirs, inputs)
    run_interpreter(ours, inputs)
    shapes = [tuple(d["shape"]) for d in ours.get_output_details()]
    assert shapes == [tuple(d["shape"]) for d in theirs.get_output_details()] == [(3, 5), (3, 5)]


def test_topk_with_k_larger_than_the_row_fails_as_in_litert():
    model = topk_model([2, 3], 4)
    with pytest.raises(RuntimeError):
        run_litert(model, [with_ties([2, 3], np.float32)])
    with pytest.raises(KernelError, match="TOPK_V2.*k 4 is larger than the last dimension"):
        Interpreter(model_content=model).allocate_tensors()


def test_topk_with_int64_indices_is_refused_as_in_litert():
    model = topk_model([2, 3], 2, index_dtype=np.int64)
    with pytest.raises(RuntimeError):
        run_litert(model, [with_ties([2, 3], np.float32)])
    with pytest.raises(KernelError, match="TOPK_V2 v1: indices output 'indices' has type INT64"):
        Interpreter(model_content=model).allocate_tensors()
