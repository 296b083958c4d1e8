"""Parity of the quantized reductions (backends/cpu/kernels/reduce_quantized.py) with LiteRT,
bit for bit: MEAN (uint8 v1, int8 v2, int16 v3), SUM (uint8 v1, int8 v2, int16 v1),
REDUCE_MAX / REDUCE_MIN (uint8 v1, int8 v2, int16 v3).

The oracle for SUM on int8/int16: LiteRT 2.3's *reference* SUM runs its uint8 code on
int8 and int16 data (it reads the bytes as uint8: -1 + 1 sums to 255 saturated; see
``test_litert_reference_sum_of_int8_reads_the_data_as_uint8``), so it cannot serve.
Instead:
- int8 SUM is compared bit for bit with LiteRT's reference uint8 SUM of the same values
  shifted by 128 (the reference arithmetic, sum(q) - n*z then requantized, is the same
  for q + 128 and z + 128, and the output clamp [0, 255] maps onto [-128, 127]);
- int8 and int16 SUM are compared with LiteRT's optimized (default, XNNPACK-free) kernel,
  bit for bit where input and output share their quantization; where they differ the
  optimized kernel rescales in float and may differ by 1 from the reference arithmetic.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import MODELS_DIR, assert_matches_litert, litert_interpreter, run_interpreter, run_litert, run_ours
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.params import ReducerParams


def reduce_model(op, shape, dtype, axes, keep_dims, in_params, out_params, axis_is_input=False) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape, dtype, quantization=quantization(*in_params))
    axis_values = np.array(axes, np.int32)
    if axis_is_input:
        axis = graph.add_input("axis", [len(axes)], np.int32)
    else:
        axis = graph.add_constant("axis", axis_values)
    rank = len(shape)
    reduced = {a % rank for a in axes} if rank else set()
    if keep_dims:
        out_shape = [1 if i in reduced else d for i, d in enumerate(shape)]
    else:
        out_shape = [d for i, d in enumerate(shape) if i not in reduced]
    y = graph.add_tensor("y", out_shape, dtype, quantization=quantization(*out_params))
    graph.add_operator(op, [x, axis], [y], ReducerParams(keep_dims=keep_dims))
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def full_range(shape, dtype, seed=0) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, int(info.max) + 1, size=shape).astype(dtype)



def run_litert_optimized(model: bytes, inputs):
    """LiteRT's default kernels without XNNPACK (see the module docstring)."""
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
    from ai_edge_litert.interpreter import OpResolverType

    interpreter = LiteRTInterpreter(
        model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )
    return run_interpreter(interpreter, inputs)


VERSION = {B.MEAN: {np.uint8: 1, np.int8: 2, np.int16: 3}, B.SUM: {np.uint8: 1, np.int8: 2, np.int16: 1}}
ZERO_POINTS = {np.uint8: (140, 3), np.int8: (-20, 7), np.int16: (0, 0)}

AXES_CASES = [
    ([2, 5, 6, 3], [1, 2], True),  # 4-D mean over H and W: older TFLite's special path
    ([2, 5, 6, 3], [2, 1], False),
    ([2, 5, 6, 3], [-1], False),
    ([3, 4], [0, 1], False),  # every axis, to a scalar
    ([2, 3, 4], [0, 0, -3], True),  # repeated axes
    ([7], [0], True),
    ([2, 3], [], False),  # no axis: requantize only
]
AXES_IDS = ["hw-keep", "hw", "last", "all", "repeated", "1d", "none"]


# -- MEAN ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, axes, keep_dims", AXES_CASES, ids=AXES_IDS)
@pytest.mark.parametrize("requantize", [False, True], ids=["same-params", "requantize"])
def test_quantized_mean_matches_litert_at_its_version(dtype, shape, axes, keep_dims, requantize):
    z_in, z_out = ZERO_POINTS[dtype]
    out_params = (0.0173, z_out) if requantize else (0.0241, z_in)
    model = reduce_model(B.MEAN, shape, dtype, axes, keep_dims, (0.0241, z_in), out_params)
    assert stamped_version(model) == VERSION[B.MEAN][dtype]
    assert_matches_litert(model, [full_range(shape, dtype)])


@settings(max_examples=25, deadline=None)
@given(
    dtype=st.sampled_from([np.uint8, np.int8, np.int16]),
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    data=st.data(),
    keep_dims=st.booleans(),
    scales=st.tuples(st.floats(0.001, 0.1), st.floats(0.001, 0.1)),
    seed=st.integers(0, 2**16),
)
def test_quantized_mean_property_matches_litert(dtype, shape, data, keep_dims, scales, seed):
    rank = len(shape)
    axes = data.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank))
    info = np.iinfo(dtype)
    if dtype == np.int16:
        zero_points = (0, 0)
    else:
        zero_points = data.draw(st.tuples(st.integers(int(info.min), int(info.max)), st.integers(int(info.min), int(info.max))))
    model = reduce_model(B.MEAN, shape, dtype, axes, keep_dims, (scales[0], zero_points[0]), (scales[1], zero_points[1]))
    assert_matches_litert(model, [full_range(shape, dtype, seed)])


