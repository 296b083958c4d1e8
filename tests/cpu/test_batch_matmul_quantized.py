"""Quantized BATCH_MATMUL against ai-edge-litert's reference kernel.

int8 (v2, also int8 -> int32), int16 x int16 and int16 x int8 (v3), and hybrid
float32 x int8 (v1 symmetric, v4 asymmetric, per-channel rhs), all bit-exact.
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
from schema.params import BatchMatMulParams

T = TensorType
EXACT = {"rtol": 0, "atol": 0}
NP = {T.INT8: np.int8, T.INT16: np.int16, T.INT32: np.int32, T.FLOAT32: np.float32}
#: Hybrid outputs are float32 yet bit-exact: exact integer sums, the same on-the-fly
#: quantization as the wheel's NEON tensor utils, the same float32 factors.
HYBRID_TOLERANCE = EXACT


def full_range(dtype, shape, rng, low=None) -> np.ndarray:
    info = np.iinfo(dtype)
    low = info.min if low is None else low
    values = rng.integers(low, info.max, size=shape, endpoint=True).astype(dtype)
    values.reshape(-1)[:2] = [low, info.max][: values.size]
    return values


def bmm_model(x_shape, y_shape, out_shape, x_type, y_type, out_type, *, rng, x_quant=None, y_quant=None,
              out_quant=None, adj_x=False, adj_y=False, asymmetric=False, constant_rhs=True, version=None):
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(x_shape), x_type, quantization=x_quant)
    if x_type == T.FLOAT32:
        y_values = full_range(NP[y_type], y_shape, rng, low=-127)  # symmetric int8 weights
        inputs = [rng.uniform(-3, 3, size=x_shape).astype(np.float32)]
    else:
        y_values = full_range(NP[y_type], y_shape, rng)
        inputs = [full_range(NP[x_type], x_shape, rng)]
    if constant_rhs:
        y = graph.add_constant("y", y_values, quantization=y_quant)
    else:
        y = graph.add_input("y", list(y_shape), y_type, quantization=y_quant)
        inputs.append(y_values)
    out = graph.add_tensor("out", list(out_shape), out_type, quantization=out_quant)
    params = BatchMatMulParams(adj_x=adj_x, adj_y=adj_y, asymmetric_quantize_inputs=asymmetric)
    graph.add_operator(BuiltinOperator.BATCH_MATMUL, [x, y], [out], params, version=version)
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build(), inputs



def q8(rng, zero_point=True):
    return quantization(float(rng.uniform(0.001, 0.1)), int(rng.integers(-128, 128)) if zero_point else 0)


def q16(rng):
    return quantization(float(rng.uniform(1e-4, 1e-3)), 0)


SHAPES = {
    # name: (x shape, y shape, out shape, adj_x, adj_y)
    "2d": ((5, 7), (7, 3), (5, 3), False, False),
    "batched": ((2, 4, 6), (2, 6, 5), (2, 4, 5), False, False),
    "broadcast_rhs": ((3, 2, 4, 6), (1, 6, 5), (3, 2, 4, 5), False, False),
    "broadcast_lhs": ((1, 4, 6), (3, 6, 5), (3, 4, 5), False, False),
    "adj_x_adj_y": ((2, 6, 4), (2, 5, 6), (2, 4, 5), True, True),
    "adj_y": ((4, 6), (5, 6), (4, 5), False, True),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_batch_matmul_int8_is_v2_and_matches_litert(shape):
    x_shape, y_shape, out_shape, adj_x, adj_y = SHAPES[shape]
    rng = np.random.default_rng(1)
    model, inputs = bmm_model(x_shape, y_shape, out_shape, T.INT8, T.INT8, T.INT8, rng=rng, x_quant=q8(rng),
                              y_quant=q8(rng), out_quant=q8(rng), adj_x=adj_x, adj_y=adj_y)
    assert stamped_version(model) == 2
    assert_matches_litert(model, inputs, **EXACT)


def test_batch_matmul_int8_with_non_constant_rhs_and_deep_accumulators_matches_litert():
    rng = np.random.default_rng(2)
    model, inputs = bmm_model((2, 3, 900), (2, 900, 4), (2, 3, 4), T.INT8, T.INT8, T.INT8, rng=rng,
                              x_quant=q8(rng), y_quant=q8(rng), out_quant=q8(rng), constant_rhs=False)
    assert_matches_litert(model, inputs, **EXACT)


def test_batch_matmul_int8_to_int32_returns_raw_products_like_litert():
    rng = np.random.default_rng(3)
    model, inputs = bmm_model((2, 3, 8), (2, 8, 4), (2, 3, 4), T.INT8, T.INT8, T.INT32, rng=rng,
                              x_quant=q8(rng), y_quant=q8(rng))
    assert stamped_version(model) == 2
    assert_matches_litert(model, inputs, **EXACT)


@pytest.mark.parametrize("y_type", [T.INT16, T.INT8])
def test_batch_matmul_int16_is_v3_and_matches_litert(y_type):
    rng = np.random.default_rng(4)
    y_quant = q16(rng) if y_type == T.INT16 else q8(rng, zero_point=False)
    model, inputs = bmm_model((2, 3, 40), (40, 6), (2, 3, 6), T.INT16, y_type, T.INT16, rng=rng,
                              x_quant=q16(rng), y_quant=y_quant, out_quant=q16(rng))
    assert stamped_version(model) == 3
    assert_matches_litert(model, inputs, **EXACT)


@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(1, 6), k=st.integers(1, 40), n=st.integers(1, 6), batch=st.integers(1, 3),
    adj_x=st.booleans(), adj_y=st.booleans(), seed=st.integers(0, 2**16),
)
def test_batch_matmul_int8_matches_litert_for_any_shape_and_scales(m, k, n, batch, adj_x, adj_y, seed):
    rng = np.random.default_rng(seed)
    x_shape = (batch, k, m) if adj_x else (batch, m, k)
    y_shape = (batch, n, k) if adj_y else (batch, k, n)
    model, inputs = bmm_model(x_shape, y_shape, (batch, m, n), T.INT8, T.INT8, T.INT8, rng=rng, x_quant=q8(rng),
                              y_quant=q8(rng), out_quant=q8(rng), adj_x=adj_x, adj_y=adj_y)
    assert_matches_litert(model, inputs, **EXACT)


# -- hybrid ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", ["2d", "batched", "broadcast_rhs", "adj_x_adj_y"])
def test_batch_matmul_hybrid_is_v1_and_matches_litert(shape):
    x_shape, y_shape, out_shape, adj_x, adj_y = SHAPES[shape]
    rng = np.random.default_rng(5)
    model, inputs = bmm_model(x_shape, y_shape, out_shape, T.FLOAT32, T.INT8, T.FLOAT32, rng=rng,
                              y_quant=q8(rng, zero_point=False), adj_x=adj_x, adj_y=adj_y)
    assert stamped_version(model) == 1
    assert_matches_litert(model, inputs, **HYBRID_TOLERANCE)


@pytest.mark.parametrize("shape", ["2d", "batched", "broadcast_lhs"])
def test_batch_matmul_hybrid_asymmetric_is_v4_and_matches_litert(shape):
    x_shape, y_shape, out_shape, adj_x, adj_y = SHAPES[shape]
    rng = np.random.default_rng(6)
    model, inputs = bmm_model(x_shape, y_shape, out_shape, T.FLOAT32, T.INT8, T.FLOAT32, rng=rng,
                              y_quant=q8(rng, zero_point=False), adj_x=adj_x, adj_y=adj_y, asymmetric=True)
    inputs[0] = inputs[0] + 1.5  # mostly positive rows: zero points away from 0
    assert stamped_version(model) == 4
    assert_matches_litert(model, inputs, **HYBRID_TOLERANCE)


@pytest.mark.parametrize("asymmetric", [False, True])
def test_batch_matmul_hybrid_long_rows_match_litert(asymmetric):
    rng = np.random.default_rng(11)
    model, inputs = bmm_model((2, 16, 1003), (1003, 3), (2, 16, 3), T.FLOAT32, T.INT8, T.FLOAT32, rng=rng,
                              y_quant=q8(rng, zero_point=False), asymmetric=asymmetric)
    assert_matches_litert(model, inputs, **HYBRID_TOLERANCE)


@pytest.mark.parametrize("asymmetric", [False, True])
def test_batch_matmul_hybrid_per_channel_rhs_matches_litert(asymmetric):
    rng = np.random.default_rng(7)
    n = 5
    y_quant = quantization(rng.uniform(0.001, 0.1, size=n), [0] * n, quantized_dimension=1)
    model, inputs = bmm_model((2, 4, 6), (6, n), (2, 4, n), T.FLOAT32, T.INT8, T.FLOAT32, rng=rng,
                              y_quant=y_quant, asymmetric=asymmetric)
    assert_matches_litert(model, inputs, **HYBRID_TOLERANCE)


def test_batch_matmul_float32_nodes_still_run_on_the_float_kernel():
    rng = np.random.default_rng(8)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3])
    y = graph.add_constant("y", rng.normal(size=(3, 4)).astype(np.float32))
    out = graph.add_tensor("out", [2, 4])
    graph.add_operator(BuiltinOperator.BATCH_MATMUL, [x, y], [out], BatchMatMulParams())
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    assert_matches_litert(builder.build(), [rng.normal(size=(2, 3)).astype(np.float32)])


def test_batch_matmul_int8_with_per_channel_rhs_fails_naming_the_op():
    rng = np.random.default_rng(9)
    y_quant = quantization([0.1, 0.2, 0.3], [0, 0, 0], quantized_dimension=1)
    model, _ = bmm_model((2, 4), (4, 3), (2, 3), T.INT8, T.INT8, T.INT8, rng=rng, x_quant=q8(rng),
                         y_quant=y_quant, out_quant=q8(rng))
    with pytest.raises(KernelError, match="BATCH_MATMUL"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("kind, claimed", [("int8", 1), ("int16", 2), ("asymmetric_hybrid", 3)])
def test_batch_matmul_under_stamped_node_runs_as_litert_runs_it(kind, claimed):
    rng = np.random.default_rng(10)
    if kind == "int8":
        model, inputs = bmm_model((2, 4), (4, 3), (2, 3), T.INT8, T.INT8, T.INT8, rng=rng, x_quant=q8(rng),
                                  y_quant=q8(rng), out_quant=q8(rng), version=claimed)
    elif kind == "int16":
        model, inputs = bmm_model((2, 4), (4, 3), (2, 3), T.INT16, T.INT16, T.INT16, rng=rng, x_quant=q16(rng),
                                  y_quant=q16(rng), out_quant=q16(rng), version=claimed)
    else:
        model, inputs = bmm_model((2, 4), (4, 3), (2, 3), T.FLOAT32, T.INT8, T.FLOAT32, rng=rng,
                                  y_quant=q8(rng, zero_point=False), asymmetric=True, version=claimed)
    assert stamped_version(model) == claimed
    assert_matches_litert(model, inputs, **EXACT)
