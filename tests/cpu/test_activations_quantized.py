"""Parity of the quantized activations (backends/cpu/kernels/activations_quantized.py) with
LiteRT's reference kernels, bit for bit: each op is run on every value of its input type
(256, or 65536 for int16) for several scales and zero points."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, assert_outputs_equal, run_interpreter, run_ours
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.params import LeakyReluParams


def name(value) -> str:
    """Test ids: op names, dtype names, ``v<N>`` for versions, output zero points."""
    if isinstance(value, B):
        return value.name
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, bool) or value is None or isinstance(value, (str, LeakyReluParams)):
        return ""
    if isinstance(value, int):
        return f"v{value}"
    if isinstance(value, tuple) and len(value) == 2:
        return f"zp{value[1]}"
    return str(value)


def unary_model(op, dtype, input_q, output_q, params=None, shape=None, version=None) -> bytes:
    info = np.iinfo(dtype)
    shape = shape or [1, info.max - info.min + 1]
    return single_op_model(op, [In(shape, dtype, quantization(*input_q))], Out(shape, dtype, quantization(*output_q)), params,
                           version=version)


def every_value(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1).astype(dtype).reshape(1, -1)



def random_params(dtype, seed: int, symmetric_int16: bool = True):
    """(input (scale, zero point), output (scale, zero point)) with rounding-prone scales."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    if dtype == np.int16:
        return (float(rng.uniform(1e-5, 1e-3)), 0), (float(rng.uniform(1e-5, 1e-3)), 0)
    zero_point = lambda: int(rng.integers(info.min, info.max + 1))  # noqa: E731
    return (float(rng.uniform(0.001, 0.1)), zero_point()), (float(rng.uniform(0.001, 0.1)), zero_point())


# (op, dtype, version the converter stamps)
RELU_CASES = [
    (B.RELU, np.uint8, 2), (B.RELU, np.int8, 2), (B.RELU, np.int16, 3),
    (B.RELU6, np.uint8, 1), (B.RELU6, np.int8, 2), (B.RELU6, np.int16, 3),
    (B.RELU_N1_TO_1, np.uint8, 1), (B.RELU_N1_TO_1, np.int8, 1),
    (B.RELU_0_TO_1, np.uint8, 1), (B.RELU_0_TO_1, np.int8, 1),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("op, dtype, version", RELU_CASES, ids=name)
def test_quantized_relu_family_every_input_value_matches_litert(op, dtype, version, seed):
    input_q, output_q = random_params(dtype, seed)
    model = unary_model(op, dtype, input_q, output_q)
    assert stamped_version(model) == version
    assert_matches_litert(model, [every_value(dtype)])


@pytest.mark.parametrize("op", [B.RELU, B.RELU6, B.RELU_N1_TO_1], ids=name)
def test_quantized_relu_with_output_range_wider_than_the_clamp_matches_litert(op):
    """A large output scale: the clamp bounds quantize to a few steps around the zero point."""
    model = unary_model(op, np.int8, (0.05, -10), (0.4, 3))
    assert_matches_litert(model, [every_value(np.int8)])


def test_quantized_uint8_node_stamped_with_a_later_version_matches_litert():
    """A version above the minimum its types need runs (TFLite's kernel ignores it too)."""
    model = unary_model(B.TANH, np.uint8, (0.02, 128), (1 / 128, 128), version=2)
    assert stamped_version(model) == 2
    assert_matches_litert(model, [every_value(np.uint8)])


@pytest.mark.parametrize("alpha", [0.2, 0.01, 1.0, 1.7, -0.3, 0.0], ids=str)
@pytest.mark.parametrize("dtype, version", [(np.uint8, 1), (np.int8, 1), (np.int16, 2)], ids=["uint8", "int8", "int16"])
def test_quantized_leaky_relu_every_input_value_matches_litert(dtype, version, alpha):
    input_q, output_q = random_params(dtype, int(abs(alpha) * 100))
    model = unary_model(B.LEAKY_RELU, dtype, input_q, output_q, LeakyReluParams(alpha=alpha))
    assert stamped_version(model) == version
    assert_matches_litert(model, [every_value(dtype)])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=name)
def test_quantized_hard_swish_every_input_value_matches_litert(dtype, seed):
    input_q, output_q = random_params(dtype, seed)
    model = unary_model(B.HARD_SWISH, dtype, input_q, output_q)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [every_value(dtype)])


@pytest.mark.parametrize(
    "input_q, output_q",
    [((0.5, 0), (0.03, -20)), ((0.0005, 3), (0.004, 1)), ((0.1, 100), (0.1, -100)), ((0.00017, -33), (0.267, 63))],
    # the last: output shift 2^-17, where TFLite's int16 RoundingDivideByPOT wraps its mask
    ids=["large_input_scale", "small_input_scale", "skewed_zero_points", "output_shift_beyond_int16"],
)
def test_quantized_hard_swish_extreme_scales_match_litert(input_q, output_q):
    model = unary_model(B.HARD_SWISH, np.int8, input_q, output_q)
    assert_matches_litert(model, [every_value(np.int8)])


