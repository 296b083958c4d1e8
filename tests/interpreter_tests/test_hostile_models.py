"""Issue 16: models the fuzzer found that broke the runtime's assumptions end in clear
errors naming what is wrong: control-flow subgraphs whose inputs cannot take a value or
whose outputs have none, a convolution over no channels, and a kernel that cannot get
memory for its scratch (reported as the arena's ArenaLimitError)."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from interpreter.arena import ArenaLimitError
from model_helpers import In, Out, single_op_model
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B, TensorType as T
from schema.params import ConcatenationParams, Conv2DParams, WhileParams


def counting_while(constant_cond_input: bool = False, orphan_body_output: bool = False) -> bytes:
    """main(x): WHILE i < 10: i = i + 1."""
    builder = ModelBuilder()
    main = builder.subgraph("main")
    x = main.add_input("x", [], T.INT32)
    y = main.add_tensor("y", [], T.INT32)
    main.add_operator(B.WHILE, [x], [y], WhileParams(cond_subgraph_index=1, body_subgraph_index=2))
    main.add_output(y)
    cond = builder.subgraph("cond")
    if constant_cond_input:
        i = cond.add_constant("i", np.array(0, np.int32))
        cond.inputs.append(i)
    else:
        i = cond.add_input("i", [], T.INT32)
    less = cond.add_tensor("less", [], T.BOOL)
    cond.add_operator(B.LESS, [i, cond.add_constant("ten", np.array(10, np.int32))], [less])
    cond.add_output(less)
    body = builder.subgraph("body")
    i = body.add_input("i", [], T.INT32)
    next_i = body.add_tensor("next_i", [], T.INT32)
    body.add_operator(B.ADD, [i, body.add_constant("one", np.array(1, np.int32))], [next_i])
    body.add_output(body.add_tensor("orphan", [], T.INT32) if orphan_body_output else next_i)
    builder.add_signature("serving_default", main)
    return builder.build()


def run(model: bytes) -> np.ndarray:
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.array(0, np.int32))
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def test_the_counting_loop_runs():
    assert run(counting_while()) == 10


def test_a_called_subgraph_whose_input_is_a_constant_is_a_clear_error():
    with pytest.raises(KernelError, match=r"subgraph 1 input 0 is tensor 0 \('i'\), a constant: it cannot take the value"):
        run(counting_while(constant_cond_input=True))


def test_a_called_subgraph_output_that_no_node_writes_is_a_clear_error():
    with pytest.raises(KernelError, match=r"subgraph 2 output 0 is tensor \d+ \('orphan'\), which has no value"):
        run(counting_while(orphan_body_output=True))


def test_a_convolution_over_an_input_without_channels_is_refused():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4, 4, 0])
    y = graph.add_tensor("y", [1, 4, 4, 3])
    graph.add_operator(B.CONV_2D, [x, graph.add_constant("w", np.ones([3, 1, 1, 2], np.float32))], [y],
                       Conv2DParams(stride_w=1, stride_h=1))
    graph.add_output(y)
    with pytest.raises(KernelError, match=r"input channels \(0\) must be a positive multiple"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_a_kernel_out_of_memory_is_an_arena_limit_error_naming_the_node(monkeypatch):
    from backends.cpu.kernels import relu

    def prepare_out_of_memory(self):
        raise MemoryError("Unable to allocate 512. MiB for an array")

    monkeypatch.setattr(relu.Relu, "prepare", prepare_out_of_memory)
    with pytest.raises(KernelError, match=r"node 0 \(RELU v1\) failed in prepare: MemoryError") as caught:
        Interpreter(model_content=single_op_model(B.RELU, [In([4])], Out([4]))).allocate_tensors()
    assert isinstance(caught.value.__cause__, ArenaLimitError)
    assert "out of memory: Unable to allocate 512. MiB" in str(caught.value.__cause__)
    assert isinstance(caught.value.__cause__.__cause__, MemoryError)


def test_a_delegate_out_of_memory_in_prepare_is_an_arena_limit_error(monkeypatch):
    from delegate_sdk.delegate import DelegatePrepareError, SimpleDelegate

    class Greedy(SimpleDelegate):
        name = "Greedy"
        support_table = {B.RELU: 1}

        def prepare(self, context):
            raise MemoryError("Unable to allocate 275. MiB for an array")

    interpreter = Interpreter(model_content=single_op_model(B.RELU, [In([4])], Out([4])))
    with pytest.raises(DelegatePrepareError, match="Restored original execution plan") as caught:
        interpreter.modify_graph_with_delegate(Greedy())
    assert isinstance(caught.value.__cause__, ArenaLimitError)
    interpreter.allocate_tensors()  # the CPU plan runs


def test_a_subgraph_listing_an_input_twice_is_refused_at_load():
    from schema.errors import ModelError

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [4])
    graph.inputs.append(x)
    y = graph.add_tensor("y", [4])
    graph.add_operator(B.RELU, [x], [y])
    graph.add_output(y)
    with pytest.raises(ModelError, match=r"subgraph 0 lists tensor 0 \('x'\) among its inputs more than once"):
        Interpreter(model_content=builder.build())


def test_an_empty_tensor_that_no_node_writes_holds_an_empty_value():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3])
    nothing = graph.add_tensor("nothing", [2, 0])
    y = graph.add_tensor("y", [2, 3])
    graph.add_operator(B.CONCATENATION, [x, nothing], [y], ConcatenationParams(axis=1))
    graph.add_output(y)
    interpreter = Interpreter(model_content=builder.build())
    interpreter.allocate_tensors()
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], value)
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), value)
