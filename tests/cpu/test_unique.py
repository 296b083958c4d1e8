"""UNIQUE against ai-edge-litert (BUILTIN_REF): every input type, both index types."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_matches_litert, litert_interpreter, run_interpreter, run_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType
from schema.params import UniqueParams

VALUE_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.float32, np.uint8]
INDEX_TYPES = {np.int32: TensorType.INT32, np.int64: TensorType.INT64}


def unique_model(length, dtype=np.float32, index_dtype=np.int32, index_type=None) -> bytes:
    """main(x) = UNIQUE(x) -> (values [dynamic], idx [length])."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [length], dtype)
    values = graph.add_tensor("values", [1], dtype, shape_signature=[-1])
    idx = graph.add_tensor("idx", [length], index_dtype)
    params = UniqueParams(idx_out_type=index_type if index_type is not None else INDEX_TYPES[index_dtype])
    graph.add_operator(B.UNIQUE, [x], [values, idx], params)
    graph.add_output(values)
    graph.add_output(idx)
    builder.add_signature("serving_default", graph)
    return builder.build()


def repeated(length, dtype, seed=0):
    """A few distinct values, each repeated, in random order."""
    rng = np.random.default_rng(seed)
    levels = np.array([7, 1, 30, 4, 0, 12], np.int64)
    if np.dtype(dtype).kind in "if":
        levels = levels - 5
    return levels[rng.integers(0, len(levels), size=length)].astype(dtype)


@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=["int32_idx", "int64_idx"])
def test_unique_matches_litert(dtype, index_dtype):
    model = unique_model(20, dtype, index_dtype)
    assert stamped_version(model) == 1
    values, idx = assert_matches_litert(model, [repeated(20, dtype)])
    assert idx.dtype == index_dtype


def test_unique_keeps_the_order_of_first_appearance_as_litert():
    values, idx = assert_matches_litert(unique_model(7), [np.array([5, 2, 5, -1, 2, 9, -1], np.float32)])
    assert values.tolist() == [5, 2, -1, 9]
    assert idx.tolist() == [0, 1, 0, 2, 1, 3, 2]


def test_unique_output_shape_follows_the_data_as_litert():
    model = unique_model(12, np.int32)
    theirs, ours = litert_interpreter(model), Interpreter(model_content=model)
    for x in (repeated(12, np.int32, seed=1), np.zeros(12, np.int32), np.arange(12, dtype=np.int32)):
        expected, got = run_interpreter(theirs, [x]), run_interpreter(ours, [x])
        assert got[0].shape == expected[0].shape
        assert [tuple(d["shape"]) for d in ours.get_output_details()] == [
            tuple(d["shape"]) for d in theirs.get_output_details()
        ]


def test_unique_treats_minus_zero_and_zero_as_one_value_kept_as_first_seen_as_litert():
    values, _ = assert_matches_litert(unique_model(5), [np.array([1.0, -0.0, 0.0, 2.0, -0.0], np.float32)])
    assert np.signbit(values[1])


@pytest.mark.parametrize(
    "x",
    [
        [3, np.nan, 1, np.nan, 0.5, np.nan, 7, -0.0, 0.0, np.nan],  # a NaN maps to the smallest value before it
        [np.nan, 1, 2, np.nan, 3],  # a NaN first becomes the only value
        [2, -0.0, 0.0, 1, -5, np.nan, -0.0],
    ],
    ids=["nan_later", "nan_first", "nan_after_signed_zeros"],
)
def test_unique_with_nan_gives_litert_map_lookups(x):
    x = np.array(x, np.float32)
    assert_matches_litert(unique_model(len(x)), [x])


def test_unique_of_an_empty_vector_has_litert_shapes():
    """(LiteRT's get_tensor refuses its empty dynamic output: the shapes are compared.)"""
    model = unique_model(0)
    theirs, ours = litert_interpreter(model), Interpreter(model_content=model)
    for interpreter in (theirs, ours):
        interpreter.allocate_tensors()
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.zeros(0, np.float32))
        interpreter.invoke()
    values, idx = (ours.get_tensor(d["index"]) for d in ours.get_output_details())
    assert values.shape == idx.shape == (0,)
    assert [tuple(d["shape"]) for d in ours.get_output_details()] == [
        tuple(d["shape"]) for d in theirs.get_output_details()
    ]


def test_unique_reads_an_idx_out_type_other_than_int64_as_int32_as_litert():
    model = unique_model(6, index_dtype=np.int32, index_type=TensorType.INT16)
    assert_matches_litert(model, [repeated(6, np.float32)])


def test_unique_of_uint16_is_refused_as_in_litert():
    model = unique_model(4, np.uint16)
    with pytest.raises(RuntimeError, match="Unique doesn't support type: UINT16"):
        run_litert(model, [np.zeros(4, np.uint16)])
    with pytest.raises(KernelError, match="UNIQUE v1: input 'x' has type UINT16"):
        Interpreter(model_content=model).allocate_tensors()


def test_unique_of_a_matrix_is_refused_as_in_litert():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3])
    values = graph.add_tensor("values", [1], shape_signature=[-1])
    idx = graph.add_tensor("idx", [2, 3], np.int32)
    graph.add_operator(B.UNIQUE, [x], [values, idx], UniqueParams())
    graph.add_output(values)
    graph.add_output(idx)
    model = builder.build()
    with pytest.raises(RuntimeError):
        run_litert(model, [np.zeros((2, 3), np.float32)])
    with pytest.raises(KernelError, match=r"UNIQUE v1: the input must be a vector, it has shape \[2, 3\]"):
        Interpreter(model_content=model).allocate_tensors()
