"""Quantized FULLY_CONNECTED against ai-edge-litert's reference kernels.

Integer outputs bit-exact: uint8 (v1), int8 per tensor and per channel (v4),
keep_num_dims (v5), no bias (v6), int16 x int8 (v1, v11) and int16 x int16 (v7).
Hybrid (float32 input, int8 weights: v3, v9 asymmetric, v12 per-channel) bit-exact
too: see the comment at HYBRID_TOLERANCE.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from model_helpers import stamped_version
from oracle import MODELS_DIR, assert_matches_litert

from backends.cpu.kernels.fully_connected_quantized import MAGIC, magic_rounding_matches
from backends.cpu.quantization import round_half_away
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType
from schema.model import Model
from schema.params import FullyConnectedParams

T = TensorType
Act = ActivationFunctionType
EXACT = {"rtol": 0, "atol": 0}
NP = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16, T.INT32: np.int32, T.INT64: np.int64}
#: Hybrid outputs are float32, yet bit-exact: the int8 dot products are exact on both
#: sides, the on-the-fly input quantization reproduces the NEON quantizers that the x86-64
#: wheel runs (through NEON_2_SSE; see backends/cpu/kernels/_hybrid.py), and the scaling
#: back is the same float32 arithmetic. Only a fused TANH (numpy's tanh against the C
#: library's, an ulp apart) needs the float tolerance.
HYBRID_TOLERANCE = EXACT
TANH_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


def full_range(dtype, shape, rng) -> np.ndarray:
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    values.reshape(-1)[:2] = [info.min, info.max][: values.size]
    return values


def fc_model(
    batch_shape,
    units,
    depth,
    in_type=T.INT8,
    w_type=T.INT8,
    out_type=None,
    *,
    rng,
    in_quant=None,
    w_scales=None,
    w_zp=0,
    out_quant=None,
    bias=True,
    bias_type=None,
    bias_values=None,
    activation=Act.NONE,
    keep_num_dims=False,
    asymmetric=False,
    quantized_bias_type=T.FLOAT32,
    two_inputs=False,
    constant_weights=True,
    version=None,
):
    """One FULLY_CONNECTED node with random quantized weights (and bias); returns
    (model bytes, input arrays)."""
    out_type = in_type if out_type is None else out_type
    builder = ModelBuilder()
    graph = builder.subgraph()
    shape = [*batch_shape, depth]
    x = graph.add_input("x", shape, in_type, quantization=in_quant)
    if w_scales is None:
        w_scales = [float(rng.uniform(0.001, 0.1))]
    w_scales = list(np.atleast_1d(w_scales))
    w_quant = quantization(w_scales, w_zp if len(w_scales) == 1 else [0] * len(w_scales))
    weights = full_range(NP[w_type], (units, depth), rng)
    if in_type == T.FLOAT32:
        # Hybrid weights are symmetric int8, [-127, 127] (TFLite's quantization spec). The
        # wheel's vectorized int8 dot products assume it and go wrong on -128; the
        # portable reference and this kernel compute the true product.
        np.clip(weights, -127, 127, out=weights)
    inputs = []
    if constant_weights:
        w = graph.add_constant("w", weights, quantization=w_quant)
    else:
        w = graph.add_input("w", [units, depth], w_type, quantization=w_quant)
    operands = [x, w]
    if not two_inputs:
        if bias:
            if in_type == T.FLOAT32:
                b = graph.add_constant("b", rng.uniform(-1, 1, size=units).astype(np.float32))
            else:
                bias_type = bias_type or T.INT32
                in_scale = float(in_quant.scale[0])
                b_scales = [np.float32(in_scale) * np.float32(s) for s in w_scales]
                limit = 2**20 if bias_type == T.INT32 else 2**33
                values = rng.integers(-limit, limit, size=units).astype(NP[bias_type])
                if bias_values is not None:
                    values = np.asarray(bias_values, NP[bias_type])
                b = graph.add_constant("b", values, quantization=quantization(b_scales, [0] * len(b_scales)))
        else:
            b = -1
        operands.append(b)
    if keep_num_dims:
        out_shape = [*batch_shape, units]
    else:
        out_shape = [int(np.prod(batch_shape)), units]
    y = graph.add_tensor("y", out_shape, out_type, quantization=out_quant)
    params = FullyConnectedParams(
        fused_activation_function=activation,
        keep_num_dims=keep_num_dims,
        asymmetric_quantize_inputs=asymmetric,
        quantized_bias_type=quantized_bias_type,
    )
    graph.add_operator(BuiltinOperator.FULLY_CONNECTED, operands, [y], params, version=version)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    if in_type == T.FLOAT32:
        inputs.append(rng.uniform(-3, 3, size=shape).astype(np.float32))
    else:
        inputs.append(full_range(NP[in_type], shape, rng))
    if not constant_weights:
        inputs.append(weights)
    return builder.build(), inputs



def int8_quant(rng, low=-128, high=127):
    return quantization(float(rng.uniform(0.001, 0.1)), int(rng.integers(low, high + 1)))


# -- int8 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1])
def test_fully_connected_int8_per_tensor_is_v4_and_matches_litert(activation):
    rng = np.random.default_rng(int(activation) + 10)
    model, inputs = fc_model(
        (5,), 13, 37, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng), w_zp=3, activation=activation
    )
    assert stamped_version(model) == 4
    assert_matches_litert(model, inputs, **EXACT)


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU6])
def test_fully_connected_int8_per_channel_weights_is_v4_and_matches_litert(activation):
    rng = np.random.default_rng(20)
    units = 11
    model, inputs = fc_model(
        (3, 2), units, 29, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng),
        w_scales=rng.uniform(0.001, 0.1, size=units), activation=activation,
    )
    assert stamped_version(model) == 4
    assert_matches_litert(model, inputs, **EXACT)


@pytest.mark.parametrize("in_type, w_type", [(T.INT8, T.INT8), (T.UINT8, T.UINT8), (T.INT16, T.INT8), (T.INT16, T.INT16)])
def test_fully_connected_power_of_two_rescale_rounds_ties_like_litert(in_type, w_type):
    # s_in * s_w / s_out = 1/8: accumulators that are 4 mod 8 are exact halves.
    rng = np.random.default_rng(26)
    in_zp = 0 if in_type == T.INT16 else (128 if in_type == T.UINT8 else 3)
    out_zp = 0 if in_type == T.INT16 else (128 if in_type == T.UINT8 else -2)
    model, inputs = fc_model(
        (8,), 16, 3, in_type, w_type, rng=rng, in_quant=quantization(0.5, in_zp), out_quant=quantization(1.0, out_zp),
        w_scales=[0.25], w_zp=0, bias=False,
    )
    info = np.iinfo(NP[in_type])
    inputs[0] = rng.integers(max(info.min, in_zp - 20), min(info.max, in_zp + 20), size=inputs[0].shape).astype(NP[in_type])
    if w_type == T.INT8:  # the bound plan, on its halves-away-from-zero path (MAGIC would go to even)
        assert bound_plans(model) == [True]
        assert magic_plans(model) == [False]
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_int8_deep_accumulators_use_float64_and_match_litert():
    rng = np.random.default_rng(21)
    model, inputs = fc_model((4,), 9, 700, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng), w_zp=-7)
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_int8_keep_num_dims_is_v5_and_matches_litert():
    rng = np.random.default_rng(22)
    model, inputs = fc_model(
        (2, 3, 4), 6, 10, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng), keep_num_dims=True
    )
    assert stamped_version(model) == 5
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_int8_without_bias_input_is_v6_and_matches_litert():
    rng = np.random.default_rng(23)
    model, inputs = fc_model((7,), 5, 16, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng), two_inputs=True)
    assert stamped_version(model) == 6
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_int8_with_omitted_bias_is_v4_and_matches_litert():
    rng = np.random.default_rng(24)
    model, inputs = fc_model((7,), 5, 16, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng), bias=False)
    assert stamped_version(model) == 4
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_int8_with_non_constant_weights_matches_litert():
    rng = np.random.default_rng(25)
    model, inputs = fc_model(
        (4,), 6, 12, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng), w_zp=2, constant_weights=False
    )
    assert_matches_litert(model, inputs, **EXACT)


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 6),
    units=st.integers(1, 20),
    depth=st.integers(1, 64),
    per_channel=st.booleans(),
    activation=st.sampled_from([Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1]),
    seed=st.integers(0, 2**16),
)
def test_fully_connected_int8_matches_litert_for_any_shape_and_scales(batch, units, depth, per_channel, activation, seed):
    rng = np.random.default_rng(seed)
    model, inputs = fc_model(
        (batch,), units, depth, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng),
        w_scales=rng.uniform(0.001, 0.1, size=units) if per_channel else None, activation=activation,
    )
    assert_matches_litert(model, inputs, **EXACT)


def test_converter_fully_connected_int8_model_matches_litert_exactly():
    path = MODELS_DIR / "converter" / "fully_connected_int8.tflite"
    model = path.read_bytes()
    assert [op.version for op in Model.from_bytes(model).subgraphs[0].operators] == [4, 4]
    assert bound_plans(model) == [True, True]
    assert magic_plans(model) == [True, True]
    for seed in range(3):
        rng = np.random.default_rng(seed)
        assert_matches_litert(path, [full_range(np.int8, (2, 32), rng)], **EXACT)


# -- the plan bound at allocation and the general invoke ----------------------------------------
def bound_plans(model: bytes) -> list[bool]:
    """Per node of the main subgraph: whether ``bind`` returns the kernel's lean plan
    (``_bind_fast_integer``) rather than its general ``invoke``."""
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    kernels = [node.user_data for node in interpreter._main.nodes]
    return [kernel.bind() != kernel.invoke for kernel in kernels]


def magic_plans(model: bytes) -> list[bool]:
    """Per node: whether the bound plan rounds by adding MAGIC (``magic_rounding_matches``)."""
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    return [node.user_data.rounds_by_magic for node in interpreter._main.nodes]


@settings(max_examples=300, deadline=None)
@given(
    scale=st.one_of(
        st.floats(1e-4, 0.2),
        st.builds(lambda k, e: k * 2.0**-e, st.integers(1, 15), st.integers(0, 12)),  # exact halves
    ),
    zero_point=st.integers(-128, 127),
    relu=st.booleans(),
    bound=st.integers(1, 300_000),
)
def test_magic_rounding_proof_agrees_with_c_round_on_every_accumulator(scale, zero_point, relu, bound):
    # magic_rounding_matches checks a few accumulators per half-integer; where it says
    # yes, the output stage with MAGIC must equal C's round on every accumulator of the
    # window around the clamp range (beyond it both clamp).
    low, high = (max(zero_point, -128) if relu else -128), 127
    proved = magic_rounding_matches([scale], zero_point, low, high, bound)
    first = max(-bound, math.floor((low - zero_point - 1) / scale) - 1)
    last = min(bound, math.ceil((high - zero_point + 1) / scale) + 1)
    products = np.arange(first, last + 1, dtype=np.float64) * scale
    fast = np.clip(products + (MAGIC + zero_point), MAGIC + low, MAGIC + high) - MAGIC
    reference = np.clip(round_half_away(products) + zero_point, low, high)
    note(f"proved {proved}")
    if proved:
        np.testing.assert_array_equal(fast, reference)


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from(["int8", "uint8", "uint8->int16", "int16x8"]),
    batch=st.integers(1, 4),
    units=st.integers(1, 16),
    depth=st.integers(1, 48),
    per_channel=st.booleans(),
    bias=st.booleans(),
    activation=st.sampled_from([Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1]),
    seed=st.integers(0, 2**16),
)
def test_fully_connected_integer_bound_plan_matches_litert(
    kind, batch, units, depth, per_channel, bias, activation, seed
):
    rng = np.random.default_rng(seed)
    scales = rng.uniform(0.001, 0.1, size=units) if per_channel and kind in ("int8", "int16x8") else None
    if kind == "int8":
        types, in_quant, out_quant = (T.INT8, T.INT8), int8_quant(rng), int8_quant(rng)
    elif kind == "int16x8":
        types, in_quant, out_quant = (T.INT16, T.INT8), int16_quant(rng), int16_quant(rng)
    else:
        out_type = T.INT16 if kind == "uint8->int16" else T.UINT8
        types = (T.UINT8, T.UINT8, out_type)
        in_quant = int8_quant(rng, 0, 255)
        out_quant = int16_quant(rng) if out_type == T.INT16 else int8_quant(rng, 0, 255)
        bias = True  # TFLite's uint8 -> int16 kernel reads the bias unconditionally
        activation = Act.NONE if out_type == T.INT16 else activation
    model, inputs = fc_model(
        (batch,), units, depth, *types, rng=rng, in_quant=in_quant, out_quant=out_quant, w_scales=scales,
        w_zp=0 if kind == "int16x8" else int(rng.integers(-5, 6)), bias=bias,
        bias_type=T.INT64 if kind == "int16x8" else None, activation=activation,
    )
    # The bound plan, except where random int16 scales make a rescale large enough to
    # leave int32 (then the general invoke checks it). Either way the numbers are LiteRT's.
    plans = bound_plans(model)
    note(f"bound plan: {plans}")
    if kind != "int16x8":
        assert plans == [True]
    assert_matches_litert(model, inputs, **EXACT)


@pytest.mark.parametrize("out_type", [T.UINT8, T.INT16])
def test_fully_connected_uint8_bound_plan_rounds_by_magic_into_8_and_16_bit_outputs(out_type):
    # The output is the low bytes of each double MAGIC + v: one byte, or two for int16.
    rng = np.random.default_rng(53)
    out_quant = int16_quant(rng) if out_type == T.INT16 else int8_quant(rng, 0, 255)
    model, inputs = fc_model(
        (3,), 7, 20, T.UINT8, T.UINT8, out_type, rng=rng, in_quant=int8_quant(rng, 0, 255), out_quant=out_quant
    )
    assert bound_plans(model) == [True]
    assert magic_plans(model) == [True]
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_int8_rescale_beyond_int32_takes_the_general_invoke_and_matches_litert():
    # s_in * s_w / s_out = 5000: double(acc) * scale may leave int32, which x86 converts
    # to INT32_MIN; only the general invoke checks for it.
    rng = np.random.default_rng(50)
    model, inputs = fc_model(
        (6,), 8, 37, rng=rng, in_quant=quantization(0.1, 3), out_quant=quantization(2e-6, -4), w_scales=[0.1],
    )
    assert bound_plans(model) == [False]
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_int8_accumulator_that_may_wrap_takes_the_general_invoke_and_matches_litert():
    # A bias near the int32 limits: the int32 accumulator of TFLite's C can wrap around.
    rng = np.random.default_rng(51)
    limit = 2**31 - 1
    model, inputs = fc_model(
        (4,), 6, 37, rng=rng, in_quant=quantization(0.02, 1), out_quant=quantization(0.05, 2), w_scales=[0.02],
        bias_values=[limit, -limit - 1, limit - 100, -limit + 100, 5, -5],
    )
    assert bound_plans(model) == [False]
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_int16_x_int16_and_non_constant_weights_take_the_general_invoke():
    rng = np.random.default_rng(52)
    int16_model, _ = fc_model(
        (2,), 3, 5, T.INT16, T.INT16, rng=rng, in_quant=int16_quant(rng), out_quant=int16_quant(rng)
    )
    dynamic_model, _ = fc_model(
        (2,), 3, 5, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng), constant_weights=False
    )
    assert bound_plans(int16_model) == [False]
    assert bound_plans(dynamic_model) == [False]


# -- uint8 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU])
def test_fully_connected_uint8_is_v1_and_matches_litert(activation):
    rng = np.random.default_rng(30)
    model, inputs = fc_model(
        (6,), 7, 33, T.UINT8, T.UINT8, rng=rng, in_quant=int8_quant(rng, 0, 255), out_quant=int8_quant(rng, 0, 255),
        w_zp=131, activation=activation,
    )
    assert stamped_version(model) == 1
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_uint8_to_int16_output_matches_litert():
    rng = np.random.default_rng(31)
    model, inputs = fc_model(
        (3,), 5, 20, T.UINT8, T.UINT8, T.INT16, rng=rng, in_quant=int8_quant(rng, 0, 255),
        out_quant=quantization(float(rng.uniform(1e-4, 1e-3)), 0), w_zp=120,
    )
    assert stamped_version(model) == 1
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_uint8_keep_num_dims_is_v5_and_matches_litert():
    rng = np.random.default_rng(32)
    model, inputs = fc_model(
        (2, 3), 4, 9, T.UINT8, T.UINT8, rng=rng, in_quant=int8_quant(rng, 0, 255), out_quant=int8_quant(rng, 0, 255),
        w_zp=128, keep_num_dims=True,
    )
    assert stamped_version(model) == 5
    assert_matches_litert(model, inputs, **EXACT)


# -- int16 activations ----------------------------------------------------------------------
def int16_quant(rng):
    return quantization(float(rng.uniform(1e-4, 1e-3)), 0)


def test_fully_connected_int16_x_int8_with_int64_bias_is_v1_and_matches_litert():
    rng = np.random.default_rng(40)
    model, inputs = fc_model(
        (4,), 9, 300, T.INT16, T.INT8, rng=rng, in_quant=int16_quant(rng), out_quant=int16_quant(rng),
        bias_type=T.INT64, activation=Act.RELU,
    )
    assert stamped_version(model) == 1
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_int16_x_int8_per_channel_matches_litert():
    rng = np.random.default_rng(41)
    model, inputs = fc_model(
        (4,), 6, 40, T.INT16, T.INT8, rng=rng, in_quant=int16_quant(rng), out_quant=int16_quant(rng),
        w_scales=rng.uniform(0.001, 0.1, size=6), bias_type=T.INT64,
    )
    assert_matches_litert(model, inputs, **EXACT)


@pytest.mark.parametrize("bias_type", [T.INT32, T.INT64])
def test_fully_connected_int16_x_int8_with_quantized_bias_type_is_v11_and_matches_litert(bias_type):
    rng = np.random.default_rng(42)
    model, inputs = fc_model(
        (3,), 8, 700, T.INT16, T.INT8, rng=rng, in_quant=int16_quant(rng), out_quant=int16_quant(rng),
        bias_type=bias_type, quantized_bias_type=bias_type,
    )
    assert stamped_version(model) == 11
    assert_matches_litert(model, inputs, **EXACT)


@pytest.mark.parametrize("per_channel", [False, True])
def test_fully_connected_int16_x_int16_is_v7_and_matches_litert(per_channel):
    rng = np.random.default_rng(43)
    units = 5
    model, inputs = fc_model(
        (3,), units, 50, T.INT16, T.INT16, rng=rng, in_quant=int16_quant(rng), out_quant=int16_quant(rng),
        w_scales=rng.uniform(1e-5, 1e-4, size=units) if per_channel else [float(rng.uniform(1e-5, 1e-4))],
    )
    assert stamped_version(model) == 7
    assert_matches_litert(model, inputs, **EXACT)


# -- hybrid ---------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.TANH])
def test_fully_connected_hybrid_is_v3_and_matches_litert(activation):
    rng = np.random.default_rng(50)
    model, inputs = fc_model((5,), 12, 31, T.FLOAT32, T.INT8, T.FLOAT32, rng=rng, activation=activation)
    assert stamped_version(model) == 3
    assert_matches_litert(model, inputs, **(TANH_TOLERANCE if activation == Act.TANH else HYBRID_TOLERANCE))


def test_fully_connected_hybrid_asymmetric_inputs_is_v9_and_matches_litert():
    rng = np.random.default_rng(51)
    model, inputs = fc_model((6,), 10, 45, T.FLOAT32, T.INT8, T.FLOAT32, rng=rng, asymmetric=True)
    inputs[0][0] += 2.0  # a row that is all positive, another all negative
    inputs[0][1] = -np.abs(inputs[0][1])
    assert stamped_version(model) == 9
    assert_matches_litert(model, inputs, **HYBRID_TOLERANCE)


@pytest.mark.parametrize("asymmetric", [False, True])
def test_fully_connected_hybrid_per_channel_is_v12_and_matches_litert(asymmetric):
    rng = np.random.default_rng(52)
    units = 9
    model, inputs = fc_model(
        (4,), units, 23, T.FLOAT32, T.INT8, T.FLOAT32, rng=rng, w_scales=rng.uniform(0.001, 0.1, size=units),
        asymmetric=asymmetric,
    )
    assert stamped_version(model) == 12
    assert_matches_litert(model, inputs, **HYBRID_TOLERANCE)


@pytest.mark.parametrize("asymmetric", [False, True])
def test_fully_connected_hybrid_long_rows_quantize_like_the_wheels_neon_utils(asymmetric):
    # 64 rows of 2003 values: the NEON quantizers round the first 2000 with trunc(p +- 0.5)
    # and the last 3 with roundf; the portable formulas differ on a few of these values.
    rng = np.random.default_rng(55)
    model, inputs = fc_model((64,), 4, 2003, T.FLOAT32, T.INT8, T.FLOAT32, rng=rng, asymmetric=asymmetric)
    assert_matches_litert(model, inputs, **HYBRID_TOLERANCE)


def test_fully_connected_hybrid_with_zero_rows_and_all_zero_input_matches_litert():
    rng = np.random.default_rng(53)
    model, inputs = fc_model((4,), 6, 8, T.FLOAT32, T.INT8, T.FLOAT32, rng=rng, activation=Act.RELU6)
    inputs[0][2] = 0
    assert_matches_litert(model, inputs, **HYBRID_TOLERANCE)
    assert_matches_litert(model, [np.zeros_like(inputs[0])], **HYBRID_TOLERANCE)


def test_fully_connected_hybrid_without_bias_keep_num_dims_matches_litert():
    rng = np.random.default_rng(54)
    model, inputs = fc_model((2, 3), 6, 8, T.FLOAT32, T.INT8, T.FLOAT32, rng=rng, two_inputs=True, keep_num_dims=True)
    assert stamped_version(model) == 6
    assert_matches_litert(model, inputs, **HYBRID_TOLERANCE)


@settings(max_examples=20, deadline=None)
@given(
    batch=st.integers(1, 5),
    units=st.integers(1, 16),
    depth=st.integers(1, 64),
    asymmetric=st.booleans(),
    per_channel=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_fully_connected_hybrid_matches_litert_for_any_shape(batch, units, depth, asymmetric, per_channel, seed):
    rng = np.random.default_rng(seed)
    model, inputs = fc_model(
        (batch,), units, depth, T.FLOAT32, T.INT8, T.FLOAT32, rng=rng, asymmetric=asymmetric,
        w_scales=rng.uniform(0.001, 0.1, size=units) if per_channel else None,
    )
    assert_matches_litert(model, inputs, **HYBRID_TOLERANCE)


# -- errors ---------------------------------------------------------------------------------
def test_fully_connected_int8_with_uint8_output_fails_naming_the_op():
    rng = np.random.default_rng(60)
    model, _ = fc_model(
        (2,), 3, 4, T.INT8, T.INT8, T.UINT8, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng, 0, 255)
    )
    with pytest.raises(KernelError, match="FULLY_CONNECTED"):
        Interpreter(model_content=model).allocate_tensors()


def test_fully_connected_float32_nodes_still_run_on_the_float_kernel():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3])
    w = graph.add_constant("w", np.arange(12, dtype=np.float32).reshape(4, 3))
    y = graph.add_tensor("y", [2, 4])
    graph.add_operator(BuiltinOperator.FULLY_CONNECTED, [x, w, -1], [y], FullyConnectedParams())
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    assert_matches_litert(builder.build(), [np.ones((2, 3), np.float32)])


@pytest.mark.parametrize(
    "kind, claimed",
    [("int8", 1), ("int8", 3), ("hybrid", 1), ("int16x16", 6), ("asymmetric_hybrid", 3)],
)
def test_fully_connected_under_stamped_node_runs_as_litert_runs_it(kind, claimed):
    # TFLite's kernel chooses its arithmetic by the tensor types, whatever the version.
    rng = np.random.default_rng(61)
    if kind == "int8":
        model, inputs = fc_model(
            (2,), 3, 4, rng=rng, in_quant=int8_quant(rng), out_quant=int8_quant(rng), version=claimed
        )
    elif kind == "int16x16":
        model, inputs = fc_model(
            (2,), 3, 4, T.INT16, T.INT16, rng=rng, in_quant=int16_quant(rng), out_quant=int16_quant(rng),
            version=claimed,
        )
    else:
        model, inputs = fc_model(
            (2,), 3, 4, T.FLOAT32, T.INT8, T.FLOAT32, rng=rng, asymmetric=kind != "hybrid", version=claimed
        )
    assert stamped_version(model) == claimed
    assert_matches_litert(model, inputs, **EXACT)


def test_fully_connected_int8_with_a_bias_scale_off_by_more_than_2_percent_fails_like_litert():
    # TFLite's GetQuantizedConvolutionMultipler refuses |s_in * s_w - s_bias| / s_out > 0.02.
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4], T.INT8, quantization=quantization(0.1, 0))
    w = graph.add_constant("w", np.ones([2, 4], np.int8), quantization=quantization(0.1, 0))
    b = graph.add_constant("b", np.zeros([2], np.int32), quantization=quantization(0.5, 0))
    y = graph.add_tensor("y", [1, 2], T.INT8, quantization=quantization(0.1, 0))
    graph.add_operator(BuiltinOperator.FULLY_CONNECTED, [x, w, b], [y], FullyConnectedParams())
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    with pytest.raises(KernelError, match="FULLY_CONNECTED v4: bias scale"):
        Interpreter(model_content=builder.build()).allocate_tensors()
