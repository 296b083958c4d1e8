"""Version recipes (issue 18, item 1): one for every (op, version) the CPU runtime registers,
each stamped with exactly its version by the versioning rules and running on the CPU path;
a test delegate per recipe family takes each recipe and, capped one below, refuses it with
the cap reason."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import builtin_op_resolver
from delegate_sdk import SimpleDelegate
from delegate_sdk.testing import (
    UNBUILDABLE_VERSIONS,
    VERSION_RECIPES,
    RecipeError,
    plan_delegation,
    recipe,
    recipes_for,
    register_recipe,
    rule_version,
    single_op_model,
)
from interpreter import Interpreter
from interpreter.testing import _random_inputs
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType, builtin_operator_name
from schema.model import Model
from schema.versioning import get_builtin_operator_version, op_signature_from_tensors

REGISTERED = builtin_op_resolver().registered_builtins()
RECIPES = sorted(VERSION_RECIPES.items())
FAMILIES = sorted({r.family for r in VERSION_RECIPES.values()})


def label(key) -> str:
    return f"{builtin_operator_name(key[0])}-v{key[1]}"


def test_every_version_the_cpu_registers_has_a_recipe_or_a_reason():
    missing = [label(k) for k in REGISTERED if k not in VERSION_RECIPES and k not in UNBUILDABLE_VERSIONS]
    assert not missing, f"registered (op, version) pairs without a recipe: {missing}"
    assert len(REGISTERED) > 250


def test_the_unbuildable_list_says_why_and_which_are_stamped_by_hand():
    for key, why in UNBUILDABLE_VERSIONS.items():
        assert len(why) > 30, label(key)
        if key in VERSION_RECIPES:
            assert VERSION_RECIPES[key].hand_stamped == why, label(key)
        else:
            assert "no recipe" in why, label(key)
    without = sorted(label(k) for k in REGISTERED if k not in VERSION_RECIPES)
    assert without == []


@pytest.mark.parametrize("key,entry", RECIPES, ids=[label(k) for k, _ in RECIPES])
def test_each_recipe_is_stamped_with_exactly_its_version_by_the_rules(key, entry):
    op, version = key
    model = Model.from_bytes(single_op_model(op, version))
    subgraph = model.subgraphs[0]
    node = subgraph.operators[entry.subject]
    assert (node.builtin_code, node.version) == (op, version)
    signature = op_signature_from_tensors(
        B(op), node.params, [subgraph.tensors[i] if i >= 0 else None for i in node.inputs],
        [subgraph.tensors[i] for i in node.outputs],
    )
    ruled = get_builtin_operator_version(signature)
    assert ruled == rule_version(model, entry.subject)
    if entry.hand_stamped:
        assert ruled != version, f"{entry.label} is stamped by hand, but the rules give it"
    else:
        assert ruled == version
    assert entry.description and entry.family


CPU_RECIPES = [(k, v) for k, v in RECIPES if k in set(REGISTERED)]


@pytest.mark.parametrize("key,entry", CPU_RECIPES, ids=[label(k) for k, _ in CPU_RECIPES])
def test_each_registered_recipe_runs_on_the_cpu_path(key, entry):
    interpreter = Interpreter(model_content=single_op_model(*key))
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), _random_inputs(interpreter, 0)):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    outputs = [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
    assert outputs and all(isinstance(o, np.ndarray) for o in outputs)
    assert interpreter.get_ops_details()[entry.subject]["version"] == key[1]


FLOAT_VERSIONS = [
    (B.DEPTHWISE_CONV_2D, 2), (B.FULLY_CONNECTED, 5), (B.FULLY_CONNECTED, 6), (B.SUB, 3), (B.DIV, 2), (B.MAXIMUM, 3),
    (B.MINIMUM, 3), (B.CONV_2D, 6), (B.TRANSPOSE_CONV, 3), (B.TRANSPOSE_CONV, 4), (B.STRIDED_SLICE, 4),
    (B.STRIDED_SLICE, 6), (B.STRIDED_SLICE, 8), (B.TRANSPOSE, 4), (B.TRANSPOSE, 6), (B.TRANSPOSE, 8), (B.PAD, 4),
    (B.PADV2, 4), (B.SLICE, 5), (B.GATHER, 5), (B.GATHER, 6), (B.GATHER_ND, 4), (B.RESIZE_BILINEAR, 3),
    (B.RESIZE_NEAREST_NEIGHBOR, 3), (B.SELECT, 3), (B.SPACE_TO_BATCH_ND, 3), (B.BATCH_TO_SPACE_ND, 3),
    (B.FLOOR_DIV, 2),
]


@pytest.mark.parametrize("op,version", FLOAT_VERSIONS, ids=[label(k) for k in FLOAT_VERSIONS])
def test_versions_that_float_can_reach_have_float_recipes(op, version):
    model = Model.from_bytes(single_op_model(op, version))
    node = model.subgraphs[0].operators[recipe(op, version).subject]
    assert model.subgraphs[0].tensors[node.outputs[0]].type == TensorType.FLOAT32


def test_the_first_version_of_every_float_op_is_float():
    """The v1 recipe of an op whose v1 takes float32 is float32 (what a float-only delegate tests)."""
    not_float = {B.FLOOR_DIV, B.FLOOR_MOD, B.LOGICAL_AND, B.LOGICAL_OR, B.LOGICAL_NOT, B.REDUCE_ALL, B.REDUCE_ANY,
                 B.RANGE, B.WHERE, B.DEQUANTIZE, B.WHILE, B.ONE_HOT, B.SPLIT, B.DENSIFY, B.VAR_HANDLE,
                 B.CALL_ONCE, B.READ_VARIABLE, B.ASSIGN_VARIABLE, B.IF, B.TRANSPOSE_CONV, B.FILL,
                 B.BITWISE_XOR, B.RIGHT_SHIFT, B.BROADCAST_ARGS,
                 B.SKIP_GRAM, B.HASHTABLE, B.HASHTABLE_IMPORT, B.HASHTABLE_FIND, B.HASHTABLE_SIZE,
                 B.STABLEHLO_AND, B.STABLEHLO_SHIFT_LEFT, B.STABLEHLO_RNG_BIT_GENERATOR}  # (integers or strings only)
    for (op, version), entry in RECIPES:
        if version != 1 or op in not_float:
            continue
        model = Model.from_bytes(entry())
        node = model.subgraphs[0].operators[entry.subject]
        types = {model.subgraphs[0].tensors[t].type for t in (*node.inputs, *node.outputs) if t >= 0}
        assert TensorType.FLOAT32 in types, entry.label


# -- a test delegate per recipe family ---------------------------------------------------------------


def family_delegate(family: str, **options) -> SimpleDelegate:
    """Takes every op of the family up to its highest recipe version; no predicate."""
    table = {}
    for (op, version), entry in VERSION_RECIPES.items():
        if entry.family == family:
            table[op] = max(table.get(op, 0), version)

    class FamilyDelegate(SimpleDelegate):
        name = f"{family.title().replace(' ', '')}Delegate"
        support_table = table

    return FamilyDelegate(**options)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_delegate_takes_each_recipe_and_refuses_it_capped_one_below(family):
    entries = [e for e in VERSION_RECIPES.values() if e.family == family]
    assert entries
    for entry in entries:
        model = single_op_model(entry.op, entry.version)
        delegate = family_delegate(family)
        taken = plan_delegation(delegate, model)
        assert entry.subject in taken.taken, f"{entry.label}: {taken.reason(entry.subject)}"
        capped = family_delegate(family, version_caps={entry.op: entry.version - 1})
        plan = plan_delegation(capped, model)
        assert entry.subject not in plan.taken
        assert plan.reason(entry.subject) == (
            f"{entry.label}: max version supported by {capped.name} is {entry.version - 1} (capped by options)"
        )


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_delegate_that_declares_one_below_refuses_with_the_table_reason(family):
    for entry in [e for e in VERSION_RECIPES.values() if e.family == family and e.version > 1]:

        class Older(SimpleDelegate):
            name = "Older"
            support_table = {entry.op: entry.version - 1}

        plan = plan_delegation(Older(), single_op_model(entry.op, entry.version))
        assert plan.reason(entry.subject) == f"{entry.label}: max version supported by Older is {entry.version - 1}"


# -- adding recipes ------------------------------------------------------------------------------------


@pytest.fixture
def restore_recipes():
    saved = dict(VERSION_RECIPES)
    yield
    VERSION_RECIPES.clear()
    VERSION_RECIPES.update(saved)


def pointwise_conv() -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 2, 2, 3])
    w = graph.add_constant("w", np.ones((4, 1, 1, 3), np.float32))
    b = graph.add_constant("b", np.zeros(4, np.float32))
    y = graph.add_tensor("y", [1, 2, 2, 4])
    from schema.params import Conv2DParams

    graph.add_operator(B.CONV_2D, [x, w, b], [y], Conv2DParams(stride_w=1, stride_h=1))
    graph.add_output(y)
    return builder.build()


def test_register_recipe_adds_and_refuses_to_overwrite(restore_recipes):
    with pytest.raises(ValueError, match="a recipe for CONV_2D v1 exists .*pass replace=True"):
        register_recipe(B.CONV_2D, 1, pointwise_conv)
    register_recipe(B.CONV_2D, 1, pointwise_conv, description="float32, 1x1 filter", replace=True)
    assert recipe(B.CONV_2D, 1).description == "float32, 1x1 filter"
    assert single_op_model(B.CONV_2D, 1) == pointwise_conv()


def test_register_recipe_as_a_decorator_and_the_version_is_checked(restore_recipes):
    @register_recipe(B.CONV_2D, 9, description="claims v9 but is v1")
    def wrong() -> bytes:
        return pointwise_conv()

    with pytest.raises(RecipeError, match="recipe for CONV_2D v9 produced a v1 node"):
        single_op_model(B.CONV_2D, 9)


def test_a_missing_recipe_says_which_exist_and_how_to_add_one(restore_recipes, monkeypatch):
    del VERSION_RECIPES[(int(B.QUANTIZE), 6)]
    monkeypatch.setitem(UNBUILDABLE_VERSIONS, (int(B.QUANTIZE), 6), "no rule gives QUANTIZE v6")
    with pytest.raises(RecipeError, match=r"no recipe for QUANTIZE v6 \(recipes exist for versions \[1, 2, 3, 4, 5\]\)"
                       r": no rule gives QUANTIZE v6.*register_recipe"):
        single_op_model(B.QUANTIZE, 6)
    assert [r.version for r in recipes_for(B.DEPTHWISE_CONV_2D)] == [1, 2, 3, 4, 5, 6, 7]
