"""A delegate's declaration is checked when it is constructed and when it is applied
(issue 18, item 3): each mistake raises DelegateDeclarationError saying what to write
instead; op names are accepted where they are unambiguous."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk import (
    DelegateDeclarationError,
    DelegateError,
    DelegateKernel,
    DelegatePrepareError,
    SimpleDelegate,
)
from delegate_sdk.testing import ReferenceDelegateKernel, plan_delegation, single_op_model
from interpreter import Interpreter
from interpreter.testing import assert_matches_cpu
from schema.enums import BuiltinOperator as B


def delegate_class(table=None, custom=None, kernel=ReferenceDelegateKernel, reason=None):
    namespace = {"name": "Mine", "support_table": table if table is not None else {B.ADD: 1},
                 "kernel_class": kernel}
    if custom is not None:
        namespace["custom_support_table"] = custom
    if reason is not None:
        namespace["node_rejection_reason"] = lambda self, context, node, registration: reason
    return type("Mine", (SimpleDelegate,), namespace)


# -- support tables ----------------------------------------------------------------------------------


def test_op_names_as_keys_are_accepted_and_delegate():
    """{"ADD": 2} used to delegate nothing, silently."""
    Mine = delegate_class({"ADD": 2, "mul": 1})
    assert Mine().support_table == {B.ADD: 2, B.MUL: 1}
    assert plan_delegation(Mine(), single_op_model(B.ADD, 2)).taken == [0]
    assert_matches_cpu(single_op_model(B.ADD, 2), Mine)


@pytest.mark.parametrize("table,message", [
    ({"ADDD": 1}, "Mine.support_table key 'ADDD' is not a builtin op (did you mean ADD"),
    ({"MyCustomOp": 1}, "a custom op goes in custom_support_table = {'MyCustomOp': 1}"),
    ({9999: 1}, "Mine.support_table key 9999 is no builtin op code: key it by BuiltinOperator (e.g. {BuiltinOperator.ADD: 2})"),
    ({True: 1}, "Mine.support_table key True (bool) is not an op"),
    ({1.5: 1}, "key 1.5 (float) is not an op"),
    ({B.ADD: 0}, "Mine.support_table[ADD] is 0, which supports no version: remove the entry, or give the highest version"),
    ({B.ADD: "2"}, "Mine.support_table[ADD] is '2': give the highest version the kernel implements "
                   "({BuiltinOperator.ADD: 2}), or the set of versions ({BuiltinOperator.ADD: frozenset({1, 3})})"),
    ({B.ADD: 2.0}, "Mine.support_table[ADD] is 2.0"),
    ({B.ADD: True}, "Mine.support_table[ADD] is True"),
    ({B.ADD: []}, "Mine.support_table[ADD] is []"),
    ({B.ADD: {0, 1}}, "Mine.support_table[ADD] is {0, 1}"),
    ({B.ADD: 1, "ADD": 2}, "Mine.support_table names ADD twice"),
    ([B.ADD], "Mine.support_table must be a dict of op -> highest version (e.g. {BuiltinOperator.ADD: 2}), got list"),
])
def test_a_wrong_support_table_is_refused_at_construction(table, message):
    with pytest.raises(DelegateDeclarationError) as caught:
        delegate_class(table)()
    assert message in str(caught.value)
    assert isinstance(caught.value, DelegateError) and isinstance(caught.value, TypeError)


def test_a_custom_table_keyed_by_a_builtin_code_is_refused():
    with pytest.raises(DelegateDeclarationError, match=r"custom_support_table is keyed by the custom op's name .*got "
                       r"<BuiltinOperator.ADD: 0>; builtin ops go in support_table"):
        delegate_class(custom={B.ADD: 1})()


def test_a_version_set_becomes_a_frozenset():
    assert delegate_class({B.DEPTHWISE_CONV_2D: [1, 3]})().support_table == {B.DEPTHWISE_CONV_2D: frozenset({1, 3})}


def test_a_table_set_after_construction_is_checked_when_applied():
    delegate = delegate_class()()
    delegate.support_table = {"ADDD": 1}
    interpreter = Interpreter(model_content=single_op_model(B.ADD, 1))
    with pytest.raises(DelegateDeclarationError, match="'ADDD' is not a builtin op") as caught:
        interpreter.modify_graph_with_delegate(delegate)
    assert caught.value.report is not None and caught.value.report.num_delegated == 0
    interpreter.allocate_tensors()  # the interpreter is as it was


def test_caps_and_exclusions_take_op_names():
    Mine = delegate_class({B.ADD: 2})
    plan = plan_delegation(Mine(version_caps={"ADD": 1}), single_op_model(B.ADD, 2))
    assert plan.reason(0) == "ADD v2: max version supported by Mine is 1 (capped by options)"
    plan = plan_delegation(Mine(excluded_ops=["ADD"]), single_op_model(B.ADD, 1))
    assert plan.reason(0) == "ADD v1: excluded by the Mine options"
    with pytest.raises(DelegateDeclarationError, match=r"version_caps\[ADD\] is -1: give the highest version to take"):
        Mine(version_caps={B.ADD: -1})
    with pytest.raises(DelegateDeclarationError, match="excluded_ops must be a list of ops"):
        Mine(excluded_ops=B.ADD)


# -- kernel_class --------------------------------------------------------------------------------------


class NotAKernelInstance(DelegateKernel):
    def eval(self, context, node):
        pass


@pytest.mark.parametrize("kernel,problem", [
    (None, "is None"),
    (NotAKernelInstance(), "is an instance of NotAKernelInstance, not the class"),
    ("ReferenceDelegateKernel", "is 'ReferenceDelegateKernel', not a DelegateKernel class"),
])
def test_a_wrong_kernel_class_is_refused_at_construction(kernel, problem):
    """kernel_class=None used to fail with a TypeError at the kernel's init."""
    with pytest.raises(DelegateDeclarationError, match=f"Mine.kernel_class {problem}: set kernel_class = YourKernel, a "
                       "delegate_sdk.DelegateKernel subclass"):
        delegate_class(kernel=kernel)()


