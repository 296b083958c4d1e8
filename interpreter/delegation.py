"""Applying delegates to an interpreter's subgraphs, and the delegation report.

``apply_delegate`` lets a delegate prepare every subgraph through a checked view of it
(``replace_node_subsets_with_delegate_kernels`` refuses a bad node set with a reason),
builds the report from the delegate nodes that were actually created, and wraps each new
delegate node's invoke with the output contract check: after the kernel's ``eval`` every
output tensor must still hold its own array (written in place, right shape and dtype).
With ``LITEDELEGATE_DEBUG=1`` the outputs the CPU side reads are also poisoned before each
eval (NaN for floats, a byte pattern otherwise), so an output the kernel never writes is
reported instead of leaving the previous invoke's values. A delegate that fails in
``prepare`` leaves the plan as it was and raises ``DelegatePrepareError`` with the report.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from delegate_sdk.context import DelegateContext
from delegate_sdk.delegate import (
    Delegate,
    DelegateDeclarationError,
    DelegateError,
    DelegateKernelError,
    DelegatePrepareError,
    InvalidReplacementError,
    NodeDecision,
)
from delegate_sdk.partition import check_replacement
from interpreter.subgraph import SubgraphRuntime, as_arena_limit_error
from schema.enums import BuiltinOperator

__all__ = [
    "CPU", "DEBUG_ENVIRONMENT_VARIABLE", "DelegateDeclarationError", "DelegateError", "DelegateKernelError",
    "DelegatePrepareError", "DelegationReport", "InvalidReplacementError", "NodePlacement", "apply_delegate",
    "delegate_name", "delegating_only", "placements",
]

logger = logging.getLogger("litedelegate")
CPU = "CPU"
#: Set to 1 to poison delegate outputs before each eval and report the ones left unwritten.
DEBUG_ENVIRONMENT_VARIABLE = "LITEDELEGATE_DEBUG"


def delegate_name(delegate: Any) -> str:
    """The name reports use: the delegate's ``name``, or its class name when it kept the
    base class's."""
    name = getattr(delegate, "name", "") or ""
    if not name or (name == Delegate.name and type(delegate) is not Delegate):
        return type(delegate).__name__
    return str(name)


@dataclass(frozen=True)
class NodePlacement:
    """Where one node of the model runs, and why not elsewhere."""

    subgraph: int
    node: int
    op: str
    version: int
    runs_on: str  #: ``"CPU"`` or the name of the delegate that took it
    partition: int | None  #: the plan index of the delegate node that runs it
    rejections: tuple[str, ...] = ()  #: reasons, one per delegate that left it

    @property
    def delegated(self) -> bool:
        return self.runs_on != CPU


