"""CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import MODELS_DIR, assert_matches_litert, run_litert, run_ours
from schema.builder import quantization
from schema.enums import ActivationFunctionType as A
from schema.enums import BuiltinOperator as B
from schema.params import ConcatenationParams, PackParams, SplitParams, SplitVParams, UnpackParams
from test_reshape import (
    In,
    assert_fails_clearly,
    assert_matches_litert_builtin,
    single_op,
    skip_unless_runnable,
    values,
    version_of,
)

# -- CONCATENATION ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.uint8, 1), (np.int32, 1), (np.int64, 1), (np.bool_, 1), (np.int8, 2), (np.int16, 3),
     (np.uint32, 4)],
)
def test_concatenation_of_each_type_matches_litert(dtype, version):
    m = single_op(B.CONCATENATION, [In([2, 3], dtype), In([2, 1], dtype)], [([2, 4], dtype)],
                  ConcatenationParams(axis=1))
    assert version_of(m) == version
    assert_matches_litert(m, [values([2, 3], dtype), values([2, 1], dtype, seed=1)])


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concatenation_along_each_axis_matches_litert(axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    m = single_op(B.CONCATENATION, [In(s) for s in shapes], [([1], np.float32)], ConcatenationParams(axis=axis))
    assert_matches_litert(m, [values(s, seed=i) for i, s in enumerate(shapes)])


def test_concatenation_with_a_constant_input_matches_litert():
    m = single_op(B.CONCATENATION, [In([2, 2]), np.ones([2, 3], np.float32)], [([2, 5], np.float32)],
                  ConcatenationParams(axis=1))
    assert_matches_litert(m, [values([2, 2])])


def test_concatenation_of_constant_scalars_gives_a_vector_matches_litert():
    m = single_op(B.CONCATENATION, [np.array(1, np.int32), np.array(7, np.int32)], [([2], np.int32)])
    assert assert_matches_litert(m, [])[0].tolist() == [1, 7]


@pytest.mark.parametrize("activation", [A.RELU, A.RELU6, A.RELU_N1_TO_1])
def test_concatenation_with_fused_activation_applies_it_to_the_result(activation):
    """LiteRT's kernel rejects any fused activation ("params->activation != kTfLiteActNone"),
    so the schema's meaning is checked against numpy here."""
    m = single_op(B.CONCATENATION, [In([2, 3]), In([2, 3])], [([4, 3], np.float32)],
                  ConcatenationParams(axis=0, fused_activation_function=activation))
    a, b = values([2, 3]) * 4, values([2, 3], seed=1) * 4
    joined = np.concatenate([a, b])
    low, high = {A.RELU: (0, None), A.RELU6: (0, 6), A.RELU_N1_TO_1: (-1, 1)}[activation]
    want = np.clip(joined, low, high)
    np.testing.assert_allclose(run_ours(m, [a, b])[0], want, rtol=1e-6)
    with pytest.raises(Exception, match="activation"):
        run_litert(m, [a, b])


def test_concatenation_of_int8_with_matching_quantization_matches_litert():
    q = quantization(0.1, 3)
    m = single_op(B.CONCATENATION, [In([1, 2], np.int8, q), In([1, 2], np.int8, q)], [([1, 4], np.int8, q)],
                  ConcatenationParams(axis=1))
    assert_matches_litert(m, [values([1, 2], np.int8), values([1, 2], np.int8, seed=1)])


def test_concatenation_of_int8_needing_rescale_fails_clearly():
    inputs = [In([1, 2], np.int8, quantization(0.1, 3)), In([1, 2], np.int8, quantization(0.2, 3))]
    m = single_op(B.CONCATENATION, inputs, [([1, 4], np.int8, quantization(0.1, 3))], ConcatenationParams(axis=1))
    assert_fails_clearly(m, "CONCATENATION", match="requires them equal")


def test_concatenation_with_mismatched_shapes_fails_clearly():
    m = single_op(B.CONCATENATION, [In([2, 3]), In([3, 3])], [([5, 3], np.float32)], ConcatenationParams(axis=1))
    assert_fails_clearly(m, "CONCATENATION", match="differ outside axis")


def test_concatenation_converter_model_matches_litert():
    path = MODELS_DIR / "converter" / "concat_float32.tflite"
    skip_unless_runnable(path)
    assert_matches_litert(path)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=4), data=st.data())
def test_concatenation_property_matches_litert(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    shapes = [[n if i == axis % len(shape) else d for i, d in enumerate(shape)] for n in sizes]
    m = single_op(B.CONCATENATION, [In(s) for s in shapes], [([1], np.float32)], ConcatenationParams(axis=axis))
    assert_matches_litert(m, [values(s, seed=i) for i, s in enumerate(shapes)])


# -- PACK / UNPACK ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version", [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.int8, 2), (np.int16, 3),
                       (np.uint32, 4)]
)
def test_pack_of_each_type_matches_litert(dtype, version):
    m = single_op(B.PACK, [In([2, 3], dtype)] * 3, [([3, 2, 3], dtype)], PackParams(values_count=3, axis=0))
    assert version_of(m) == version
    assert_matches_litert(m, [values([2, 3], dtype, seed=i) for i in range(3)])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_pack_along_each_axis_matches_litert(axis):
    m = single_op(B.PACK, [In([2, 3])] * 2, [([1], np.float32)], PackParams(values_count=2, axis=axis))
    assert_matches_litert(m, [values([2, 3]), values([2, 3], seed=1)])


