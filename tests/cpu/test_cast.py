"""Parity of CAST and ZEROS_LIKE (backends/cpu/kernels/cast.py) with LiteRT."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import assert_matches_litert
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType as T

# Every float that a cast can treat specially: NaN, +-inf, signed zero, halves, values
# just outside each integer range, and beyond int64.
FLOAT_VALUES = [
    np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.9, -1.9, 127.6, -128.7, 255.5, 256.0, -129.0,
    32767.9, -32769.0, 65535.9, 70000.2, 2.2e9, -2.2e9, 4.3e9, 1e19, -1e19, 3e38,
]
V1_TYPES = [np.float32, np.int32, np.int64, np.int16, np.uint8, np.bool_, np.complex64]


def name(dtype) -> str:
    return np.dtype(dtype).name


def cast_model(source, target) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [len(FLOAT_VALUES)], source)
    y = graph.add_tensor("y", [len(FLOAT_VALUES)], target)
    graph.add_operator(B.CAST, [x], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()



def values_of(dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    count = len(FLOAT_VALUES)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            return np.array(FLOAT_VALUES, np.float64).astype(dtype)
    if dtype.kind == "c":
        real = np.array(FLOAT_VALUES, np.float32)
        imag = np.where(np.arange(count) % 2 == 0, 0.0, 1.5).astype(np.float32)  # real 0 with imag 1.5 included
        return (real + 1j * imag).astype(dtype)
    if dtype == np.bool_:
        return np.arange(count) % 3 == 0
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    edges = [0, 1, -1, 127, -128, 128, 255, 256, 32767, -32768, 65535, 65536, info.max, info.min]
    edges = [v for v in edges if info.min <= v <= info.max]
    rest = rng.integers(info.min, info.max, size=count - len(edges), dtype=dtype, endpoint=True)
    return np.concatenate([np.array(edges, dtype), rest])


def expected_cast_version(source, target) -> int:
    kinds = {np.dtype(source), np.dtype(target)}
    for version, types in ((5, (np.float64, np.float16)), (4, (np.uint16,)), (3, (np.int8,)), (2, (np.uint32,))):
        if kinds & {np.dtype(t) for t in types}:
            return version
    return 1


V1_PAIRS = [(s, t) for s, t in itertools.product(V1_TYPES, V1_TYPES) if s != t]
LATER_TYPES = [np.uint32, np.int8, np.uint16, np.float64, np.float16]
LATER_PAIRS = [
    *[(s, t) for s in LATER_TYPES for t in (np.float32, np.int32, np.bool_)],
    *[(s, t) for s in (np.float32, np.int32, np.int64, np.complex64) for t in LATER_TYPES],
    (np.float64, np.int64), (np.float16, np.uint8), (np.float64, np.float16), (np.uint16, np.int8),
]


@pytest.mark.parametrize("source, target", V1_PAIRS + LATER_PAIRS, ids=[f"{name(s)}-to-{name(t)}" for s, t in V1_PAIRS + LATER_PAIRS])
def test_cast_matches_litert(source, target):
    model = cast_model(source, target)
    assert stamped_version(model) == expected_cast_version(source, target)
    assert_matches_litert(model, [values_of(source)])


def test_float_to_int_cast_saturates_and_maps_nan_to_max_like_litert():
    model = cast_model(np.float32, np.int32)
    ours = assert_matches_litert(model, [values_of(np.float32)])
    np.testing.assert_array_equal(ours[0][:3], [2**31 - 1, 2**31 - 1, -(2**31)])


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64], ids=name)
def test_zeros_like_v1_matches_litert(dtype):
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3], dtype)
    zeros = graph.add_tensor("zeros", [2, 3], dtype)
    graph.add_operator(B.ZEROS_LIKE, [x], [zeros])
    # Add the input back so that the zeros are not left over from a previous invoke.
    y = graph.add_tensor("y", [2, 3], dtype)
    graph.add_operator(B.ADD, [zeros, x], [y])
    graph.add_output(zeros)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    model = builder.build()
    assert stamped_version(model) == 1
    assert_matches_litert(model)


# -- nodes outside what the kernels implement fail clearly ---------------------------------


def test_zeros_like_bool_fails_naming_the_op():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [3], np.bool_)
    y = graph.add_tensor("y", [3], np.bool_)
    graph.add_operator(B.ZEROS_LIKE, [x], [y])
    graph.add_output(y)
    with pytest.raises(KernelError, match="ZEROS_LIKE v1.*BOOL"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_cast_to_string_fails_naming_the_op():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [3], np.float32)
    y = graph.add_tensor("y", [3], T.STRING)
    graph.add_operator(B.CAST, [x], [y])
    graph.add_output(y)
    with pytest.raises(KernelError, match="CAST v1.*STRING"):
        Interpreter(model_content=builder.build()).allocate_tensors()
