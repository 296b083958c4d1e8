"""Issue 16: each op's declaration (schema/op_arity.py: inputs, outputs, optional inputs,
ranks), the source of every tensor a node reads, and quantization parameters are checked
before any kernel runs, with errors naming the node, op, version, tensor and field —
never an IndexError or AttributeError from inside a kernel. LiteRT (BUILTIN_REF) refuses
the same nodes in its kernels' Prepare (checked here where it does so cleanly)."""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu import GpuDelegate
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import In, Out, single_op_model
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B, TensorType as T
from schema.errors import ModelError
from schema.op_arity import ARITY, arity_problem
from schema.params import Conv2DParams


def pad_model(inputs: str = "x,paddings", outputs: int = 1, input_shape=(2, 3)) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    tensors = {"x": graph.add_input("x", list(input_shape)), "paddings": graph.add_constant("paddings", np.ones([2, 2], np.int32))}
    tensors["unwritten"] = graph.add_tensor("unwritten", [2, 2], T.INT32)
    ins = [tensors[name] if name != "-1" else -1 for name in inputs.split(",")]
    outs = [graph.add_tensor(f"y{i}", [4, 5]) for i in range(outputs)]
    graph.add_operator(B.PAD, ins, outs, version=1)
    for out in outs:
        graph.add_output(out)
    return builder.build()


def prepare_error(model: bytes) -> KernelError:
    with pytest.raises(KernelError) as caught:
        Interpreter(model_content=model).allocate_tensors()
    assert isinstance(caught.value.__cause__, ModelError)
    return caught.value


def test_a_node_with_an_input_removed_names_the_op_and_the_count():
    error = prepare_error(pad_model("x"))
    assert "node 0 (PAD v1) failed in prepare" in str(error) and "takes 2 or 3 inputs, the node has 1" in str(error)


def test_a_required_input_marked_absent_is_refused():
    assert "input 1 is required" in str(prepare_error(pad_model("x,-1")))


def test_an_optional_input_may_be_absent():
    assert arity_problem(B.PAD, [0, 1, -1], [2]) is None
    assert arity_problem(B.CONV_2D, [0, 1, -1], [2]) is None


def test_an_extra_output_is_refused():
    assert "has 1 outputs, the node has 2" in str(prepare_error(pad_model(outputs=2)))


def test_an_input_of_the_wrong_rank_is_refused_naming_the_ranks():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4, 4, 2])
    w = graph.add_constant("w", np.ones([2, 3], np.float32))  # CONV_2D filters are [O, KH, KW, I]
    y = graph.add_tensor("y", [1, 4, 4, 2])
    graph.add_operator(B.CONV_2D, [x, w], [y], version=1)
    graph.add_output(y)
    error = prepare_error(builder.build())
    assert "node 0 (CONV_2D v1)" in str(error) and "input 1 (tensor 1) is 2-D, the op takes a 4-D tensor there" in str(error)


def test_a_tensor_no_node_writes_is_refused_at_load():
    with pytest.raises(ModelError, match=r"node 0 \(PAD v1\) input 1 is tensor 2 \('unwritten'\).*not written by any node"):
        Interpreter(model_content=pad_model("x,unwritten"))


@pytest.mark.parametrize(
    ("scale", "zero_point", "message"),
    [
        (float("nan"), 0, "scale that is not finite: nan"),
        (float("inf"), 0, "scale that is not finite: inf"),
        (-0.5, 0, "negative scale: -0.5"),
        (0.0, 0, "scale 0 on INT8 values"),
        (0.5, 1 << 40, "zero point 1099511627776 does not fit in int32"),
    ],
    ids=["nan", "inf", "negative", "zero", "huge-zero-point"],
)
def test_unusable_quantization_parameters_are_refused_at_load(scale, zero_point, message):
    model = single_op_model(B.RELU, [In([4], T.INT8, quantization(scale, zero_point))], Out([4], T.INT8, quantization(0.5, 0)))
    with pytest.raises(ModelError, match=rf"tensor 0 \('x0'\) quantization has .*{message}|tensor 0 \('x0'\) quantization {message}"):
        Interpreter(model_content=model)


