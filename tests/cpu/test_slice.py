"""SLICE and STRIDED_SLICE against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from oracle import assert_matches_litert
from schema.enums import BuiltinOperator as B
from schema.params import StridedSliceParams
from test_reshape import In, assert_fails_clearly, assert_matches_litert_builtin, single_op, values, version_of

i32 = lambda v: np.array(v, np.int32)  # noqa: E731

# -- SLICE --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.bool_, 1), (np.int8, 2), (np.int16, 4),
     (np.uint32, 6)],
)
def test_slice_of_each_type_matches_litert(dtype, version):
    m = single_op(B.SLICE, [In([3, 4], dtype), i32([1, 1]), i32([2, 2])], [([2, 2], dtype)])
    assert version_of(m) == version
    assert_matches_litert(m, [values([3, 4], dtype)])


def test_slice_of_5d_input_is_version_5_and_matches_litert():
    m = single_op(B.SLICE, [In([2, 3, 2, 3, 2]), i32([1, 0, 1, 1, 0]), i32([1, -1, 1, 2, -1])],
                  [([1, 3, 1, 2, 2], np.float32)])
    assert version_of(m) == 5
    assert_matches_litert(m, [values([2, 3, 2, 3, 2])])


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_slice_with_minus_one_size_to_the_end_matches_litert(index_dtype):
    m = single_op(B.SLICE, [In([4, 5, 3]), np.array([1, 2, 0], index_dtype), np.array([-1, 2, -1], index_dtype)],
                  [([3, 2, 3], np.float32)])
    assert assert_matches_litert(m, [values([4, 5, 3])])[0].shape == (3, 2, 3)


def test_slice_with_begin_and_size_as_model_inputs_is_dynamic_and_matches_litert():
    m = single_op(B.SLICE, [In([4, 5]), In([2], np.int32), In([2], np.int32)], [([-1, -1], np.float32)])
    for begin, size in (([0, 0], [4, 5]), ([1, 2], [2, -1]), ([3, 4], [1, 1])):
        assert_matches_litert(m, [values([4, 5]), i32(begin), i32(size)])


def test_slice_past_the_end_fails_clearly():
    m = single_op(B.SLICE, [In([4, 5]), i32([3, 0]), i32([2, 5])], [([2, 5], np.float32)])
    assert_fails_clearly(m, "SLICE", match="do not fit")


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=5), data=st.data())
def test_slice_property_matches_litert(shape, data):
    begin = [data.draw(st.integers(0, d)) for d in shape]
    size = [data.draw(st.integers(-1, d - b)) for d, b in zip(shape, begin)]
    out_shape = [d - b if s == -1 else s for d, b, s in zip(shape, begin, size)]
    m = single_op(B.SLICE, [In(shape), i32(begin), i32(size)], [(out_shape, np.float32)])
    assert_matches_litert(m, [values(shape)])


# -- STRIDED_SLICE ------------------------------------------------------------------------


def check(model, inputs):
    """LiteRT's BUILTIN_REF resolver registers STRIDED_SLICE only up to v4; v5-v8 run
    with its default resolver, whose STRIDED_SLICE is the same reference kernel."""
    if version_of(model) <= 4:
        return assert_matches_litert(model, inputs)
    return assert_matches_litert_builtin(model, inputs)


def strided(shape, begin, end, strides, dtype=np.float32, **masks):
    return single_op(B.STRIDED_SLICE, [In(shape, dtype), i32(begin), i32(end), i32(strides)], [([1], dtype)],
                     StridedSliceParams(**masks))


@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.int16, 1), (np.int8, 2), (np.bool_, 3),
     (np.uint32, 7)],
)
def test_strided_slice_of_each_type_matches_litert(dtype, version):
    m = strided([4, 6], [1, 0], [4, 6], [2, 3], dtype)
    assert version_of(m) == version
    check(m, [values([4, 6], dtype)])


def test_strided_slice_of_5d_input_is_version_4_and_matches_litert():
    shape = [2, 3, 4, 3, 2]
    m = strided(shape, [0, 1, 0, 2, 0], [2, 3, 4, 0, 2], [1, 1, 2, -1, 1])
    assert version_of(m) == 4
    check(m, [values(shape)])


@pytest.mark.parametrize(
    "begin, end, strides",
    [
        ([-1, 5], [0, 0], [-1, -2]),  # backwards from the last element
        ([-10, -10], [10, 10], [1, 1]),  # out of range: clamped
        ([10, 10], [-10, -10], [-1, -1]),  # out of range backwards: clamped
        ([3, 1], [1, 3], [1, 1]),  # empty along the first axis
        ([0, -1], [4, -7], [3, -2]),
    ],
)
def test_strided_slice_with_negative_and_out_of_range_indices_matches_litert(begin, end, strides):
    check(strided([4, 6], begin, end, strides), [values([4, 6])])


@pytest.mark.parametrize("begin_mask, end_mask", [(1, 0), (0, 2), (3, 3), (2, 1)])
@pytest.mark.parametrize("strides", [[1, 2], [-1, -2]])
def test_strided_slice_with_begin_and_end_masks_matches_litert(begin_mask, end_mask, strides):
    m = strided([4, 6], [2, 4], [1, 1], strides, begin_mask=begin_mask, end_mask=end_mask)
    check(m, [values([4, 6])])


@pytest.mark.parametrize("begin, shrink", [([1, 2, 0], 1), ([-1, 0, 2], 5), ([0, -3, 1], 7), ([2, 1, 0], 2)])
def test_strided_slice_with_shrink_axis_mask_matches_litert(begin, shrink):
    m = strided([3, 4, 5], begin, [3, 4, 5], [1, 1, 1], shrink_axis_mask=shrink)
    check(m, [values([3, 4, 5])])


def test_strided_slice_with_fewer_indices_than_dims_keeps_the_rest_matches_litert():
    check(strided([4, 3, 2], [1], [3], [1]), [values([4, 3, 2])])


@pytest.mark.parametrize(
    "begin, end, strides, masks",
    [
        ([0, 1], [0, 2], [1, 1], dict(ellipsis_mask=1)),  # [..., 1:2]
        ([1, 0], [2, 0], [1, 1], dict(ellipsis_mask=2)),  # [1:2, ...]
        ([1, 0, 1], [2, 0, 3], [1, 1, 2], dict(ellipsis_mask=2)),  # [1:2, ..., 1:3:2]
        ([0, 1], [0, 2], [1, 1], dict(ellipsis_mask=1, shrink_axis_mask=2)),  # [..., 1]
        ([0], [0], [1], dict(ellipsis_mask=1)),  # [...]
    ],
)
def test_strided_slice_with_ellipsis_is_version_6_and_matches_litert(begin, end, strides, masks):
    m = strided([2, 3, 4, 5], begin, end, strides, **masks)
    assert version_of(m) == 6
    check(m, [values([2, 3, 4, 5])])


@pytest.mark.parametrize(
    "begin, end, strides, masks",
    [
        ([0, 0], [0, 3], [1, 1], dict(new_axis_mask=1)),  # [None, 0:3]
        ([0, 0, 0], [1, 0, 3], [1, 1, 1], dict(new_axis_mask=2)),  # [0:1, None, 0:3]
        ([0, 0, 1], [0, 0, 2], [1, 1, 1], dict(new_axis_mask=1, ellipsis_mask=2)),  # [None, ..., 1:2]
        ([0, 1, 0], [0, 2, 0], [1, 1, 1], dict(new_axis_mask=5, shrink_axis_mask=2)),  # [None, 1, None]
    ],
)
def test_strided_slice_with_new_axis_is_version_6_and_matches_litert(begin, end, strides, masks):
    m = strided([3, 4], begin, end, strides, **masks)
    assert version_of(m) == 6
    check(m, [values([3, 4])])


@pytest.mark.parametrize(
    "begin, size, strides",
    [([1, 0], [2, 3], [1, 1]), ([0, 2], [3, 2], [1, 1]), ([0, 0], [4, 6], [2, 4]), ([3, 5], [-2, -3], [-1, -2])],
)
def test_strided_slice_with_offset_reads_end_as_a_size_matches_litert(begin, size, strides):
    m = strided([4, 6], begin, size, strides, offset=True)
    assert version_of(m) == 8
    check(m, [values([4, 6])])


def test_strided_slice_with_offset_and_begin_as_model_input_has_a_static_shape_matches_litert():
    """The dynamic-slice pattern: runtime start, constant size."""
    m = single_op(B.STRIDED_SLICE, [In([5, 6]), In([2], np.int32), i32([2, 3]), i32([1, 1])], [([2, 3], np.float32)],
                  StridedSliceParams(offset=True))
    for begin in ([0, 0], [3, 3], [1, 2]):
        assert check(m, [values([5, 6]), i32(begin)])[0].shape == (2, 3)


def test_strided_slice_with_offset_running_past_the_input_fails_clearly():
    m = single_op(B.STRIDED_SLICE, [In([5, 6]), In([2], np.int32), i32([2, 3]), i32([1, 1])], [([2, 3], np.float32)],
                  StridedSliceParams(offset=True))
    assert_fails_clearly(m, "STRIDED_SLICE", inputs=[values([5, 6]), i32([4, 0])], match="only 1 remain")


def test_strided_slice_with_begin_and_end_as_model_inputs_is_dynamic_and_matches_litert():
    m = single_op(B.STRIDED_SLICE, [In([4, 6]), In([2], np.int32), In([2], np.int32), i32([1, -1])],
                  [([1], np.float32)])
    for begin, end in (([0, 5], [4, 0]), ([1, -1], [3, -7]), ([2, 2], [3, 0])):
        check(m, [values([4, 6]), i32(begin), i32(end)])


def test_strided_slice_with_zero_stride_fails_clearly():
    assert_fails_clearly(strided([4], [0], [4], [0]), "STRIDED_SLICE", match="contain 0")


def test_strided_slice_shrinking_an_out_of_range_index_fails_clearly():
    assert_fails_clearly(strided([4], [7], [8], [1], shrink_axis_mask=1), "STRIDED_SLICE", match="out of range")


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data())
def test_strided_slice_property_matches_litert(shape, data):
    rank = len(shape)
    n = data.draw(st.integers(1, rank))
    begin = [data.draw(st.integers(-d - 2, d + 2)) for d in shape[:n]]
    end = [data.draw(st.integers(-d - 2, d + 2)) for d in shape[:n]]
    strides = [data.draw(st.sampled_from([-3, -2, -1, 1, 2, 3])) for _ in range(n)]
    begin_mask = data.draw(st.integers(0, 2**n - 1))
    end_mask = data.draw(st.integers(0, 2**n - 1))
    shrink = data.draw(st.integers(0, 2**n - 1))
    # Shrinking needs a forward stride and an index inside the axis (or the begin mask);
    # TFLite leaves the output undefined otherwise (we raise).
    for i in range(n):
        if shrink >> i & 1:
            assume(strides[i] > 0 and (begin_mask >> i & 1 or -shape[i] <= begin[i] < shape[i]))
    m = strided(shape, begin, end, strides, begin_mask=begin_mask, end_mask=end_mask, shrink_axis_mask=shrink)
    check(m, [values(shape)])