def test_a_delegate_without_a_kernel_class_fails_when_applied_and_the_plan_is_restored():
    class NoKernel(SimpleDelegate):
        support_table = {B.ADD: 1}

    assert plan_delegation(NoKernel(), single_op_model(B.ADD, 1)).taken == [0]  # a dry run needs no kernel
    interpreter = Interpreter(model_content=single_op_model(B.ADD, 1))
    with pytest.raises(DelegatePrepareError, match="NoKernel.kernel_class is DelegateKernel, whose eval is not written"):
        interpreter.modify_graph_with_delegate(NoKernel())
    assert not any(p.delegated for p in interpreter.node_placements())


def test_the_name_defaults_to_the_class_name():
    class Unnamed(SimpleDelegate):
        support_table = {B.ADD: 1}

    assert Unnamed().name == "Unnamed"
    assert plan_delegation(Unnamed(), single_op_model(B.ADD, 2)).reason(0) == "ADD v2: max version supported by Unnamed is 1"


# -- rejection reasons ---------------------------------------------------------------------------------


@pytest.mark.parametrize("reason,hint", [
    (42, "returned 42 for node 0 (ADD v1): return None to accept the node, or a str saying why it is rejected"),
    (False, "returned False for node 0 (ADD v1) (False does not accept a node: return None)"),
    ("", "returned '' for node 0 (ADD v1)"),
    (["float32 only"], "returned ['float32 only']"),
])
def test_a_rejection_reason_that_is_not_a_string_is_refused(reason, hint):
    Mine = delegate_class(reason=reason)
    with pytest.raises(DelegateDeclarationError) as caught:
        plan_delegation(Mine(), single_op_model(B.ADD, 1))
    assert f"Mine.node_rejection_reason {hint}" in str(caught.value)
    interpreter = Interpreter(model_content=single_op_model(B.ADD, 1))
    with pytest.raises(DelegateDeclarationError, match="node_rejection_reason returned"):
        interpreter.modify_graph_with_delegate(Mine())
    interpreter.allocate_tensors()  # the interpreter runs on, on the CPU
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], np.ones(detail["shape"], np.float32))
    interpreter.invoke()


def test_a_string_reason_lands_in_the_report():
    plan = plan_delegation(delegate_class(reason="only on Tuesdays")(), single_op_model(B.ADD, 1))
    assert plan.reason(0) == "ADD v1: only on Tuesdays"


def test_the_gpu_delegate_still_constructs():
    from backends.gpu import GpuDelegate

    delegate = GpuDelegate(device="host", version_caps={"DEPTHWISE_CONV_2D": 1})
    plan = plan_delegation(delegate, single_op_model(B.DEPTHWISE_CONV_2D, 2))
    assert plan.reason(0) == "DEPTHWISE_CONV_2D v2: max version supported by GpuDelegate is 1 (capped by options)"