def test_pack_of_int8_with_matching_quantization_matches_litert():
    q = quantization(0.2, -4)
    m = single_op(B.PACK, [In([3], np.int8, q)] * 2, [([2, 3], np.int8, q)], PackParams(values_count=2, axis=0))
    assert_matches_litert(m, [values([3], np.int8), values([3], np.int8, seed=1)])


def test_pack_of_int8_with_different_output_quantization_fails_clearly():
    m = single_op(B.PACK, [In([3], np.int8, quantization(0.2, -4))] * 2, [([2, 3], np.int8, quantization(0.2, 0))],
                  PackParams(values_count=2, axis=0))
    assert_fails_clearly(m, "PACK", match="requires them equal")


def test_pack_with_wrong_values_count_fails_clearly():
    m = single_op(B.PACK, [In([2])] * 2, [([3, 2], np.float32)], PackParams(values_count=3, axis=0))
    assert_fails_clearly(m, "PACK", match="values_count")


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.int32, 1), (np.int8, 2), (np.uint8, 2), (np.bool_, 3), (np.int16, 4), (np.float16, 5)],
)
def test_unpack_of_each_type_matches_litert(dtype, version):
    m = single_op(B.UNPACK, [In([3, 2], dtype)], [([2], dtype)] * 3, UnpackParams(num=3, axis=0))
    assert version_of(m) == version
    # LiteRT's BUILTIN_REF resolver stops at UNPACK v4; unpack.cc has a single kernel.
    check = assert_matches_litert if version <= 4 else assert_matches_litert_builtin
    check(m, [values([3, 2], dtype)])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_unpack_along_each_axis_matches_litert(axis):
    shape = [2, 3, 4]
    num = shape[axis]
    m = single_op(B.UNPACK, [In(shape)], [([1], np.float32)] * num, UnpackParams(num=num, axis=axis))
    assert_matches_litert(m, [values(shape)])


def test_unpack_of_int8_with_different_output_quantization_fails_clearly():
    m = single_op(B.UNPACK, [In([2, 3], np.int8, quantization(0.2, 1))], [([3], np.int8, quantization(0.1, 1))] * 2,
                  UnpackParams(num=2, axis=0))
    assert_fails_clearly(m, "UNPACK", match="requires them equal")


def test_unpack_with_num_not_matching_the_axis_fails_clearly():
    m = single_op(B.UNPACK, [In([3, 2])], [([2], np.float32)] * 2, UnpackParams(num=2, axis=0))
    assert_fails_clearly(m, "UNPACK", match="must be equal")


# -- SPLIT / SPLIT_V ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version", [(np.float32, 1), (np.uint8, 1), (np.int64, 1), (np.int8, 2), (np.int32, 3), (np.int16, 4)]
)
def test_split_of_each_type_matches_litert(dtype, version):
    m = single_op(B.SPLIT, [np.array(1, np.int32), In([2, 6], dtype)], [([2, 2], dtype)] * 3, SplitParams(num_splits=3))
    assert version_of(m) == version
    assert_matches_litert(m, [values([2, 6], dtype)])


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_split_along_a_constant_axis_matches_litert(axis):
    m = single_op(B.SPLIT, [np.array([axis], np.int32), In([4, 4])], [([1], np.float32)] * 2, SplitParams(num_splits=2))
    assert_matches_litert(m, [values([4, 4])])


def test_split_with_axis_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.SPLIT, [In([], np.int32), In([4, 6])], [([1], np.float32)] * 2, SplitParams(num_splits=2))
    for axis in (0, 1, -1):
        assert_matches_litert(m, [np.array(axis, np.int32), values([4, 6])])


def test_split_into_uneven_pieces_fails_clearly():
    m = single_op(B.SPLIT, [np.array(1, np.int32), In([2, 5])], [([2, 2], np.float32)] * 2, SplitParams(num_splits=2))
    assert_fails_clearly(m, "SPLIT", match="equal pieces")


@pytest.mark.parametrize("dtype, version", [(np.float32, 1), (np.int16, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1),
                                            (np.int8, 2)])
def test_split_v_of_each_type_matches_litert(dtype, version):
    m = single_op(B.SPLIT_V, [In([2, 6], dtype), np.array([1, 2, 3], np.int32), np.array(1, np.int32)],
                  [([2, 1], dtype), ([2, 2], dtype), ([2, 3], dtype)], SplitVParams(num_splits=3))
    assert version_of(m) == version
    assert_matches_litert(m, [values([2, 6], dtype)])


@pytest.mark.parametrize("sizes", [[2, -1, 1], [-1, 0, 3], [0, 6, 0]])
@pytest.mark.parametrize("size_dtype", [np.int32, np.int64])
def test_split_v_with_minus_one_and_zero_sizes_matches_litert(sizes, size_dtype):
    m = single_op(B.SPLIT_V, [In([6, 2]), np.array(sizes, size_dtype), np.array(-2, np.int32)],
                  [([1], np.float32)] * 3, SplitVParams(num_splits=3))
    assert_matches_litert(m, [values([6, 2])])


def test_split_v_with_sizes_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.SPLIT_V, [In([6, 2]), In([2], np.int32), np.array(0, np.int32)], [([1], np.float32)] * 2,
                  SplitVParams(num_splits=2))
    for sizes in ([1, 5], [-1, 2], [3, 3]):
        assert_matches_litert(m, [values([6, 2]), np.array(sizes, np.int32)])


def test_split_v_with_sizes_not_adding_up_fails_clearly():
    m = single_op(B.SPLIT_V, [In([6]), np.array([1, 2], np.int32), np.array(0, np.int32)], [([1], np.float32)] * 2,
                  SplitVParams(num_splits=2))
    assert_fails_clearly(m, "SPLIT_V", match="must add up to 6")
