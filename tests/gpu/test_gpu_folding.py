"""Work that the CPU kernels fold into constants at prepare never splits a GPU partition
(issues 14 and 15): a SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE chain on a static shape,
whatever ops it uses, is taken with its neighbours; its result is a constant on the device."""

from __future__ import annotations

import numpy as np

from backends.gpu import GpuDelegate
from interpreter.testing import assert_matches_cpu
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator, TensorType
from schema.params import AddParams, PackParams, ReshapeParams, ShapeParams, StridedSliceParams

B = BuiltinOperator


def shape_chain_model() -> bytes:
    """y = x + 1; shape = SHAPE(y); n = STRIDED_SLICE(shape, [0], [1]); target = PACK(n, -1);
    out = RESHAPE(y, target) * 2 (here MUL as ADD of itself): the chain computes [1, 24]."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4, 6])
    one = graph.add_constant("one", np.ones((1, 4, 6), np.float32))
    y = graph.add_tensor("y", [1, 4, 6])
    shape = graph.add_tensor("shape", [3], TensorType.INT32)
    batch = graph.add_tensor("batch", [], TensorType.INT32)
    minus_one = graph.add_constant("minus_one", np.array(-1, np.int32))
    target = graph.add_tensor("target", [2], TensorType.INT32)
    flat = graph.add_tensor("flat", [1, 24])
    out = graph.add_tensor("out", [1, 24])
    graph.add_operator(B.ADD, [x, one], [y], AddParams())
    graph.add_operator(B.SHAPE, [y], [shape], ShapeParams(out_type=TensorType.INT32))
    begin, end, strides = (graph.add_constant(n, np.array([v], np.int32)) for n, v in (("begin", 0), ("end", 1), ("strides", 1)))
    graph.add_operator(B.STRIDED_SLICE, [shape, begin, end, strides], [batch], StridedSliceParams(shrink_axis_mask=1))
    graph.add_operator(B.PACK, [batch, minus_one], [target], PackParams(values_count=2, axis=0))
    graph.add_operator(B.RESHAPE, [y, target], [flat], ReshapeParams())
    graph.add_operator(B.ADD, [flat, flat], [out], AddParams())
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


def test_a_shape_chain_on_a_static_shape_is_folded_inside_one_partition():
    delegate = GpuDelegate(device="host")
    interpreter = assert_matches_cpu(shape_chain_model(), lambda: delegate, invokes=3)
    assert all(p.delegated for p in interpreter.node_placements())
    assert len(delegate.kernels) == 1
    (kernel,) = delegate.kernels
    assert [inner.index for _, inner, _, _ in kernel.steps] == [0, 4, 5]  # ADD, RESHAPE, ADD run; the chain folded
