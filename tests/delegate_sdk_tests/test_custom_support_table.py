"""``SimpleDelegate.custom_support_table``: custom ops, by name, checked like builtins
(the same reasons, version caps and exclusions by name)."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu.kernels.mediapipe_custom import CONVOLUTION_2D_TRANSPOSE_BIAS, TransposeConvBiasOptions
from delegate_sdk.delegate import SimpleDelegate
from delegate_sdk.testing import ReferenceDelegate, plan_delegation
from interpreter.testing import assert_matches_cpu
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.params import AddParams

NAME = CONVOLUTION_2D_TRANSPOSE_BIAS


def custom_model(name: str = "MyOp", version: int = 1) -> bytes:
    """ADD, then one custom node ``name`` (shapes are not read by a dry run)."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4])
    y = graph.add_tensor("y", [1, 4])
    z = graph.add_tensor("z", [1, 4])
    graph.add_operator(BuiltinOperator.ADD, [x, x], [y], AddParams())
    graph.add_operator(name, [y], [z], version=version, custom_options=b"\x00")
    graph.add_output(z)
    builder.add_signature("serving_default", graph)
    return builder.build()


class CustomDelegate(SimpleDelegate):
    name = "CustomDelegate"
    support_table = {BuiltinOperator.ADD: 1}
    custom_support_table = {"MyOp": 2, "Sparse": frozenset({1, 3})}


def test_a_custom_op_in_the_table_is_taken_at_its_versions():
    for version in (1, 2):
        plan = plan_delegation(CustomDelegate(), custom_model("MyOp", version))
        assert plan.taken == [0, 1], plan.reasons


def test_a_version_above_the_table_is_rejected_naming_it():
    plan = plan_delegation(CustomDelegate(), custom_model("MyOp", 3))
    assert plan.taken == [0]
    assert plan.reason(1) == "MyOp v3: max version supported by CustomDelegate is 2"


def test_a_version_set_is_checked_like_the_builtin_ones():
    assert plan_delegation(CustomDelegate(), custom_model("Sparse", 3)).taken == [0, 1]
    plan = plan_delegation(CustomDelegate(), custom_model("Sparse", 2))
    assert plan.reason(1) == "Sparse v2: CustomDelegate supports Sparse versions 1, 3 only"


def test_a_custom_op_not_in_the_table_is_rejected_by_name():
    plan = plan_delegation(CustomDelegate(), custom_model("OtherOp", 1))
    assert plan.taken == [0]
    assert plan.reason(1) == "OtherOp v1: CustomDelegate does not support OtherOp"


def test_a_delegate_without_a_custom_table_takes_no_custom_op():
    class BuiltinsOnly(SimpleDelegate):
        name = "BuiltinsOnly"
        support_table = {BuiltinOperator.ADD: 1, BuiltinOperator.CUSTOM: 1}  # the CUSTOM code says nothing

    plan = plan_delegation(BuiltinsOnly(), custom_model("MyOp", 1))
    assert plan.taken == [0]
    assert plan.reason(1) == "MyOp v1: BuiltinsOnly does not support MyOp"


def test_version_caps_by_name():
    plan = plan_delegation(CustomDelegate(version_caps={"MyOp": 1}), custom_model("MyOp", 2))
    assert plan.reason(1) == "MyOp v2: max version supported by CustomDelegate is 1 (capped by options)"
    delegate = CustomDelegate(version_caps={"MyOp": 1})
    assert delegate.supported_versions("MyOp") == frozenset({1})
    assert delegate.max_supported_version("MyOp") == 1
    assert CustomDelegate().max_supported_version("MyOp") == 2


@pytest.mark.parametrize("excluded", ["MyOp", BuiltinOperator.CUSTOM], ids=["by-name", "every-custom-op"])
def test_excluded_ops_by_name_or_all_customs(excluded):
    plan = plan_delegation(CustomDelegate(excluded_ops=[excluded]), custom_model("MyOp", 1))
    assert plan.taken == [0]
    assert plan.reason(1) == "MyOp v1: excluded by the CustomDelegate options"


def test_builtins_are_unaffected():
    plan = plan_delegation(CustomDelegate(version_caps={BuiltinOperator.ADD: 0}), custom_model("MyOp", 1))
    assert plan.taken == [1]
    assert plan.reason(0) == "ADD v1: max version supported by CustomDelegate is 0 (capped by options)"


def test_repr_lists_custom_ops():
    assert "MyOp v[1, 2]" in repr(CustomDelegate())


# -- a delegate that runs a custom node: the interpreter hands it over like any other ----------


class ReferenceWithCustomOps(ReferenceDelegate):
    """ReferenceDelegate (CPU kernels on buffers it owns) that also takes MediaPipe's op."""

    custom_support_table = {NAME: 1}


def mediapipe_model() -> bytes:
    rng = np.random.default_rng(0)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4, 4, 3])
    w = graph.add_constant("w", rng.uniform(-1, 1, (2, 3, 3, 3)).astype(np.float32))
    b = graph.add_constant("b", rng.uniform(-1, 1, 2).astype(np.float32))
    up = graph.add_tensor("up", [1, 8, 8, 2])
    out = graph.add_tensor("out", [1, 8, 8, 2])
    graph.add_operator(NAME, [x, w, b], [up], custom_options=TransposeConvBiasOptions(1, 2, 2).to_bytes())
    graph.add_operator(BuiltinOperator.ADD, [up, up], [out], AddParams())
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


def test_a_custom_node_is_delegated_and_runs_like_the_cpu():
    make = lambda: ReferenceWithCustomOps({BuiltinOperator.ADD: 1})  # noqa: E731
    interpreter = assert_matches_cpu(mediapipe_model(), make, invokes=2)
    placements = interpreter.node_placements()
    assert [p.op for p in placements] == [NAME, "ADD"] and all(p.delegated for p in placements)
