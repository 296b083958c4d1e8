"""DEQUANTIZE against ai-edge-litert: every input type, per tensor and per channel, bit-exact.

Dequantization is ``scale * (q - zero_point)`` rounded once to float32 (or an exact
float16 widening), so the outputs must equal LiteRT's exactly (rtol = atol = 0).
"""

from __future__ import annotations

import numpy as np
import pytest

from schema.errors import ModelError
from hypothesis import given, settings
from hypothesis import strategies as st
from model_helpers import stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from delegate_sdk.tensor import Allocation
from interpreter import Interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator, TensorType

EXACT = {"rtol": 0, "atol": 0}


def dequantize_model(shape, dtype, quant=None, *, constant=None, version=None) -> bytes:
    """x (an input, or ``constant``) -> DEQUANTIZE -> float32 output."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    if constant is None:
        x = graph.add_input("x", list(shape), dtype, quantization=quant)
    else:
        x = graph.add_constant("w", np.asarray(constant, dtype), quantization=quant)
    y = graph.add_tensor("y", list(shape))
    graph.add_operator(BuiltinOperator.DEQUANTIZE, [x], [y], version=version)
    graph.add_output(y)
    return builder.build()



def full_range(dtype, shape, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.float16:
        return (rng.normal(size=shape) * 100).astype(np.float16)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    extremes = np.array([info.min, info.max], dtype)
    values.reshape(-1)[:2] = extremes[: values.size]
    return values


CASES = {
    # name: (dtype, quantization, version TFLite's op_version.cc stamps)
    "uint8": (np.uint8, quantization(0.0235, 128), 1),
    "int8": (np.int8, quantization(0.37, -5), 2),
    "int16": (np.int16, quantization(3.1e-4, 0), 3),
    "float16": (np.float16, None, 3),
    "int8_per_channel": (np.int8, quantization([0.5, 0.013, 7.25, 1e-3], [0, 0, 0, 0], quantized_dimension=3), 5),
    "uint8_per_channel": (np.uint8, quantization([0.5, 0.013, 7.25, 1e-3], [120, 3, 128, 255], quantized_dimension=3), 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_dequantize_of_each_input_type_is_stamped_as_tflite_does_and_matches_litert_exactly(case):
    dtype, quant, version = CASES[case]
    model = dequantize_model((2, 3, 5, 4), dtype, quant)
    assert stamped_version(model) == version
    assert_matches_litert(model, [full_range(dtype, (2, 3, 5, 4))], **EXACT)


@pytest.mark.parametrize("case", list(CASES))
def test_dequantize_of_a_large_input_matches_litert_exactly(case):
    # Above the kernel's table size (1024 elements) it computes instead of looking up.
    dtype, quant, _ = CASES[case]
    model = dequantize_model((3, 25, 9, 4), dtype, quant)
    assert_matches_litert(model, [full_range(dtype, (3, 25, 9, 4))], **EXACT)


def test_dequantize_version_4_node_runs_the_same_kernel_matching_litert():
    # op_version.cc never stamps v4; TFLite still registers it (2.2.0) with the same kernel.
    model = dequantize_model((3, 4), np.int8, quantization(0.1, 3), version=4)
    assert stamped_version(model) == 4
    assert_matches_litert(model, [full_range(np.int8, (3, 4))], **EXACT)


def test_dequantize_of_float16_stamped_v2_as_in_real_models_matches_litert():
    # MediaPipe models carry float16 DEQUANTIZE nodes at version 2: TFLite's kernel looks at the type only.
    model = dequantize_model((6, 5), np.float16, version=2)
    assert_matches_litert(model, [full_range(np.float16, (6, 5))], **EXACT)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_dequantize_per_channel_along_each_axis_matches_litert(axis):
    shape = (3, 4, 5)
    rng = np.random.default_rng(axis)
    scales = rng.uniform(1e-3, 2, size=shape[axis]).astype(np.float32)
    zero_points = rng.integers(-20, 20, size=shape[axis])
    model = dequantize_model(shape, np.int8, quantization(scales, zero_points, quantized_dimension=axis))
    assert stamped_version(model) == 5
    assert_matches_litert(model, [full_range(np.int8, shape, seed=axis)], **EXACT)


def test_dequantize_of_int16_with_a_nonzero_zero_point_is_exact():
    # Not comparable with ai-edge-litert 2.3.0, which refuses it; newer LiteRT accepts it.
    model = dequantize_model((5,), np.int16, quantization(0.5, -300))
    q = np.array([-32768, -300, 0, 1, 32767], np.int16)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], q)
    interpreter.invoke()
    expected = (np.float64(0.5) * (q.astype(np.int64) + 300)).astype(np.float32)
    np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), expected)


def test_dequantize_of_a_scalar_matches_litert():
    model = dequantize_model((), np.int8, quantization(0.25, 1))
    assert_matches_litert(model, [np.array(-7, np.int8)], **EXACT)


@settings(max_examples=30, deadline=None)
@given(
    dtype=st.sampled_from([np.uint8, np.int8, np.int16]),
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    scale=st.floats(2.0**-120, 2.0**20, allow_subnormal=False, width=32),
    data=st.data(),
)
def test_dequantize_per_tensor_any_scale_and_zero_point_matches_litert(dtype, shape, scale, data):
    info = np.iinfo(dtype)
    # ai-edge-litert 2.3.0 rejects a nonzero int16 zero point at prepare (newer LiteRT accepts
    # it, as this kernel does), so int16 keeps zero_point 0 here.
    zero_point = data.draw(st.integers(info.min, info.max) if dtype != np.int16 else st.just(0))
    model = dequantize_model(shape, dtype, quantization(scale, zero_point))
    assert_matches_litert(model, [full_range(dtype, tuple(shape), seed=len(shape))], **EXACT)


# -- folding of constant weights ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["float16", "int8", "int8_per_channel"])
def test_dequantize_of_constant_weights_is_folded_at_prepare_and_matches_litert(case):
    dtype, quant, _ = CASES[case]
    weights = full_range(dtype, (2, 3, 5, 4), seed=3)
    model = dequantize_model(weights.shape, dtype, quant, constant=weights)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    assert interpreter._tensor(interpreter.get_output_details()[0]["index"]).allocation is Allocation.PERSISTENT
    assert_matches_litert(model, [], **EXACT)


# -- errors ---------------------------------------------------------------------------------------------------


def test_dequantize_of_int32_fails_naming_the_op():
    model = dequantize_model((4,), np.int32, quantization(0.5, 0), version=1)
    with pytest.raises(KernelError, match="DEQUANTIZE v1.*INT32"):
        Interpreter(model_content=model).allocate_tensors()


def test_dequantize_of_int8_without_a_scale_fails_naming_the_op():
    model = dequantize_model((4,), np.int8, None)
    with pytest.raises(KernelError, match="DEQUANTIZE v2.*no quantization scale"):
        Interpreter(model_content=model).allocate_tensors()


def test_dequantize_of_per_channel_int16_fails_naming_the_op():
    model = dequantize_model((2, 3), np.int16, quantization([0.1, 0.2, 0.3], 0, quantized_dimension=1))
    with pytest.raises(KernelError, match="DEQUANTIZE v3.*per-channel INT16"):
        Interpreter(model_content=model).allocate_tensors()


def test_dequantize_with_scales_not_matching_the_channel_count_fails_naming_the_op():
    model = dequantize_model((2, 3), np.int8, quantization([0.1, 0.2], 0, quantized_dimension=1), version=5)
    with pytest.raises(ModelError, match="2 scales for the 3 channels of dimension 1"):
        Interpreter(model_content=model)  # refused when the model is read


# -- the sub-byte types (v6 int4, v7 int2, v8 uint4), held one value an element -------------------

SUB_BYTE_CASES = {
    # name: (type, holding dtype, (min, max), version)
    "int4": (TensorType.INT4, np.int8, (-8, 7), 6),
    "int2": (TensorType.INT2, np.int8, (-2, 1), 7),
    "uint4": (TensorType.UINT4, np.uint8, (0, 15), 8),
}


def sub_byte_values(case, shape, seed=0) -> np.ndarray:
    _, dtype, (low, high), _ = SUB_BYTE_CASES[case]
    values = np.random.default_rng(seed).integers(low, high, size=shape, endpoint=True).astype(dtype)
    values.reshape(-1)[:2] = [low, high]
    return values


def sub_byte_constant_model(case, shape, quant, version=None) -> bytes:
    """A constant of the sub-byte type (packed in the file) -> DEQUANTIZE -> float32."""
    tensor_type = SUB_BYTE_CASES[case][0]
    builder = ModelBuilder()
    graph = builder.subgraph()
    w = graph.add_constant("w", sub_byte_values(case, shape), dtype=tensor_type, quantization=quant)
    y = graph.add_tensor("y", list(shape))
    graph.add_operator(BuiltinOperator.DEQUANTIZE, [w], [y], version=version)
    graph.add_output(y)
    return builder.build()


@pytest.mark.parametrize("case", list(SUB_BYTE_CASES))
def test_dequantize_of_a_sub_byte_constant_per_tensor_is_stamped_as_tflite_does_and_matches_litert(case):
    zero_point = 3 if case == "uint4" else -1
    model = sub_byte_constant_model(case, (3, 5, 7), quantization(0.37, zero_point))
    assert stamped_version(model) == SUB_BYTE_CASES[case][3]
    assert_matches_litert(model, [], **EXACT)


@pytest.mark.parametrize("case", list(SUB_BYTE_CASES))
def test_dequantize_of_a_sub_byte_constant_per_channel_matches_litert(case):
    quant = quantization([0.5, 0.013, 7.25], [1, 0, 2], quantized_dimension=1)
    assert_matches_litert(sub_byte_constant_model(case, (4, 3, 5), quant), [], **EXACT)


@pytest.mark.parametrize("case", ["int4", "uint4"])
def test_dequantize_of_a_sub_byte_input_matches_litert(case):
    # LiteRT's set_tensor takes int4 and uint4 inputs (int8 / uint8 values in range); not int2.
    tensor_type, _, _, version = SUB_BYTE_CASES[case]
    model = dequantize_model((4, 6), tensor_type, quantization(0.25, 2))
    assert stamped_version(model) == version
    assert_matches_litert(model, [sub_byte_values(case, (4, 6), seed=3)], **EXACT)


def test_dequantize_version_9_node_runs_the_same_kernel_matching_litert():
    # LiteRT 2.3 registers v9 (TFLite's tables predate it) with the kernel of the others.
    model = sub_byte_constant_model("int4", (3, 4), quantization(0.1, 0), version=9)
    assert stamped_version(model) == 9
    assert_matches_litert(model, [], **EXACT)
def test_float16_widening_gives_the_cast_bits_of_every_pattern():
    """Large float16 arrays (folded float16 weights) are widened through a table of every bit
    pattern: the same float32 bits as numpy's cast, NaN payloads, infinities, subnormals
    and -0 included, over more than one chunk and a partial last one."""
    from backends.cpu.kernels.dequantize import HALF_CHUNK, widen_float16

    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    x = np.concatenate([patterns, patterns[::-1], patterns[:123]]).view(np.float16).reshape(-1, 1)
    assert x.size > 2 * HALF_CHUNK
    out = np.empty(x.shape, np.float32)
    widen_float16(x, out)
    np.testing.assert_array_equal(out.view(np.uint32), x.astype(np.float32).view(np.uint32))
