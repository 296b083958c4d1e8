"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR against LiteRT's reference kernels.

Integer outputs must be bit-exact, which checks that the source coordinates and the
rounding follow TFLite's float32 / fixed-point arithmetic exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import assert_matches_litert
from schema.builder import quantization
from schema.enums import BuiltinOperator as B
from schema.params import ResizeBilinearParams, ResizeNearestNeighborParams
from test_reshape import In, assert_fails_clearly, single_op, values, version_of

i32 = lambda v: np.array(v, np.int32)  # noqa: E731
TYPES = [np.float32, np.uint8, np.int8, np.int16]


def resize(op, shape, size, dtype=np.float32, **params):
    q = quantization(0.5, 0) if dtype in (np.int8, np.int16) else None
    params_type = ResizeBilinearParams if op == B.RESIZE_BILINEAR else ResizeNearestNeighborParams
    out = [shape[0], *size, shape[3]]
    outputs = [(out, dtype, q) if q else (out, dtype)]
    return single_op(op, [In(shape, dtype, q), i32(size)], outputs, params_type(**params))


def full_range(shape, dtype, seed=0):
    """Values over the type's whole range (to exercise rounding and overflow)."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-10, 10, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


# -- RESIZE_BILINEAR ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype, version", [(np.float32, 1), (np.uint8, 1), (np.int8, 2), (np.int16, 4)])
def test_resize_bilinear_of_each_type_matches_litert(dtype, version):
    m = resize(B.RESIZE_BILINEAR, [1, 3, 4, 2], [5, 7], dtype)
    assert version_of(m) == version
    assert_matches_litert(m, [full_range([1, 3, 4, 2], dtype)])


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("size", [[6, 8], [2, 3], [1, 1], [3, 4], [7, 2]])
@pytest.mark.parametrize("align_corners, half_pixel_centers", [(False, False), (True, False), (False, True)])
def test_resize_bilinear_with_each_coordinate_mode_matches_litert(dtype, size, align_corners, half_pixel_centers):
    m = resize(B.RESIZE_BILINEAR, [2, 3, 4, 3], size, dtype, align_corners=align_corners,
               half_pixel_centers=half_pixel_centers)
    if half_pixel_centers:
        assert version_of(m) == (4 if dtype == np.int16 else 3)
    assert_matches_litert(m, [full_range([2, 3, 4, 3], dtype, seed=sum(size))])


def test_resize_bilinear_with_size_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.RESIZE_BILINEAR, [In([1, 3, 3, 1]), In([2], np.int32)], [([1, 1, 1, 1], np.float32)],
                  ResizeBilinearParams(half_pixel_centers=True))
    for size in ([6, 6], [2, 5], [3, 3]):
        assert_matches_litert(m, [values([1, 3, 3, 1]), i32(size)])


def test_resize_bilinear_with_align_corners_and_half_pixel_centers_fails_clearly():
    m = resize(B.RESIZE_BILINEAR, [1, 2, 2, 1], [4, 4], align_corners=True, half_pixel_centers=True)
    assert_fails_clearly(m, "RESIZE_BILINEAR", match="cannot both be true")


def test_resize_bilinear_of_non_4d_input_fails_clearly():
    m = single_op(B.RESIZE_BILINEAR, [In([2, 2, 1]), i32([4, 4])], [([1], np.float32)])
    assert_fails_clearly(m, "RESIZE_BILINEAR", match="4-D")


@settings(max_examples=30, deadline=None)
@given(
    dtype=st.sampled_from(TYPES),
    in_size=st.lists(st.integers(1, 9), min_size=2, max_size=2),
    out_size=st.lists(st.integers(1, 17), min_size=2, max_size=2),
    mode=st.sampled_from([(False, False), (True, False), (False, True)]),
)
def test_resize_bilinear_property_matches_litert(dtype, in_size, out_size, mode):
    shape = [1, *in_size, 2]
    m = resize(B.RESIZE_BILINEAR, shape, out_size, dtype, align_corners=mode[0], half_pixel_centers=mode[1])
    assert_matches_litert(m, [full_range(shape, dtype, seed=sum(out_size))])


# -- RESIZE_NEAREST_NEIGHBOR --------------------------------------------------------------


@pytest.mark.parametrize("dtype, version", [(np.float32, 1), (np.uint8, 1), (np.int8, 2), (np.int16, 4)])
def test_resize_nearest_neighbor_of_each_type_matches_litert(dtype, version):
    m = resize(B.RESIZE_NEAREST_NEIGHBOR, [1, 3, 4, 2], [5, 7], dtype)
    assert version_of(m) == version
    assert_matches_litert(m, [full_range([1, 3, 4, 2], dtype)])


@pytest.mark.parametrize("size", [[6, 8], [2, 3], [1, 1], [3, 4], [7, 2], [9, 11]])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("half_pixel_centers", [False, True])
def test_resize_nearest_neighbor_with_each_coordinate_mode_matches_litert(size, align_corners, half_pixel_centers):
    m = resize(B.RESIZE_NEAREST_NEIGHBOR, [2, 3, 4, 3], size, align_corners=align_corners,
               half_pixel_centers=half_pixel_centers)
    if align_corners or half_pixel_centers:
        assert version_of(m) == 3
    assert_matches_litert(m, [full_range([2, 3, 4, 3], np.float32)])


def test_resize_nearest_neighbor_with_size_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.RESIZE_NEAREST_NEIGHBOR, [In([1, 3, 3, 1]), In([2], np.int32)], [([1, 1, 1, 1], np.float32)])
    for size in ([6, 6], [2, 5]):
        assert_matches_litert(m, [values([1, 3, 3, 1]), i32(size)])


@settings(max_examples=30, deadline=None)
@given(
    in_size=st.lists(st.integers(1, 9), min_size=2, max_size=2),
    out_size=st.lists(st.integers(1, 17), min_size=2, max_size=2),
    align_corners=st.booleans(),
    half_pixel_centers=st.booleans(),
)
def test_resize_nearest_neighbor_property_matches_litert(in_size, out_size, align_corners, half_pixel_centers):
    shape = [1, *in_size, 1]
    m = resize(B.RESIZE_NEAREST_NEIGHBOR, shape, out_size, np.int8, align_corners=align_corners,
               half_pixel_centers=half_pixel_centers)
    assert_matches_litert(m, [full_range(shape, np.int8)])
