"""Applying delegates to an interpreter's subgraphs, and the delegation report."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

from delegate_sdk.tensor import Allocation
from interpreter.subgraph import SubgraphRuntime
from schema.enums import BuiltinOperator

logger = logging.getLogger("litedelegate")
CPU = "CPU"


class DelegateError(ValueError):
    """A delegate cannot be applied to this graph (for example static shapes only)."""


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
    """What applying one delegate did: every node's placement, counts, the log line."""

    delegate: str
    placements: list[NodePlacement] = field(default_factory=list)
    partitions_per_subgraph: dict[int, int] = field(default_factory=dict)
    error: str | None = None  #: set when the delegate failed in prepare and was not applied

    @property
    def num_nodes(self) -> int:
        return len(self.placements)

    @property
    def num_delegated(self) -> int:
        return sum(1 for p in self.placements if p.runs_on == self.delegate)

    @property
    def num_partitions(self) -> int:
        return sum(self.partitions_per_subgraph.values())

    @property
    def rejected(self) -> list[NodePlacement]:
        """Nodes this delegate left on the CPU (or to another delegate), with reasons."""
        return [p for p in self.placements if p.runs_on != self.delegate]

    def log_lines(self) -> list[str]:
        lines = []
        for subgraph, partitions in sorted(self.partitions_per_subgraph.items()):
            nodes = [p for p in self.placements if p.subgraph == subgraph]
            delegated = sum(1 for p in nodes if p.runs_on == self.delegate)
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
            if subgraph.nodes[plan_node].delegate_params is None:
                continue  # a CPU node
            for original in _replaced_nodes(subgraph, plan_node):
                runner[original] = (subgraph.registrations[plan_node].name, position)
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


def apply_delegate(subgraphs: Sequence[SubgraphRuntime], num_model_nodes: Sequence[int], delegate: Any) -> DelegationReport:
    """Let ``delegate`` prepare every subgraph; on failure restore them all and warn."""
    name = getattr(delegate, "name", type(delegate).__name__)
    snapshots = [subgraph.snapshot() for subgraph in subgraphs]
    before = [len(subgraph.nodes) for subgraph in subgraphs]
    try:
        for subgraph in subgraphs:
            delegate.prepare(subgraph)
        if not getattr(delegate, "supports_dynamic_tensors", False):
            for subgraph, start in zip(subgraphs, before):
                if len(subgraph.nodes) > start:
                    _refuse_dynamic_tensors(subgraph, name)
    except DelegateError:
        for subgraph, snapshot in zip(subgraphs, snapshots):
            subgraph.restore(snapshot)
        raise
    except Exception as error:
        for subgraph, snapshot in zip(subgraphs, snapshots):
            subgraph.restore(snapshot)
        message = f"{type(error).__name__}: {error}"
        warnings.warn(
            f"delegate {name} failed in prepare and was not applied ({message}); "
            "restored the original execution plan",
            RuntimeWarning,
            stacklevel=3,
        )
        return DelegationReport(name, placements(subgraphs, num_model_nodes), {}, error=message)
    partitions = {
        subgraph.index: len(subgraph.nodes) - start
        for subgraph, start in zip(subgraphs, before)
        if subgraph.index == 0 or len(subgraph.nodes) > start
    }
    report = DelegationReport(name, placements(subgraphs, num_model_nodes), partitions)
    for line in report.log_lines():
        logger.info(line)
    return report


def _refuse_dynamic_tensors(subgraph: SubgraphRuntime, name: str) -> None:
    """A delegate without dynamic-tensor support must not be used on a graph that has them.
    As TFLite's ``HasDynamicTensors``, only the tensors of the nodes left in the execution
    plan count: a tensor inside a delegate partition is the delegate's business."""
    subgraph.allocate_tensors()
    in_plan = sorted({
        t for n in subgraph.execution_plan
        for t in (*subgraph.nodes[n].inputs, *subgraph.nodes[n].outputs) if t >= 0
    })
    for tensor in (subgraph.tensors[t] for t in in_plan):
        if tensor.allocation is Allocation.DYNAMIC:
            raise DelegateError(
                f"Attempting to use a delegate ({name}) that only supports static-sized tensors with a graph "
                f"that has dynamic-sized tensors (tensor {tensor.index} {tensor.name!r} is dynamic-sized); "
                "run without the delegate, or make the shapes static (e.g. a constant shape tensor)"
            )


def is_delegate_node(subgraph: SubgraphRuntime, node_index: int) -> bool:
    return subgraph.registrations[node_index].builtin_code == BuiltinOperator.DELEGATE