# LOGISTIC's 8-bit output scale must be 1/256 (TFLite checks it); the zero point is free.
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "op, dtype, version, output_q",
    [
        (B.LOGISTIC, np.uint8, 1, (1 / 256, 0)),
        (B.LOGISTIC, np.int8, 2, (1 / 256, -128)),
        (B.LOGISTIC, np.int8, 2, (1 / 256, -5)),
        (B.TANH, np.uint8, 1, (1 / 128, 128)),
        (B.TANH, np.int8, 2, (1 / 128, 0)),
        (B.TANH, np.int8, 2, (0.013, 9)),
    ],
    ids=name,
)
def test_quantized_logistic_tanh_8bit_every_input_value_matches_litert(op, dtype, version, output_q, seed):
    input_q, _ = random_params(dtype, seed)
    model = unary_model(op, dtype, input_q, output_q)
    assert stamped_version(model) == version
    assert_matches_litert(model, [every_value(dtype)])


# int16: symmetric, output scale 2^-15; power-of-two input scales take the direct path
# (2^-12 for both ops, 2^-11 for TANH), others a rescaling multiplier.
@pytest.mark.parametrize("input_scale", [2.0**-12, 2.0**-11, 2.0**-9, 0.0003, 0.0011, 3.1e-5], ids=lambda s: f"{s:.3g}")
@pytest.mark.parametrize("op", [B.LOGISTIC, B.TANH], ids=name)
def test_quantized_logistic_tanh_int16_every_input_value_matches_litert(op, input_scale):
    model = unary_model(op, np.int16, (input_scale, 0), (1 / 32768, 0))
    assert stamped_version(model) == 3
    assert_matches_litert(model, [every_value(np.int16)])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_quantized_elu_int8_every_input_value_matches_litert_default_kernel(seed):
    # LiteRT's reference resolver has no ELU; compare with its default kernel, without
    # the XNNPACK delegate (which has its own int8 ELU).
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
    from ai_edge_litert.interpreter import OpResolverType

    input_q, output_q = random_params(np.int8, seed)
    model = unary_model(B.ELU, np.int8, input_q, output_q)
    assert stamped_version(model) == 1
    x = every_value(np.int8)
    litert = LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    assert_outputs_equal(run_ours(model, [x]), run_interpreter(litert, [x]))


@pytest.mark.parametrize(
    "op, dtype, params",
    [(B.RELU6, np.int8, None), (B.LEAKY_RELU, np.int16, LeakyReluParams(alpha=0.3)), (B.TANH, np.uint8, None), (B.HARD_SWISH, np.int8, None)],
    ids=name,
)
def test_quantized_activations_on_odd_shapes_match_litert(op, dtype, params):
    shape = [2, 3, 5, 7]
    input_q, output_q = random_params(dtype, 9)
    if op == B.TANH:
        output_q = (1 / 128, 128)
    model = unary_model(op, dtype, input_q, output_q, params, shape=shape)
    info = np.iinfo(dtype)
    x = np.random.default_rng(9).integers(info.min, info.max + 1, size=shape).astype(dtype)
    assert_matches_litert(model, [x])


@settings(max_examples=25, deadline=None)
@given(
    op=st.sampled_from([B.RELU, B.RELU6, B.LEAKY_RELU, B.HARD_SWISH, B.TANH]),
    dtype=st.sampled_from([np.uint8, np.int8]),
    input_scale=st.floats(0.0005, 0.5),
    output_scale=st.floats(0.0005, 0.5),
    input_zero_point=st.integers(-128, 127),
    output_zero_point=st.integers(-128, 127),
    alpha=st.floats(-1.5, 1.5),
)
def test_quantized_activations_hypothesis_match_litert(op, dtype, input_scale, output_scale, input_zero_point, output_zero_point, alpha):
    if op == B.HARD_SWISH:
        # TFLite refuses an output scale below input scale / 128 (tested above)
        assume(np.float32(input_scale) / np.float32(128) / np.float32(output_scale) < 0.99)
    shift = 128 if dtype == np.uint8 else 0
    params = LeakyReluParams(alpha=alpha) if op == B.LEAKY_RELU else None
    model = unary_model(op, dtype, (input_scale, input_zero_point + shift), (output_scale, output_zero_point + shift), params)
    assert_matches_litert(model, [every_value(dtype)])


# --- PRELU --------------------------------------------------------------------------------


