"""Testing helpers for delegate authors (use them in pytest). None of them runs a model,
so this module imports nothing above ``delegate_sdk``; the helpers that run models with an
interpreter (``assert_matches_cpu``, ``run_model``, ``check_delegate``) are in
``interpreter.testing``.

- :func:`single_op_model` builds the smallest model of an op *at a given version*
  (float32 wherever that version allows, else int8, dilation... whatever that version
  means): there is a recipe for every (op, version) the CPU backend registers
  (``VERSION_RECIPES``; ``UNBUILDABLE_VERSIONS`` says which the rules cannot give, and
  why), and :func:`register_recipe` adds one.
- :func:`plan_delegation` is a dry run: which nodes a delegate would take and why it
  would leave the others. It needs no kernels, so it works for every version,
  including those the CPU backend cannot run yet.
- :func:`assert_declared_caps` tests every cap a delegate declares, in one call;
  :func:`assert_takes_versions_up_to` one op's: versions 1..N taken, N+1 rejected with a
  reason that names the version.
- :class:`ReferenceDelegate` takes the nodes of a support table and runs them with their
  own CPU kernels on buffers it owns: a stand-in device for partitioning tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from delegate_sdk.context import DelegateContext
from delegate_sdk.delegate import Delegate, DelegateKernel, DelegateParams, SimpleDelegate
from delegate_sdk.dry_run import FileContext
from delegate_sdk.node import Node
from delegate_sdk.recipes import (
    DTYPE_FORMS,
    QUANTIZED_DTYPES,
    TYPED_RECIPES,
    UNBUILDABLE_VERSIONS,
    VERSION_RECIPES,
    Recipe,
    RecipeError,
    checked_model,
    dtype_name,
    recipe,
    recipes_for,
    register_recipe,
    rule_version,
    single_op_model,
    typed_recipes,
)
from delegate_sdk.registration import Registration
from schema.enums import builtin_operator_name
from schema.model import Model

__all__ = [
    "CapReport",
    "CapRow",
    "DTYPE_FORMS",
    "DelegationPlan",
    "QUANTIZED_DTYPES",
    "ReferenceDelegate",
    "ReferenceDelegateKernel",
    "Recipe",
    "RecipeError",
    "TYPED_RECIPES",
    "UNBUILDABLE_VERSIONS",
    "VERSION_RECIPES",
    "assert_declared_caps",
    "assert_takes_versions_up_to",
    "dtype_name",
    "plan_delegation",
    "recipe",
    "recipes_for",
    "register_recipe",
    "rule_version",
    "single_op_model",
    "typed_recipes",
    "VersionCheck",
]

#: Helpers that run models moved to ``interpreter.testing`` (they need an interpreter).
_MOVED = {"assert_matches_cpu", "run_model", "check_delegate"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        raise ImportError(
            f"delegate_sdk.testing.{name} moved to interpreter.testing (it runs an Interpreter, and delegate_sdk "
            f"imports nothing above itself): from interpreter.testing import {name}"
        )
    raise AttributeError(f"module 'delegate_sdk.testing' has no attribute {name!r}")


# -- dry runs ---------------------------------------------------------------------------------------

@dataclass
class DelegationPlan:
    """What a delegate would do to a model's main subgraph (a dry run, no kernels)."""

    taken: list[int] = field(default_factory=list)
    partitions: list[list[int]] = field(default_factory=list)
    reasons: dict[int, list[str]] = field(default_factory=dict)

    def reason(self, node: int) -> str:
        return "; ".join(self.reasons.get(node, []))


def plan_delegation(delegate: Delegate, model: bytes | Model) -> DelegationPlan:
    """Dry run: which nodes of the main subgraph ``delegate`` would take, and why not the rest."""
    context = FileContext((model if isinstance(model, Model) else Model.from_bytes(model)).subgraphs[0])
    delegate.prepare(context)
    result = context.result
    return DelegationPlan(result.taken, [list(p) for p in result.partitions], result.reasons)