@pytest.mark.parametrize(
    "dtype, shape, axes, table",
    [
        (np.int8, [1, 7, 7, 8], [1, 2], True),
        (np.int8, [4, 3, 5, 2], [1, 2], True),  # batched [A, R, B] sums
        (np.uint8, [3, 7, 8], [2], True),
        (np.int16, [3, 4, 5], [2], True),  # 5 x 65536 sums: a table still
        (np.int8, [2, 5, 6, 3], [0, 2], False),  # not one block of the layout
        (np.int8, [1, 72, 64, 1], [1, 2], False),  # 4608 x 256 sums: too many
        (np.int16, [2, 40, 3], [1], False),
    ],
    ids=["hw", "batched", "uint8-last", "int16-small", "int8-split-axes", "int8-large", "int16-large"],
)
def test_quantized_mean_by_table_or_by_arithmetic_matches_litert(dtype, shape, axes, table):
    z_in, z_out = ZERO_POINTS[dtype]
    model = reduce_model(B.MEAN, shape, dtype, axes, False, (0.0241, z_in), (0.0173, z_out))
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    assert (interpreter._main.nodes[0].user_data._lookup is not None) == table
    for seed in range(2):
        assert_matches_litert(model, [full_range(shape, dtype, seed)])


def test_quantized_mean_of_an_empty_input_is_zero_like_litert():
    model = reduce_model(B.MEAN, [0, 3], np.int8, [0], False, (0.05, 4), (0.05, 4))
    assert_matches_litert(model, [np.zeros([0, 3], np.int8)])


def test_quantized_mean_with_a_non_constant_axis_matches_litert():
    model = reduce_model(B.MEAN, [2, 3, 4], np.int8, [1, 2], False, (0.05, 4), (0.03, -2), axis_is_input=True)
    assert_matches_litert(model, [full_range([2, 3, 4], np.int8), np.array([2, -2], np.int32)])


def test_quantized_mean_int16_with_a_nonzero_zero_point_fails_clearly():
    model = reduce_model(B.MEAN, [2, 3], np.int16, [1], False, (0.05, 3), (0.05, 0))
    with pytest.raises(KernelError, match="MEAN.*zero point 0"):
        Interpreter(model_content=model).allocate_tensors()


# -- SUM -----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, axes, keep_dims", AXES_CASES, ids=AXES_IDS)
@pytest.mark.parametrize("requantize", [False, True], ids=["same-params", "requantize"])
def test_quantized_sum_uint8_matches_litert_as_version_1(shape, axes, keep_dims, requantize):
    out_params = (0.3, 20) if requantize else (0.03, 140)
    model = reduce_model(B.SUM, shape, np.uint8, axes, keep_dims, (0.03, 140), out_params)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [full_range(shape, np.uint8)])


@pytest.mark.parametrize("shape, axes, keep_dims", AXES_CASES, ids=AXES_IDS)
@pytest.mark.parametrize("requantize", [False, True], ids=["same-params", "requantize"])
def test_quantized_sum_int8_equals_litert_reference_uint8_sum_shifted_by_128(shape, axes, keep_dims, requantize):
    in_params = (0.03, 12)
    out_params = (0.3, -100) if requantize else in_params
    model = reduce_model(B.SUM, shape, np.int8, axes, keep_dims, in_params, out_params)
    assert stamped_version(model) == 2
    shifted = reduce_model(
        B.SUM, shape, np.uint8, axes, keep_dims, (in_params[0], in_params[1] + 128), (out_params[0], out_params[1] + 128)
    )
    x = full_range(shape, np.int8)
    (ours,) = run_ours(model, [x])
    (reference,) = run_litert(shifted, [(x.astype(np.int16) + 128).astype(np.uint8)])
    np.testing.assert_array_equal(ours, (reference.astype(np.int16) - 128).astype(np.int8))


