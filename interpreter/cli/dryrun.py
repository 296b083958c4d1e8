"""A delegate's ``prepare`` run on a model file alone, for models the interpreter cannot load.

When no CPU kernel runs some node, the interpreter refuses the model before any delegate
sees it (as TFLite does). ``analyze`` still wants to say what the delegate would take: this
context gives the delegate the subgraph as the file declares it (nodes, versions, tensors,
no kernels) and records its decisions and the partitions it asks for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from delegate_sdk.context import DelegateContext
from delegate_sdk.node import Node
from delegate_sdk.partition import NodeSubset, PlanNode, partition_graph_into_independent_node_subsets
from delegate_sdk.registration import Registration
from delegate_sdk.tensor import Allocation, RuntimeTensor
from schema.model import Subgraph


@dataclass
class DryRunResult:
    """What the delegate did to one subgraph: partitions (node lists) and rejection reasons."""

    partitions: list[list[int]] = field(default_factory=list)
    reasons: dict[int, list[str]] = field(default_factory=dict)


class FileContext(DelegateContext):
    """A ``DelegateContext`` over one subgraph of the read view."""

    def __init__(self, subgraph: Subgraph) -> None:
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
        self.outputs = list(subgraph.outputs)
        self.result = DryRunResult()

    @property
    def execution_plan(self) -> list[int]:
        return list(range(len(self.nodes)))

    def get_node_and_registration(self, node_index: int):
        return self.nodes[node_index], self.registrations[node_index]

    def get_subgraph(self, index: int):
        raise NotImplementedError("a dry run has no other subgraphs to run")

    @property
    def resources(self) -> dict[Any, Any]:
        return {}

    def preview_delegate_partitioning(self, nodes_to_replace: Sequence[int]) -> list[NodeSubset]:
        plan = [PlanNode(n.index, n.inputs, n.outputs) for n in self.nodes]
        subsets = partition_graph_into_independent_node_subsets(plan, nodes_to_replace, self.outputs)
        return [s for s in subsets if s.delegated]

    def replace_node_subsets_with_delegate_kernels(self, registration, nodes_to_replace, delegate) -> None:
        self.result.partitions.extend(s.nodes for s in self.preview_delegate_partitioning(nodes_to_replace))

    def record_decision(self, decision: Any) -> None:
        if not decision.accepted:
            self.result.reasons.setdefault(decision.node, []).append(decision.reason)


def dry_run(delegate: Any, subgraph: Subgraph) -> DryRunResult:
    """Let ``delegate`` prepare a context over ``subgraph``; returns what it would do."""
    context = FileContext(subgraph)
    delegate.prepare(context)
    return context.result
