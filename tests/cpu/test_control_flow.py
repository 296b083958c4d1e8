"""IF, WHILE and CALL_ONCE against ai-edge-litert (models with several subgraphs)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_matches_litert, assert_outputs_equal, litert_interpreter, run_interpreter

from backends.cpu import builtin_op_resolver
from delegate_sdk.context import KernelError
from delegate_sdk.op_resolver import find_unresolved_operators
from delegate_sdk.tensor import Allocation
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as Op
from schema.model import Model
from schema.params import CallOnceParams, IfParams, WhileParams

from model_helpers import call_once_empty_model, counting_loop_model, if_model, reshape_subgraph, unary_subgraph, while_with_if_model


def require_kernels(model: bytes) -> None:
    """Skip (with the list) when an (op, version) of the model has no CPU kernel yet."""
    missing = find_unresolved_operators(Model.from_bytes(model), builtin_op_resolver())
    if missing:
        pytest.skip("CPU kernels not registered yet: " + "; ".join(m.describe() for m in missing))


def matches_litert(model: bytes, inputs):
    require_kernels(model)
    return assert_matches_litert(model, inputs)


def versions(model: bytes) -> dict[str, int]:
    return {op.op_name: op.version for graph in Model.from_bytes(model).subgraphs for op in graph.operators}


def passthrough_subgraph(builder: ModelBuilder, shape, dtype=np.float32):
    """A subgraph with no nodes whose output is its input."""
    graph = builder.subgraph("identity")
    x = graph.add_input("x", shape, dtype)
    graph.add_output(x)
    return graph


# -- IF -----------------------------------------------------------------------------------------------------


def relu_or_clamp(shape=(2, 3)) -> bytes:
    return if_model(
        lambda b: unary_subgraph(b, Op.RELU, list(shape)),
        lambda b: unary_subgraph(b, Op.RELU_N1_TO_1, list(shape)),
        shape,
    )


def test_if_is_stamped_version_1():
    assert versions(relu_or_clamp())["IF"] == 1


@pytest.mark.parametrize("cond", [True, False], ids=["then", "else"])
def test_if_runs_the_branch_the_bool_input_selects(cond):
    x = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
    (y,) = matches_litert(relu_or_clamp(), [np.array(cond), x])
    np.testing.assert_array_equal(y, np.maximum(x, 0) if cond else np.clip(x, -1, 1))


def test_if_with_a_one_element_condition_vector_matches_litert():
    builder = ModelBuilder()
    main = builder.subgraph()
    cond = main.add_input("cond", [1], np.bool_)
    x = main.add_input("x", [4])
    y = main.add_tensor("y", [4])
    then_graph = unary_subgraph(builder, Op.RELU, [4])
    else_graph = unary_subgraph(builder, Op.RELU6, [4])
    main.add_operator(Op.IF, [cond, x], [y], IfParams(then_graph.index, else_graph.index))
    main.add_output(y)
    x_value = np.array([-1, 2, 7, 0.5], np.float32)
    for value in (True, False):
        matches_litert(builder.build(), [np.array([value]), x_value])


def test_if_on_inputs_resized_at_run_time_matches_litert():
    # The branches are re-planned for the node's new input shape.
    x = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
    for cond in (True, False):
        matches_litert(relu_or_clamp(shape=(2, 3)), [np.array(cond), x])


def test_if_with_same_shaped_branches_has_a_static_output():
    interpreter = Interpreter(model_content=relu_or_clamp())
    interpreter.allocate_tensors()
    assert interpreter._tensor(interpreter.get_output_details()[0]["index"]).allocation is Allocation.ARENA


def test_if_with_branches_of_different_shapes_has_a_dynamic_output_matching_litert():
    model = if_model(lambda b: passthrough_subgraph(b, [2, 3]), lambda b: reshape_subgraph(b, [2, 3], [6]))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for cond in (True, False):
        (y,) = matches_litert(model, [np.array(cond), x])
        assert y.shape == ((2, 3) if cond else (6,))
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    assert interpreter._tensor(interpreter.get_output_details()[0]["index"]).allocation is Allocation.DYNAMIC


def test_if_branch_returning_its_input_unchanged_matches_litert():
    model = if_model(lambda b: passthrough_subgraph(b, [2, 3]), lambda b: unary_subgraph(b, Op.RELU, [2, 3]))
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    for cond in (True, False):
        matches_litert(model, [np.array(cond), x])


def test_if_with_several_inputs_and_outputs_matches_litert():
    builder = ModelBuilder()
    main = builder.subgraph()
    cond = main.add_input("cond", [], np.bool_)
    a, b = main.add_input("a", [3]), main.add_input("b", [2, 2])
    ya, yb = main.add_tensor("ya", [3]), main.add_tensor("yb", [2, 2])
    branches = []
    for name, ops in (("then", (Op.RELU, Op.RELU6)), ("else", (Op.RELU_N1_TO_1, Op.RELU))):
        graph = builder.subgraph(name)
        for tensor_name, shape, op in (("a", [3], ops[0]), ("b", [2, 2], ops[1])):
            x = graph.add_input(tensor_name, shape)
            y = graph.add_tensor(tensor_name + "_out", shape)
            graph.add_operator(op, [x], [y])
            graph.add_output(y)
        branches.append(graph)
    main.add_operator(Op.IF, [cond, a, b], [ya, yb], IfParams(branches[0].index, branches[1].index))
    main.add_output(ya)
    main.add_output(yb)
    rng = np.random.default_rng(1)
    values = [rng.uniform(-8, 8, size=(3,)).astype(np.float32), rng.uniform(-8, 8, size=(2, 2)).astype(np.float32)]
    for value in (True, False):
        matches_litert(builder.build(), [np.array(value), *values])


def test_if_with_an_int32_condition_fails_naming_the_op():
    builder = ModelBuilder()
    main = builder.subgraph()
    cond = main.add_input("cond", [], np.int32)
    x = main.add_input("x", [2])
    y = main.add_tensor("y", [2])
    then_graph = unary_subgraph(builder, Op.RELU, [2])
    main.add_operator(Op.IF, [cond, x], [y], IfParams(then_graph.index, then_graph.index))
    main.add_output(y)
    with pytest.raises(KernelError, match="IF v1.*INT32"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_if_whose_branch_takes_another_type_fails_naming_the_op():
    builder = ModelBuilder()
    main = builder.subgraph()
    cond = main.add_input("cond", [], np.bool_)
    x = main.add_input("x", [2])
    y = main.add_tensor("y", [2])
    wrong = unary_subgraph(builder, Op.RELU, [2], np.int32)
    main.add_operator(Op.IF, [cond, x], [y], IfParams(wrong.index, wrong.index))
    main.add_output(y)
    with pytest.raises(KernelError, match="IF v1.*then subgraph 1 has type INT32"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_if_calling_its_own_subgraph_fails_naming_the_op():
    builder = ModelBuilder()
    main = builder.subgraph()
    cond = main.add_input("cond", [], np.bool_)
    x = main.add_input("x", [2])
    y = main.add_tensor("y", [2])
    main.add_operator(Op.IF, [cond, x], [y], IfParams(0, 0))
    main.add_output(y)
    with pytest.raises(KernelError, match="IF v1.*recursion"):
        Interpreter(model_content=builder.build()).allocate_tensors()


# -- WHILE --------------------------------------------------------------------------------------------------


def test_while_is_stamped_version_1():
    assert versions(counting_loop_model())["WHILE"] == 1


@pytest.mark.parametrize("n", [0, 1, 5])
def test_while_counting_to_n_while_accumulating_matches_litert(n):
    x = np.array([0.5, -1.25, 3.0], np.float32)
    i, acc = matches_litert(counting_loop_model(), [np.array(n, np.int32), x])
    assert int(i) == n
    np.testing.assert_allclose(acc, x * (n + 1))


def test_while_with_a_static_body_has_static_outputs():
    model = counting_loop_model()
    require_kernels(model)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    for detail in interpreter.get_output_details():
        assert interpreter._tensor(detail["index"]).allocation is Allocation.ARENA


@pytest.mark.parametrize("n", [0, 3])
def test_while_whose_body_grows_a_tensor_has_dynamic_outputs_matching_litert(n):
    model = counting_loop_model(acc_shape=(2,), grow=True)
    x = np.array([1.0, 2.0], np.float32)
    i, acc = matches_litert(model, [np.array(n, np.int32), x])
    assert acc.shape == (2 * (n + 1),)


def test_while_through_the_signature_runner_matches_litert():
    from oracle import assert_signature_matches_litert

    model = counting_loop_model()
    require_kernels(model)
    assert_signature_matches_litert(model, {"n": np.array(4, np.int32), "x": np.array([1, 2, 3], np.float32)})


def test_while_on_consecutive_invokes_matches_litert():
    model = counting_loop_model()
    require_kernels(model)
    theirs, ours = litert_interpreter(model), Interpreter(model_content=model)
    x = np.array([1, 2, 3], np.float32)
    for n in (3, 0, 7):
        inputs = [np.array(n, np.int32), x]
        assert_outputs_equal(run_interpreter(ours, inputs), run_interpreter(theirs, inputs))


def test_while_nested_if_in_the_body_matches_litert():
    # while i < n: i += 1; x = (relu if flag else relu_n1_to_1)(x - 1)
    model = while_with_if_model()
    x_value = np.array([5.0, 1.5, -0.5, 3.0], np.float32)
    for value in (True, False):
        matches_litert(model, [np.array(3, np.int32), np.array(value), x_value])


def test_while_with_the_same_cond_and_body_fails_naming_the_op():
    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", [], np.bool_)
    y = main.add_tensor("y", [], np.bool_)
    passthrough_subgraph(builder, [], np.bool_)
    main.add_operator(Op.WHILE, [x], [y], WhileParams(1, 1))
    main.add_output(y)
    with pytest.raises(KernelError, match="WHILE v1.*same subgraph"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_while_whose_cond_returns_a_float_fails_naming_the_op():
    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", [])
    y = main.add_tensor("y", [])
    passthrough_subgraph(builder, [])  # cond: returns the float itself
    passthrough_subgraph(builder, [])  # body
    main.add_operator(Op.WHILE, [x], [y], WhileParams(1, 2))
    main.add_output(y)
    with pytest.raises(KernelError, match="WHILE v1.*one bool"):
        Interpreter(model_content=builder.build()).allocate_tensors()


# -- CALL_ONCE ----------------------------------------------------------------------------------------------
# (the variable it initializes is tested with the variable ops in test_variables.py)


def test_call_once_with_an_init_subgraph_that_has_inputs_fails_naming_the_op():
    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", [2])
    y = main.add_tensor("y", [2])
    main.add_operator(Op.RELU, [x], [y])
    main.add_operator(Op.CALL_ONCE, [], [], CallOnceParams(init_subgraph_index=1))
    main.add_output(y)
    unary_subgraph(builder, Op.RELU, [2])
    model = builder.build()
    assert versions(model)["CALL_ONCE"] == 1
    with pytest.raises(KernelError, match="CALL_ONCE v1.*init subgraph 1 has 1 inputs"):
        Interpreter(model_content=model).allocate_tensors()


def test_call_once_of_an_empty_subgraph_is_a_no_op_matching_litert():
    matches_litert(call_once_empty_model(), [np.array([-1, 1], np.float32)])


def test_if_whose_branch_returns_another_type_than_the_node_output_fails_naming_the_op():
    builder = ModelBuilder()
    main = builder.subgraph()
    cond = main.add_input("cond", [], np.bool_)
    x = main.add_input("x", [2], np.int32)
    y = main.add_tensor("y", [2], np.float32)
    identity = passthrough_subgraph(builder, [2], np.int32)
    main.add_operator(Op.IF, [cond, x], [y], IfParams(identity.index, identity.index))
    main.add_output(y)
    with pytest.raises(KernelError, match="IF v1.*output 0 of the then subgraph 1 has type INT32"):
        Interpreter(model_content=builder.build()).allocate_tensors()
