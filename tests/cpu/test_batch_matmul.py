"""BATCH_MATMUL (float32, version 1) against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from oracle import assert_matches_litert
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.model import Model
from schema.params import BatchMatMulParams


def matmul_model(
    lhs_shape, rhs_shape, adj_x=False, adj_y=False, *, rhs_constant=False, version=None, dtype=np.float32, seed=0
):
    """One BATCH_MATMUL node."""
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", lhs_shape, dtype)
    if rhs_constant:
        y = graph.add_constant("y", rng.uniform(-1, 1, rhs_shape).astype(dtype))
    else:
        y = graph.add_input("y", rhs_shape, dtype)
    out = graph.add_tensor("out", [1], dtype)
    params = BatchMatMulParams(adj_x=adj_x, adj_y=adj_y)
    graph.add_operator(BuiltinOperator.BATCH_MATMUL, [x, y], [out], params, version=version)
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


def shapes_for(batch_x, batch_y, rows, depth, cols, adj_x, adj_y):
    lhs = [*batch_x, depth, rows] if adj_x else [*batch_x, rows, depth]
    rhs = [*batch_y, cols, depth] if adj_y else [*batch_y, depth, cols]
    return lhs, rhs


@pytest.mark.parametrize("adj_x", [False, True], ids=["x", "adj_x"])
@pytest.mark.parametrize("adj_y", [False, True], ids=["y", "adj_y"])
def test_batch_matmul_with_adjoints_matches_litert(adj_x, adj_y):
    lhs, rhs = shapes_for([2], [2], 3, 5, 4, adj_x, adj_y)
    model = matmul_model(lhs, rhs, adj_x, adj_y)
    assert Model.from_bytes(model).subgraphs[0].operators[0].version == 1
    assert_matches_litert(model)


@pytest.mark.parametrize(
    "batch_x, batch_y",
    [([], []), ([3], []), ([], [3]), ([2, 1], [4]), ([1, 3], [2, 1]), ([2, 1, 3], [1, 4, 1]), ([2, 1, 1], [1, 3, 2])],
    ids=str,
)
def test_batch_matmul_broadcasts_batch_axes_like_litert(batch_x, batch_y):
    lhs, rhs = shapes_for(batch_x, batch_y, 3, 4, 5, False, False)
    assert_matches_litert(matmul_model(lhs, rhs))


@pytest.mark.parametrize("adj_y", [False, True], ids=["y", "adj_y"])
def test_batch_matmul_with_constant_rhs_matches_litert(adj_y):
    lhs, rhs = shapes_for([2, 3], [3], 4, 6, 5, False, adj_y)
    assert_matches_litert(matmul_model(lhs, rhs, adj_y=adj_y, rhs_constant=True))


def test_inner_dimensions_that_differ_fail_clearly():
    model = matmul_model([2, 3], [4, 5])
    with pytest.raises(KernelError, match="BATCH_MATMUL.*inner dimensions"):
        Interpreter(model_content=model).allocate_tensors()


def test_rank_above_5_fails_clearly_like_litert():
    model = matmul_model([1, 1, 1, 1, 2, 3], [3, 2])
    with pytest.raises(KernelError, match="BATCH_MATMUL.*2-D to 5-D"):
        Interpreter(model_content=model).allocate_tensors()


@settings(max_examples=30, deadline=None)
@given(
    batch=st.lists(st.tuples(st.integers(1, 3), st.sampled_from(["both", "x1", "y1"])), min_size=0, max_size=3),
    drop_x=st.integers(0, 3),
    drop_y=st.integers(0, 3),
    rows=st.integers(1, 6),
    depth=st.integers(1, 8),
    cols=st.integers(1, 6),
    adj_x=st.booleans(),
    adj_y=st.booleans(),
    rhs_constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_batch_matmul_property_matches_litert(
    batch, drop_x, drop_y, rows, depth, cols, adj_x, adj_y, rhs_constant, seed
):
    # Each batch axis is shared, or 1 on one side; leading axes may be missing on either side.
    batch_x = [1 if side == "x1" else size for size, side in batch][min(drop_x, len(batch)) :]
    batch_y = [1 if side == "y1" else size for size, side in batch][min(drop_y, len(batch)) :]
    lhs, rhs = shapes_for(batch_x, batch_y, rows, depth, cols, adj_x, adj_y)
    model = matmul_model(lhs, rhs, adj_x, adj_y, rhs_constant=rhs_constant, seed=seed)
    assert_matches_litert(model, seed=seed)