@dataclass(frozen=True)
class VersionCheck:
    """One version :func:`assert_takes_versions_up_to` looked at."""

    version: int
    dtype: str
    outcome: str  #: "taken", "refused" (the version above the cap), or "skipped: ..." (why not checked)
    description: str = ""


def _accepted_dtypes(make_delegate: Callable[[], Delegate], op: int, max_version: int) -> list[str]:
    """The activation types of which the delegate takes at least one recipe of ``op`` up to
    ``max_version`` (the default recipes and the typed ones)."""
    candidates: dict[str, list[Recipe]] = {}
    for version in range(1, max_version + 1):
        if (int(op), version) in VERSION_RECIPES:
            entry = VERSION_RECIPES[(int(op), version)]
            candidates.setdefault(entry.activation_dtype, []).append(entry)
    for (o, version, dtype), entry in TYPED_RECIPES.items():
        if o == int(op) and version <= max_version:
            candidates.setdefault(dtype, []).append(entry)
    accepted = []
    for dtype, entries in candidates.items():
        for entry in entries:
            try:
                model = checked_model(entry)
            except RecipeError:
                continue
            if entry.subject in plan_delegation(make_delegate(), model).taken:
                accepted.append(dtype)
                break
    return sorted(accepted)


#: One tensor type, in any form the kit's ``dtype=`` accepts (:data:`DTYPE_FORMS`).
DType = Any


def _dtype_names(dtype: DType | Sequence[DType]) -> list[str]:
    """The names of one type, or of each type of a list, tuple or set of them."""
    if isinstance(dtype, (list, tuple, set, frozenset)):
        if not dtype:
            raise ValueError(f"dtype is an empty {type(dtype).__name__}; give one type or several ({DTYPE_FORMS})")
        return list(dict.fromkeys(dtype_name(d) for d in dtype))
    return [dtype_name(dtype)]


def assert_takes_versions_up_to(make_delegate: Callable[[], Delegate], op: int, max_version: int,
                                dtype: DType | Sequence[DType] | None = None) -> list[VersionCheck]:
    """Versions 1..max_version of ``op`` are taken; max_version + 1 is rejected with a reason
    naming the version.

    ``dtype`` says which models prove it: ``"int8"``, ``"uint8"``, ``"int16"``,
    ``"float32"``..., as a string, a numpy dtype or scalar type (``np.int8``) or a
    ``TensorType`` member (or a list of several): every version that has a recipe of that type
    (:func:`typed_recipes`: the int8 CONV_2D recipes are v3 and v6, TFLite's rules giving
    int8 no lower version) must be taken. Left out, the types are inferred from what the
    delegate accepts: those of which it takes at least one recipe of ``op`` up to the cap,
    so an int8-only delegate is checked on every int8 version, a float one on every float
    version. At least one version must be checked. The version above the cap is built in
    the (single) type checked when it has a recipe of that type, else it is the version's
    default recipe. Returns what was checked, one :class:`VersionCheck` per (version, type).
    """
    name = builtin_operator_name(op)
    if dtype is None:
        dtypes = _accepted_dtypes(make_delegate, op, max_version)
        assert dtypes, (
            f"{make_delegate().__class__.__name__} takes no recipe of {name} up to v{max_version} in any type "
            f"(tried {', '.join(sorted({r.activation_dtype for r in recipes_for(op)} | set(QUANTIZED_DTYPES)))}); "
            f"v1: {plan_delegation(make_delegate(), single_op_model(op, 1)).reason(recipe(op, 1).subject) if (int(op), 1) in VERSION_RECIPES else 'no recipe'}"
        )
    else:
        dtypes = _dtype_names(dtype)
    checks: list[VersionCheck] = []
    for kind in dtypes:
        found = typed_recipes(op, kind)
        for version in range(1, max_version + 1):
            entry = found.get(version)
            if entry is None:
                checks.append(VersionCheck(version, kind, f"skipped: no {kind} recipe (TFLite's rules give {name} "
                                                          f"v{version} to other types)"))
                continue
            plan = plan_delegation(make_delegate(), checked_model(entry))
            assert entry.subject in plan.taken, (
                f"{name} v{version} ({kind}: {entry.description}) should be delegated, but was left: "
                f"{plan.reason(entry.subject)}"
            )
            checks.append(VersionCheck(version, kind, "taken", entry.description))
    assert any(c.outcome == "taken" for c in checks), (
        f"no recipe of {name} in {', '.join(dtypes)} for any version up to {max_version}"
    )
    over = max_version + 1
    typed = typed_recipes(op, dtypes[0]).get(over) if len(dtypes) == 1 else None
    entry = typed if typed is not None else recipe(op, over)
    plan = plan_delegation(make_delegate(), checked_model(entry))
    assert entry.subject not in plan.taken, f"{name} v{over} is above the cap {max_version} but was delegated"
    assert f"v{over}" in plan.reason(entry.subject), f"the rejection should name the version: {plan.reason(entry.subject)!r}"
    checks.append(VersionCheck(over, entry.activation_dtype, "refused", entry.description))
    return checks


