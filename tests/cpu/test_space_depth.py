"""DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND against LiteRT's
reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import MODELS_DIR, assert_matches_litert
from schema.builder import quantization
from schema.enums import BuiltinOperator as B
from schema.params import DepthToSpaceParams, SpaceToDepthParams
from test_reshape import (
    In,
    assert_fails_clearly,
    assert_matches_litert_builtin,
    single_op,
    skip_unless_runnable,
    values,
    version_of,
)

i32 = lambda v: np.array(v, np.int32)  # noqa: E731

# -- DEPTH_TO_SPACE / SPACE_TO_DEPTH ------------------------------------------------------

DEPTH_TYPES = [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.int8, 2)]


@pytest.mark.parametrize("dtype, version", DEPTH_TYPES)
def test_depth_to_space_of_each_type_matches_litert(dtype, version):
    m = single_op(B.DEPTH_TO_SPACE, [In([1, 2, 3, 8], dtype)], [([1, 4, 6, 2], dtype)],
                  DepthToSpaceParams(block_size=2))
    assert version_of(m) == version
    # LiteRT's BUILTIN_REF resolver has only DEPTH_TO_SPACE v1; v2 (int8) runs on the default
    # resolver's depth_to_space.cc kernel (it only moves values, so the result is exact).
    check = assert_matches_litert if version == 1 else assert_matches_litert_builtin
    check(m, [values([1, 2, 3, 8], dtype)])


@pytest.mark.parametrize("dtype, version", DEPTH_TYPES)
def test_space_to_depth_of_each_type_matches_litert(dtype, version):
    m = single_op(B.SPACE_TO_DEPTH, [In([1, 4, 6, 2], dtype)], [([1, 2, 3, 8], dtype)],
                  SpaceToDepthParams(block_size=2))
    assert version_of(m) == version
    assert_matches_litert(m, [values([1, 4, 6, 2], dtype)])


@pytest.mark.parametrize("block", [1, 3])
def test_depth_to_space_and_back_with_other_blocks_matches_litert(block):
    shape = [2, 2, 3, 2 * block * block]
    m = single_op(B.DEPTH_TO_SPACE, [In(shape)], [([1], np.float32)], DepthToSpaceParams(block_size=block))
    assert_matches_litert(m, [values(shape)])
    shape = [2, 3 * block, 2 * block, 3]
    m = single_op(B.SPACE_TO_DEPTH, [In(shape)], [([1], np.float32)], SpaceToDepthParams(block_size=block))
    assert_matches_litert(m, [values(shape)])


def test_depth_to_space_with_depth_not_divisible_fails_clearly():
    m = single_op(B.DEPTH_TO_SPACE, [In([1, 2, 2, 6])], [([1], np.float32)], DepthToSpaceParams(block_size=2))
    assert_fails_clearly(m, "DEPTH_TO_SPACE", match="not a multiple")


def test_space_to_depth_with_size_not_divisible_fails_clearly():
    m = single_op(B.SPACE_TO_DEPTH, [In([1, 3, 2, 1])], [([1], np.float32)], SpaceToDepthParams(block_size=2))
    assert_fails_clearly(m, "SPACE_TO_DEPTH", match="multiples of block_size")


# -- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND ------------------------------------------------

BATCH_TYPES = [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.int8, 2), (np.int16, 4)]


@pytest.mark.parametrize("dtype, version", BATCH_TYPES)
def test_space_to_batch_nd_of_each_type_matches_litert(dtype, version):
    m = single_op(B.SPACE_TO_BATCH_ND, [In([2, 3, 4, 2], dtype), i32([2, 2]), i32([[1, 0], [0, 2]])],
                  [([8, 2, 3, 2], dtype)])
    assert version_of(m) == version
    assert_matches_litert(m, [values([2, 3, 4, 2], dtype)])


@pytest.mark.parametrize("dtype, version", BATCH_TYPES)
def test_batch_to_space_nd_of_each_type_matches_litert(dtype, version):
    m = single_op(B.BATCH_TO_SPACE_ND, [In([8, 2, 3, 2], dtype), i32([2, 2]), i32([[1, 0], [0, 2]])],
                  [([2, 3, 4, 2], dtype)])
    assert version_of(m) == version
    assert_matches_litert(m, [values([8, 2, 3, 2], dtype)])


def test_space_to_batch_nd_of_3d_input_is_version_3_and_matches_litert():
    m = single_op(B.SPACE_TO_BATCH_ND, [In([2, 5, 3]), i32([3]), i32([[1, 0]])], [([6, 2, 3], np.float32)])
    assert version_of(m) == 3
    assert_matches_litert(m, [values([2, 5, 3])])


def test_batch_to_space_nd_of_3d_input_is_version_3_and_matches_litert():
    m = single_op(B.BATCH_TO_SPACE_ND, [In([6, 2, 3]), i32([3]), i32([[1, 0]])], [([2, 5, 3], np.float32)])
    assert version_of(m) == 3
    assert_matches_litert(m, [values([6, 2, 3])])


@pytest.mark.parametrize("dtype, zero_point", [(np.int8, -7), (np.uint8, 140)])
def test_space_to_batch_nd_of_quantized_tensors_pads_with_the_zero_point_matches_litert(dtype, zero_point):
    q = quantization(0.5, zero_point)
    m = single_op(B.SPACE_TO_BATCH_ND, [In([1, 3, 3, 1], dtype, q), i32([2, 2]), i32([[1, 0], [1, 0]])],
                  [([4, 2, 2, 1], dtype, q)])
    ours = assert_matches_litert(m, [values([1, 3, 3, 1], dtype)])
    assert ours[0][0, 0, 0, 0] == zero_point


def test_space_to_batch_nd_of_int8_with_different_output_quantization_fails_clearly():
    m = single_op(B.SPACE_TO_BATCH_ND, [In([1, 2, 2, 1], np.int8, quantization(0.5, 0)), i32([2, 2]),
                                        i32([[0, 0], [0, 0]])], [([4, 1, 1, 1], np.int8, quantization(0.25, 0))])
    assert_fails_clearly(m, "SPACE_TO_BATCH_ND", match="requires them equal")


def test_space_to_batch_nd_with_indivisible_padded_size_fails_clearly():
    m = single_op(B.SPACE_TO_BATCH_ND, [In([1, 3, 4, 1]), i32([2, 2]), i32([[0, 0], [0, 0]])], [([1], np.float32)])
    assert_fails_clearly(m, "SPACE_TO_BATCH_ND", match="not a multiple")


def test_batch_to_space_nd_with_negative_crops_fails_clearly():
    m = single_op(B.BATCH_TO_SPACE_ND, [In([4, 1, 1, 1]), i32([2, 2]), i32([[0, -1], [0, 0]])], [([1], np.float32)])
    assert_fails_clearly(m, "BATCH_TO_SPACE_ND", match="must not be negative")


def test_space_to_batch_converter_model_matches_litert():
    path = MODELS_DIR / "converter" / "space_to_batch_float32.tflite"
    skip_unless_runnable(path)
    assert_matches_litert(path)


@settings(max_examples=30, deadline=None)
@given(block=st.lists(st.integers(1, 3), min_size=2, max_size=2), data=st.data())
def test_space_to_batch_and_back_property_matches_litert(block, data):
    n, c = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    h, w = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    pads = []
    for size, b in zip((h, w), block):
        before = data.draw(st.integers(0, 2))
        after = (-(size + before)) % b + b * data.draw(st.integers(0, 1))
        pads.append([before, after])
    m = single_op(B.SPACE_TO_BATCH_ND, [In([n, h, w, c]), i32(block), i32(pads)], [([1], np.float32)])
    assert_matches_litert(m, [values([n, h, w, c])])
    batch_in = [n * block[0] * block[1], data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)), c]
    crops = [[data.draw(st.integers(0, 1)), 0] for _ in range(2)]
    crops = [[min(a, batch_in[1 + i] * block[i] - 1), 0] for i, (a, _) in enumerate(crops)]
    m = single_op(B.BATCH_TO_SPACE_ND, [In(batch_in), i32(block), i32(crops)], [([1], np.float32)])
    assert_matches_litert(m, [values(batch_in)])
