"""Issue 16: hostile models against the layout, reduction and densify kernels end in the
project's own clear errors (``ModelError``, ``UnsupportedKernelError``, or a deliberate
``ValueError`` with a message), never in an IndexError, a numpy reshape or broadcast error
or a MemoryError from inside a kernel; where LiteRT runs such a model, so do we.

One test per behaviour; each reproduces a finding of the mutation fuzzer
(``tests/fuzz``) in a small model."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from backends.cpu.kernel import UnsupportedKernelError
from backends.cpu.kernels.slice import strided_slice_plan
from backends.gpu import GpuDelegate
from backends.gpu.ops.reduce import require_reduced_shape
from delegate_sdk.context import KernelError
from delegate_sdk.delegate import DelegatePrepareError
from interpreter import Interpreter
from model_helpers import Const, Out, single_op_model
from oracle import assert_matches_litert
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.errors import ModelError
from schema.params import ReducerParams, StridedSliceParams
from test_densify import CSR, DENSE, patch_sparsity
from test_reshape import In, single_op, values

i32 = lambda v: np.array(v, np.int32)  # noqa: E731


def root_cause(error: BaseException) -> BaseException:
    while error.__cause__ is not None:
        error = error.__cause__
    return error


def run(model: bytes, inputs=(), **kwargs) -> list[np.ndarray]:
    interpreter = Interpreter(model_content=model, **kwargs)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def fails(model: bytes, inputs=(), error=UnsupportedKernelError, match: str = "", **kwargs) -> BaseException:
    """The root cause of the KernelError running ``model`` raises: of type ``error``,
    with ``match`` in its message."""
    with pytest.raises(KernelError) as caught:
        run(model, inputs, **kwargs)
    cause = root_cause(caught.value)
    assert isinstance(cause, error), repr(cause)
    assert match in str(cause), str(cause)
    return cause


def delegate_fails(model: bytes, error=ModelError, match: str = "") -> BaseException:
    """The root cause of the DelegatePrepareError applying the emulated GPU delegate raises."""
    interpreter = Interpreter(model_content=model)
    with pytest.raises(DelegatePrepareError) as caught:
        interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    cause = root_cause(caught.value)
    assert isinstance(cause, error), repr(cause)
    assert match in str(cause), str(cause)
    return cause


# -- arity: a node the GPU delegate prepares itself (folded: every input constant) --------------


def folded_node(op, constants, out_shape, version=1) -> bytes:
    return single_op_model(op, [Const(np.asarray(value)) for value in constants], Out(out_shape), version=version)


@pytest.mark.parametrize(
    ("op", "wanted"),
    [
        (B.PAD, "takes 2 or 3 inputs, the node has 1"),
        (B.TILE, "takes 2 inputs, the node has 1"),
        (B.TRANSPOSE, "takes 2 inputs, the node has 1"),
        (B.RESIZE_BILINEAR, "takes 2 inputs, the node has 1"),
        (B.GATHER, "takes 2 inputs, the node has 1"),
    ],
    ids=["PAD", "TILE", "TRANSPOSE", "RESIZE_BILINEAR", "GATHER"],
)
def test_a_folded_node_with_an_input_removed_is_left_by_the_gpu_delegate_and_refused_in_prepare(op, wanted):
    # The GPU delegate takes nodes it can fold whatever their op, but never a malformed one.
    model = folded_node(op, [np.ones([1, 2, 2, 1], np.float32)], [1, 2, 2, 1])
    rejected_by_the_delegate_then_refused(model, f"malformed node: {wanted}")


def test_a_folded_strided_slice_with_an_input_removed_is_left_by_the_gpu_delegate_and_refused_in_prepare():
    model = folded_node(B.STRIDED_SLICE, [np.ones([4], np.float32), i32([0]), i32([2])], [2], version=2)
    rejected_by_the_delegate_then_refused(model, "STRIDED_SLICE v2: malformed node: takes 4 inputs, the node has 3")


def rejected_by_the_delegate_then_refused(model: bytes, reason: str) -> None:
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (placement,) = interpreter.delegation_reports[-1].placements
    assert placement.runs_on == "CPU" and reason in placement.rejections[0]
    with pytest.raises(KernelError) as caught:
        interpreter.allocate_tensors()
    assert isinstance(root_cause(caught.value), ModelError)
    assert reason.split("malformed node: ")[1] in str(caught.value)


# -- STRIDED_SLICE --------------------------------------------------------------------------------


def new_axes_slice(input_shape, begin, end, mask) -> bytes:
    return single_op(
        B.STRIDED_SLICE,
        [In(input_shape), i32(begin), i32(end), i32([1] * len(begin))],
        [([1] * 4, np.float32)],
        StridedSliceParams(new_axis_mask=mask),
        version=2,
    )


def test_strided_slice_whose_new_axes_take_the_input_axes_places_matches_litert():
    # Bits past the begin entries make every effective axis a new one: TFLite reads the
    # first input element as a [1]*8 array.
    model = new_axes_slice([1, 5, 1, 6], [0, -4, 0, 0], [0, 0, 0, 6], 0x7FFFFFFF)
    (ours,) = assert_matches_litert(model, [values([1, 5, 1, 6])])
    assert ours.shape == (1,) * 8


def test_strided_slice_whose_effective_shape_exceeds_the_input_is_refused():
    fails(new_axes_slice([3, 0], [0, 0], [1, 1], 0b1111), [np.zeros([3, 0], np.float32)],
          match="does not cover the input")


def test_the_gpu_plan_of_strided_slice_refuses_an_effective_shape_that_leaves_input_axes_out():
    params = StridedSliceParams(new_axis_mask=0b1111)
    with pytest.raises(ValueError, match="does not cover the input"):
        strided_slice_plan([2, 3], [0, 0], [1, 1], [1, 1], params)
    assert strided_slice_plan([2, 3], [0, 0], [1, 1], [1, 1], params, prefix=True)[0] == [1, 1, 1, 1]


def test_strided_slice_with_strides_of_another_length_is_refused():
    model = single_op(B.STRIDED_SLICE, [In([4, 4]), i32([0, 0]), i32([2, 2]), i32([1])], [([2, 2], np.float32)],
                      StridedSliceParams(), version=2)
    fails(model, [values([4, 4])], match="differ in length")


# -- a node reading a tensor that a later node writes ---------------------------------------------


def test_a_node_reading_a_dynamic_tensor_before_the_node_that_writes_it_is_a_clear_error():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [4])
    begin = graph.add_input("begin", [1], np.int32)
    size = graph.add_input("size", [1], np.int32)
    early = graph.add_tensor("early", [2])
    late = graph.add_tensor("late", [2])
    y = graph.add_tensor("y", [4])
    graph.add_operator(B.SLICE, [x, begin, size], [early])
    graph.add_operator(B.CONCATENATION, [early, late], [y])  # reads `late` before node 2 writes it
    graph.add_operator(B.SLICE, [x, begin, size], [late])
    graph.add_output(y)
    with pytest.raises(ModelError, match=r"node 1 \(CONCATENATION v1\) input 1 is tensor 4 \('late'\), which node 2 \(SLICE v1\) writes"):
        Interpreter(model_content=builder.build())


# -- a reduction reading a tensor that a later node writes (and resizes) --------------------------


def reduction_reading_a_later_output(dtype=np.float32, q=None, op=B.MEAN) -> bytes:
    """Node 0 reduces tensor `late` (declared a scalar), which node 1 writes afterwards as
    [2, 3]: node 0 was prepared for a scalar input. (LiteRT reads out of bounds there.)"""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3, 4], dtype, quantization=q)
    late = graph.add_tensor("late", [], dtype, quantization=q)
    y = graph.add_tensor("y", [], dtype, quantization=q)
    graph.add_operator(op, [late, graph.add_constant("axis0", i32([0]))], [y], ReducerParams(keep_dims=False))
    graph.add_operator(op, [x, graph.add_constant("axis2", i32([2]))], [late], ReducerParams(keep_dims=False))
    graph.add_output(y)
    graph.add_output(late)
    return builder.build()


def test_mean_whose_input_a_later_node_writes_is_refused_at_load():
    with pytest.raises(ModelError, match="the operators are not in execution order"):
        Interpreter(model_content=reduction_reading_a_later_output())


def test_quantized_mean_whose_input_a_later_node_writes_is_refused_at_load():
    q = quantization(0.5, 3)
    with pytest.raises(ModelError, match="the operators are not in execution order"):
        Interpreter(model_content=reduction_reading_a_later_output(np.int8, q))


def test_a_gpu_reduction_checks_its_output_has_the_reduced_shape():
    # (On the GPU the partition is prepared twice, so the shapes above settle; an output
    # that still disagrees is refused rather than reshaped at run.)
    x, out = SimpleNamespace(shape=(2, 3), name="late"), SimpleNamespace(shape=(), name="y")
    wanted = r"output 'y' has shape \[\] but reducing \[2, 3\] over axes \[0\] gives \[3\]"
    with pytest.raises(ValueError, match=wanted):
        require_reduced_shape(x, out, (0,), False)
    require_reduced_shape(x, SimpleNamespace(shape=(1, 3), name="y"), (0,), True)


# -- sizes made absurd by parameters: refused naming the bytes, before allocating ---------------


def test_space_to_batch_paddings_making_an_absurd_scratch_buffer_are_refused():
    model = single_op(B.SPACE_TO_BATCH_ND, [In([1, 4, 4, 1]), i32([2, 2]), i32([[0, 1000], [0, 1000]])],
                      [([4, 2, 2, 1], np.float32)])
    fails(model, [values([1, 4, 4, 1])], match="would need 3.85 MiB (4032064 bytes), more than the arena limit",
          experimental_arena_limit_bytes=1 << 20)


@pytest.mark.parametrize(
    ("op", "spec", "value", "version"),
    [
        (B.PAD, ([2, 3], [2, 2]), [[0, 1000], [0, 1000]], 1),
        (B.TILE, ([2, 3], [2]), [1000, 1000], 1),
        (B.BROADCAST_TO, ([1, 3], [3]), [1000, 1000, 3], 2),
        (B.RESIZE_NEAREST_NEIGHBOR, ([1, 2, 2, 1], [2]), [1000, 1000], 1),
        (B.RESIZE_BILINEAR, ([1, 2, 2, 1], [2]), [1000, 1000], 1),
    ],
    ids=["PAD", "TILE", "BROADCAST_TO", "RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"],
)
def test_a_dynamic_output_of_absurd_size_is_refused_naming_the_bytes(op, spec, value, version):
    x_shape, parameter_shape = spec
    rank = {B.BROADCAST_TO: 3}.get(op, len(x_shape))
    model = single_op(op, [In(x_shape), In(parameter_shape, np.int32)], [([-1] * rank, np.float32)], version=version)
    fails(model, [values(x_shape), i32(value)], match="more than the arena limit of 1 MiB",
          experimental_arena_limit_bytes=1 << 20)


def test_fill_with_absurd_dims_is_refused_naming_the_bytes():
    model = single_op(B.FILL, [In([2], np.int32), np.float32(1.5)], [([-1, -1], np.float32)])
    fails(model, [i32([1000, 1000])], match="output 'y0' of shape [1000, 1000] would need 3.81 MiB",
          experimental_arena_limit_bytes=1 << 20)


def test_range_with_an_infinite_length_is_a_clear_error():
    model = single_op(B.RANGE, [In([], np.float32), In([], np.float32), In([], np.float32)], [([-1], np.float32)])
    fails(model, [np.float32(0), np.float32(np.inf), np.float32(1)], ValueError, "give no finite length")


# -- DENSIFY --------------------------------------------------------------------------------------


def densify_model(metadata, values_, shape=(2, 3)) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    w = graph.add_constant("w_sparse", np.zeros(shape, np.float32))
    y = graph.add_tensor("dense", shape)
    graph.add_operator(B.DENSIFY, [w], [y])
    graph.add_output(y)
    return patch_sparsity(builder.build(), "w_sparse", np.asarray(values_, np.float32), [0, 1], [], metadata)


def dense(size: int) -> dict:
    return {"format": DENSE, "dense_size": size}


def csr(segments, indices) -> dict:
    return {"format": CSR, "array_segments": segments, "array_indices": indices}


def test_densify_with_array_indices_out_of_range_is_refused():
    metadata = [dense(2), csr([0, 1, 2], [1, 7])]
    fails(densify_model(metadata, [1.0, 2.0]), error=ValueError,
          match="the sparsity addresses index 7 of dimension 1 (size 3)")


def test_densify_with_a_dense_size_larger_than_the_tensor_is_refused():
    metadata = [dense(1 << 30), csr([0, 1], [0])]
    fails(densify_model(metadata, [1.0]), error=ValueError, match="dense_size 1073741824 gives 1073741824 nodes")


def test_densify_with_segments_giving_more_nodes_than_the_tensor_has_elements_is_refused():
    metadata = [dense(2), csr([0, 4, 8], [0, 1, 2, 0, 1, 2, 0, 1])]
    fails(densify_model(metadata, [1.0] * 8), error=ValueError, match="array_segments give 8 nodes, more than the 6")