@dataclass
class DelegationReport:
    """What applying one delegate did: every node's placement, counts, the log line.

    ``replaced`` holds the (subgraph, node) pairs this delegate's nodes took, read from
    the delegate nodes it created (not from what it recorded)."""

    delegate: str
    placements: list[NodePlacement] = field(default_factory=list)
    partitions_per_subgraph: dict[int, int] = field(default_factory=dict)
    error: str | None = None  #: set when the delegate failed in prepare and was not applied
    replaced: frozenset[tuple[int, int]] | None = None

    @property
    def num_nodes(self) -> int:
        return len(self.placements)

    def _taken(self, placement: NodePlacement) -> bool:
        if self.replaced is not None:
            return (placement.subgraph, placement.node) in self.replaced
        return placement.runs_on == self.delegate

    @property
    def num_delegated(self) -> int:
        return sum(1 for p in self.placements if self._taken(p))

    @property
    def num_partitions(self) -> int:
        return sum(self.partitions_per_subgraph.values())

    @property
    def rejected(self) -> list[NodePlacement]:
        """Nodes this delegate left on the CPU (or to another delegate), with reasons."""
        return [p for p in self.placements if not self._taken(p)]

    def log_lines(self) -> list[str]:
        lines = []
        for subgraph, partitions in sorted(self.partitions_per_subgraph.items()):
            nodes = [p for p in self.placements if p.subgraph == subgraph]
            delegated = sum(1 for p in nodes if self._taken(p))
            lines.append(
                f"Replacing {delegated} out of {len(nodes)} node(s) with delegate ({self.delegate}) node, "
                f"yielding {partitions} partitions for subgraph {subgraph}."
            )
        return lines

    def reasons_for(self, node: int, subgraph: int = 0) -> tuple[str, ...]:
        for placement in self.placements:
            if (placement.subgraph, placement.node) == (subgraph, node):
                return placement.rejections
        raise KeyError(f"no node {node} in subgraph {subgraph}")

    def __str__(self) -> str:
        if self.error:
            return f"{self.delegate}: not applied ({self.error})"
        lines = self.log_lines()
        width = max((len(p.op) for p in self.placements), default=2) + 4
        lines.append(f"{'node':>6}  {'op':{width}s} {'runs on':14s} why not delegated")
        for p in self.placements:
            where = f"{p.subgraph}:{p.node}" if p.subgraph else str(p.node)
            lines.append(f"{where:>6}  {p.op + ' v' + str(p.version):{width}s} {p.runs_on:14s} {'; '.join(p.rejections)}")
        return "\n".join(lines)


def placements(subgraphs: Sequence[SubgraphRuntime], num_model_nodes: Sequence[int]) -> list[NodePlacement]:
    """Where every node of the model runs now, with every delegate's rejection reasons."""
    result = []
    for subgraph, count in zip(subgraphs, num_model_nodes):
        runner: dict[int, tuple[str, int]] = {}
        for position, plan_node in enumerate(subgraph.execution_plan):
            node = subgraph.nodes[plan_node]
            if node.delegate_params is None:
                continue  # a CPU node
            name = delegate_name(node.delegate) if node.delegate is not None else subgraph.registrations[plan_node].name
            for original in _replaced_nodes(subgraph, plan_node):
                runner[original] = (name or "delegate", position)
        reasons: dict[int, list[str]] = {}
        for decision in subgraph.decisions:
            if not decision.accepted:
                reasons.setdefault(decision.node, []).append(decision.reason)
        for node_index in range(count):
            registration = subgraph.registrations[node_index]
            runs_on, partition = runner.get(node_index, (CPU, None))
            result.append(
                NodePlacement(
                    subgraph=subgraph.index,
                    node=node_index,
                    op=registration.op_name,
                    version=registration.version,
                    runs_on=runs_on,
                    partition=partition,
                    rejections=tuple(reasons.get(node_index, ())),
                )
            )
    return result


def _replaced_nodes(subgraph: SubgraphRuntime, node_index: int) -> list[int]:
    """The model nodes a plan node runs: itself, or (recursively) what its delegate replaced."""
    node = subgraph.nodes[node_index]
    if node.delegate_params is None:
        return [node_index]
    return [n for replaced in node.delegate_params.nodes_to_replace for n in _replaced_nodes(subgraph, replaced)]


_ONLY_NODES: contextvars.ContextVar[frozenset[int] | None] = contextvars.ContextVar("only_nodes", default=None)


@contextlib.contextmanager
def delegating_only(nodes: Sequence[int]):
    """While active, a delegate applied to a main subgraph replaces only ``nodes`` of it
    (the rest of what it asks for stays on the CPU): ``interpreter.testing.diff`` delegates
    one node at a time this way, whatever the delegate."""
    token = _ONLY_NODES.set(frozenset(int(n) for n in nodes))
    try:
        yield
    finally:
        _ONLY_NODES.reset(token)


def _restricted(subgraph: SubgraphRuntime, nodes: list[int]) -> list[int]:
    only = _ONLY_NODES.get()
    if only is None or subgraph.index != 0:
        return nodes if only is None else []
    return [n for n in nodes if n in only]


