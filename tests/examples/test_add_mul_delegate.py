"""The worked example delegate, tested with delegate_sdk.testing and the public API only."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

from delegate_sdk.testing import assert_takes_versions_up_to, plan_delegation, single_op_model
from interpreter.testing import assert_matches_cpu
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.params import AddParams, MulParams

sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "examples"))
from add_mul_delegate import AddMulDelegate  # noqa: E402


@pytest.mark.parametrize("op", [BuiltinOperator.ADD, BuiltinOperator.MUL])
def test_takes_version_1_and_rejects_version_2(op):
    assert_takes_versions_up_to(AddMulDelegate, op, max_version=1)


def test_rejection_reason_names_the_version_and_the_cap():
    plan = plan_delegation(AddMulDelegate(), single_op_model(BuiltinOperator.ADD, 2))
    assert plan.reason(0) == "ADD v2: max version supported by AddMulDelegate is 1"


def test_ops_outside_the_table_are_rejected_with_a_reason():
    plan = plan_delegation(AddMulDelegate(), single_op_model(BuiltinOperator.SUB, 1))
    assert plan.reason(0) == "SUB v1: AddMulDelegate does not support SUB"


def broadcast_add() -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3])
    y = graph.add_input("y", [3])
    out = graph.add_tensor("out", [2, 3])
    graph.add_operator(BuiltinOperator.ADD, [x, y], [out], AddParams())
    graph.add_output(out)
    return builder.build()


def test_broadcasting_nodes_stay_on_the_cpu_with_a_reason():
    plan = plan_delegation(AddMulDelegate(), broadcast_add())
    assert plan.taken == [] and plan.reason(0) == "ADD v1: broadcasting is not supported"


@pytest.mark.parametrize("op", [BuiltinOperator.ADD, BuiltinOperator.MUL])
def test_outputs_equal_the_cpus(op):
    assert_matches_cpu(single_op_model(op, 1), AddMulDelegate)


def test_a_mixed_graph_delegates_what_it_can_and_falls_back_for_the_rest():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [4, 4])
    y = graph.add_input("y", [4, 4])
    t = graph.add_tensor("t", [4, 4])
    graph.add_operator(BuiltinOperator.MUL, [x, y], [t], MulParams())
    u = graph.add_tensor("u", [4, 4])
    graph.add_operator(BuiltinOperator.SUB, [t, x], [u])
    v = graph.add_tensor("v", [4, 4])
    graph.add_operator(BuiltinOperator.ADD, [u, y], [v], AddParams())
    graph.add_output(v)
    interpreter = assert_matches_cpu(builder.build(), AddMulDelegate)
    assert [p.runs_on for p in interpreter.node_placements()] == ["AddMulDelegate", "CPU", "AddMulDelegate"]
    assert interpreter.delegation_report.num_partitions == 2
