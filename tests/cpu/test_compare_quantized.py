"""Parity of the quantized comparisons and ARG_MAX / ARG_MIN on int8
(backends/cpu/kernels/compare_quantized.py) with LiteRT's reference kernels, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import assert_matches_litert
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType
from schema.params import ArgMaxParams, ArgMinParams

COMPARISONS = [B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL, B.EQUAL, B.NOT_EQUAL]
INT16_VERSION = {B.LESS: 3, B.GREATER_EQUAL: 3, B.EQUAL: 5, B.NOT_EQUAL: 4, B.LESS_EQUAL: 1, B.GREATER: 1}


def comparison_model(op, shapes, dtype, params1, params2) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shapes[0], dtype, quantization=quantization(*params1))
    y = graph.add_input("y", shapes[1], dtype, quantization=quantization(*params2))
    out = graph.add_tensor("out", list(np.broadcast_shapes(*[tuple(s) for s in shapes])), np.bool_)
    graph.add_operator(op, [x, y], [out])
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()



def values(shape, dtype, rng, low=None, high=None) -> np.ndarray:
    info = np.iinfo(dtype)
    low = int(info.min) if low is None else low
    high = int(info.max) if high is None else high
    return rng.integers(low, high + 1, size=shape).astype(dtype)


def equal_real_values_case(dtype):
    """Inputs whose real values coincide often: input 2 has twice input 1's scale, so each
    even offset of input 1 has an exact twin (exercises ==, <=, >= on ties)."""
    rng = np.random.default_rng(0)
    z1, z2 = (0, 0) if dtype == np.int16 else (10, -3) if dtype == np.int8 else (130, 120)
    a = values([4, 6], dtype, rng, low=max(int(np.iinfo(dtype).min), -100 + z1), high=min(int(np.iinfo(dtype).max), 100 + z1))
    b = (((a.astype(np.int64) - z1) // 2) + z2).astype(dtype)
    b[::2] += 1  # and some near misses
    return (0.02, z1), (0.04, z2), a, b


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16], ids=lambda d: np.dtype(d).name)
def test_quantized_comparison_rescales_both_sides_and_matches_litert(op, dtype):
    params1, params2, a, b = equal_real_values_case(dtype)
    model = comparison_model(op, ([4, 6], [4, 6]), dtype, params1, params2)
    expected = {np.uint8: 1, np.int8: 2, np.int16: INT16_VERSION[op]}[dtype]
    assert stamped_version(model) == expected
    assert_matches_litert(model, [a, b])


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda o: o.name)
def test_quantized_comparison_broadcasts_like_litert(op):
    rng = np.random.default_rng(2)
    model = comparison_model(op, ([2, 3, 4], [3, 1]), np.int8, (0.03, 5), (0.05, -7))
    assert_matches_litert(model, [values([2, 3, 4], np.int8, rng), values([3, 1], np.int8, rng)])


@pytest.mark.parametrize("op", [B.LESS, B.GREATER_EQUAL], ids=lambda o: o.name)
def test_int16_ordering_comparisons_compare_raw_values_as_litert_does(op):
    # Different scales: the raw comparison (TFLite's behaviour) is not the real-valued one.
    rng = np.random.default_rng(3)
    model = comparison_model(op, ([50], [50]), np.int16, (0.001, 0), (0.01, 0))
    assert_matches_litert(model, [values([50], np.int16, rng, -3000, 3000), values([50], np.int16, rng, -300, 300)])


@settings(max_examples=25, deadline=None)
@given(
    op=st.sampled_from(COMPARISONS),
    dtype=st.sampled_from([np.uint8, np.int8]),
    shapes=st.sampled_from([([2, 3], [2, 3]), ([2, 3, 4], [4]), ([5], []), ([1, 2, 1, 3], [2, 2, 1])]),
    scales=st.tuples(st.floats(0.001, 0.99), st.floats(0.001, 0.99)),
    data=st.data(),
    seed=st.integers(0, 2**16),
)
def test_quantized_comparison_property_matches_litert(op, dtype, shapes, scales, data, seed):
    info = np.iinfo(dtype)
    zero_points = data.draw(st.tuples(st.integers(int(info.min), int(info.max)), st.integers(int(info.min), int(info.max))))
    model = comparison_model(op, shapes, dtype, (scales[0], zero_points[0]), (scales[1], zero_points[1]))
    rng = np.random.default_rng(seed)
    assert_matches_litert(model, [values(shapes[0], dtype, rng), values(shapes[1], dtype, rng)])


def test_quantized_comparison_with_a_scale_of_one_or_more_fails_clearly():
    # LiteRT's answer there is undefined behaviour (see compare_quantized.py): not compared.
    model = comparison_model(B.LESS, ([3], [3]), np.int8, (2.0, 0), (0.5, 0))
    with pytest.raises(KernelError, match="LESS.*scale"):
        Interpreter(model_content=model).allocate_tensors()


# -- ARG_MAX / ARG_MIN int8 ----------------------------------------------------------------


def arg_model(op, shape, axis, output_type) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape, np.int8, quantization=quantization(0.1, 3))
    a = graph.add_constant("axis", np.array([axis], np.int32))
    out_shape = [d for i, d in enumerate(shape) if i != axis % len(shape)]
    out = graph.add_tensor("out", out_shape, np.int32 if output_type == TensorType.INT32 else np.int64)
    params = (ArgMaxParams if op == B.ARG_MAX else ArgMinParams)(output_type=output_type)
    graph.add_operator(op, [x, a], [out], params)
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


@pytest.mark.parametrize("op", [B.ARG_MAX, B.ARG_MIN], ids=lambda o: o.name)
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("output_type", [TensorType.INT32, TensorType.INT64], ids=["int32", "int64"])
def test_arg_max_min_int8_match_litert_as_version_2(op, axis, output_type):
    model = arg_model(op, [3, 5, 4], axis, output_type)
    assert stamped_version(model) == 2
    ties = np.random.default_rng(4).integers(-3, 3, size=[3, 5, 4]).astype(np.int8)  # many ties: first index wins
    assert_matches_litert(model, [ties])


def test_arg_max_int8_over_the_full_range_matches_litert():
    model = arg_model(B.ARG_MAX, [6, 40], 1, TensorType.INT32)
    assert_matches_litert(model, [values([6, 40], np.int8, np.random.default_rng(5))])
