"""FULLY_CONNECTED v8: sparse weights (backends/cpu/kernels/fully_connected_sparse.py) against
LiteRT: float32 weights in every sparse format LiteRT's reference kernel reads (within float
rounding: the sums run in another order), int8 weights in 1x16 blocks (bit for bit), the only
int8 format LiteRT runs."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.recipes import rule_version
from model_helpers import stamped_version
from oracle import assert_matches_litert, run_litert, run_ours
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.params import FullyConnectedParams
from test_densify import CSR, DENSE, encode_sparse, patch_sparsity

LAYOUTS = {
    # name: (traversal_order, formats, block_map, block_size)
    "dense": ([0, 1], [DENSE, DENSE], (), ()),
    "csr": ([0, 1], [DENSE, CSR], (), ()),
    "blocks-1x4": ([0, 1, 2], [DENSE, CSR, DENSE], (1,), (4,)),
    "blocks-1x16": ([0, 1, 2], [DENSE, CSR, DENSE], (1,), (16,)),
}


def sparse_weights(rng, units, depth, block, dtype) -> np.ndarray:
    """Weights with zeros in whole blocks of ``block`` along the depth (some all-zero rows of blocks)."""
    keep = np.repeat(rng.uniform(size=(units, depth // block)) < 0.4, block, axis=1)
    values = rng.uniform(-3, 3, (units, depth)) * keep
    return (np.round(values * 20) if np.dtype(dtype) == np.int8 else values).astype(dtype)


def sparse_fc_model(dense: np.ndarray, layout, quantized: bool, batch: int = 2) -> bytes:
    units, depth = dense.shape
    builder = ModelBuilder()
    graph = builder.subgraph()
    dtype = np.int8 if quantized else np.float32
    x = graph.add_input("x", [batch, depth], dtype, quantization=quantization(0.05, 1) if quantized else None)
    w = graph.add_constant("w", np.zeros_like(dense), quantization=quantization(0.02, 0) if quantized else None)
    b = graph.add_constant("b", np.arange(units, dtype=np.int32 if quantized else np.float32),
                           quantization=quantization(0.001, 0) if quantized else None)
    y = graph.add_tensor("y", [batch, units], dtype, quantization=quantization(0.1, -3) if quantized else None)
    # (the builder writes the weights dense; the sparsity is patched in after: v8 given here,
    # the version the rules give the patched model, checked by the tests)
    graph.add_operator(B.FULLY_CONNECTED, [x, w, b], [y], FullyConnectedParams(), version=8)
    graph.add_output(y)
    order, formats, block_map, block_size = layout
    values, metadata = encode_sparse(dense, order, formats, block_map, block_size)
    return patch_sparsity(builder.build(), "w", values, order, block_map, metadata)


@pytest.mark.parametrize("layout", list(LAYOUTS), ids=str)
def test_float32_sparse_weights_are_v8_and_match_litert_in_every_format(layout):
    rng = np.random.default_rng(3)
    block = LAYOUTS[layout][3][0] if LAYOUTS[layout][3] else 1
    model = sparse_fc_model(sparse_weights(rng, 8, 32, block, np.float32), LAYOUTS[layout], quantized=False)
    assert stamped_version(model) == rule_version(model) == 8
    assert_matches_litert(model, [rng.uniform(-1, 1, (2, 32)).astype(np.float32)])


def test_int8_sparse_weights_in_1x16_blocks_are_v8_and_match_litert_bit_for_bit():
    rng = np.random.default_rng(4)
    model = sparse_fc_model(sparse_weights(rng, 8, 64, 16, np.int8), LAYOUTS["blocks-1x16"], quantized=True, batch=3)
    assert stamped_version(model) == rule_version(model) == 8
    assert_matches_litert(model, [rng.integers(-128, 128, (3, 64)).astype(np.int8)], rtol=0, atol=0)


def test_int8_sparse_weights_in_a_format_litert_refuses_give_the_dense_weights_results():
    rng = np.random.default_rng(5)
    dense = sparse_weights(rng, 8, 32, 1, np.int8)
    x = rng.integers(-128, 128, (2, 32)).astype(np.int8)
    with pytest.raises(RuntimeError, match="sparse fully-connected"):
        run_litert(sparse_fc_model(dense, LAYOUTS["csr"], quantized=True), [x])
    # the same weights stored dense: the int8 kernel LiteRT agrees with (test_fully_connected_quantized.py)
    np.testing.assert_array_equal(run_ours(sparse_fc_model(dense, LAYOUTS["csr"], quantized=True), [x])[0],
                                  run_ours(sparse_fc_model(dense, LAYOUTS["dense"], quantized=True), [x])[0])