class _CheckedContext(DelegateContext):
    """A subgraph as the delegate being applied sees it: every call goes to the subgraph,
    and ``replace_node_subsets_with_delegate_kernels`` / ``preview_delegate_partitioning``
    check their node set (and registration, and delegate) first."""

    def __init__(self, subgraph: SubgraphRuntime, delegate: Any, dynamic: frozenset[int] = frozenset()) -> None:
        self._subgraph = subgraph
        self._delegate = delegate
        self._dynamic = dynamic

    def __getattr__(self, name: str) -> Any:  # index, nodes, registrations, describe_node...
        return getattr(self._subgraph, name)

    @property
    def tensors(self):  # type: ignore[override]
        return self._subgraph.tensors

    @property
    def inputs(self):  # type: ignore[override]
        return self._subgraph.inputs

    @property
    def outputs(self):  # type: ignore[override]
        return self._subgraph.outputs

    @property
    def execution_plan(self) -> list[int]:
        return self._subgraph.execution_plan

    def get_node_and_registration(self, node_index: int):
        return self._subgraph.get_node_and_registration(node_index)

    def get_subgraph(self, index: int):
        return self._subgraph.get_subgraph(index)

    @property
    def resources(self):
        return self._subgraph.resources

    def preview_delegate_partitioning(self, nodes_to_replace):
        nodes = check_replacement(self._subgraph.execution_plan, nodes_to_replace, subgraph=self._subgraph.index)
        return self._subgraph.preview_delegate_partitioning(_restricted(self._subgraph, nodes))

    def replace_node_subsets_with_delegate_kernels(self, registration, nodes_to_replace, delegate) -> None:
        nodes = check_replacement(
            self._subgraph.execution_plan, nodes_to_replace, registration, delegate,
            applying=self._delegate, subgraph=self._subgraph.index,
        )
        nodes = _restricted(self._subgraph, nodes)
        if nodes:
            self._subgraph.replace_node_subsets_with_delegate_kernels(registration, nodes, delegate)

    def record_decision(self, decision: Any) -> None:
        self._subgraph.record_decision(decision)

    @property
    def dynamic_tensors(self) -> frozenset[int]:
        return self._dynamic


