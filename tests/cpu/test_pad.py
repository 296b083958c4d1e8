"""PAD, PADV2, MIRROR_PAD against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import MODELS_DIR, assert_matches_litert
from schema.builder import quantization
from schema.enums import BuiltinOperator as B
from schema.enums import MirrorPadMode
from schema.params import MirrorPadParams
from test_reshape import (
    In,
    assert_fails_clearly,
    assert_matches_litert_builtin,
    single_op,
    skip_unless_runnable,
    values,
    version_of,
)

PADS = np.array([[1, 0], [2, 1]], np.int32)

# -- PAD / PADV2 --------------------------------------------------------------------------


@pytest.mark.parametrize("op", [B.PAD, B.PADV2])
@pytest.mark.parametrize(
    "dtype, version",
    [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.int8, 2), (np.int16, 3), (np.bool_, 5)],
)
def test_pad_of_each_type_matches_litert(op, dtype, version):
    m = single_op(op, [In([2, 3], dtype), PADS], [([3, 6], dtype)])
    assert version_of(m) == version
    # LiteRT's BUILTIN_REF resolver stops at PAD/PADV2 v4; v5 (bool) runs on the default
    # resolver's pad.cc kernel (optimized copy loops; padding only moves values, so exact).
    check = assert_matches_litert if version <= 4 else assert_matches_litert_builtin
    check(m, [values([2, 3], dtype)])


@pytest.mark.parametrize("op", [B.PAD, B.PADV2])
def test_pad_of_5d_input_is_version_4_and_matches_litert(op):
    pads = np.array([[0, 1], [1, 0], [0, 0], [2, 2], [1, 1]], np.int32)
    m = single_op(op, [In([1, 2, 3, 2, 1]), pads], [([2, 3, 3, 6, 3], np.float32)])
    assert version_of(m) == 4
    assert_matches_litert(m, [values([1, 2, 3, 2, 1])])


@pytest.mark.parametrize("pad_dtype", [np.int32, np.int64, np.int8, np.int16])
def test_pad_with_each_paddings_type_matches_litert(pad_dtype):
    m = single_op(B.PAD, [In([2, 3]), PADS.astype(pad_dtype)], [([3, 6], np.float32)])
    assert_matches_litert(m, [values([2, 3])])


def test_pad_image_style_nhwc_matches_litert():
    pads = np.array([[0, 0], [1, 2], [3, 0], [0, 0]], np.int32)
    m = single_op(B.PAD, [In([2, 3, 4, 2]), pads], [([2, 6, 7, 2], np.float32)])
    assert_matches_litert(m, [values([2, 3, 4, 2])])


def test_pad_with_paddings_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.PAD, [In([2, 3]), In([2, 2], np.int32)], [([1, 1], np.float32)])
    for pads in ([[0, 0], [0, 0]], [[1, 2], [0, 3]], [[2, 0], [1, 1]]):
        assert_matches_litert(m, [values([2, 3]), np.array(pads, np.int32)])


@pytest.mark.parametrize("dtype, zero_point", [(np.int8, -5), (np.uint8, 130), (np.int16, 0)])
def test_pad_of_quantized_tensors_pads_with_the_zero_point_matches_litert(dtype, zero_point):
    q = quantization(0.5, zero_point)
    m = single_op(B.PAD, [In([2, 3], dtype, q), PADS], [([3, 6], dtype, q)])
    ours = assert_matches_litert(m, [values([2, 3], dtype)])
    assert ours[0][0, 0] == zero_point


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.bool_])
def test_padv2_pads_with_the_constant_value_matches_litert(dtype):
    value = np.array(True if dtype == np.bool_ else 7, dtype)
    m = single_op(B.PADV2, [In([2, 3], dtype), PADS, value], [([3, 6], dtype)])
    check = assert_matches_litert if version_of(m) <= 4 else assert_matches_litert_builtin
    check(m, [values([2, 3], dtype)])


def test_padv2_with_the_value_as_model_input_matches_litert():
    m = single_op(B.PADV2, [In([2, 3]), PADS, In([], np.float32)], [([3, 6], np.float32)])
    for value in (-1.5, 4.0):
        assert_matches_litert(m, [values([2, 3]), np.array(value, np.float32)])


def test_padv2_of_int8_with_quantized_value_matches_litert():
    q = quantization(0.25, 3)
    value = np.array(-7, np.int8)
    from schema.builder import ModelBuilder

    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 3], np.int8, quantization=q)
    v = g.add_constant("v", value, quantization=q)
    y = g.add_tensor("y", [3, 6], np.int8, quantization=q)
    g.add_operator(B.PADV2, [x, g.add_constant("p", PADS), v], [y])
    g.add_output(y)
    builder.add_signature("serving_default", g)
    ours = assert_matches_litert(builder.build(), [values([2, 3], np.int8)])
    assert ours[0][0, 0] == -7


def test_padv2_of_int8_with_value_in_another_scale_fails_clearly():
    from schema.builder import ModelBuilder

    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 3], np.int8, quantization=quantization(0.25, 3))
    v = g.add_constant("v", np.array(1, np.int8), quantization=quantization(0.5, 3))
    y = g.add_tensor("y", [3, 6], np.int8, quantization=quantization(0.25, 3))
    g.add_operator(B.PADV2, [x, g.add_constant("p", PADS), v], [y])
    g.add_output(y)
    assert_fails_clearly(builder.build(), "PADV2", match="requires them equal")


def test_pad_with_negative_paddings_fails_clearly():
    m = single_op(B.PAD, [In([2, 3]), np.array([[0, -1], [0, 0]], np.int32)], [([1, 3], np.float32)])
    assert_fails_clearly(m, "PAD", match="negative")


def test_pad_converter_model_matches_litert():
    path = MODELS_DIR / "converter" / "pad_float32.tflite"
    skip_unless_runnable(path)
    assert_matches_litert(path)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_pad_property_matches_litert(shape, data):
    pads = [[data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))] for _ in shape]
    out_shape = [d + a + b for d, (a, b) in zip(shape, pads)]
    m = single_op(B.PAD, [In(shape), np.array(pads, np.int32)], [(out_shape, np.float32)])
    assert_matches_litert(m, [values(shape)])


# -- MIRROR_PAD ---------------------------------------------------------------------------

MODES = [MirrorPadMode.REFLECT, MirrorPadMode.SYMMETRIC]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "dtype, version", [(np.float32, 1), (np.int32, 1), (np.int64, 1), (np.uint8, 1), (np.int8, 2), (np.int16, 3)]
)
def test_mirror_pad_of_each_type_matches_litert(mode, dtype, version):
    m = single_op(B.MIRROR_PAD, [In([3, 4], dtype), PADS], [([4, 7], dtype)], MirrorPadParams(mode=mode))
    assert version_of(m) == version
    assert_matches_litert(m, [values([3, 4], dtype)])


@pytest.mark.parametrize(
    "mode, pads", [(MirrorPadMode.REFLECT, [[2, 2], [3, 3]]), (MirrorPadMode.SYMMETRIC, [[3, 3], [4, 4]])]
)
def test_mirror_pad_with_the_largest_paddings_matches_litert(mode, pads):
    m = single_op(B.MIRROR_PAD, [In([3, 4]), np.array(pads, np.int64)], [([1], np.float32)], MirrorPadParams(mode=mode))
    assert_matches_litert(m, [values([3, 4])])


def test_mirror_pad_with_paddings_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.MIRROR_PAD, [In([3, 4]), In([2, 2], np.int32)], [([1], np.float32)],
                  MirrorPadParams(mode=MirrorPadMode.REFLECT))
    for pads in ([[0, 0], [0, 0]], [[2, 1], [0, 3]]):
        assert_matches_litert(m, [values([3, 4]), np.array(pads, np.int32)])


def test_mirror_pad_of_int8_with_different_output_quantization_fails_clearly():
    m = single_op(B.MIRROR_PAD, [In([3, 4], np.int8, quantization(0.5, 1)), PADS],
                  [([4, 7], np.int8, quantization(0.5, 2))], MirrorPadParams())
    assert_fails_clearly(m, "MIRROR_PAD", match="requires them equal")


def test_mirror_pad_reflect_wider_than_the_input_fails_clearly():
    m = single_op(B.MIRROR_PAD, [In([3, 4]), np.array([[3, 0], [0, 0]], np.int32)], [([6, 4], np.float32)],
                  MirrorPadParams(mode=MirrorPadMode.REFLECT))
    assert_fails_clearly(m, "MIRROR_PAD", match="larger than 2")


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), mode=st.sampled_from(MODES), data=st.data())
def test_mirror_pad_property_matches_litert(shape, mode, data):
    edge = 1 if mode == MirrorPadMode.REFLECT else 0
    pads = [[data.draw(st.integers(0, d - edge)), data.draw(st.integers(0, d - edge))] for d in shape]
    m = single_op(B.MIRROR_PAD, [In(shape), np.array(pads, np.int32)], [([1], np.float32)], MirrorPadParams(mode=mode))
    assert_matches_litert(m, [values(shape)])