def prelu_model(x_shape, alpha, dtype, quants, alpha_is_input=False) -> bytes:
    input_q, alpha_q, output_q = (quantization(*q) for q in quants)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", x_shape, dtype, quantization=input_q)
    if alpha_is_input:
        a = graph.add_input("alpha", alpha.shape, dtype, quantization=alpha_q)
    else:
        a = graph.add_constant("alpha", alpha, quantization=alpha_q)
    y = graph.add_tensor("y", x_shape, dtype, quantization=output_q)
    graph.add_operator(B.PRELU, [x, a], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


@pytest.mark.parametrize(
    "x_shape, alpha_shape",
    [([1, 4, 4, 256], [256]), ([2, 3, 5, 256], [1, 1, 256]), ([3, 256], [3, 256]), ([2, 6, 1, 256], [6, 1, 1])],
    ids=["per_channel", "per_channel_3d", "full", "broadcast_middle"],
)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=name)
def test_quantized_prelu_matches_litert(dtype, x_shape, alpha_shape):
    rng = np.random.default_rng(10)
    info = np.iinfo(dtype)
    alpha = rng.integers(info.min, info.max + 1, size=alpha_shape).astype(dtype)
    quants = [random_params(dtype, s)[0] for s in (11, 12, 13)]
    model = prelu_model(x_shape, alpha, dtype, quants)
    assert stamped_version(model) == 1
    # every input value along the last axis, so each (alpha, input) pair of a channel occurs
    x = np.broadcast_to(every_value(dtype).reshape(-1), x_shape).copy()
    x = rng.permuted(x, axis=-1) if x_shape[-1] == 256 else rng.integers(info.min, info.max + 1, size=x_shape).astype(dtype)
    assert_matches_litert(model, [x])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=name)
def test_quantized_prelu_with_alpha_as_graph_input_matches_litert(dtype):
    rng = np.random.default_rng(14)
    info = np.iinfo(dtype)
    alpha = rng.integers(info.min, info.max + 1, size=[1, 1, 8]).astype(dtype)
    model = prelu_model([2, 5, 8], alpha, dtype, [random_params(dtype, s)[0] for s in (15, 16, 17)], alpha_is_input=True)
    x = rng.integers(info.min, info.max + 1, size=[2, 5, 8]).astype(dtype)
    assert_matches_litert(model, [x, alpha])


# --- float nodes still go to the float kernels ---------------------------------------------


@pytest.mark.parametrize("op", [B.RELU, B.RELU6, B.LOGISTIC, B.TANH, B.HARD_SWISH, B.LEAKY_RELU], ids=name)
def test_float_activation_v1_nodes_still_run_the_float_kernels(op):
    model = single_op_model(op, [In([3, 7])], Out([3, 7]))
    assert stamped_version(model) == 1
    assert_matches_litert(model, [np.linspace(-8, 8, 21, dtype=np.float32).reshape(3, 7)])


# --- nodes TFLite refuses -----------------------------------------------------------------


@pytest.mark.parametrize(
    "op, dtype, input_q, output_q, message",
    [
        (B.LOGISTIC, np.int8, (0.05, 0), (1 / 128, -128), "LOGISTIC v2.*scale"),
        (B.LOGISTIC, np.int16, (0.001, 0), (1 / 256, 0), "LOGISTIC v3.*scale"),
        (B.TANH, np.int16, (0.001, 0), (0.001, 0), "TANH v3.*2\\^-15"),
        (B.RELU, np.int16, (0.001, 5), (0.001, 0), "RELU v3.*zero point"),
        (B.ELU, np.uint8, (0.05, 0), (0.05, 0), "ELU v1.*UINT8"),
        (B.HARD_SWISH, np.int16, (0.001, 0), (0.001, 0), "HARD_SWISH v1.*INT16"),
        (B.RELU_N1_TO_1, np.int16, (0.001, 0), (0.001, 0), "RELU_N1_TO_1 v1.*INT16"),
        (B.HARD_SWISH, np.int8, (0.5, 0), (0.0001, 0), "HARD_SWISH v1.*below 1"),
    ],
    ids=name,
)
def test_quantized_activation_tflite_refuses_fails_clearly(op, dtype, input_q, output_q, message):
    model = unary_model(op, dtype, input_q, output_q, shape=[2, 4])
    with pytest.raises(KernelError, match=message):
        Interpreter(model_content=model).allocate_tensors()


def test_quantized_prelu_with_alpha_of_another_type_fails_clearly():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 4], np.int8, quantization=quantization(0.1, 0))
    a = graph.add_constant("alpha", np.ones([4], np.uint8), quantization=quantization(0.1, 0))
    y = graph.add_tensor("y", [2, 4], np.int8, quantization=quantization(0.1, 0))
    graph.add_operator(B.PRELU, [x, a], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    with pytest.raises(KernelError, match="PRELU v1.*alpha"):
        Interpreter(model_content=builder.build()).allocate_tensors()
