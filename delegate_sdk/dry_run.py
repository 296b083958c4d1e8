"""A delegate's ``prepare`` run on a model file alone: no interpreter, no kernels.

Used by ``delegate_sdk.testing.plan_delegation`` (what would a delegate take?) and by
``litedelegate analyze`` for models the interpreter refuses (some node has no CPU kernel,
so no delegate sees it in an interpreter, as in TFLite). The context gives the delegate
one subgraph as the file declares it (nodes, versions, tensors) and records its decisions
and the partitions it asks for, after the same checks the interpreter makes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from delegate_sdk.context import DelegateContext
from delegate_sdk.node import Node
from delegate_sdk.partition import NodeSubset, PlanNode, check_replacement, partition_graph_into_independent_node_subsets
from delegate_sdk.registration import Registration
from delegate_sdk.tensor import Allocation, RuntimeTensor


@dataclass
class DryRunResult:
    """What the delegate did to one subgraph: partitions (node lists) and rejection reasons."""

    partitions: list[list[int]] = field(default_factory=list)
    reasons: dict[int, list[str]] = field(default_factory=dict)

    @property
    def taken(self) -> list[int]:
        return sorted(n for partition in self.partitions for n in partition)


class FileContext(DelegateContext):
    """A ``DelegateContext`` over one subgraph of the read view (``schema.model.Subgraph``)."""

    def __init__(self, subgraph: Any) -> None:
        self.index = subgraph.index
        self.tensors = [
            RuntimeTensor(
                t.index, t.name, t.type, t.shape, shape_signature=t.shape_signature, quantization=t.quantization,
                sparsity=t.sparsity, data=t.data,
                allocation=Allocation.CONSTANT if t.data is not None else Allocation.NONE, is_variable=t.is_variable,
            )
            for t in subgraph.tensors
        ]
        self.nodes = [Node(op.index, op.inputs, op.outputs, op.params, op.custom_options, op.intermediates) for op in subgraph.operators]
        self.registrations = [Registration(op.builtin_code, op.custom_name, op.version) for op in subgraph.operators]
        self.inputs = list(subgraph.inputs)
        self.outputs = list(subgraph.outputs)
        self.replaced: set[int] = set()
        self.result = DryRunResult()

    @property
    def execution_plan(self) -> list[int]:
        return [i for i in range(len(self.nodes)) if i not in self.replaced]

    def get_node_and_registration(self, node_index: int):
        if not 0 <= node_index < len(self.nodes):
            raise ValueError(f"Invalid node index {node_index}: subgraph {self.index} has {len(self.nodes)} nodes")
        return self.nodes[node_index], self.registrations[node_index]

    def get_subgraph(self, index: int):
        raise NotImplementedError("a dry run has no other subgraphs to run")

    @property
    def resources(self) -> dict[Any, Any]:
        return {}

    def _subsets(self, nodes: Sequence[int]) -> list[NodeSubset]:
        plan = [PlanNode(n.index, n.inputs, n.outputs) for n in self.nodes if n.index not in self.replaced]
        return partition_graph_into_independent_node_subsets(plan, nodes, self.outputs)

    def preview_delegate_partitioning(self, nodes_to_replace: Sequence[int]) -> list[NodeSubset]:
        nodes = check_replacement(self.execution_plan, nodes_to_replace, subgraph=self.index)
        return [s for s in self._subsets(nodes) if s.delegated]

    def replace_node_subsets_with_delegate_kernels(self, registration, nodes_to_replace, delegate) -> None:
        nodes = check_replacement(self.execution_plan, nodes_to_replace, registration, delegate, subgraph=self.index)
        partitions = [s.nodes for s in self._subsets(nodes) if s.delegated]
        self.result.partitions.extend(partitions)
        self.replaced.update(nodes)

    def record_decision(self, decision: Any) -> None:
        if not decision.accepted:
            self.result.reasons.setdefault(decision.node, []).append(decision.reason)


def dry_run(delegate: Any, subgraph: Any) -> DryRunResult:
    """Let ``delegate`` prepare a context over ``subgraph`` (of ``schema.model.Model``);
    returns what it would do."""
    context = FileContext(subgraph)
    delegate.prepare(context)
    return context.result