@dataclass
class CapRow:
    """One (op, version) :func:`assert_declared_caps` looked at."""

    op: int
    version: int
    declared: bool  #: the delegate declares this version (after its caps and exclusions)
    outcome: str  #: "taken", "left by the predicate", "refused", "no recipe", or "FAILED"
    reason: str = ""
    description: str = ""
    ran: bool = False  #: ``interpreter.testing.check_delegate`` ran it against the CPU
    dtype: str = ""  #: the activations' type of the recipe checked

    @property
    def label(self) -> str:
        return f"{builtin_operator_name(self.op)} v{self.version}"


@dataclass
class CapReport:
    """What :func:`assert_declared_caps` checked, one row per (op, version)."""

    delegate: str
    rows: list[CapRow] = field(default_factory=list)
    custom_ops: list[str] = field(default_factory=list)  #: declared custom ops (no recipes: not checked)

    def __str__(self) -> str:
        lines = [f"{self.delegate}: {len(self.rows)} (op, version) checked"]
        for row in self.rows:
            mark = "declared" if row.declared else "above/outside"
            kind = f" [{row.dtype}]" if row.dtype else ""
            lines.append(f"  {row.label + kind:36s} {mark:13s} {row.outcome}" + (f": {row.reason}" if row.reason else ""))
        if self.custom_ops:
            lines.append(f"  custom ops not checked (no recipes): {', '.join(self.custom_ops)}")
        return "\n".join(lines)


