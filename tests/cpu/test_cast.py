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


# -- bfloat16 (v7), which LiteRT's Python API cannot feed or read: through a chain of casts ---------


def cast_chain_model(source, middle, target, count: int = len(FLOAT_VALUES)) -> bytes:
    """``x (source) -> CAST -> middle -> CAST -> target``."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [count], source)
    m = graph.add_tensor("m", [count], middle)
    y = graph.add_tensor("y", [count], target)
    graph.add_operator(B.CAST, [x], [m])
    graph.add_operator(B.CAST, [m], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


BFLOAT16_PARTNERS = [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                     np.uint32, np.int64, np.bool_, np.complex64]


@pytest.mark.parametrize("source", BFLOAT16_PARTNERS, ids=name)
def test_cast_to_bfloat16_is_v7_and_rounds_to_nearest_even_like_litert(source):
    model = cast_chain_model(source, T.BFLOAT16, np.float32)
    assert stamped_version(model) == 7
    assert_matches_litert(model, [values_of(source)], rtol=0, atol=0)


@pytest.mark.parametrize("target", BFLOAT16_PARTNERS, ids=name)
def test_cast_from_bfloat16_matches_litert(target):
    # float32 -> bfloat16 -> target: values that bfloat16 holds, within every integer range.
    values = np.array([0.0, -0.0, 0.5, -0.5, 1.5, -1.9, 3.0, 7.25, -100.5, 127.0, 255.0, 1000.0], np.float32)
    assert_matches_litert(cast_chain_model(np.float32, T.BFLOAT16, target, len(values)), [values], rtol=0, atol=0)


# -- int4, int2, uint4 (v6, v8): to and from float32 only ------------------------------------------

SUB_BYTE = {T.INT4: (np.int8, [-8, -3, 0, 1, 7]), T.INT2: (np.int8, [-2, -1, 0, 1, 1]),
            T.UINT4: (np.uint8, [0, 1, 9, 14, 15])}


def test_cast_int4_to_float32_is_v6_and_matches_litert():
    dtype, numbers = SUB_BYTE[T.INT4]
    model = cast_model(T.INT4, np.float32)
    assert stamped_version(model) == 6
    assert_matches_litert(model, [np.resize(np.array(numbers, dtype), len(FLOAT_VALUES))])


def test_cast_uint4_to_float32_is_v8_and_matches_litert():
    dtype, numbers = SUB_BYTE[T.UINT4]
    model = cast_model(T.UINT4, np.float32)
    assert stamped_version(model) == 8
    assert_matches_litert(model, [np.resize(np.array(numbers, dtype), len(FLOAT_VALUES))])


def test_cast_of_an_int2_constant_to_float32_is_v8_and_matches_litert():
    # LiteRT's set_tensor refuses INT2 inputs, so the int2 values are a constant (packed in the file).
    dtype, numbers = SUB_BYTE[T.INT2]
    builder = ModelBuilder()
    graph = builder.subgraph()
    c = graph.add_constant("c", np.array(numbers * 3, dtype), dtype=T.INT2)
    y = graph.add_tensor("y", [15], np.float32)
    graph.add_operator(B.CAST, [c], [y])
    graph.add_output(y)
    model = builder.build()
    assert stamped_version(model) == 8
    ours = assert_matches_litert(model, [])
    np.testing.assert_array_equal(ours[0], numbers * 3)


@pytest.mark.parametrize("target", list(SUB_BYTE), ids=lambda t: T(t).name.lower())
def test_cast_float32_to_a_sub_byte_type_clamps_nan_to_max_and_truncates_like_litert(target):
    model = cast_model(np.float32, target)
    assert_matches_litert(model, [values_of(np.float32)])


def test_cast_int4_to_int32_fails_naming_the_op_and_the_one_partner_type():
    with pytest.raises(KernelError, match="CAST v6.*INT4 -> INT32.*float32 only"):
        Interpreter(model_content=_one_cast(T.INT4, np.int32, version=6)).allocate_tensors()


def _one_cast(source, target, version=None) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [3], source)
    y = graph.add_tensor("y", [3], target)
    graph.add_operator(B.CAST, [x], [y], version=version)
    graph.add_output(y)
    return builder.build()
