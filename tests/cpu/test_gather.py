"""GATHER and GATHER_ND against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import assert_matches_litert, run_litert, run_ours
from schema.enums import BuiltinOperator as B
from schema.params import GatherParams
from test_reshape import In, assert_fails_clearly, single_op, values, version_of

# -- GATHER -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.int8, 2), (np.bool_, 3), (np.int16, 4)],
)
def test_gather_of_each_type_matches_litert(dtype, version):
    m = single_op(B.GATHER, [In([4, 3], dtype), In([2], np.int32)], [([2, 3], dtype)], GatherParams(axis=0))
    assert version_of(m) == version
    assert_matches_litert(m, [values([4, 3], dtype), np.array([3, 0], np.int32)])


@pytest.mark.parametrize("index_dtype, version", [(np.int32, 1), (np.int64, 1), (np.int16, 6)])
def test_gather_with_each_index_type_matches_litert(index_dtype, version):
    m = single_op(B.GATHER, [In([5, 2]), In([2, 3], index_dtype)], [([2, 3, 2], np.float32)])
    assert version_of(m) == version
    assert_matches_litert(m, [values([5, 2]), np.array([[4, 0, 2], [1, 1, 3]], index_dtype)])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_along_each_axis_matches_litert(axis):
    shape = [3, 4, 5]
    m = single_op(B.GATHER, [In(shape), np.array([[0, 2], [1, 1]], np.int32)], [([1], np.float32)],
                  GatherParams(axis=axis))
    assert_matches_litert(m, [values(shape)])


def test_gather_with_scalar_index_drops_the_axis_matches_litert():
    m = single_op(B.GATHER, [In([3, 4]), np.array(2, np.int32)], [([3], np.float32)], GatherParams(axis=1))
    assert assert_matches_litert(m, [values([3, 4])])[0].shape == (3,)


@pytest.mark.parametrize(
    "batch_dims, axis, index_shape",
    [(1, 1, [2, 4]), (1, 2, [2, 5]), (2, 2, [2, 3]), (2, 2, [2, 3, 2]), (-1, 1, [2, 4])],  # -1: rank 2 - 1
)
def test_gather_with_batch_dims_is_version_5_and_matches_litert(batch_dims, axis, index_shape):
    shape = [2, 3, 4, 2]
    indices = np.random.default_rng(0).integers(0, shape[axis], size=index_shape).astype(np.int32)
    m = single_op(B.GATHER, [In(shape), In(index_shape, np.int32)], [([1], np.float32)],
                  GatherParams(axis=axis, batch_dims=batch_dims))
    assert version_of(m) == 5
    assert_matches_litert(m, [values(shape), indices])


@pytest.mark.parametrize("bad", [5, -1])
def test_gather_with_an_out_of_range_index_fails_clearly_like_litert(bad):
    m = single_op(B.GATHER, [In([5, 2]), In([3], np.int32)], [([3, 2], np.float32)])
    indices = np.array([0, bad, 1], np.int32)
    with pytest.raises(RuntimeError):
        run_litert(m, [values([5, 2]), indices])
    assert_fails_clearly(m, "GATHER", inputs=[values([5, 2]), indices], match=f"index {bad} is out of range [0, 5)")


def test_gather_with_batch_dims_larger_than_axis_fails_clearly():
    m = single_op(B.GATHER, [In([2, 3]), In([2, 2], np.int32)], [([2, 2], np.float32)],
                  GatherParams(axis=0, batch_dims=1))
    assert_fails_clearly(m, "GATHER", match="batch_dims")


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_gather_property_matches_litert(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    batch_dims = data.draw(st.integers(0, axis))
    index_shape = shape[:batch_dims] + data.draw(st.lists(st.integers(1, 3), max_size=2))
    indices = np.random.default_rng(len(index_shape)).integers(0, shape[axis], size=index_shape).astype(np.int32)
    m = single_op(B.GATHER, [In(shape), In(index_shape, np.int32)], [([1], np.float32)],
                  GatherParams(axis=axis, batch_dims=batch_dims))
    assert_matches_litert(m, [values(shape), indices])


# -- GATHER_ND ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.int8, 1), (np.uint8, 1), (np.int16, 3), (np.bool_, 5)],
)
def test_gather_nd_of_each_type_matches_litert(dtype, version):
    m = single_op(B.GATHER_ND, [In([3, 4], dtype), In([2, 2], np.int32)], [([2], dtype)])
    assert version_of(m) == version
    assert_matches_litert(m, [values([3, 4], dtype), np.array([[2, 3], [0, 1]], np.int32)])


@pytest.mark.parametrize("index_dtype, version", [(np.int32, 1), (np.int64, 1), (np.int16, 4)])
def test_gather_nd_with_each_index_type_matches_litert(index_dtype, version):
    m = single_op(B.GATHER_ND, [In([3, 4, 2]), In([2, 1], index_dtype)], [([2, 4, 2], np.float32)])
    assert version_of(m) == version
    assert_matches_litert(m, [values([3, 4, 2]), np.array([[2], [0]], index_dtype)])


@pytest.mark.parametrize("index_shape", [[2], [3, 1], [2, 2, 2], [1, 3]])
def test_gather_nd_with_partial_and_full_index_depths_matches_litert(index_shape):
    shape = [3, 4, 2]
    rng = np.random.default_rng(0)
    depth = index_shape[-1]
    indices = np.zeros(index_shape, np.int32)
    for k in range(depth):
        indices[..., k] = rng.integers(0, shape[k], size=index_shape[:-1])
    m = single_op(B.GATHER_ND, [In(shape), In(index_shape, np.int32)], [([1], np.float32)])
    assert_matches_litert(m, [values(shape), indices])


def test_gather_nd_with_index_depth_0_repeats_params_like_tensorflow():
    """LiteRT's kernel fails here ("gather_nd index out of bounds"); TensorFlow's meaning is
    one copy of ``params`` per index tuple."""
    m = single_op(B.GATHER_ND, [In([3, 2]), In([4, 0], np.int32)], [([4, 3, 2], np.float32)])
    x = values([3, 2])
    np.testing.assert_array_equal(run_ours(m, [x, np.zeros([4, 0], np.int32)])[0], np.broadcast_to(x, [4, 3, 2]))


@pytest.mark.parametrize("bad", [[0, 4], [-1, 0], [3, 0]])
def test_gather_nd_with_an_out_of_range_index_fails_clearly_like_litert(bad):
    m = single_op(B.GATHER_ND, [In([3, 4]), In([2, 2], np.int32)], [([2], np.float32)])
    indices = np.array([[1, 1], bad], np.int32)
    with pytest.raises(RuntimeError):
        run_litert(m, [values([3, 4]), indices])
    assert_fails_clearly(m, "GATHER_ND", inputs=[values([3, 4]), indices], match="is out of range")


def test_gather_nd_with_index_depth_above_the_rank_fails_clearly():
    m = single_op(B.GATHER_ND, [In([3]), In([1, 2], np.int32)], [([1], np.float32)])
    assert_fails_clearly(m, "GATHER_ND", match="larger than the params rank")
