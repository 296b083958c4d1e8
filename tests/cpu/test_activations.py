"""Parity of the float activations (backends/cpu/kernels/activations.py) with LiteRT."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, assert_outputs_equal, run_interpreter, run_litert, run_ours
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.params import GeluParams, LeakyReluParams

# Non-finite inputs make numpy note "invalid value" (inf * 0 = NaN, as in TFLite).
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

SPECIAL_VALUES = np.array(
    [np.nan, np.inf, -np.inf, 0.0, -0.0, -3.0, 3.0, -9.5, 17.0, -30.0, 30.0, -100.0, 100.0, 1e-7, -1e-7, 0.5],
    np.float32,
)


def name(value) -> str:
    return getattr(value, "name", None) or str(value)


def unary_model(op, shape, dtype=np.float32, params=None, version=None, quant=None) -> bytes:
    return single_op_model(op, [In(shape, dtype, quant)], Out(shape, dtype, quant), params, version=version)


def prelu_model(x_shape, alpha, dtype=np.float32) -> bytes:
    """PRELU with ``alpha`` a constant array, or a shape (then alpha is a graph input)."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", x_shape, dtype)
    if isinstance(alpha, np.ndarray):
        a, alpha_shape = graph.add_constant("alpha", alpha), alpha.shape
    else:
        a, alpha_shape = graph.add_input("alpha", alpha, dtype), alpha
    y = graph.add_tensor("y", np.broadcast_shapes(tuple(x_shape), tuple(alpha_shape)), dtype)
    graph.add_operator(B.PRELU, [x, a], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()



def float_inputs(seed: int, low: float = -8.0, high: float = 8.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([SPECIAL_VALUES, rng.uniform(low, high, size=48).astype(np.float32)]).reshape(4, 16)


@pytest.mark.parametrize("op", [B.LOGISTIC, B.TANH, B.HARD_SWISH], ids=name)
def test_float_activation_v1_matches_litert(op):
    model = unary_model(op, [4, 16])
    assert stamped_version(model) == 1
    assert_matches_litert(model, [float_inputs(int(op))])


def test_elu_v1_matches_litert_builtin_kernels():
    # LiteRT's reference resolver has no ELU; compare with its default kernel.
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
    from ai_edge_litert.interpreter import OpResolverType

    model = unary_model(B.ELU, [4, 16])
    assert stamped_version(model) == 1
    x = float_inputs(3)
    expected = run_interpreter(LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN), [x])
    assert_outputs_equal(run_ours(model, [x]), expected)


@pytest.mark.parametrize("alpha", [0.2, 1.0, 2.5, -0.5, 0.0], ids=str)
def test_leaky_relu_v1_with_any_alpha_matches_litert(alpha):
    model = unary_model(B.LEAKY_RELU, [4, 16], params=LeakyReluParams(alpha=alpha))
    assert stamped_version(model) == 1
    assert_matches_litert(model, [float_inputs(7)])


@pytest.mark.parametrize("approximate", [False, True], ids=["erfc", "tanh"])
def test_gelu_v1_matches_litert(approximate):
    model = unary_model(B.GELU, [4, 16], params=GeluParams(approximate=approximate))
    assert stamped_version(model) == 1
    assert_matches_litert(model, [float_inputs(11)])


def test_exact_gelu_over_a_dense_range_matches_litert():
    # The erfc here is a Chebyshev fit (relative error < 1.2e-7): check it densely, on
    # more elements than one block of the kernel (65536), the last block partial.
    model = unary_model(B.GELU, [3, 50001], params=GeluParams(approximate=False))
    assert_matches_litert(model, [np.linspace(-12, 12, 150003, dtype=np.float32).reshape(3, 50001)])


# PRELU: (input shape, alpha) with alpha constant (array) or a graph input (shape)
PRELU_CASES = {
    "per-channel-in-(0,1]": ([1, 3, 3, 4], np.array([0.1, 0.25, 0.5, 1.0], np.float32)),
    "shared-axes-above-1": ([2, 3, 3, 4], np.array([[[1.5, 2.0, 3.0, 1.01]]], np.float32)),
    "mixed-signs": ([2, 5, 4], np.array([-0.5, 0.0, 0.3, 2.0], np.float32)),
    "alpha-input": ([2, 3, 4], [3, 1]),
}


@pytest.mark.parametrize("x_shape, alpha", PRELU_CASES.values(), ids=PRELU_CASES.keys())
def test_prelu_v1_matches_litert(x_shape, alpha):
    model = prelu_model(x_shape, alpha)
    assert stamped_version(model) == 1
    rng = np.random.default_rng(2)
    x = rng.uniform(-4, 4, size=x_shape).astype(np.float32)
    x.reshape(-1)[:4] = [np.inf, -np.inf, -0.0, np.nan]
    inputs = [x] if isinstance(alpha, np.ndarray) else [x, rng.uniform(-2, 2, size=alpha).astype(np.float32)]
    assert_matches_litert(model, inputs)


# -- nodes outside what the kernels implement fail clearly ---------------------------------


def test_prelu_alpha_that_widens_the_input_fails_like_litert():
    model = prelu_model([3, 4], np.full([2, 1, 4], 0.2, np.float32))
    x = np.ones([3, 4], np.float32)
    with pytest.raises(RuntimeError):
        run_litert(model, [x])
    with pytest.raises(KernelError, match="PRELU v1.*alpha"):
        run_ours(model, [x])


def test_int32_prelu_fails_naming_the_op():
    model = prelu_model([2, 3], np.ones([3], np.int32), dtype=np.int32)
    with pytest.raises(KernelError, match="PRELU v1.*INT32"):
        Interpreter(model_content=model).allocate_tensors()