def apply_delegate(subgraphs: Sequence[SubgraphRuntime], num_model_nodes: Sequence[int], delegate: Any) -> DelegationReport:
    """Let ``delegate`` prepare every subgraph and report what it took.

    On failure every subgraph is restored (and re-allocated if it was allocated), and the
    error is raised with the report as ``error.report``.

    Raises:
      DelegatePrepareError: the delegate (or one of its kernels' init/prepare) raised.
      DelegateError: the delegate cannot be applied to this graph (dynamic tensors), is
        declared wrongly (``DelegateDeclarationError``) or asked for a bad replacement
        (``InvalidReplacementError``).
    """
    name = delegate_name(delegate)
    snapshots = [subgraph.snapshot() for subgraph in subgraphs]
    before = [len(subgraph.nodes) for subgraph in subgraphs]
    plans = [subgraph.execution_plan for subgraph in subgraphs]
    debug = os.environ.get(DEBUG_ENVIRONMENT_VARIABLE, "") not in ("", "0")
    dynamic = bool(getattr(delegate, "supports_dynamic_tensors", False))
    try:
        for subgraph in subgraphs:
            found = _prepare_on_cpu(subgraph) if subgraph.index == 0 else frozenset()
            delegate.prepare(_CheckedContext(subgraph, delegate, found))
        for subgraph, start in zip(subgraphs, before):  # before any allocation binds the invokes
            _check_outputs_after_invoke(subgraph, start, name, dynamic, debug)
        if not dynamic:
            for subgraph, start in zip(subgraphs, before):
                if len(subgraph.nodes) > start:
                    _refuse_dynamic_tensors(subgraph, start, name)
    except DelegateError as error:
        _restore(subgraphs, snapshots)
        error.report = DelegationReport(name, placements(subgraphs, num_model_nodes), {}, error=_describe(error),
                                        replaced=frozenset())
        raise
    except Exception as error:
        _restore(subgraphs, snapshots)
        message = _describe(error)
        report = DelegationReport(name, placements(subgraphs, num_model_nodes), {}, error=message, replaced=frozenset())
        logger.warning("delegate %s failed in prepare and was not applied (%s); restored the original execution plan",
                       name, message)
        failure = DelegatePrepareError(
            f"Restored original execution plan after delegate application failure: delegate {name} failed in "
            f"prepare: {message}"
        )
        failure.report = report
        raise failure from as_arena_limit_error(error)

    replaced: set[tuple[int, int]] = set()
    for subgraph, start, plan in zip(subgraphs, before, plans):
        taken: set[int] = set()
        for node_index in range(start, len(subgraph.nodes)):
            if subgraph.nodes[node_index].delegate_params is not None:
                taken.update(_replaced_nodes(subgraph, node_index))
        replaced.update((subgraph.index, n) for n in taken)
        _note_untaken(subgraph, delegate, name, plan, taken)
    partitions = {
        subgraph.index: len(subgraph.nodes) - start
        for subgraph, start in zip(subgraphs, before)
        if subgraph.index == 0 or len(subgraph.nodes) > start
    }
    report = DelegationReport(name, placements(subgraphs, num_model_nodes), partitions, replaced=frozenset(replaced))
    for line in report.log_lines():
        logger.info(line)
    return report


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _restore(subgraphs: Sequence[SubgraphRuntime], snapshots: Sequence[tuple]) -> None:
    """Put every subgraph back as it was, allocated again if it was (as LiteRT leaves an
    interpreter after a failed delegate: ready to invoke)."""
    for subgraph, snapshot in zip(subgraphs, snapshots):
        subgraph.restore(snapshot)
    for subgraph, snapshot in zip(subgraphs, snapshots):
        was_allocated = snapshot[3] if len(snapshot) > 3 else False
        if was_allocated:
            subgraph.allocate_tensors()


def _note_untaken(subgraph: SubgraphRuntime, delegate: Any, name: str, plan: Sequence[int], taken: set[int]) -> None:
    """A low-level delegate need not record why it left a node; the report says it left it."""
    recorded = {d.node for d in subgraph.decisions if getattr(d, "delegate", None) == name}
    for node_index in plan:
        if node_index in taken or node_index in recorded:
            continue
        node, registration = subgraph.nodes[node_index], subgraph.registrations[node_index]
        if node.delegate_params is not None:
            continue  # an earlier delegate's node
        label = f"{registration.op_name} v{registration.version}"
        subgraph.record_decision(NodeDecision(name, node_index, False, f"{label}: not taken by {name} (it gave no reason)"))


# -- the delegate kernel's output contract ---------------------------------------------------------


def _check_outputs_after_invoke(subgraph: SubgraphRuntime, start: int, name: str, dynamic: bool, debug: bool) -> None:
    """Wrap the invoke of every delegate node created since ``start``."""
    for node_index in range(start, len(subgraph.nodes)):
        registration = subgraph.registrations[node_index]
        if subgraph.nodes[node_index].delegate_params is None or registration.invoke is None:
            continue
        checked = _checked_invoke(registration.invoke, name, dynamic, debug)
        subgraph.registrations[node_index] = dataclasses.replace(registration, invoke=checked)
    if start < len(subgraph.nodes):
        subgraph.allocated = False  # steps bound before now would call the unchecked invoke