@pytest.mark.parametrize("dtype", [np.int8, np.int16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, axes, keep_dims", AXES_CASES, ids=AXES_IDS)
def test_quantized_sum_with_shared_quantization_matches_litert_optimized_kernel(dtype, shape, axes, keep_dims):
    z_in = ZERO_POINTS[dtype][0]
    model = reduce_model(B.SUM, shape, dtype, axes, keep_dims, (0.01, z_in), (0.01, z_in))
    assert stamped_version(model) == VERSION[B.SUM][dtype]
    x = full_range(shape, dtype) // 8  # sums that mostly stay in range
    np.testing.assert_array_equal(run_ours(model, [x])[0], run_litert_optimized(model, [x])[0])


def test_quantized_sum_int16_requantizing_is_within_one_of_litert_optimized_kernel():
    model = reduce_model(B.SUM, [2, 5, 6, 3], np.int16, [-1], False, (0.01, 0), (0.027, 0))
    x = full_range([2, 5, 6, 3], np.int16) // 4
    ours, optimized = run_ours(model, [x])[0], run_litert_optimized(model, [x])[0]
    assert np.max(np.abs(ours.astype(np.int32) - optimized.astype(np.int32))) <= 1


def test_litert_reference_sum_of_int8_reads_the_data_as_uint8():
    """Documents the oracle's bug that the SUM tests above work around: if this fails, the
    LiteRT wheel was fixed and int8/int16 SUM can be compared with BUILTIN_REF directly."""
    model = reduce_model(B.SUM, [2, 4], np.int8, [0], False, (0.05, 0), (0.05, 0))
    x = np.array([[-1, -60, 64, 5], [1, -60, 64, -2]], np.int8)
    (reference,) = run_litert(model, [x])
    np.testing.assert_array_equal(reference, [-1, -1, -128, -1])  # 255+1, 196+196, 5+254 saturate; 128 wraps
    np.testing.assert_array_equal(run_ours(model, [x])[0], [0, -120, 127, 3])


# -- REDUCE_MAX / REDUCE_MIN -------------------------------------------------------------


@pytest.mark.parametrize("op", [B.REDUCE_MAX, B.REDUCE_MIN], ids=lambda o: o.name)
@pytest.mark.parametrize("dtype, version", [(np.uint8, 1), (np.int8, 2), (np.int16, 3)], ids=["uint8", "int8", "int16"])
@pytest.mark.parametrize("shape, axes, keep_dims", AXES_CASES, ids=AXES_IDS)
def test_quantized_reduce_max_min_match_litert_at_their_version(op, dtype, version, shape, axes, keep_dims):
    params = (0.05, ZERO_POINTS[dtype][0])
    model = reduce_model(op, shape, dtype, axes, keep_dims, params, params)
    assert stamped_version(model) == version
    assert_matches_litert(model, [full_range(shape, dtype)])


@pytest.mark.parametrize("op", [B.REDUCE_MAX, B.REDUCE_MIN], ids=lambda o: o.name)
def test_quantized_reduce_max_min_of_an_empty_input_match_litert(op):
    model = reduce_model(op, [4, 0], np.int8, [1], True, (0.05, 3), (0.05, 3))
    assert_matches_litert(model, [np.zeros([4, 0], np.int8)])


def test_quantized_reduce_max_that_would_requantize_fails_clearly():
    model = reduce_model(B.REDUCE_MAX, [2, 3], np.int8, [1], False, (0.05, 3), (0.1, 3))
    with pytest.raises(KernelError, match="REDUCE_MAX.*must be equal"):
        Interpreter(model_content=model).allocate_tensors()


# -- the converter model ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_converter_mean_int8_model_matches_litert_bit_for_bit(seed):
    path = MODELS_DIR / "converter" / "mean_int8.tflite"
    inputs = [full_range(tuple(d["shape"]), np.dtype(d["dtype"]), seed) for d in litert_interpreter(path).get_input_details()]
    assert_matches_litert(path, inputs)


# -- REDUCE_PROD v2 (int8, int16): each product step rescaled -------------------------------------


@pytest.mark.parametrize("axes, keep_dims", [([1], False), ([0, 2], True), ([2, 0], False), ([-1], False)],
                         ids=["middle", "outer-two-kept", "unsorted", "negative"])
def test_quantized_reduce_prod_int8_is_v2_and_matches_litert(axes, keep_dims):
    model = reduce_model(B.REDUCE_PROD, [3, 4, 5], np.int8, axes, keep_dims, (0.1, 3), (0.2, -4))
    assert stamped_version(model) == 2
    assert_matches_litert(model, [full_range((3, 4, 5), np.int8)], rtol=0, atol=0)


def test_quantized_reduce_prod_int16_is_v2_and_matches_litert():
    model = reduce_model(B.REDUCE_PROD, [3, 4, 5], np.int16, [1, 2], False, (0.01, 0), (0.05, 0))
    assert stamped_version(model) == 2
    values = np.random.default_rng(2).integers(-300, 300, (3, 4, 5)).astype(np.int16)
    assert_matches_litert(model, [values], rtol=0, atol=0)


def test_quantized_reduce_prod_of_uint8_fails_naming_the_types_litert_takes():
    model = reduce_model(B.REDUCE_PROD, [3, 4], np.uint8, [1], False, (0.1, 128), (0.2, 128))
    with pytest.raises(KernelError, match="REDUCE_PROD v1: .*UINT8; this kernel supports INT8, INT16"):
        Interpreter(model_content=model).allocate_tensors()
