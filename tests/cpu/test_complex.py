"""RFFT2D, COMPLEX_ABS, REAL, IMAG and complex tensors against ai-edge-litert (BUILTIN_REF)."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_matches_litert, run_litert, run_ours

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType

PART_OPS = [B.COMPLEX_ABS, B.REAL, B.IMAG]
PART_TYPES = [(np.complex64, np.float32), (np.complex128, np.float64)]


def rfft2d_model(shape, fft_length, lengths_are_input=False, then=None) -> bytes:
    """main(x) = RFFT2D(x, fft_length), optionally followed by the unary op ``then``."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape)
    if lengths_are_input:
        lengths = graph.add_input("fft_length", [2], np.int32)
    else:
        lengths = graph.add_constant("fft_length", np.array(fft_length, np.int32))
    out_shape = [*shape[:-2], fft_length[0], fft_length[1] // 2 + 1]
    y = graph.add_tensor("y", out_shape, T.COMPLEX64)
    graph.add_operator(B.RFFT2D, [x, lengths], [y])
    if then is not None:
        z = graph.add_tensor("z", out_shape, np.float32)
        graph.add_operator(then, [y], [z])
        y = z
    graph.add_output(y)
    return builder.build()


def part_model(op, shape, complex_dtype, real_dtype) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape, complex_dtype)
    y = graph.add_tensor("y", shape, real_dtype)
    graph.add_operator(op, [x], [y])
    graph.add_output(y)
    return builder.build()


def uniform(shape, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(np.float32)


def complex_values(shape, dtype, seed=0):
    parts = np.random.default_rng(seed).uniform(-3, 3, size=(2, *shape))
    return (parts[0] + 1j * parts[1]).astype(dtype)


# -- RFFT2D ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, fft_length",
    [
        ([4, 8], [4, 8]),  # exact size
        ([2, 3, 8, 16], [8, 16]),  # batched slices
        ([6, 20], [4, 16]),  # cropped on both axes
        ([3, 5], [8, 16]),  # zero-padded on both axes
        ([6, 5], [4, 8]),  # cropped height, padded width
        ([1, 512], [1, 512]),  # one row, as an audio frame
        ([5, 2], [2, 2]),  # the smallest width
    ],
)
def test_rfft2d_matches_litert(shape, fft_length):
    model = rfft2d_model(shape, fft_length)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [uniform(shape)])


def test_rfft2d_output_is_complex64_in_the_details():
    interpreter = Interpreter(model_content=rfft2d_model([4, 8], [4, 8]))
    interpreter.allocate_tensors()
    detail = interpreter.get_output_details()[0]
    assert detail["dtype"] == np.complex64
    assert list(detail["shape"]) == [4, 5]


@pytest.mark.parametrize("shape, fft_length", [([16, 64], [16, 64]), ([3, 1, 2048], [1, 2048])])
def test_rfft2d_gives_litert_bits(shape, fft_length):
    """TFLite transforms in double (Ooura's fft2d) and rounds once to complex64; the kernel
    transforms in double (numpy's pocketfft) and rounds once: the same bits on these inputs."""
    x = uniform(shape, seed=5)
    model = rfft2d_model(shape, fft_length)
    np.testing.assert_array_equal(run_ours(model, [x])[0], run_litert(model, [x])[0])


def test_rfft2d_with_a_runtime_fft_length_matches_litert():
    model = rfft2d_model([6, 10], [4, 8], lengths_are_input=True)
    for lengths in ([4, 8], [8, 4], [2, 16]):
        assert_matches_litert(model, [uniform([6, 10], seed=1), np.array(lengths, np.int32)])


@pytest.mark.parametrize("then", PART_OPS)
def test_rfft2d_then_a_complex_part_matches_litert(then):
    assert_matches_litert(rfft2d_model([3, 8, 32], [8, 32], then=then), [uniform([3, 8, 32], seed=2)])


