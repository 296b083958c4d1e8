"""The delegation report is built from what was actually replaced, and bad replacement sets
are refused with a reason (issue 18, item 4)."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk import Delegate, InvalidReplacementError, Registration
from delegate_sdk.testing import ReferenceDelegate, plan_delegation
from interpreter import Interpreter
from interpreter.testing import assert_matches_cpu
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.params import AddParams, MulParams


def chain() -> bytes:
    """x -> ADD -> MUL -> ADD -> MUL -> y: four nodes."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 3])
    t = x
    for i, (op, params) in enumerate([(B.ADD, AddParams()), (B.MUL, MulParams())] * 2):
        out = g.add_tensor(f"t{i}", [2, 3])
        g.add_operator(op, [t, x], [out], params)
        t = out
    g.add_output(t)
    return builder.build()


def kernel_registration(name: str) -> Registration:
    """A SimpleDelegate's partition registration, for low-level delegates to reuse."""
    return ReferenceDelegate({}, name=name).kernel_registration()


class LowLevel(Delegate):
    """Replaces the given nodes and records nothing (as a hand-written delegate may)."""

    name = "LowLevel"

    def __init__(self, nodes, registration=None, delegate="self"):
        self.nodes = nodes
        self.registration = registration
        self.delegate_arg = delegate

    def prepare(self, context):
        if context.index != 0:
            return
        registration = self.registration or kernel_registration(self.name)
        delegate = self if self.delegate_arg == "self" else self.delegate_arg
        context.replace_node_subsets_with_delegate_kernels(registration, self.nodes, delegate)


def test_a_low_level_delegate_that_records_nothing_is_counted_from_its_nodes():
    """It used to say "Replacing 0 out of 4"."""
    interpreter = Interpreter(model_content=chain())
    report = interpreter.modify_graph_with_delegate(LowLevel([0, 1]))
    assert report.log_lines() == ["Replacing 2 out of 4 node(s) with delegate (LowLevel) node, yielding 1 partitions for subgraph 0."]
    assert report.num_delegated == 2
    assert [p.runs_on for p in report.placements] == ["LowLevel", "LowLevel", "CPU", "CPU"]
    assert report.reasons_for(2) == ("ADD v1: not taken by LowLevel (it gave no reason)",)
    assert [p.node for p in report.rejected] == [2, 3]


def test_an_unnamed_low_level_delegate_is_named_by_its_class():
    class Anonymous(LowLevel):
        name = Delegate.name

    report = Interpreter(model_content=chain()).modify_graph_with_delegate(Anonymous([3]))
    assert report.delegate == "Anonymous" and report.num_delegated == 1


def test_two_delegates_of_one_name_are_counted_apart():
    interpreter = Interpreter(model_content=chain())
    first = interpreter.modify_graph_with_delegate(ReferenceDelegate({B.ADD: 1}, only_nodes=[0]))
    second = interpreter.modify_graph_with_delegate(ReferenceDelegate({B.MUL: 1}, only_nodes=[3]))
    assert (first.num_delegated, second.num_delegated) == (1, 1)
    assert [p.node for p in second.placements if p.delegated] == [0, 3]  # where everything runs now
    assert second.replaced == {(0, 3)}


@pytest.mark.parametrize("nodes,message", [
    ([0, 1, 1], r"nodes_to_replace lists node\(s\) \[1\] more than once: give each node once \(e.g. sorted\(set\(nodes\)\)\)"),
    ([0, 7], r"nodes \[7\] are not in the execution plan \(\[0, 1, 2, 3\]\): a delegate replaces nodes of "
             r"context.execution_plan only"),
    ([0, "1"], r"nodes_to_replace holds '1', not a node index"),
    ([True], r"nodes_to_replace holds True, not a node index"),
    (3, r"nodes_to_replace must be a list of node indices, got 3"),
])
def test_a_bad_node_set_is_refused_with_a_reason(nodes, message):
    interpreter = Interpreter(model_content=chain())
    interpreter.allocate_tensors()
    with pytest.raises(InvalidReplacementError, match=message) as caught:
        interpreter.modify_graph_with_delegate(LowLevel(nodes))
    assert caught.value.report.num_delegated == 0
    assert interpreter._main.execution_plan == [0, 1, 2, 3]
    interpreter.set_tensor(0, np.ones((2, 3), np.float32))
    interpreter.invoke()  # still allocated, on the CPU


def test_numpy_integers_are_node_indices():
    report = Interpreter(model_content=chain()).modify_graph_with_delegate(LowLevel(np.array([0, 1])))
    assert report.num_delegated == 2


def test_a_registration_that_cannot_run_a_partition_is_refused():
    add = Registration(int(B.ADD))
    with pytest.raises(InvalidReplacementError, match="must be a Registration with builtin_code=BuiltinOperator.DELEGATE"):
        Interpreter(model_content=chain()).modify_graph_with_delegate(LowLevel([0], registration=add))


@pytest.mark.parametrize("other", [None, "another"])
def test_the_delegate_argument_must_be_the_delegate_applied(other):
    delegate = LowLevel([0], delegate=None if other is None else LowLevel([1]))
    with pytest.raises(InvalidReplacementError, match="delegate must be the delegate being applied"):
        Interpreter(model_content=chain()).modify_graph_with_delegate(delegate)


def test_nodes_an_earlier_delegate_took_are_no_longer_replaceable():
    interpreter = Interpreter(model_content=chain())
    interpreter.modify_graph_with_delegate(LowLevel([0, 1]))
    with pytest.raises(InvalidReplacementError, match=r"nodes \[1\] are not in the execution plan"):
        interpreter.modify_graph_with_delegate(LowLevel([1, 2]))


def test_the_dry_run_refuses_the_same_sets():
    with pytest.raises(InvalidReplacementError, match="more than once"):
        plan_delegation(LowLevel([0, 0]), chain())
    assert plan_delegation(LowLevel([0, 1]), chain()).taken == [0, 1]


def test_a_correct_low_level_delegate_runs_like_the_cpu():
    assert_matches_cpu(chain(), lambda: LowLevel([1, 2]))
