"""TRANSPOSE against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import assert_matches_litert
from schema.enums import BuiltinOperator as B
from test_reshape import In, assert_fails_clearly, single_op, values, version_of


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.int8, 2), (np.bool_, 3), (np.int16, 5)],
)
def test_transpose_of_each_type_matches_litert(dtype, version):
    m = single_op(B.TRANSPOSE, [In([2, 3, 4], dtype), np.array([2, 0, 1], np.int32)], [([4, 2, 3], dtype)])
    assert version_of(m) == version
    assert_matches_litert(m, [values([2, 3, 4], dtype)])


@pytest.mark.parametrize("rank, version", [(5, 4), (6, 6), (7, 8), (8, 8)])
def test_transpose_of_high_rank_matches_litert(rank, version):
    shape = [2, 1, 3, 2, 1, 2, 1, 2][:rank]
    perm = np.array(list(reversed(range(rank))), np.int32)
    m = single_op(B.TRANSPOSE, [In(shape), perm], [(shape[::-1], np.float32)])
    assert version_of(m) == version
    assert_matches_litert(m, [values(shape)])


def test_transpose_with_negative_perm_entries_matches_litert():
    m = single_op(B.TRANSPOSE, [In([2, 3, 4]), np.array([-1, 0, -2], np.int32)], [([4, 2, 3], np.float32)])
    assert_matches_litert(m, [values([2, 3, 4])])


def test_transpose_with_perm_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.TRANSPOSE, [In([2, 3, 4]), In([3], np.int32)], [([1], np.float32)])
    for perm in ([1, 2, 0], [0, 1, 2], [2, 1, 0]):
        assert_matches_litert(m, [values([2, 3, 4]), np.array(perm, np.int32)])


def test_transpose_with_duplicate_perm_fails_clearly():
    m = single_op(B.TRANSPOSE, [In([2, 3]), np.array([0, 0], np.int32)], [([2, 2], np.float32)])
    assert_fails_clearly(m, "TRANSPOSE", match="duplicate")


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=6), data=st.data())
def test_transpose_property_matches_litert(shape, data):
    perm = data.draw(st.permutations(range(len(shape))))
    m = single_op(B.TRANSPOSE, [In(shape), np.array(perm, np.int32)], [([shape[p] for p in perm], np.float32)])
    assert_matches_litert(m, [values(shape)])