@pytest.mark.parametrize("fft_length", [[3, 8], [4, 12], [0, 8]])
def test_rfft2d_refuses_a_length_that_is_not_a_power_of_two_as_litert_does(fft_length):
    model = rfft2d_model([4, 8], fft_length)
    with pytest.raises(RuntimeError):
        run_litert(model, [uniform([4, 8])])
    with pytest.raises(KernelError, match="RFFT2D v1: fft_length .* is not a power of two"):
        run_ours(model, [uniform([4, 8])])


def test_rfft2d_refuses_width_one_that_litert_does_not_transform():
    model = rfft2d_model([4, 8], [4, 1])
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    assert not np.allclose(run_litert(model, [x])[0], np.fft.rfft2(x, s=(4, 1)))  # not the DFT
    with pytest.raises(KernelError, match="RFFT2D v1: fft_length width 1 is not supported"):
        run_ours(model, [x])


def test_rfft2d_refuses_a_rank_one_input():
    with pytest.raises(KernelError, match="RFFT2D v1: the input must have rank 2 or more"):
        Interpreter(model_content=rfft2d_model([8], [1, 8])).allocate_tensors()


# -- COMPLEX_ABS, REAL, IMAG ---------------------------------------------------------------------


@pytest.mark.parametrize("complex_dtype, real_dtype", PART_TYPES, ids=["complex64", "complex128"])
@pytest.mark.parametrize("op", PART_OPS, ids=lambda op: op.name)
def test_complex_part_matches_litert_bit_for_bit(op, complex_dtype, real_dtype):
    model = part_model(op, [3, 7], complex_dtype, real_dtype)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [complex_values([3, 7], complex_dtype)], rtol=0, atol=0)


@pytest.mark.parametrize("complex_dtype, real_dtype", PART_TYPES, ids=["complex64", "complex128"])
def test_complex_abs_of_huge_inf_and_nan_parts_matches_litert(complex_dtype, real_dtype):
    big = np.finfo(real_dtype).max
    x = np.array(
        [big + 1j * big, np.inf + 1j * np.nan, np.nan + 0j, -0.0 - 0j, 3 - 4j, 1e-30 + 1e-30j], complex_dtype
    )
    expected = run_litert(part_model(B.COMPLEX_ABS, [6], complex_dtype, real_dtype), [x])[0]
    ours = run_ours(part_model(B.COMPLEX_ABS, [6], complex_dtype, real_dtype), [x])[0]
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("op", PART_OPS, ids=lambda op: op.name)
def test_complex_part_refuses_a_float_output_of_the_wrong_width(op):
    with pytest.raises(KernelError, match=f"{op.name} v1: output 'y' has type FLOAT64; this kernel supports FLOAT32"):
        Interpreter(model_content=part_model(op, [2], np.complex64, np.float64)).allocate_tensors()


def test_complex_part_refuses_a_real_input():
    with pytest.raises(KernelError, match="REAL v1: input 'x' has type FLOAT32; this kernel supports COMPLEX64, COMPLEX128"):
        Interpreter(model_content=part_model(B.REAL, [2], np.float32, np.float32)).allocate_tensors()


def test_complex_input_round_trips_through_set_and_get_tensor():
    interpreter = Interpreter(model_content=part_model(B.IMAG, [2, 2], np.complex128, np.float64))
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    assert detail["dtype"] == np.complex128
    x = complex_values([2, 2], np.complex128, seed=3)
    interpreter.set_tensor(detail["index"], x)
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(detail["index"]), x)
    np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), x.imag)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_constant_from_the_file_matches_litert(dtype):
    """A complex constant in the model's buffers, read and moved (RESHAPE) as LiteRT does."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3], dtype)
    constant = graph.add_constant("constant", complex_values([2, 3], dtype, seed=7))
    y = graph.add_tensor("y", [3, 2], dtype)
    graph.add_operator(B.RESHAPE, [constant, graph.add_constant("shape", np.array([3, 2], np.int32))], [y])
    z = graph.add_tensor("z", [2, 3], dtype)
    graph.add_operator(B.RESHAPE, [x, graph.add_constant("shape2", np.array([2, 3], np.int32))], [z])
    graph.add_output(y)
    graph.add_output(z)
    assert_matches_litert(builder.build(), [complex_values([2, 3], dtype)], rtol=0, atol=0)
