"""Partitioning an execution plan into delegated and CPU node subsets.

This is TFLite's ``PartitionGraphIntoIndependentNodeSubsets``: a traversal in epochs,
where each epoch takes every node that is ready (all its inputs computed by earlier
epochs) and of the epoch's kind (delegated or not). Each epoch becomes one subset, so
the subsets run in order and no cycle can form between a delegate node and the CPU
nodes around it.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np


@dataclass
class NodeSubset:
    """Nodes that run together: one delegate node (``delegated``) or plain CPU nodes.

    ``input_tensors`` are read by the subset but produced outside it (including
    constants and graph inputs); ``output_tensors`` are produced by it and read
    outside it (or are graph outputs). Both sorted and unique.
    """

    delegated: bool
    nodes: list[int] = field(default_factory=list)
    input_tensors: list[int] = field(default_factory=list)
    output_tensors: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class PlanNode:
    """What partitioning needs of a node: its index and tensors."""

    index: int
    inputs: Sequence[int]
    outputs: Sequence[int]


_NOT_READY = -2
_ALWAYS_READY = -1


def partition_graph_into_independent_node_subsets(
    plan: Sequence[PlanNode],
    nodes_to_delegate: Iterable[int],
    graph_outputs: Sequence[int],
) -> list[NodeSubset]:
    """Split ``plan`` (nodes in execution order) into subsets, in an order that runs."""
    to_delegate = set(nodes_to_delegate)
    produced = {t for node in plan for t in node.outputs}
    tensor_epoch: dict[int, int] = {t: _NOT_READY for t in produced}
    node_epoch = [_NOT_READY] * len(plan)
    subsets: list[NodeSubset] = []

    def epoch_of(tensor: int) -> int:
        return tensor_epoch.get(tensor, _ALWAYS_READY)

    def try_add(position: int, subset: NodeSubset, epoch: int, kind: list) -> bool:
        node = plan[position]
        if node_epoch[position] != _NOT_READY:
            return False
        if any(t >= 0 and epoch_of(t) == _NOT_READY for t in node.inputs):
            return False
        delegated = node.index in to_delegate
        if kind[0] is None:
            kind[0] = delegated  # the first ready node decides the epoch's kind
        if kind[0] != delegated:
            return False
        node_epoch[position] = epoch
        subset.nodes.append(node.index)
        for t in node.outputs:
            tensor_epoch[t] = epoch
        for t in node.inputs:
            if t < 0:
                continue
            source = epoch_of(t)
            if source != epoch:
                subset.input_tensors.append(t)
                if source >= 0:
                    subsets[source].output_tensors.append(t)
        return True

    while True:
        epoch = len(subsets)
        subset = NodeSubset(delegated=False)
        subsets.append(subset)
        kind: list = [None]
        while any([try_add(position, subset, epoch, kind) for position in range(len(plan))]):
            pass
        if not subset.nodes:
            subsets.pop()
            break
        subset.delegated = bool(kind[0])
    for t in graph_outputs:
        source = epoch_of(t)
        if source >= 0:
            subsets[source].output_tensors.append(t)
    for subset in subsets:
        subset.input_tensors = sorted(set(subset.input_tensors))
        subset.output_tensors = sorted(set(subset.output_tensors))
    return subsets


def check_replacement(
    execution_plan: Sequence[int],
    nodes_to_replace: Iterable[int],
    registration: object = None,
    delegate: object = None,
    *,
    applying: object = None,
    subgraph: int = 0,
) -> list[int]:
    """Check the arguments of ``replace_node_subsets_with_delegate_kernels`` and return the
    node list: ints, each once, each in the execution plan; a ``Registration`` with builtin
    code DELEGATE; the delegate itself (``applying``, when known).

    Raises:
      InvalidReplacementError: what is wrong with the set, and what to pass instead.
    """
    from delegate_sdk.delegate import InvalidReplacementError
    from delegate_sdk.registration import Registration
    from schema.enums import BuiltinOperator

    where = f" of subgraph {subgraph}" if subgraph else ""
    if isinstance(nodes_to_replace, (str, bytes)) or not isinstance(nodes_to_replace, Iterable):
        raise InvalidReplacementError(
            f"nodes_to_replace must be a list of node indices{where}, got {nodes_to_replace!r}"
        )
    nodes = list(nodes_to_replace)
    odd = [n for n in nodes if isinstance(n, (bool, np.bool_)) or not hasattr(n, "__index__")]
    if odd:
        raise InvalidReplacementError(f"nodes_to_replace{where} holds {odd[0]!r}, not a node index (an int)")
    nodes = [operator.index(n) for n in nodes]
    seen: set[int] = set()
    duplicates = sorted({n for n in nodes if n in seen or seen.add(n)})
    if duplicates:
        raise InvalidReplacementError(
            f"nodes_to_replace{where} lists node(s) {duplicates} more than once: give each node once "
            "(e.g. sorted(set(nodes)))"
        )
    in_plan = set(execution_plan)
    stray = [n for n in nodes if n not in in_plan]
    if stray:
        raise InvalidReplacementError(
            f"nodes {stray} are not in the execution plan{where} ({list(execution_plan)}): a delegate replaces "
            "nodes of context.execution_plan only (a node an earlier delegate took is no longer in it)"
        )
    if registration is not None or delegate is not None or applying is not None:
        if not isinstance(registration, Registration) or registration.builtin_code != BuiltinOperator.DELEGATE:
            raise InvalidReplacementError(
                f"the registration of a delegate node must be a Registration with builtin_code=BuiltinOperator.DELEGATE "
                f"(and its init/prepare/invoke), got {registration!r}; SimpleDelegate.kernel_registration() makes one"
            )
        if delegate is None or (applying is not None and delegate is not applying):
            raise InvalidReplacementError(
                f"replace_node_subsets_with_delegate_kernels(registration, nodes, delegate): delegate must be the delegate "
                f"being applied (pass self), got {delegate!r}"
            )
    return nodes
