"""Recipes of control flow (IF, WHILE, CALL_ONCE) and resource variables (VAR_HANDLE,
ASSIGN_VARIABLE, READ_VARIABLE): a few nodes around the op under test (``subject``)."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import BOOL, I32, S2, B, Graph, Recipe
from schema.builder import ModelBuilder
from schema.enums import TensorType as T


def branch(builder: ModelBuilder, op: int, name: str):
    graph = builder.subgraph(name)
    x = graph.add_input("x", list(S2))
    y = graph.add_tensor("y", list(S2))
    graph.add_operator(op, [x], [y])
    graph.add_output(y)
    return graph


def if_() -> bytes:
    m = Graph()
    cond = m.input("cond", (), BOOL)
    x = m.input("x", S2)
    y = m.tensor("y", S2)
    then_graph, else_graph = branch(m.builder, B.RELU, "then"), branch(m.builder, B.NEG, "else")
    m.op(B.IF, [cond, x], [y], then_subgraph_index=then_graph.index, else_subgraph_index=else_graph.index)
    m.g.add_output(y)
    m.builder.add_signature("serving_default", m.g)
    return m.builder.build()


def while_() -> bytes:
    """i = 0; while i < 3: i += 1."""
    m = Graph()
    x = m.input("x", (), I32)
    y = m.tensor("y", (), I32)
    m.op(B.WHILE, [x], [y], cond_subgraph_index=1, body_subgraph_index=2)
    m.g.add_output(y)
    m.builder.add_signature("serving_default", m.g)
    cond = m.builder.subgraph("cond")
    i = cond.add_input("i", [], np.int32)
    three = cond.add_constant("three", np.array(3, np.int32))
    going = cond.add_tensor("going", [], np.bool_)
    cond.add_operator(B.LESS, [i, three], [going])
    cond.add_output(going)
    body = m.builder.subgraph("body")
    i = body.add_input("i", [], np.int32)
    one = body.add_constant("one", np.array(1, np.int32))
    j = body.add_tensor("j", [], np.int32)
    body.add_operator(B.ADD, [i, one], [j])
    body.add_output(j)
    return m.builder.build()


def variables(call_once: bool = False) -> bytes:
    """[CALL_ONCE,] VAR_HANDLE, ASSIGN_VARIABLE(x), READ_VARIABLE -> y (without CALL_ONCE);
    with it, CALL_ONCE(init assigns a constant), VAR_HANDLE, READ_VARIABLE -> y."""
    from schema.params import VarHandleParams

    m = Graph()
    if call_once:
        init = m.builder.subgraph("init")
        handle = init.add_tensor("handle", [], T.RESOURCE)
        value = init.add_constant("value", np.array([1.0, 2.0], np.float32))
        init.add_operator(B.VAR_HANDLE, [], [handle], VarHandleParams(shared_name="v"))
        init.add_operator(B.ASSIGN_VARIABLE, [handle, value], [])
        m.op(B.CALL_ONCE, [], [], init_subgraph_index=init.index)
    else:
        x = m.input("x", (2,))
    handle = m.g.add_tensor("handle", [], T.RESOURCE)
    m.op(B.VAR_HANDLE, [], [handle], VarHandleParams(shared_name="v"))
    if not call_once:
        m.op(B.ASSIGN_VARIABLE, [handle, x], [])
    y = m.tensor("y", (2,))
    m.op(B.READ_VARIABLE, [handle], [y])
    m.g.add_output(y)
    m.builder.add_signature("serving_default", m.g)
    return m.builder.build()


def recipes() -> Iterator[Recipe]:
    variables_description = "VAR_HANDLE, ASSIGN_VARIABLE, READ_VARIABLE"
    yield Recipe(B.IF, 1, if_, "float32 branches (RELU or NEG)", "control flow")
    yield Recipe(B.WHILE, 1, while_, "int32 counter: while i < 3: i += 1", "control flow")
    yield Recipe(B.CALL_ONCE, 1, lambda: variables(call_once=True), "initialises a variable read after it", "control flow")
    yield Recipe(B.VAR_HANDLE, 1, variables, variables_description, "resource variable")
    yield Recipe(B.ASSIGN_VARIABLE, 1, variables, variables_description, "resource variable", subject=1)
    yield Recipe(B.READ_VARIABLE, 1, variables, variables_description, "resource variable", subject=2)
