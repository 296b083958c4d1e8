"""Stopping an invoke (issue 16): ``Interpreter.cancel()`` from another thread ends the
invoke in flight with InvokeCancelledError (TFLite's wording), also inside a WHILE whose
subgraphs have no nodes; ``experimental_max_while_iterations`` bounds a loop that never ends."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from delegate_sdk.context import KernelError
from interpreter import Interpreter, InvokeCancelledError
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as Op
from schema.params import AddParams, WhileParams


def endless_loop_model() -> bytes:
    """main(x): while true: (nothing); return x. Neither subgraph of the loop has a node."""
    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", [2])
    forever = main.add_constant("forever", np.array(True))
    outs = [main.add_tensor("flag_out", [], np.bool_), main.add_tensor("x_out", [2])]
    main.add_operator(Op.WHILE, [forever, x], outs, WhileParams(cond_subgraph_index=1, body_subgraph_index=2))
    main.add_output(outs[1])
    builder.add_signature("serving_default", main)
    for name in ("cond", "body"):
        graph = builder.subgraph(name)
        flag, value = graph.add_input("flag", [], np.bool_), graph.add_input("x", [2])
        graph.add_output(flag)
        if name == "body":
            graph.add_output(value)
    return builder.build()


def counting_model() -> bytes:
    """main(n, x): i = 0; while i < n: i += 1, x = x + 1; return x."""
    builder = ModelBuilder()
    main = builder.subgraph()
    n, x = main.add_input("n", [], np.int32), main.add_input("x", [1])
    zero = main.add_constant("zero", np.array(0, np.int32))
    outs = [main.add_tensor("i_out", [], np.int32), main.add_tensor("n_out", [], np.int32), main.add_tensor("x_out", [1])]
    main.add_operator(Op.WHILE, [zero, n, x], outs, WhileParams(1, 2))
    main.add_output(outs[2])
    builder.add_signature("serving_default", main)
    cond = builder.subgraph("cond")
    i, limit = cond.add_input("i", [], np.int32), cond.add_input("n", [], np.int32)
    cond.add_input("x", [1])
    going = cond.add_tensor("going", [], np.bool_)
    cond.add_operator(Op.LESS, [i, limit], [going])
    cond.add_output(going)
    body = builder.subgraph("body")
    i, limit, value = body.add_input("i", [], np.int32), body.add_input("n", [], np.int32), body.add_input("x", [1])
    one_i, one_x = body.add_constant("one_i", np.array(1, np.int32)), body.add_constant("one_x", np.array([1], np.float32))
    next_i, next_x = body.add_tensor("next_i", [], np.int32), body.add_tensor("next_x", [1])
    body.add_operator(Op.ADD, [i, one_i], [next_i], AddParams())
    body.add_operator(Op.ADD, [value, one_x], [next_x], AddParams())
    for tensor in (next_i, limit, next_x):
        body.add_output(tensor)
    return builder.build()


def invoke_in_a_thread(interpreter: Interpreter) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            interpreter.invoke()
        except BaseException as error:  # noqa: BLE001 (the test inspects it)
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def test_a_loop_past_max_while_iterations_fails_naming_the_node_and_the_setting():
    interpreter = Interpreter(model_content=endless_loop_model(), experimental_max_while_iterations=1000)
    interpreter.allocate_tensors()
    with pytest.raises(KernelError, match=r"WHILE v1.*ran 1000 iterations .*experimental_max_while_iterations"):
        interpreter.invoke()


def test_a_loop_within_max_while_iterations_runs_to_its_end():
    interpreter = Interpreter(model_content=counting_model(), experimental_max_while_iterations=5)
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array(5, np.int32))
    interpreter.set_tensor(1, np.array([0.5], np.float32))
    interpreter.invoke()
    assert interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).tolist() == [5.5]


def test_cancel_from_another_thread_stops_an_endless_loop_without_nodes():
    interpreter = Interpreter(model_content=endless_loop_model())
    interpreter.allocate_tensors()
    thread, errors = invoke_in_a_thread(interpreter)
    time.sleep(0.2)
    interpreter.cancel()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], InvokeCancelledError)
    assert str(errors[0]) == "Client requested cancel during Invoke()"


def test_the_interpreter_runs_normally_after_a_cancelled_invoke():
    interpreter = Interpreter(model_content=counting_model())
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array(2**31 - 1, np.int32))
    interpreter.set_tensor(1, np.array([0.0], np.float32))
    thread, errors = invoke_in_a_thread(interpreter)
    time.sleep(0.2)
    interpreter.cancel()
    thread.join(timeout=60)
    assert not thread.is_alive() and isinstance(errors[0], InvokeCancelledError)
    interpreter.set_tensor(0, np.array(3, np.int32))
    interpreter.set_tensor(1, np.array([1.0], np.float32))
    interpreter.invoke()
    assert interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).tolist() == [4.0]


def test_a_cancel_while_nothing_runs_is_forgotten_by_the_next_invoke():
    interpreter = Interpreter(model_content=counting_model())
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array(2, np.int32))
    interpreter.set_tensor(1, np.array([0.0], np.float32))
    interpreter.cancel()
    interpreter.invoke()
    assert interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).tolist() == [2.0]


@pytest.mark.parametrize("value", [-1, 2.5, True])
def test_max_while_iterations_must_be_a_non_negative_int(value):
    with pytest.raises((ValueError, TypeError)):
        Interpreter(model_content=counting_model(), experimental_max_while_iterations=value)
