"""BITCAST against ai-edge-litert (BUILTIN_REF): the same bytes under another type, with
the shape rules of TFLite (a last axis appended for a narrower output, dropped for a
wider one), also in the middle of a graph where the interpreter may share its memory."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator

B = BuiltinOperator


def bitcast_model(shape, dtype, out_shape, out_dtype):
    return single_op_model(B.BITCAST, [In(shape, dtype)], Out(out_shape, out_dtype))


FLOATS = np.array([[1.5, -2.0, 3.25], [np.inf, -0.0, 1e-40]], np.float32)


@pytest.mark.parametrize(
    "out_dtype, out_shape",
    [(np.int8, [2, 3, 4]), (np.uint8, [2, 3, 4]), (np.int16, [2, 3, 2]), (np.float16, [2, 3, 2]),
     (np.int32, [2, 3]), (np.uint32, [2, 3]), (np.bool_, [2, 3, 4])],
)
def test_float32_bitcast_to_a_type_as_wide_or_narrower_matches_litert(out_dtype, out_shape):
    model = bitcast_model([2, 3], np.float32, out_shape, out_dtype)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [FLOATS])


@pytest.mark.parametrize("dtype, shape, out_dtype, out_shape", [
    (np.uint8, [3, 4], np.float32, [3]),
    (np.int16, [2, 4], np.int64, [2]),
    (np.int32, [5, 2], np.float64, [5]),
    (np.int8, [4], np.float32, []),
    (np.float32, [], np.int8, [4]),
    (np.int64, [3], np.complex64, [3]),
])
def test_bitcast_to_a_wider_type_drops_the_last_axis_like_litert(dtype, shape, out_dtype, out_shape):
    x = np.random.default_rng(0).integers(-100, 100, shape).astype(dtype)
    assert_matches_litert(bitcast_model(shape, dtype, out_shape, out_dtype), [x])


def test_bitcast_output_shape_is_computed_whatever_the_model_declares():
    model = bitcast_model([2, 4], np.int8, [2, 4], np.float32)  # TFLite resizes to [2]
    ours = assert_matches_litert(model, [np.arange(8, dtype=np.int8).reshape(2, 4)])
    assert ours[0].shape == (2,)


def test_bitcast_between_two_nodes_matches_litert():
    """ADD -> BITCAST -> BITWISE_XOR: the bitcast output may share the ADD output's memory."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3], np.int32)
    total = graph.add_tensor("total", [2, 3], np.int32)
    graph.add_operator(B.ADD, [x, x], [total])
    cast = graph.add_tensor("as_uint8", [2, 3, 4], np.uint8)
    graph.add_operator(B.BITCAST, [total], [cast])
    mask = graph.add_constant("mask", np.array([0xFF, 0, 0x0F, 0], np.uint8))
    y = graph.add_tensor("y", [2, 3, 4], np.uint8)
    graph.add_operator(B.BITWISE_XOR, [cast, mask], [y])
    graph.add_output(y)
    assert_matches_litert(builder.build(), [np.arange(-3, 3, dtype=np.int32).reshape(2, 3) * 1000003])


def test_bitcast_to_a_wider_type_refuses_a_last_axis_of_the_wrong_size():
    with pytest.raises(KernelError, match=r"BITCAST v1: .*last axis must hold 4 elements .* it has 3"):
        Interpreter(model_content=bitcast_model([2, 3], np.int8, [2], np.float32)).allocate_tensors()


def test_bitcast_of_a_scalar_to_a_wider_type_is_refused():
    with pytest.raises(KernelError, match="BITCAST v1: .*it has no axis"):
        Interpreter(model_content=bitcast_model([], np.int8, [], np.int16)).allocate_tensors()


def test_bitcast_refuses_strings():
    with pytest.raises(KernelError, match="BITCAST v1: input 'x0' has type STRING"):
        Interpreter(model_content=bitcast_model([2], np.object_, [2], np.int8)).allocate_tensors()


def test_bitcast_of_bfloat16_reads_its_bits_like_litert():
    # LiteRT's Python API cannot feed bfloat16: float32 -> CAST -> bfloat16 -> BITCAST -> int16.
    from schema.enums import TensorType

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [4], TensorType.FLOAT32)
    half = graph.add_tensor("half", [4], TensorType.BFLOAT16)
    y = graph.add_tensor("y", [4], TensorType.INT16)
    graph.add_operator(B.CAST, [x], [half])
    graph.add_operator(B.BITCAST, [half], [y])
    graph.add_output(y)
    assert_matches_litert(builder.build(), [np.array([1.5, -2, 3.25, 100], np.float32)])
