"""The quantized elementwise kernels (``int8_elementwise.cu``) and their numpy twins
(``backends/gpu/cuda/int8_elementwise.py``): each twin computes what its kernel computes
(the kernel built for the CPU by the host shim, on the emulated CUDA device), bit for bit,
in one launch, and both equal the CPU kernels' arithmetic (``compute`` of the configured
CPU kernel, ``quantize_quotient``, ``dequantize_affine``: TFLite's reference semantics,
themselves tested against BUILTIN_REF in tests/cpu). The ops end to end against the oracle
are in test_quantized_arithmetic.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from backends.cpu.kernels.dequantize import dequantize_affine
from backends.cpu.kernels.quantize import quantize_quotient
from backends.cpu.quantization import quantize_multiplier
from backends.gpu.cuda.int8_elementwise import (
    BINARY_OPS,
    ChannelLayout,
    DequantizeCuda,
    LookupCuda,
    PairLookupCuda,
    QuantizeCuda,
    QuantizedBinaryCuda,
    QuantizedBinaryParams,
    channel_parameters,
)
from backends.gpu.cuda.sources import read_source
from kernel_twin import assert_twin_matches, run_both_ways

RNG = np.random.default_rng(23)
SOURCE = "int8_elementwise.cu"


def full_range(dtype, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    values = RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    values.reshape(-1)[:2] = [info.min, info.max][: values.size]
    return values


def test_the_binary_op_codes_match_the_kernel_enum():
    text = read_source(SOURCE)
    for name, code in BINARY_OPS.items():
        assert re.search(rf"QUANTIZED_{name} = {code},", text), name


def add_params(op: str, dtype, s1=0.05, s2=0.02, so=0.07, z=(3, -5, 2), bounds=None) -> QuantizedBinaryParams:
    """ADD / SUB parameters as TFLite's Prepare computes them (the CPU kernel's formulas)."""
    twice_max = 2.0 * max(s1, s2)
    m1, m2 = quantize_multiplier(s1 / twice_max), quantize_multiplier(s2 / twice_max)
    mo = quantize_multiplier(twice_max / (float(1 << 20) * so))
    info = np.iinfo(dtype)
    if dtype == np.uint8:
        z = tuple(abs(v) for v in z)
    return QuantizedBinaryParams(op, (-z[0], -z[1], z[2]), m1, m2, mo, bounds or (int(info.min), int(info.max)))


def mul_params(dtype, real=0.0123, z=(1, -2, 4), bounds=None) -> QuantizedBinaryParams:
    info = np.iinfo(dtype)
    if dtype == np.uint8:
        z = tuple(abs(v) for v in z)
    return QuantizedBinaryParams("MUL", (-z[0], -z[1], z[2]), (0, 0), (0, 0), quantize_multiplier(real), bounds or (int(info.min), int(info.max)))


def reference_binary(a: np.ndarray, b: np.ndarray, p: QuantizedBinaryParams) -> np.ndarray:
    """The CPU kernel's formulas, written out with ``multiply_by_quantized_multiplier``."""
    from backends.cpu.quantization import multiply_by_quantized_multiplier as M

    x, y = a.astype(np.int64) + p.offsets[0], b.astype(np.int64) + p.offsets[1]
    if p.op == "MUL":
        raw = M(x * y, *p.out)
    else:
        sx, sy = M(x << 20, *p.a), M(y << 20, *p.b)
        raw = M(sx - sy if p.op == "SUB" else sx + sy, *p.out)
    return np.clip(raw + p.offsets[2], *p.bounds)


