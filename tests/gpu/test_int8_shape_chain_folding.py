"""Issue 23, item 5: a static shape chain folds, and the reasons name the real cause.

Keras-converted models compute a RESHAPE's target with SHAPE -> STRIDED_SLICE -> PACK on
a tensor whose batch dimension the signature leaves open (``shape_signature`` -1). The
shape is known when the partition prepares (a resize re-prepares it), so the chain is
folded inside one GPU partition, int8 RESHAPE included; our CPU path gives the same bits
at every batch size. A RESHAPE whose shape is truly known only at run time stays on the
CPU with the reason that says so, not the float RESHAPE's "FLOAT32 tensors only".
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu import GpuDelegate
from interpreter import Interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType as T
from schema.params import AddParams, PackParams, ReshapeParams, ShapeParams, StridedSliceParams

Q = quantization(0.05, 2)


def keras_shape_chain_model(open_batch: bool = True) -> bytes:
    """y = x + 1 (int8 [N, 4, 6], N open in the signature); target = PACK(STRIDED_SLICE(
    SHAPE(y), [0], [1]), -1); out = RESHAPE(y, target) + itself: [N, 24]."""
    signature = (lambda *dims: [-1, *dims]) if open_batch else (lambda *dims: None)
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [1, 4, 6], T.INT8, quantization=Q, shape_signature=signature(4, 6))
    one = g.add_constant("one", np.ones((1, 4, 6), np.int8), quantization=Q)
    y = g.add_tensor("y", [1, 4, 6], T.INT8, quantization=Q, shape_signature=signature(4, 6))
    shape = g.add_tensor("shape", [3], T.INT32)
    batch = g.add_tensor("batch", [], T.INT32)
    minus_one = g.add_constant("minus_one", np.array(-1, np.int32))
    target = g.add_tensor("target", [2], T.INT32)
    flat = g.add_tensor("flat", [1, 24], T.INT8, quantization=Q, shape_signature=signature(24))
    out = g.add_tensor("out", [1, 24], T.INT8, quantization=Q, shape_signature=signature(24))
    g.add_operator(B.ADD, [x, one], [y], AddParams())
    g.add_operator(B.SHAPE, [y], [shape], ShapeParams(out_type=T.INT32))
    begin, end, strides = (g.add_constant(n, np.array([v], np.int32)) for n, v in (("begin", 0), ("end", 1), ("strides", 1)))
    g.add_operator(B.STRIDED_SLICE, [shape, begin, end, strides], [batch], StridedSliceParams(shrink_axis_mask=1))
    g.add_operator(B.PACK, [batch, minus_one], [target], PackParams(values_count=2, axis=0))
    g.add_operator(B.RESHAPE, [y, target], [flat], ReshapeParams())
    g.add_operator(B.ADD, [flat, flat], [out], AddParams())
    g.add_output(out)
    builder.add_signature("serving_default", g)
    return builder.build()


def test_a_shape_chain_on_an_open_batch_runs_in_one_partition():
    interpreter = Interpreter(model_content=keras_shape_chain_model())
    delegate = GpuDelegate(device="host")
    interpreter.modify_graph_with_delegate(delegate)
    placements = interpreter.node_placements()
    assert all(p.delegated for p in placements), [(p.op, p.rejections) for p in placements if not p.delegated]
    assert len(delegate.kernels) == 1
    interpreter.allocate_tensors()
    (kernel,) = delegate.kernels
    assert [inner.index for _, inner, _, _ in kernel.steps] == [0, 4, 5]  # ADD, RESHAPE, ADD run; the chain folded


@pytest.mark.parametrize("batches", [(1, 3, 2)])
def test_the_folded_chain_follows_a_resized_batch_bit_for_bit(batches):
    model = keras_shape_chain_model()
    cpu, gpu = Interpreter(model_content=model), Interpreter(model_content=model)
    gpu.modify_graph_with_delegate(GpuDelegate(device="host"))
    rng = np.random.default_rng(0)
    for batch in batches:
        for interpreter in (cpu, gpu):
            interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], [batch, 4, 6])
            interpreter.allocate_tensors()
        for _ in range(3):  # eager, captured, replayed
            x = rng.integers(-128, 128, (batch, 4, 6)).astype(np.int8)
            results = []
            for interpreter in (cpu, gpu):
                interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
                interpreter.invoke()
                results.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))
            assert results[1].shape == (batch, 24)
            np.testing.assert_array_equal(results[1], results[0])


def runtime_shape_reshape_model() -> bytes:
    """An int8 RESHAPE whose shape is a model input: known only at run time."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 6], T.INT8, quantization=Q)
    shape = g.add_input("shape", [2], T.INT32)
    out = g.add_tensor("out", [3, 4], T.INT8, quantization=Q)
    g.add_operator(B.RESHAPE, [x, shape], [out], ReshapeParams())
    g.add_output(out)
    builder.add_signature("serving_default", g)
    return builder.build()


def test_an_int8_reshape_with_a_runtime_shape_is_refused_for_that_reason_alone():
    interpreter = Interpreter(model_content=runtime_shape_reshape_model())
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (placement,) = interpreter.node_placements()
    assert not placement.delegated
    (reason,) = placement.rejections
    assert "the shape tensor must be constant" in reason
    assert "FLOAT32" not in reason  # the float class's type mismatch is not the cause


def test_a_node_no_class_takes_the_types_of_still_names_every_type_mismatch():
    # An INT32 RESHAPE: neither the float nor the int8 class takes it; both say why.
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 6], T.INT32)
    shape = g.add_constant("shape", np.array([3, 4], np.int32))
    out = g.add_tensor("out", [3, 4], T.INT32)
    g.add_operator(B.RESHAPE, [x, shape], [out], ReshapeParams(new_shape=[3, 4]))
    g.add_output(out)
    builder.add_signature("serving_default", g)
    interpreter = Interpreter(model_content=builder.build())
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (placement,) = interpreter.node_placements()
    if placement.delegated:
        pytest.skip("an int32 RESHAPE is taken by a GPU class")
    (reason,) = placement.rejections
    assert "FLOAT32" in reason and "INT8" in reason
