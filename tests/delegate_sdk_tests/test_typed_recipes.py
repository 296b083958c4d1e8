"""An int8-only delegate proves every int8 version up to its caps with the kit's models."""

from __future__ import annotations

import pytest

from delegate_sdk import SimpleDelegate
from delegate_sdk.recipes import TYPED_RECIPES, checked_model, typed_recipes
from delegate_sdk.testing import ReferenceDelegateKernel, assert_takes_versions_up_to
from interpreter.testing import check_delegate, run_model, _random_inputs, _interpreter
from schema.enums import BuiltinOperator as B, TensorType


class TinyDsp(SimpleDelegate):
    """The issue's author's delegate: int8 CONV_2D <= 3, DEPTHWISE_CONV_2D <= 3, ADD <= 2, FC <= 4."""

    name = "TinyDsp"
    support_table = {B.CONV_2D: 3, B.DEPTHWISE_CONV_2D: 3, B.ADD: 2, B.FULLY_CONNECTED: 4}
    kernel_class = ReferenceDelegateKernel

    def node_rejection_reason(self, context, node, registration):
        return None if context.tensors[node.inputs[0]].type == TensorType.INT8 else "int8 only"


@pytest.mark.parametrize("op", sorted(TinyDsp.support_table, key=int), ids=lambda op: B(op).name)
def test_an_int8_only_delegate_takes_every_int8_version_up_to_its_cap(op):
    cap = TinyDsp.support_table[op]
    checks = assert_takes_versions_up_to(TinyDsp, op, cap)
    assert {c.dtype for c in checks if c.outcome == "taken"} == {"int8"}
    assert checks[-1].version == cap + 1 and checks[-1].outcome == "refused"
    assert checks == assert_takes_versions_up_to(TinyDsp, op, cap, dtype="int8")


def test_check_delegate_in_int8_runs_the_bit_exact_models_against_the_cpu():
    report = check_delegate(TinyDsp, dtype="int8", strict=True)
    taken = {(r.label, r.dtype) for r in report.rows if r.outcome == "taken"}
    assert taken == {("CONV_2D v3", "int8"), ("DEPTHWISE_CONV_2D v3", "int8"), ("ADD v2", "int8"),
                     ("FULLY_CONNECTED v4", "int8")}
    assert all(r.ran for r in report.rows if r.outcome == "taken")


def test_the_int8_fully_connected_versions_above_v4_exist_in_int8():
    assert {5, 6} <= set(typed_recipes(B.FULLY_CONNECTED, "int8"))


@pytest.mark.parametrize("key", sorted(TYPED_RECIPES), ids=lambda k: f"{B(k[0]).name}-v{k[1]}-{k[2]}")
def test_every_typed_recipe_is_its_version_and_type_and_runs_on_the_cpu(key):
    entry = TYPED_RECIPES[key]
    model = checked_model(entry)  # the rules give it its version
    assert entry.activation_dtype == key[2]
    outputs, _ = run_model(model, _random_inputs(_interpreter(model), 0))
    assert outputs and outputs[0].size > 0