BROADCAST_SHAPES = [
    ((2, 3, 4, 5), (2, 3, 4, 5)),
    ((2, 3, 4, 5), (5,)),
    ((1, 3, 1, 5), (2, 1, 4, 1)),
    ((4, 1), (1, 6)),
    ((7,), ()),
    ((), (3, 2)),
]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("a_shape, b_shape", BROADCAST_SHAPES, ids=str)
def test_binary_twin_matches_the_kernel_and_the_cpu_arithmetic(a_shape, b_shape, op, dtype):
    params = mul_params(dtype) if op == "MUL" else add_params(op, dtype)
    a, b = full_range(dtype, a_shape), full_range(dtype, b_shape)
    both = run_both_ways(lambda **where: QuantizedBinaryCuda(params, dtype, **where), SOURCE, [a, b])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.kernel[0], reference_binary(a, b, params).astype(dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_binary_saturates_and_clamps_to_the_fused_activation(dtype):
    # A large multiplier saturates most outputs; a narrow clamp as a RELU6 would give.
    params = mul_params(dtype, real=3.7, bounds=(int(np.iinfo(dtype).min) + 100, int(np.iinfo(dtype).max) - 50))
    a, b = full_range(dtype, (3, 4, 5, 6)), full_range(dtype, (1, 4, 1, 6))
    both = run_both_ways(lambda **where: QuantizedBinaryCuda(params, dtype, **where), SOURCE, [a, b])
    assert_twin_matches(both)
    expected = reference_binary(a, b, params)
    np.testing.assert_array_equal(both.kernel[0], expected.astype(dtype))
    assert (expected == params.bounds[0]).any() and (expected == params.bounds[1]).any()


def test_mul_with_a_left_shift_multiplier_matches_the_cpu():
    params = mul_params(np.int8, real=5.25)  # v3: s1 * s2 / s_out above 1
    assert params.out[1] > 0
    a, b = full_range(np.int8, (64,)), full_range(np.int8, (64,))
    both = run_both_ways(lambda **where: QuantizedBinaryCuda(params, np.int8, **where), SOURCE, [a, b])
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.kernel[0], reference_binary(a, b, params).astype(np.int8))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_lookup_reads_the_table_at_the_input_bits(dtype):
    table = full_range(dtype, (256,))
    x = np.arange(256, dtype=np.uint8).view(dtype).reshape(4, 64)
    both = run_both_ways(lambda **where: LookupCuda(**where), SOURCE, [x, table])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.kernel[0], table[x.view(np.uint8)])


def special_floats(shape) -> np.ndarray:
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    flat = x.reshape(-1)
    flat[:10] = [np.nan, np.inf, -np.inf, 0.5, -0.5, 1.5, -2.5, 3e9, -3e9, 0.0]
    return x


@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_quantize_per_tensor_rounds_ties_away_and_saturates_as_the_cpu(dtype, storage):
    x = special_floats((3, 5, 7))
    with np.errstate(over="ignore"):
        x = x.astype(storage)
    scale, zero_point = np.float32(0.5), (3 if dtype == np.int8 else 128)
    info = np.iinfo(dtype)
    layout, scales, zero_points = channel_parameters(scale, np.int64(zero_point), x.shape)
    both = run_both_ways(lambda **where: QuantizeCuda(dtype, layout, (int(info.min), int(info.max)), **where), SOURCE,
                         [x, scales, zero_points])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    with np.errstate(invalid="ignore"):
        expected = quantize_quotient(x.astype(np.float32) / scale, zero_point, int(info.min), int(info.max))
    np.testing.assert_array_equal(both.kernel[0], expected.astype(dtype))


@pytest.mark.parametrize("axis", [0, 1, 3])
def test_quantize_per_channel_matches_the_cpu(axis):
    x = special_floats((3, 4, 5, 6))
    shape = [1, 1, 1, 1]
    shape[axis] = x.shape[axis]
    scale = RNG.uniform(0.01, 0.5, shape).astype(np.float32)
    zero_point = RNG.integers(-20, 20, shape)
    layout, scales, zero_points = channel_parameters(scale, zero_point, x.shape)
    assert layout == ChannelLayout.of(x.shape, axis)
    both = run_both_ways(lambda **where: QuantizeCuda(np.int8, layout, (-128, 127), **where), SOURCE, [x, scales, zero_points])
    assert_twin_matches(both)
    with np.errstate(invalid="ignore"):
        expected = quantize_quotient(x / scale, zero_point, -128, 127)
    np.testing.assert_array_equal(both.kernel[0], expected.astype(np.int8))


@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("axis", [None, 1])
def test_dequantize_rounds_once_as_the_cpu(dtype, storage, axis):
    q = full_range(dtype, (2, 5, 3))
    if axis is None:
        scale, zero_point = np.float32(0.0371), np.float32(7)
    else:
        scale = RNG.uniform(0.001, 2.0, (1, 5, 1)).astype(np.float32)
        zero_point = RNG.integers(-10, 10, (1, 5, 1)).astype(np.float32)
    layout, scales, zero_points = channel_parameters(scale, zero_point, q.shape)
    both = run_both_ways(lambda **where: DequantizeCuda(dtype, storage, layout, **where), SOURCE, [q, scales, zero_points])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.kernel[0], dequantize_affine(q, scale, zero_point).astype(storage))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("a_shape, b_shape", BROADCAST_SHAPES, ids=str)
def test_pair_lookup_reads_the_table_at_both_inputs_bits_with_broadcasting(a_shape, b_shape, dtype):
    table = RNG.integers(0, 2, 65536).astype(np.bool_)  # a comparison's table: bool
    a, b = full_range(dtype, a_shape), full_range(dtype, b_shape)
    both = run_both_ways(lambda **where: PairLookupCuda(**where), SOURCE, [a, b, table])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    index = (a.view(np.uint8).astype(np.int64) << 8) | b.view(np.uint8)
    np.testing.assert_array_equal(both.kernel[0], table[index])
