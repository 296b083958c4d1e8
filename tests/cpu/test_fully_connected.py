"""FULLY_CONNECTED (float32, versions 1, 5 and 6) against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import MODELS_DIR, assert_matches_litert, random_inputs, run_litert, run_ours
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, FullyConnectedOptionsWeightsFormat
from schema.params import FullyConnectedParams

Act = ActivationFunctionType


def fc_model(
    input_shape,
    units: int,
    depth: int,
    params: FullyConnectedParams = FullyConnectedParams(),
    *,
    bias: str = "constant",  # "constant", "omitted" (-1 in the bias slot), "none" (two inputs)
    weights_are_input: bool = False,
    version: int | None = None,
    seed: int = 0,
) -> bytes:
    """One FULLY_CONNECTED node: input, weights [units, depth], bias [units]."""
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", input_shape)
    if weights_are_input:
        w = graph.add_input("w", [units, depth])
    else:
        w = graph.add_constant("w", rng.uniform(-1, 1, [units, depth]).astype(np.float32))
    inputs = [x, w]
    if bias == "constant":
        inputs.append(graph.add_constant("b", rng.uniform(-1, 1, units).astype(np.float32)))
    elif bias == "omitted":
        inputs.append(-1)
    y = graph.add_tensor("y", [1])
    graph.add_operator(BuiltinOperator.FULLY_CONNECTED, inputs, [y], params, version=version)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()



@pytest.mark.parametrize("input_shape", [[1, 16], [4, 16], [2, 3, 16], [3, 2, 8]], ids=str)
def test_fully_connected_v1_matches_litert(input_shape):
    # [3, 2, 8] with depth 16: rows of 16 values run across the input's axes.
    model = fc_model(input_shape, 5, 16)
    assert stamped_version(model) == 1
    outputs = assert_matches_litert(model)
    assert outputs[0].shape == (int(np.prod(input_shape)) // 16, 5)


@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1], ids=lambda a: a.name)
def test_fully_connected_with_fused_activation_matches_litert(activation):
    model = fc_model([3, 10], 7, 10, FullyConnectedParams(fused_activation_function=activation))
    assert_matches_litert(model)


@pytest.mark.parametrize("input_shape", [[2, 3, 8], [1, 2, 2, 8], [8]], ids=str)
def test_fully_connected_keep_num_dims_is_version_5_and_matches_litert(input_shape):
    model = fc_model(input_shape, 4, 8, FullyConnectedParams(keep_num_dims=True))
    assert stamped_version(model) == 5
    outputs = assert_matches_litert(model)
    assert outputs[0].shape == (*input_shape[:-1], 4)


def test_fully_connected_without_bias_input_is_version_6_and_matches_litert():
    model = fc_model([3, 12], 5, 12, bias="none")
    assert stamped_version(model) == 6
    assert_matches_litert(model)


def test_fully_connected_keep_num_dims_without_bias_input_is_version_6_and_matches_litert():
    model = fc_model([2, 2, 6], 3, 6, FullyConnectedParams(keep_num_dims=True), bias="none")
    assert stamped_version(model) == 6
    assert_matches_litert(model)


def test_fully_connected_with_omitted_bias_matches_litert():
    model = fc_model([3, 12], 5, 12, bias="omitted")
    assert stamped_version(model) == 1
    assert_matches_litert(model)


def test_fully_connected_with_weights_as_input_matches_litert():
    rng = np.random.default_rng(1)
    model = fc_model([2, 6], 3, 6, weights_are_input=True)
    inputs = [rng.uniform(-2, 2, [2, 6]).astype(np.float32), rng.uniform(-1, 1, [3, 6]).astype(np.float32)]
    assert_matches_litert(model, inputs)


def test_converter_model_fully_connected_matches_litert():
    assert_matches_litert(MODELS_DIR / "converter" / "fully_connected_float32.tflite")


def test_shuffled_weights_format_fails_clearly():
    params = FullyConnectedParams(weights_format=FullyConnectedOptionsWeightsFormat.SHUFFLED4x16INT8)
    model = fc_model([1, 16], 4, 16, params, version=1)
    with pytest.raises(KernelError, match="FULLY_CONNECTED.*weights_format SHUFFLED4x16INT8.*only DEFAULT"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("activation", [Act.TANH, Act.SIGN_BIT], ids=lambda a: a.name)
def test_fully_connected_with_fused_tanh_fails_like_litert(activation):
    model = fc_model([1, 4], 2, 4, FullyConnectedParams(fused_activation_function=activation))
    with pytest.raises(KernelError, match=f"FULLY_CONNECTED.*{activation.name}"):
        Interpreter(model_content=model).allocate_tensors()


@settings(max_examples=30, deadline=None)
@given(
    leading=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    depth=st.integers(1, 40),
    units=st.integers(1, 20),
    keep_num_dims=st.booleans(),
    bias=st.sampled_from(["constant", "omitted", "none"]),
    activation=st.sampled_from([Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1]),
    seed=st.integers(0, 2**16),
)
def test_fully_connected_property_matches_litert(leading, depth, units, keep_num_dims, bias, activation, seed):
    params = FullyConnectedParams(fused_activation_function=activation, keep_num_dims=keep_num_dims)
    model = fc_model([*leading, depth], units, depth, params, bias=bias, seed=seed)
    inputs = random_inputs(model, seed)
    (expected,) = run_litert(model, inputs)
    (got,) = run_ours(model, inputs)
    # BLAS adds the products in another order than the reference loop: where a sum of up
    # to 40 products of ~1 cancels to ~1e-3, the two differ by a few float32 ulps of the
    # products (seed 837: 1.1e-6); so the absolute tolerance scales with the outputs.
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(expected).max(initial=0))))