def test_per_channel_parameters_must_match_the_channels():
    model = single_op_model(B.RELU, [In([2, 3], T.INT8, quantization([0.1, 0.2], 0, quantized_dimension=5))],
                            Out([2, 3], T.INT8, quantization(0.5, 0)))
    with pytest.raises(ModelError, match="per-channel along dimension 5, but the tensor has rank 2"):
        Interpreter(model_content=model)


def test_a_delegate_rejects_a_malformed_node_with_the_reason_and_the_cpu_path_reports_it():
    interpreter = Interpreter(model_content=pad_model("x"))
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (placement,) = interpreter.delegation_reports[-1].placements
    assert placement.runs_on == "CPU"
    assert placement.rejections == ("PAD v1: malformed node: takes 2 or 3 inputs, the node has 1",)
    with pytest.raises(KernelError, match="takes 2 or 3 inputs"):
        interpreter.allocate_tensors()


def test_litert_refuses_the_same_node_in_prepare():
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

    interpreter = LiteRT(model_content=pad_model("x"), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    with pytest.raises(RuntimeError, match=r"num_inputs == 2 \|\| num_inputs == 3"):
        interpreter.allocate_tensors()


def test_every_declared_op_has_a_consistent_declaration():
    for op, arity in ARITY.items():
        assert 0 <= arity.min_inputs <= arity.max_inputs and 0 <= arity.min_outputs <= arity.max_outputs, B(op).name
        assert all(position < arity.max_inputs for position in arity.optional), B(op).name
        assert all(position < arity.max_inputs for position, _ in arity.ranks), B(op).name


def test_the_gpu_delegate_leaves_a_convolution_of_an_empty_batch_to_the_cpu():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [0, 4, 4, 2])
    w = graph.add_constant("w", np.ones([3, 1, 1, 2], np.float32))
    y = graph.add_tensor("y", [0, 4, 4, 3])
    graph.add_operator(B.CONV_2D, [x, w], [y], Conv2DParams(stride_w=1, stride_h=1))
    graph.add_output(y)
    interpreter = Interpreter(model_content=builder.build())
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (placement,) = interpreter.delegation_reports[-1].placements
    assert placement.runs_on == "CPU"
    assert "the input is empty (shape [0, 4, 4, 2])" in placement.rejections[0]
    interpreter.allocate_tensors()
    interpreter.invoke()
    assert interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).shape == (0, 4, 4, 3)


def test_a_tensor_written_by_two_nodes_is_refused_at_load():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [4])
    y = graph.add_tensor("y", [4])
    graph.add_operator(B.RELU, [x], [y])
    graph.add_operator(B.TANH, [x], [y])
    graph.add_output(y)
    with pytest.raises(ModelError, match=r"node 1 \(TANH v1\) output 0 is tensor 1 \('y'\), which node 0 \(RELU v1\) also writes"):
        Interpreter(model_content=builder.build())


def test_a_node_writing_a_graph_input_is_refused_at_load():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [4])
    y = graph.add_input("y", [4])
    graph.add_operator(B.RELU, [x], [y])
    graph.add_output(y)
    with pytest.raises(ModelError, match=r"output 0 is tensor 1 \('y'\), an input of subgraph 0"):
        Interpreter(model_content=builder.build())


def test_the_gpu_delegate_keeps_to_the_interpreter_s_arena_limit():
    from backends.gpu.device import DeviceMemoryError
    from delegate_sdk.delegate import DelegatePrepareError

    interpreter = Interpreter(model_content=single_op_model(B.RELU, [In([256, 1024])], Out([256, 1024])), experimental_arena_limit_bytes=1 << 20)
    with pytest.raises(DelegatePrepareError) as caught:
        interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    cause = caught.value.__cause__
    while cause is not None and not isinstance(cause, DeviceMemoryError):
        cause = cause.__cause__
    assert isinstance(cause, DeviceMemoryError)
    assert "the partition's tensors need 2097152 bytes, over the interpreter's arena limit of 1048576 bytes" in str(cause)