def _checked_invoke(invoke: Callable[[Any, Any], Any], name: str, dynamic: bool, debug: bool) -> Callable[[Any, Any], Any]:
    """``invoke`` followed by the output check (and, in debug mode, preceded by poisoning)."""

    def checked(context: Any, node: Any) -> None:
        tensors = context.tensors
        outputs = node.outputs
        arrays = [tensors[t].data for t in outputs]
        poisoned = _poison(context, node) if debug else ()
        invoke(context, node)
        for t, array in zip(outputs, arrays):
            data = tensors[t].data
            if data is not array:
                _output_fault(context, node, name, t, array, dynamic)
        if poisoned:
            _unwritten(context, node, name, poisoned)

    return checked


def _where(context: Any, node: Any, name: str) -> str:
    describe = getattr(context, "describe_node", None)
    if describe is not None:
        return describe(node.index)
    replaced = list(node.delegate_params.nodes_to_replace) if node.delegate_params is not None else []
    return f"delegate node {node.index} ({name}, replacing nodes {replaced})"


def _spec(array: Any) -> str:
    if not isinstance(array, np.ndarray):
        return f"a {type(array).__name__}"
    return f"{array.dtype}{list(array.shape)}"


def _output_fault(context: Any, node: Any, name: str, t: int, array: Any, dynamic: bool) -> None:
    tensor = context.tensors[t]
    data = tensor.data
    expected = f"{tensor.dtype}{list(tensor.shape)}"
    if dynamic and isinstance(data, np.ndarray) and data.shape == tuple(tensor.shape) and data.dtype == tensor.dtype:
        return  # a delegate with dynamic tensors may give an output a new array of its new shape
    tensor.data = array  # keep the interpreter consistent for a fallback
    fix = f"write the result into the tensor's own array: context.tensors[{t}].data[...] = result"
    if isinstance(data, np.ndarray) and data.shape == tuple(tensor.shape) and data.dtype == tensor.dtype:
        problem = (f"replaced the array of output tensor {t} {tensor.name!r} ({expected}) instead of writing into it, "
                   "so the nodes that read it would see stale values")
    else:
        problem = f"left output tensor {t} {tensor.name!r} as {_spec(data)}, but the tensor is {expected}"
    raise DelegateKernelError(f"{_where(context, node, name)}: its kernel {problem}; {fix}")


_PATTERN = 0x5A


def _visible_outputs(context: Any, node: Any) -> list[int]:
    """Outputs something other than this delegate reads: a CPU node, another delegate's
    node, or the caller (a subgraph output). What only this delegate's partitions read
    may stay on its device."""
    outputs = set(getattr(context, "outputs", ()) or ())
    readers: dict[int, bool] = {t: t in outputs for t in node.outputs}
    for index in context.execution_plan:
        other = context.get_node_and_registration(index)[0]
        if other is node:
            continue
        for t in other.inputs:
            if t in readers and other.delegate is not node.delegate:
                readers[t] = True
    return [t for t, read in readers.items() if read]


def _poison(context: Any, node: Any) -> list[tuple[int, str]]:
    poisoned = []
    for t in _visible_outputs(context, node):
        tensor = context.tensors[t]
        data = tensor.data
        if not isinstance(data, np.ndarray) or data.size == 0 or tensor.is_constant:
            continue
        if data.dtype.kind in "fc":
            data[...] = np.nan
            poisoned.append((t, "nan"))
        elif data.dtype.kind in "biu" and data.flags.c_contiguous:
            data.view(np.uint8)[...] = _PATTERN
            poisoned.append((t, "bool" if data.dtype.kind == "b" else "bytes"))
        elif data.dtype.kind == "O":
            data[...] = None
            poisoned.append((t, "object"))
    return poisoned


