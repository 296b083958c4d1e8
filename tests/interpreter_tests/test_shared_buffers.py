"""RESHAPE, SQUEEZE and EXPAND_DIMS outputs take their input's arena memory (TFLite's
``kTfLiteInplaceOpInput0Shared``): no copy at invoke, the same numbers as LiteRT."""

from __future__ import annotations

import numpy as np

from interpreter import Interpreter
from oracle import litert_interpreter, run_interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as Op
from schema.params import SqueezeParams


def reshape_chain_model() -> bytes:
    """x -> RELU -> a -> RESHAPE -> b -> SQUEEZE -> c -> EXPAND_DIMS -> d; then
    e = RELU6(d), y = RELU(e) and, last, z = NEG(d): the memory of a holds d,
    so it must outlive e (which the arena would otherwise place there)."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", (1, 4, 4, 2))
    a = graph.add_tensor("a", (1, 4, 4, 2))
    b = graph.add_tensor("b", (1, 32))
    c = graph.add_tensor("c", (32,))
    d = graph.add_tensor("d", (32, 1))
    e = graph.add_tensor("e", (32, 1))
    y = graph.add_tensor("y", (32, 1))
    z = graph.add_tensor("z", (32, 1))
    graph.add_operator(Op.RELU, [x], [a])
    graph.add_operator(Op.RESHAPE, [a, graph.add_constant("shape", np.array([1, 32], np.int32))], [b])
    graph.add_operator(Op.SQUEEZE, [b], [c], params=SqueezeParams(squeeze_dims=(0,)))
    graph.add_operator(Op.EXPAND_DIMS, [c, graph.add_constant("axis", np.array([1], np.int32))], [d])
    graph.add_operator(Op.RELU6, [d], [e])
    graph.add_operator(Op.RELU, [e], [y])
    graph.add_operator(Op.NEG, [d], [z])
    graph.add_output(y)
    graph.add_output(z)
    return builder.build()


def reshape_of_input_model() -> bytes:
    """x -> RESHAPE -> y: the reshaped tensor is the model's input."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", (2, 3))
    y = graph.add_tensor("y", (3, 2))
    graph.add_operator(Op.RESHAPE, [x, graph.add_constant("shape", np.array([3, 2], np.int32))], [y])
    graph.add_output(y)
    return builder.build()


def inputs() -> list[np.ndarray]:
    return [np.linspace(-3, 9, 32, dtype=np.float32).reshape(1, 4, 4, 2)]


def test_a_reshape_chain_matches_litert():
    model = reshape_chain_model()
    ours = run_interpreter(Interpreter(model_content=model), inputs())
    theirs = run_interpreter(litert_interpreter(model), inputs())
    for mine, reference in zip(ours, theirs):
        np.testing.assert_array_equal(mine, reference)


def test_a_reshape_chain_lives_in_its_first_tensors_memory():
    interpreter = Interpreter(model_content=reshape_chain_model())
    interpreter.allocate_tensors()
    tensors = {t.name: t.data for t in interpreter._main.tensors}
    for name in ("b", "c", "d"):
        assert np.shares_memory(tensors["a"], tensors[name]), name
    for name in ("e", "y", "z"):
        assert not np.shares_memory(tensors["a"], tensors[name]), name


def test_nodes_sharing_memory_still_appear_in_the_profile():
    interpreter = Interpreter(model_content=reshape_chain_model())
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], inputs()[0])
    profile = interpreter.invoke_profiled()
    assert [step["op_name"] for step in profile] == ["RELU", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "RELU6", "RELU", "NEG"]


def test_a_reshaped_model_input_keeps_its_own_memory():
    interpreter = Interpreter(model_content=reshape_of_input_model())
    interpreter.allocate_tensors()
    x, y = interpreter.get_input_details()[0]["index"], interpreter.get_output_details()[0]["index"]
    interpreter.set_tensor(x, np.arange(6, dtype=np.float32).reshape(2, 3))
    interpreter.invoke()
    interpreter.set_tensor(x, np.zeros((2, 3), np.float32))  # not invoked again
    np.testing.assert_array_equal(interpreter.get_tensor(y), np.arange(6, dtype=np.float32).reshape(3, 2))


def test_preserved_intermediates_keep_their_values():
    interpreter = Interpreter(model_content=reshape_chain_model(), experimental_preserve_all_tensors=True)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], inputs()[0])
    interpreter.invoke()
    by_name = {d["name"]: d["index"] for d in interpreter.get_tensor_details()}
    relu = np.maximum(inputs()[0], 0)
    np.testing.assert_array_equal(interpreter.get_tensor(by_name["a"]), relu)
    np.testing.assert_array_equal(interpreter.get_tensor(by_name["c"]), relu.reshape(32))


def test_the_interpreter_runs_what_a_kernel_bind_returns(monkeypatch):
    from backends.cpu.kernels.relu import Relu

    calls = []
    original = Relu.bind

    def counting_bind(self):
        step = original(self)

        def counted():
            calls.append(self.node.index)
            step()

        return counted

    monkeypatch.setattr(Relu, "bind", counting_bind)
    model = reshape_chain_model()
    ours = run_interpreter(Interpreter(model_content=model), inputs())
    assert calls == [0, 4, 5]  # the RELU, RELU6 and RELU nodes
    np.testing.assert_array_equal(ours[0], run_interpreter(litert_interpreter(model), inputs())[0])
