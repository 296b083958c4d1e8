"""VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE (and CALL_ONCE initializing them) against ai-edge-litert.

Resource variables persist across invokes, so these tests run the same sequence
of invokes on one interpreter of each runtime and compare every step.
"""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import INIT_VALUE, init_subgraph, read_then_assign_model
from oracle import assert_outputs_equal, litert_interpreter, run_interpreter

from backends.cpu import builtin_op_resolver
from delegate_sdk.context import KernelError
from delegate_sdk.op_resolver import find_unresolved_operators
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as Op
from schema.enums import TensorType
from schema.model import Model
from schema.params import AddParams, CallOnceParams, VarHandleParams, WhileParams



def require_kernels(model: bytes) -> None:
    """Skip (with the list) when an (op, version) of the model has no CPU kernel yet."""
    missing = find_unresolved_operators(Model.from_bytes(model), builtin_op_resolver())
    if missing:
        pytest.skip("CPU kernels not registered yet: " + "; ".join(m.describe() for m in missing))


def assert_sequence_matches_litert(model: bytes, feeds, reset_after: int | None = None) -> list:
    """Invoke both runtimes once per entry of ``feeds`` (a list of input lists); compare each step.

    With ``reset_after=k``, ``reset_all_variables()`` is called after the k-th invoke.
    """
    require_kernels(model)
    theirs, ours = litert_interpreter(model), Interpreter(model_content=model)
    results = []
    for step, inputs in enumerate(feeds):
        expected = run_interpreter(theirs, inputs)
        got = run_interpreter(ours, inputs)
        try:
            assert_outputs_equal(got, expected)
        except AssertionError as error:
            raise AssertionError(f"invoke {step}: {error}") from None
        results.append(got)
        if reset_after == step:
            theirs.reset_all_variables()
            ours.reset_all_variables()
    return results


def f32(*values):
    return np.array(values, np.float32)


def test_variable_ops_are_stamped_version_1():
    model = Model.from_bytes(read_then_assign_model())
    versions = {op.op_name: op.version for graph in model.subgraphs for op in graph.operators}
    assert versions == {"CALL_ONCE": 1, "VAR_HANDLE": 1, "READ_VARIABLE": 1, "ASSIGN_VARIABLE": 1}


def test_call_once_initializes_a_variable_that_later_invokes_read_and_overwrite():
    results = assert_sequence_matches_litert(read_then_assign_model(), [[f32(1, 2)], [f32(3, 4)], [f32(5, 6)]])
    np.testing.assert_array_equal(results[0][0], INIT_VALUE)  # CALL_ONCE ran before the read
    np.testing.assert_array_equal(results[2][0], f32(3, 4))  # and not again


def test_assigning_a_value_of_another_shape_reshapes_the_variable():
    # Not compared with LiteRT: ai-edge-litert 2.3.0 keeps the variable's first shape and
    # copies the new value's bytes over it ([1, 2] then [3, 4, 5] reads [3, 4]; then [6]
    # reads [6, 4]), an out-of-bounds-prone behaviour; TFLite's ResourceVariable::AssignFrom
    # intends to take the new shape, which is what this runtime does.
    interpreter = Interpreter(model_content=read_then_assign_model())
    reads = [run_interpreter(interpreter, [value])[0] for value in (f32(1, 2), f32(3, 4, 5), f32(6), f32(7, 8))]
    for got, want in zip(reads, (INIT_VALUE, f32(1, 2), f32(3, 4, 5), f32(6))):
        np.testing.assert_array_equal(got, want)


def test_reset_all_variables_keeps_resource_variables_as_litert_does():
    assert_sequence_matches_litert(read_then_assign_model(), [[f32(1, 2)], [f32(3, 4)], [f32(5, 6)]], reset_after=1)


