"""QUANTIZE against ai-edge-litert (reference kernels), bit-exact.

float32 -> uint8/int8/int16 per tensor (v1, v2) and per channel (v3); requantization
int8/uint8 -> int8/uint8, int16 -> int8/int16/int32, int32 -> int8/int16 (v1, v2).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_helpers import stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator, TensorType

T = TensorType
EXACT = {"rtol": 0, "atol": 0}
DTYPES = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16, T.INT32: np.int32, T.FLOAT32: np.float32}


def quantize_model(shape, in_type, out_type, out_quant, in_quant=None, version=None) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(shape), in_type, quantization=in_quant)
    y = graph.add_tensor("y", list(shape), out_type, quantization=out_quant)
    graph.add_operator(BuiltinOperator.QUANTIZE, [x], [y], version=version)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()



def full_range(dtype, shape, rng) -> np.ndarray:
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    values.reshape(-1)[:2] = [info.min, info.max][: values.size]
    return values


def floats_with_ties(shape, scale, rng) -> np.ndarray:
    """Random floats, some of which are exact halves of ``scale`` (ties for roundf)."""
    values = rng.uniform(-300, 300, size=shape).astype(np.float32) * np.float32(scale)
    ties = (rng.integers(-400, 400, size=shape) + np.float32(0.5)) * np.float32(scale)
    return np.where(rng.random(shape) < 0.3, ties, values).astype(np.float32)


@pytest.mark.parametrize(
    "out_type, zero_point, version",
    [(T.UINT8, 131, 1), (T.INT8, -7, 1), (T.INT16, 0, 2), (T.INT16, 37, 2)],
)
def test_quantize_float32_per_tensor_matches_litert(out_type, zero_point, version):
    rng = np.random.default_rng(1)
    scale = float(rng.uniform(0.001, 0.1))
    model = quantize_model((3, 7, 5), T.FLOAT32, out_type, quantization(scale, zero_point))
    assert stamped_version(model) == version
    assert_matches_litert(model, [floats_with_ties((3, 7, 5), scale, rng)], **EXACT)


def test_quantize_float32_exact_halves_round_away_from_zero():
    model = quantize_model((8,), T.FLOAT32, T.INT8, quantization(1.0, 0))
    values = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -126.5], np.float32)
    (ours,) = assert_matches_litert(model, [values], **EXACT)
    assert ours.tolist() == [1, -1, 2, -2, 3, -3, 0, -127]


@pytest.mark.parametrize("zero_point", [-5, 0, 5])
def test_quantize_float32_out_of_int32_and_nan_match_litert(zero_point):
    # Out-of-range quotients convert to INT32_MIN (x86) and the zero point wraps in int32.
    values = np.array([1e12, -1e12, np.inf, -np.inf, np.nan, 3e9, -2.1e9, 2.1e9, 1.0, -0.0], np.float32)
    for out_type in (T.INT8, T.INT16):
        model = quantize_model(values.shape, T.FLOAT32, out_type, quantization(1.0, zero_point))
        assert_matches_litert(model, [values], **EXACT)


@pytest.mark.parametrize("out_type", [T.INT8, T.UINT8, T.INT16])
def test_quantize_float32_with_the_smallest_normal_scale_matches_litert(out_type):
    # Half of this scale is subnormal: the kernel then divides by the scale itself.
    scale = float(np.finfo(np.float32).tiny)
    rng = np.random.default_rng(4)
    model = quantize_model((40,), T.FLOAT32, out_type, quantization(scale, 3))
    assert_matches_litert(model, [floats_with_ties((40,), scale, rng)], **EXACT)


@pytest.mark.parametrize("zero_point", [-5, 0, 5])
def test_quantize_float32_large_finite_quotients_match_litert(zero_point):
    # Around the int32 limits of the rounded quotient (the fast path's check fails
    # there and the exact path runs), with ordinary values beside them.
    values = np.array([2.0**31, -(2.0**31), 2.0**31 - 128, -(2.0**31) + 128, 2.0**30, -(2.0**30), 7.5, -7.5], np.float32)
    for out_type in (T.INT8, T.UINT8, T.INT16):
        zp = zero_point + (128 if out_type == T.UINT8 else 0)
        model = quantize_model(values.shape, T.FLOAT32, out_type, quantization(1.0, zp))
        assert_matches_litert(model, [values], **EXACT)
        inside = np.array([2.0**29, -(2.0**29), 2.0**29 - 32, -(2.0**29) + 32, 0.5, -0.5, 7.5, -7.5], np.float32)
        assert_matches_litert(model, [inside], **EXACT)  # (the fast path)


@pytest.mark.parametrize("out_type", [T.INT8, T.UINT8, T.INT16])
@pytest.mark.parametrize("axis", [0, 2])
def test_quantize_float32_per_channel_is_version_3_and_matches_litert(out_type, axis):
    rng = np.random.default_rng(2)
    shape = (4, 3, 5)
    scales = rng.uniform(0.001, 0.1, size=shape[axis])
    zero_points = rng.integers(-20, 20, size=shape[axis]) + (128 if out_type == T.UINT8 else 0)
    if out_type == T.INT16:
        zero_points[:] = 0
    model = quantize_model(shape, T.FLOAT32, out_type, quantization(scales, zero_points, quantized_dimension=axis))
    assert stamped_version(model) == 3
    assert_matches_litert(model, [floats_with_ties(shape, float(scales.mean()), rng)], **EXACT)


REQUANTIZE_CASES = {
    # name: (input type, input quant, output type, output quant, version)
    "int8_to_int8": (T.INT8, quantization(0.0371, -3), T.INT8, quantization(0.0123, 11), 1),
    "int8_to_uint8": (T.INT8, quantization(0.05, -1), T.UINT8, quantization(0.031, 130), 1),
    "uint8_to_int8": (T.UINT8, quantization(0.02, 125), T.INT8, quantization(0.07, -9), 1),
    "uint8_to_uint8": (T.UINT8, quantization(0.5, 7), T.UINT8, quantization(0.75, 200), 1),
    "int8_to_uint8_same_scale_xor": (T.INT8, quantization(0.1, 0), T.UINT8, quantization(0.1, 128), 1),
    "uint8_to_int8_same_scale_xor": (T.UINT8, quantization(0.1, 128), T.INT8, quantization(0.1, 0), 1),
    "int16_to_int16": (T.INT16, quantization(3.1e-4, 0), T.INT16, quantization(1.7e-4, 0), 2),
    "int16_to_int8": (T.INT16, quantization(3.1e-4, 0), T.INT8, quantization(0.05, 4), 1),
    "int16_to_int32": (T.INT16, quantization(3.1e-4, 2), T.INT32, quantization(1.3e-5, -3), 1),
    "int32_to_int8": (T.INT32, quantization(1e-4, 7), T.INT8, quantization(0.05, -2), 1),
    "int32_to_int16": (T.INT32, quantization(1e-5, 0), T.INT16, quantization(3e-4, 0), 2),
    "int8_to_int8_multiplier_above_one": (T.INT8, quantization(0.3, 2), T.INT8, quantization(0.0123, -1), 1),
}


@pytest.mark.parametrize("case", list(REQUANTIZE_CASES))
def test_requantize_matches_litert(case):
    in_type, in_quant, out_type, out_quant, version = REQUANTIZE_CASES[case]
    rng = np.random.default_rng(3)
    shape = (6, 50)
    model = quantize_model(shape, in_type, out_type, out_quant, in_quant)
    assert stamped_version(model) == version
    if in_type == T.INT32:
        values = rng.integers(-(2**20), 2**20, size=shape).astype(np.int32)
        values.reshape(-1)[:2] = [-(2**31), 2**31 - 1]
    else:
        values = full_range(DTYPES[in_type], shape, rng)
    assert_matches_litert(model, [values], **EXACT)


@settings(max_examples=25, deadline=None)
@given(
    in_scale=st.floats(1e-3, 1.0),
    out_scale=st.floats(1e-3, 1.0),
    in_zp=st.integers(-128, 127),
    out_zp=st.integers(-128, 127),
    seed=st.integers(0, 2**16),
)
def test_requantize_int8_to_int8_matches_litert_for_any_scales(in_scale, out_scale, in_zp, out_zp, seed):
    model = quantize_model((256,), T.INT8, T.INT8, quantization(out_scale, out_zp), quantization(in_scale, in_zp))
    values = np.arange(-128, 128, dtype=np.int8)
    np.random.default_rng(seed).shuffle(values)
    assert_matches_litert(model, [values], **EXACT)


@settings(max_examples=25, deadline=None)
@given(
    scale=st.floats(1e-4, 10.0),
    zero_point=st.integers(-128, 127),
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_quantize_float32_to_int8_matches_litert_for_any_params(scale, zero_point, shape, seed):
    rng = np.random.default_rng(seed)
    model = quantize_model(shape, T.FLOAT32, T.INT8, quantization(scale, zero_point))
    assert_matches_litert(model, [floats_with_ties(tuple(shape), scale, rng)], **EXACT)


def test_quantize_rejects_a_float32_output_naming_the_op():
    model = quantize_model((4,), T.INT8, T.FLOAT32, None, quantization(0.1, 0), version=1)
    with pytest.raises(KernelError, match="QUANTIZE"):
        Interpreter(model_content=model).allocate_tensors()


def test_quantize_rejects_requantizing_int8_to_int16_naming_the_op():
    model = quantize_model((4,), T.INT8, T.INT16, quantization(0.1, 0), quantization(0.1, 0), version=2)
    with pytest.raises(KernelError, match="QUANTIZE"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize(
    "out_type, out_quant, claimed",
    [(T.INT16, quantization(0.01, 0), 1), (T.INT8, quantization([0.1, 0.2], [0, 0], quantized_dimension=1), 2)],
)
def test_quantize_under_stamped_node_runs_as_litert_runs_it(out_type, out_quant, claimed):
    model = quantize_model((3, 2), T.FLOAT32, out_type, out_quant, version=claimed)
    assert stamped_version(model) == claimed
    rng = np.random.default_rng(7)
    assert_matches_litert(model, [floats_with_ties((3, 2), 0.05, rng)], **EXACT)


# -- float32 -> int4 (v4) and uint4 (v5), per tensor; v6 ----------------------------------------


@pytest.mark.parametrize("out_type, zero_point, version", [(T.INT4, 0, 4), (T.INT4, -3, 4), (T.UINT4, 7, 5)],
                         ids=["int4", "int4-zero-point", "uint4"])
def test_quantize_float32_to_a_sub_byte_type_clamps_to_its_range_and_matches_litert(out_type, zero_point, version):
    rng = np.random.default_rng(4)
    scale = 0.37
    model = quantize_model((3, 7, 5), T.FLOAT32, out_type, quantization(scale, zero_point))
    assert stamped_version(model) == version
    values = floats_with_ties((3, 7, 5), scale, rng) / np.float32(20)  # mostly inside the 16 steps, some beyond
    ours = assert_matches_litert(model, [values], **EXACT)
    low, high = (-8, 7) if out_type == T.INT4 else (0, 15)
    assert ours[0].min() == low and ours[0].max() == high


def test_quantize_version_6_node_runs_the_same_kernel_matching_litert():
    # LiteRT 2.3 registers v6 (TFLite's rules never give it) with the kernel of the others.
    model = quantize_model((4, 5), T.FLOAT32, T.INT4, quantization(0.5, 0), version=6)
    assert stamped_version(model) == 6
    assert_matches_litert(model, [np.linspace(-6, 6, 20, dtype=np.float32).reshape(4, 5)], **EXACT)


def test_quantize_to_int4_per_channel_fails_naming_the_op_as_litert_refuses_it():
    model = quantize_model((2, 3), T.FLOAT32, T.INT4, quantization([0.5, 0.25], [0, 0], quantized_dimension=0))
    with pytest.raises(KernelError, match="QUANTIZE v4.*per-channel INT4 output"):
        Interpreter(model_content=model).allocate_tensors()
