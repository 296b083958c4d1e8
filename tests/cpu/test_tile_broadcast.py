"""TILE, BROADCAST_TO, REVERSE_V2 against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import assert_matches_litert, run_ours
from schema.enums import BuiltinOperator as B
from test_reshape import In, assert_fails_clearly, assert_matches_litert_builtin, single_op, values, version_of

# -- TILE ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.int16, 1), (np.bool_, 1), (np.int8, 3)],
)
def test_tile_of_each_type_matches_litert(dtype, version):
    m = single_op(B.TILE, [In([2, 3], dtype), np.array([2, 3], np.int32)], [([4, 9], dtype)])
    assert version_of(m) == version
    # LiteRT's BUILTIN_REF resolver stops at TILE v2; its only TILE kernel is Register_TILE.
    check = assert_matches_litert if version <= 2 else assert_matches_litert_builtin
    check(m, [values([2, 3], dtype)])


@pytest.mark.parametrize("multiples", [[1, 1, 1], [3, 1, 2], [1, 4, 1], [2, 2, 2]])
@pytest.mark.parametrize("multiples_dtype", [np.int32, np.int64])
def test_tile_with_constant_multiples_matches_litert(multiples, multiples_dtype):
    m = single_op(B.TILE, [In([2, 1, 3]), np.array(multiples, multiples_dtype)], [([1], np.float32)])
    assert_matches_litert(m, [values([2, 1, 3])])


def test_tile_with_multiples_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.TILE, [In([2, 3]), In([2], np.int32)], [([1], np.float32)])
    for multiples in ([1, 2], [3, 1], [2, 2]):
        assert_matches_litert(m, [values([2, 3]), np.array(multiples, np.int32)])


def test_tile_with_wrong_number_of_multiples_fails_clearly():
    m = single_op(B.TILE, [In([2, 3]), np.array([2], np.int32)], [([4, 3], np.float32)])
    assert_fails_clearly(m, "TILE", match="multiples has 1 values")


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=4), data=st.data())
def test_tile_property_matches_litert(shape, data):
    multiples = [data.draw(st.integers(1, 3)) for _ in shape]
    m = single_op(B.TILE, [In(shape), np.array(multiples, np.int32)], [([1], np.float32)])
    assert_matches_litert(m, [values(shape)])


# -- BROADCAST_TO -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 2), (np.int32, 2), (np.int64, 2), (np.uint8, 2), (np.bool_, 2), (np.int8, 3), (np.int16, 3)],
)
def test_broadcast_to_of_each_type_matches_litert(dtype, version):
    m = single_op(B.BROADCAST_TO, [In([3, 1], dtype), np.array([2, 3, 4], np.int32)], [([2, 3, 4], dtype)])
    assert version_of(m) == version
    assert_matches_litert(m, [values([3, 1], dtype)])


@pytest.mark.parametrize("shape, target", [([1], [4]), ([2, 1, 3], [2, 5, 3]), ([], [2, 2]), ([3], [2, 1, 3])])
@pytest.mark.parametrize("target_dtype", [np.int32, np.int64])
def test_broadcast_to_constant_shapes_matches_litert(shape, target, target_dtype):
    m = single_op(B.BROADCAST_TO, [In(shape), np.array(target, target_dtype)], [(target, np.float32)])
    assert_matches_litert(m, [values(shape)])


def test_broadcast_to_shape_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.BROADCAST_TO, [In([1, 3]), In([2], np.int32)], [([1], np.float32)])
    for target in ([1, 3], [4, 3]):
        assert_matches_litert(m, [values([1, 3]), np.array(target, np.int32)])


def test_broadcast_to_an_incompatible_shape_fails_clearly():
    m = single_op(B.BROADCAST_TO, [In([2, 3]), np.array([2, 4], np.int32)], [([2, 4], np.float32)])
    assert_fails_clearly(m, "BROADCAST_TO", match="cannot be broadcast")


# -- REVERSE_V2 ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.int16, 1), (np.bool_, 2), (np.int8, 3)],
)
def test_reverse_v2_of_each_type_matches_litert(dtype, version):
    m = single_op(B.REVERSE_V2, [In([3, 4], dtype), np.array([1], np.int32)], [([3, 4], dtype)])
    assert version_of(m) == version
    assert_matches_litert(m, [values([3, 4], dtype)])


@pytest.mark.parametrize("axes", [[0], [-1], [1, 2], [0, 1, 2]])
def test_reverse_v2_along_contiguous_axes_matches_litert(axes):
    m = single_op(B.REVERSE_V2, [In([2, 3, 4]), np.array(axes, np.int32)], [([2, 3, 4], np.float32)])
    assert_matches_litert(m, [values([2, 3, 4])])


def test_reverse_v2_with_axes_as_model_input_matches_litert():
    m = single_op(B.REVERSE_V2, [In([2, 3, 4]), In([1], np.int32)], [([2, 3, 4], np.float32)])
    for axis in (0, 2, -2):
        assert_matches_litert(m, [values([2, 3, 4]), np.array([axis], np.int32)])


def test_reverse_v2_with_no_axes_copies_the_input():
    """LiteRT's kernel crashes (segmentation fault) on an empty axis list; TensorFlow's
    meaning (nothing reversed) is checked against numpy."""
    m = single_op(B.REVERSE_V2, [In([2, 3]), np.zeros([0], np.int32)], [([2, 3], np.float32)])
    x = values([2, 3])
    np.testing.assert_array_equal(run_ours(m, [x])[0], x)


def test_reverse_v2_along_non_contiguous_axes_reverses_both():
    """LiteRT refuses non-contiguous axes ("Non-contiguous `axes` not supported");
    TensorFlow's meaning is checked against numpy."""
    m = single_op(B.REVERSE_V2, [In([2, 3, 4]), np.array([0, 2], np.int32)], [([2, 3, 4], np.float32)])
    x = values([2, 3, 4])
    np.testing.assert_array_equal(run_ours(m, [x])[0], x[::-1, :, ::-1])


def test_reverse_v2_with_duplicate_axes_fails_clearly():
    m = single_op(B.REVERSE_V2, [In([2, 3]), np.array([1, -1], np.int32)], [([2, 3], np.float32)])
    assert_fails_clearly(m, "REVERSE_V2", match="duplicates")