def test_handles_with_different_names_are_different_variables():
    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", [2])
    outputs = []
    for name, value in (("a", "x"), ("b", "const")):
        handle = main.add_tensor(f"handle_{name}", [], TensorType.RESOURCE)
        main.add_operator(Op.VAR_HANDLE, [], [handle], VarHandleParams(container="c", shared_name=name))
        source = x if value == "x" else main.add_constant(f"value_{name}", f32(-1, -2))
        main.add_operator(Op.ASSIGN_VARIABLE, [handle, source], [])
        y = main.add_tensor(f"y_{name}", [2])
        main.add_operator(Op.READ_VARIABLE, [handle], [y])
        main.add_output(y)
        outputs.append(y)
    results = assert_sequence_matches_litert(builder.build(), [[f32(1, 2)], [f32(3, 4)]])
    np.testing.assert_array_equal(results[1][0], f32(3, 4))
    np.testing.assert_array_equal(results[1][1], f32(-1, -2))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_variables_hold_any_dtype(dtype):
    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", [3], dtype)
    handle = main.add_tensor("handle", [], TensorType.RESOURCE)
    y = main.add_tensor("y", [3], dtype)
    main.add_operator(Op.VAR_HANDLE, [], [handle], VarHandleParams(shared_name="v"))
    main.add_operator(Op.ASSIGN_VARIABLE, [handle, x], [])
    main.add_operator(Op.READ_VARIABLE, [handle], [y])
    main.add_output(y)
    values = np.array([1, 0, 1]).astype(dtype)
    assert_sequence_matches_litert(builder.build(), [[values], [values[::-1].copy()]])


def test_a_variable_counts_the_iterations_of_a_while_loop():
    # main(n): v = 0; WHILE(i < n) { v = v + 1; i = i + 1 }; return read(v)
    builder = ModelBuilder()
    main = builder.subgraph()
    n = main.add_input("n", [], np.int32)
    handle = main.add_tensor("handle", [], TensorType.RESOURCE)
    zero = main.add_constant("zero", np.array(0, np.int32))
    main.add_operator(Op.VAR_HANDLE, [], [handle], VarHandleParams(shared_name="count"))
    main.add_operator(Op.ASSIGN_VARIABLE, [handle, zero], [])
    i_out = main.add_tensor("i_out", [], np.int32)
    n_out = main.add_tensor("n_out", [], np.int32)
    main.add_operator(Op.WHILE, [zero, n], [i_out, n_out], WhileParams(cond_subgraph_index=1, body_subgraph_index=2))
    count = main.add_tensor("count", [], np.int32)
    main.add_operator(Op.READ_VARIABLE, [handle], [count])
    main.add_output(count)

    cond = builder.subgraph("cond")
    i, limit = cond.add_input("i", [], np.int32), cond.add_input("n", [], np.int32)
    going = cond.add_tensor("going", [], np.bool_)
    cond.add_operator(Op.LESS, [i, limit], [going])
    cond.add_output(going)

    body = builder.subgraph("body")
    i, limit = body.add_input("i", [], np.int32), body.add_input("n", [], np.int32)
    one = body.add_constant("one", np.array(1, np.int32))
    next_i = body.add_tensor("next_i", [], np.int32)
    body.add_operator(Op.ADD, [i, one], [next_i], AddParams())
    v_handle = body.add_tensor("handle", [], TensorType.RESOURCE)
    body.add_operator(Op.VAR_HANDLE, [], [v_handle], VarHandleParams(shared_name="count"))
    value = body.add_tensor("value", [], np.int32)
    body.add_operator(Op.READ_VARIABLE, [v_handle], [value])
    incremented = body.add_tensor("incremented", [], np.int32)
    body.add_operator(Op.ADD, [value, one], [incremented], AddParams())
    body.add_operator(Op.ASSIGN_VARIABLE, [v_handle, incremented], [])
    body.add_output(next_i)
    body.add_output(limit)

    results = assert_sequence_matches_litert(
        builder.build(), [[np.array(5, np.int32)], [np.array(0, np.int32)], [np.array(3, np.int32)]]
    )
    assert [int(r[0]) for r in results] == [5, 0, 3]


# -- errors ---------------------------------------------------------------------------------------------------


def test_reading_a_variable_never_assigned_fails_naming_the_op():
    model = read_then_assign_model(call_once=False)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], f32(1, 2))
    with pytest.raises(KernelError, match="READ_VARIABLE.*not been assigned"):
        interpreter.invoke()


def test_a_resource_input_holding_several_ids_fails_naming_the_op():
    builder = ModelBuilder()
    main = builder.subgraph()
    ids = main.add_input("ids", [2], np.int32)
    y = main.add_tensor("y", [2])
    main.add_operator(Op.READ_VARIABLE, [ids], [y])
    main.add_output(y)
    with pytest.raises(KernelError, match="READ_VARIABLE.*one id"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_a_float_resource_input_fails_naming_the_op():
    builder = ModelBuilder()
    main = builder.subgraph()
    handle = main.add_input("handle", [], np.float32)
    x = main.add_input("x", [2])
    main.add_operator(Op.ASSIGN_VARIABLE, [handle, x], [])
    with pytest.raises(KernelError, match="ASSIGN_VARIABLE.*FLOAT32"):
        Interpreter(model_content=builder.build()).allocate_tensors()
