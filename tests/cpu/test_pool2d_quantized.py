"""Parity of the quantized pools (backends/cpu/kernels/pool2d_quantized.py) with LiteRT's
reference kernels, bit for bit: AVERAGE_POOL_2D and MAX_POOL_2D on uint8 (v1), int8 (v2),
int16 (v3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.cpu.common import compute_out_size
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import MODELS_DIR, assert_matches_litert, litert_interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.enums import Padding
from schema.params import Pool2DParams

VERSION_OF = {np.uint8: 1, np.int8: 2, np.int16: 3}
POOLS = [B.AVERAGE_POOL_2D, B.MAX_POOL_2D]


def pool_model(op, shape, dtype, filter_hw, strides, padding, scale, zero_point, activation=Act.NONE, out_params=None, version=None):
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape, dtype, quantization=quantization(scale, zero_point))
    out_h = compute_out_size(padding, shape[1], filter_hw[0], strides[0])
    out_w = compute_out_size(padding, shape[2], filter_hw[1], strides[1])
    out_scale, out_zero_point = out_params or (scale, zero_point)
    y = graph.add_tensor("y", [shape[0], out_h, out_w, shape[3]], dtype, quantization=quantization(out_scale, out_zero_point))
    params = Pool2DParams(
        padding=padding, stride_h=strides[0], stride_w=strides[1], filter_height=filter_hw[0], filter_width=filter_hw[1],
        fused_activation_function=activation,
    )
    graph.add_operator(op, [x], [y], params, version=version)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def full_range(shape, dtype, seed=0) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, int(info.max) + 1, size=shape).astype(dtype)



ZERO_POINT = {np.uint8: 131, np.int8: -17, np.int16: 0}

GEOMETRIES = [
    # shape, filter, strides, padding
    ([1, 8, 8, 3], (2, 2), (2, 2), Padding.VALID),
    ([2, 7, 9, 2], (3, 3), (2, 2), Padding.SAME),  # odd sizes: clipped windows at the borders
    ([1, 5, 6, 4], (3, 2), (1, 3), Padding.SAME),
    ([1, 6, 6, 5], (6, 6), (1, 1), Padding.VALID),  # global pool
    ([1, 4, 4, 2], (4, 4), (1, 1), Padding.SAME),  # more taps than outputs, with padding
]


GEOMETRY_IDS = ["2x2-valid", "3x3-same-odd", "3x2-strided", "global", "global-padded"]


@pytest.mark.parametrize("op", POOLS, ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, filter_hw, strides, padding", GEOMETRIES, ids=GEOMETRY_IDS)
def test_quantized_pool_matches_litert_at_its_version(op, dtype, shape, filter_hw, strides, padding):
    model = pool_model(op, shape, dtype, filter_hw, strides, padding, 0.037, ZERO_POINT[dtype])
    assert stamped_version(model) == VERSION_OF[dtype]
    assert_matches_litert(model, [full_range(shape, dtype)])


@pytest.mark.parametrize("op", POOLS, ids=lambda o: o.name)
@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH], ids=lambda a: a.name)
def test_quantized_pool_applies_the_fused_activation_in_the_quantized_domain(op, activation):
    model = pool_model(op, [1, 6, 6, 3], np.int8, (2, 2), (1, 1), Padding.SAME, 0.02, 10, activation)
    assert_matches_litert(model, [full_range([1, 6, 6, 3], np.int8, 1)])


def test_average_pool_rounds_halves_away_from_zero_like_tflite():
    # Windows of two values whose sums are odd: every average is an exact half.
    x = np.array([-3, -2, -1, 0, 1, 2, 3, 4, 127, 126, -128, -127], np.int8).reshape(1, 1, 12, 1)
    model = pool_model(B.AVERAGE_POOL_2D, [1, 1, 12, 1], np.int8, (1, 2), (1, 1), Padding.VALID, 0.1, 0)
    assert_matches_litert(model, [x])


@settings(max_examples=25, deadline=None)
@given(
    op=st.sampled_from(POOLS),
    dtype=st.sampled_from([np.uint8, np.int8, np.int16]),
    batch=st.integers(1, 2),
    height=st.integers(1, 9),
    width=st.integers(1, 9),
    channels=st.integers(1, 4),
    filter_hw=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from([Padding.SAME, Padding.VALID]),
    activation=st.sampled_from([Act.NONE, Act.RELU, Act.RELU6]),
    seed=st.integers(0, 2**16),
)
def test_quantized_pool_property_matches_litert(op, dtype, batch, height, width, channels, filter_hw, strides, padding, activation, seed):
    if padding == Padding.VALID and (filter_hw[0] > height or filter_hw[1] > width):
        padding = Padding.SAME
    shape = [batch, height, width, channels]
    model = pool_model(op, shape, dtype, filter_hw, strides, padding, 0.05, ZERO_POINT[dtype], activation)
    assert_matches_litert(model, [full_range(shape, dtype, seed)])


@pytest.mark.parametrize("op", POOLS, ids=lambda o: o.name)
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU6], ids=lambda a: a.name)
def test_quantized_pool_of_a_large_image_matches_litert(op, activation):
    # Too many windows for the gather / matmul paths: the loop over the filter taps.
    shape = [1, 96, 96, 16]
    model = pool_model(op, shape, np.int8, (3, 3), (1, 1), Padding.SAME, 0.05, -3, activation)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    kernel = interpreter._main.nodes[0].user_data
    assert kernel.gather is None and kernel.sum_matrix is None and kernel.pool_matrix is None
    assert_matches_litert(model, [full_range(shape, np.int8, 5)])


@pytest.mark.parametrize("dtype, table", [(np.int8, True), (np.int16, True), (np.int16, False)], ids=["int8", "int16-table", "int16-float"])
def test_quantized_average_pool_by_table_or_in_float_matches_litert(dtype, table):
    # The window sums look their results up in a table of every (count, sum) unless that
    # table is too large (int16 with large windows): then the means are rounded in float64.
    shape, filter_hw = ([2, 6, 7, 3], (2, 2)) if table else ([2, 6, 7, 3], (5, 5))
    model = pool_model(B.AVERAGE_POOL_2D, shape, dtype, filter_hw, (1, 2), Padding.SAME, 0.05, ZERO_POINT[dtype], Act.RELU)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    kernel = interpreter._main.nodes[0].user_data
    assert (kernel.sum_matrix is not None) == table and (kernel.pool_matrix is not None) == (not table)
    assert_matches_litert(model, [full_range(shape, dtype, 6)])


def test_quantized_pool_that_would_requantize_fails_clearly():
    model = pool_model(B.AVERAGE_POOL_2D, [1, 4, 4, 1], np.int8, (2, 2), (2, 2), Padding.VALID, 0.1, 0, out_params=(0.2, 0))
    with pytest.raises(KernelError, match="AVERAGE_POOL_2D.*same quantization"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_converter_pool_int8_model_matches_litert_bit_for_bit(seed):
    path = MODELS_DIR / "converter" / "pool_int8.tflite"
    inputs = [full_range(tuple(d["shape"]), np.dtype(d["dtype"]), seed) for d in litert_interpreter(path).get_input_details()]
    assert_matches_litert(path, inputs)