def assert_declared_caps(make_delegate: Callable[[], Delegate], *, strict: bool = False,
                         dtype: DType | None = None) -> CapReport:
    """Test every cap a ``SimpleDelegate`` declares, with a dry run per version recipe.

    For each builtin op of ``support_table`` (after ``version_caps`` and ``excluded_ops``):
    every declared version with a recipe must pass the SDK's version check (its node is
    taken, or left by ``node_rejection_reason`` only, which ``strict`` makes a failure
    too); every version up to the cap that is not declared (a gap in a version set), and
    the version just above the cap, must be refused with the SDK's version reason
    (``"ADD v3: max version supported by NAME is 2"``). Versions without a recipe are
    listed as such. With ``dtype`` (``"int8"``, ``np.int8``, ``TensorType.INT8``...), the models are those of that type
    (:func:`typed_recipes`): an int8-only delegate is checked on every int8 version it
    declares; versions without a recipe of that type are listed as "no int8 recipe"
    (except the version above a cap, which falls back to its default recipe: the version
    check does not depend on the type). Returns the :class:`CapReport`; raises
    ``AssertionError`` listing every failure.
    """
    dtype = None if dtype is None else dtype_name(dtype)
    probe = make_delegate()
    if not isinstance(probe, SimpleDelegate):
        raise TypeError(f"assert_declared_caps checks a SimpleDelegate's support_table; got {type(probe).__name__}")
    probe.check_declaration()
    report = CapReport(probe.name, custom_ops=sorted(probe.custom_support_table))
    failures = []
    for op in sorted(probe.support_table, key=int):
        declared = probe.supported_versions(op)
        top = max(declared, default=0)
        for version in range(1, top + 2):
            is_declared = version in declared
            entry = typed_recipes(op, dtype).get(version) if dtype is not None else None
            if entry is None and dtype is not None and is_declared:
                report.rows.append(CapRow(int(op), version, is_declared, f"no {dtype} recipe", dtype=dtype))
                continue
            if entry is None and (int(op), version) not in VERSION_RECIPES:
                report.rows.append(CapRow(int(op), version, is_declared, "no recipe",
                                          UNBUILDABLE_VERSIONS.get((int(op), version), "")))
                continue
            entry = entry or VERSION_RECIPES[(int(op), version)]
            plan = plan_delegation(make_delegate(), checked_model(entry))
            reason = plan.reason(entry.subject)
            expected = probe.version_rejection_reason(Registration(int(op), version=version))
            row = CapRow(int(op), version, is_declared, "", reason, entry.description, dtype=entry.activation_dtype)
            if is_declared:
                if entry.subject in plan.taken:
                    row.outcome = "taken"
                elif expected is None and reason and not _is_version_reason(reason, probe):
                    row.outcome = "left by the predicate"
                    if strict:
                        failures.append(f"{row.label} ({entry.description}) is declared but left: {reason}")
                else:
                    row.outcome = "FAILED"
                    failures.append(f"{row.label} ({entry.description}) is declared but refused: {reason or 'no reason'}")
            else:
                if entry.subject not in plan.taken and expected is not None and expected in reason:
                    row.outcome = "refused"
                else:
                    row.outcome = "FAILED"
                    what = "taken" if entry.subject in plan.taken else f"refused with {reason!r}"
                    failures.append(f"{row.label} ({entry.description}) is not declared, so it must be refused with "
                                    f"{expected!r}, but it was {what}")
            report.rows.append(row)
    assert not failures, f"{probe.name}: the declared caps do not hold:\n" + "\n".join(failures) + f"\n{report}"
    return report


def _is_version_reason(reason: str, delegate: SimpleDelegate) -> bool:
    return any(phrase in reason for phrase in (
        f"max version supported by {delegate.name}", f"{delegate.name} supports", f"{delegate.name} does not support",
        f"excluded by the {delegate.name} options",
    ))


# -- a reference delegate ---------------------------------------------------------------------------

class ReferenceDelegateKernel(DelegateKernel):
    """Runs the replaced nodes with their own (CPU) kernels; internal tensors live in
    buffers this kernel owns, as they would on a device."""

    def init(self, context: DelegateContext, params: DelegateParams) -> None:
        self.params = params
        self.steps = [context.get_node_and_registration(i) for i in params.nodes_to_replace]
        self.boundary = set(params.input_tensors) | set(params.output_tensors)
        self.owned: dict[int, np.ndarray] = {}

    def prepare(self, context: DelegateContext, node: Node) -> None:
        self.owned.clear()
        for inner, registration in self.steps:
            if registration.prepare is not None:
                registration.prepare(context, inner)
            for t in inner.outputs:
                tensor = context.tensors[t]
                if t not in self.boundary and not tensor.is_constant:
                    self.owned[t] = tensor.data = np.empty(tensor.shape, dtype=tensor.dtype)

    def eval(self, context: DelegateContext, node: Node) -> None:
        for inner, registration in self.steps:
            registration.invoke(context, inner)


class ReferenceDelegate(SimpleDelegate):
    """Takes the ops in ``support_table`` (op -> max version), and optionally only the
    node indices in ``only_nodes``; runs them with their own CPU kernels."""

    kernel_class = ReferenceDelegateKernel

    def __init__(self, support_table: Mapping[int, int | frozenset[int]], name: str = "ReferenceDelegate",
                 only_nodes: Sequence[int] | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.support_table = dict(support_table)
        self.name = name
        self.only_nodes = set(only_nodes) if only_nodes is not None else None
        self.check_declaration()

    def node_rejection_reason(self, context, node, registration) -> str | None:
        if self.only_nodes is not None and node.index not in self.only_nodes:
            return "not in this test's support set"
        return None