def _unwritten(context: Any, node: Any, name: str, poisoned: list[tuple[int, str]]) -> None:
    for t, kind in poisoned:
        tensor = context.tensors[t]
        data = tensor.data
        if kind == "nan":
            missing = bool(np.isnan(data).all())
        elif kind == "bool":
            missing = bool((data.view(np.uint8) == _PATTERN).any())
        elif kind == "bytes":
            missing = bool((data.view(np.uint8) == _PATTERN).all())
        else:
            missing = any(value is None for value in data.flat)
        if missing:
            raise DelegateKernelError(
                f"{_where(context, node, name)}: its kernel did not write output tensor {t} {tensor.name!r} "
                f"({tensor.dtype}{list(tensor.shape)}): it still holds the poison {DEBUG_ENVIRONMENT_VARIABLE}=1 "
                f"writes before each eval; eval must write every output: context.tensors[{t}].data[...] = result"
            )


def _prepare_on_cpu(subgraph: SubgraphRuntime) -> frozenset[int]:
    """Prepare the subgraph as it stands (TFLite's ``EnsureMemoryAllocations`` before a
    delegate's prepare): every tensor then has the shape the CPU kernels compute, which is
    what a delegate reads, and the tensors their kernels made dynamic are known. Returns
    those (``DelegateContext.dynamic_tensors``). A graph the CPU cannot prepare (an op only
    a delegate runs) keeps the shapes of the file and reports no dynamic tensor here."""
    if subgraph.allocated:
        return _intrinsically_dynamic(subgraph)
    before = [(tensor.allocation, tensor.data) for tensor in subgraph.tensors]
    try:
        subgraph.allocate_tensors()
        dynamic = _intrinsically_dynamic(subgraph)
    except Exception:
        dynamic = frozenset()
    # Shapes only, as LiteRT's PrepareOpsStartingAt: the tensors' memory and allocation
    # kinds are as they were (a delegate sees what it saw before; the plan is allocated
    # once the delegates are applied).
    for tensor, (allocation, data) in zip(subgraph.tensors, before):
        tensor.allocation, tensor.data = allocation, data
    subgraph.allocated = False
    return dynamic


def _intrinsically_dynamic(subgraph: SubgraphRuntime) -> frozenset[int]:
    """Dynamic tensors whose kernel made them so at prepare (not those of the nodes that are
    prepared again at each invoke because an input is dynamic: their shapes are computed,
    once the inputs are known, as for any other node)."""
    deferred = getattr(subgraph, "_reprepare", set())
    downstream = {t for n in deferred for t in subgraph.nodes[n].outputs}
    return frozenset(t.index for t in subgraph.tensors if t.is_dynamic and t.index not in downstream)


def _refuse_dynamic_tensors(subgraph: SubgraphRuntime, start: int, name: str) -> None:
    """A delegate without dynamic-tensor support must not exchange a dynamic-sized tensor
    with the rest of the graph. Only the boundary tensors of the delegate nodes it created
    count: the CPU runs the rest of the graph, dynamic tensors included, and a tensor inside
    a partition is the delegate's business (``SimpleDelegate`` leaves such nodes by itself;
    this catches a low-level delegate that took one)."""
    subgraph.allocate_tensors()
    dynamic = _intrinsically_dynamic(subgraph)
    for node_index in range(start, len(subgraph.nodes)):
        node = subgraph.nodes[node_index]
        if node.delegate_params is None:
            continue
        touched = sorted({t for t in (*node.inputs, *node.outputs) if t >= 0} & dynamic)  # inside: its business
        if touched:
            tensor = subgraph.tensors[touched[0]]
            raise DelegateError(
                f"Attempting to use a delegate ({name}) that only supports static-sized tensors with a graph "
                f"that has dynamic-sized tensors (tensor {tensor.index} {tensor.name!r} is dynamic-sized, and "
                f"{subgraph.describe_node(node_index)} touches it); leave the nodes that read or write it to the "
                "CPU (SimpleDelegate does), or set supports_dynamic_tensors = True if the delegate's kernels "
                "handle shapes known only at invoke"
            )


def is_delegate_node(subgraph: SubgraphRuntime, node_index: int) -> bool:
    return subgraph.registrations[node_index].builtin_code == BuiltinOperator.DELEGATE
