"""Partitioning into independent node subsets (TFLite's algorithm): properties that must hold."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.partition import PlanNode, partition_graph_into_independent_node_subsets


def chain(n: int) -> list[PlanNode]:
    """Node i reads tensor i and writes tensor i + 1."""
    return [PlanNode(i, (i,), (i + 1,)) for i in range(n)]


def test_a_chain_splits_at_every_change_of_kind():
    subsets = partition_graph_into_independent_node_subsets(chain(5), {0, 1, 3}, graph_outputs=[5])
    assert [(s.delegated, s.nodes) for s in subsets] == [(True, [0, 1]), (False, [2]), (True, [3]), (False, [4])]
    assert subsets[0].input_tensors == [0] and subsets[0].output_tensors == [2]
    assert subsets[-1].output_tensors == [5]


def test_a_diamond_does_not_merge_delegated_nodes_around_a_cpu_node():
    # 0: t0 -> t1 (delegated); 1: t1 -> t2 (CPU); 2: t1, t2 -> t3 (delegated).
    # Putting 0 and 2 in one partition would make it both feed and wait for node 1.
    plan = [PlanNode(0, (0,), (1,)), PlanNode(1, (1,), (2,)), PlanNode(2, (1, 2), (3,))]
    subsets = partition_graph_into_independent_node_subsets(plan, {0, 2}, graph_outputs=[3])
    assert [(s.delegated, s.nodes) for s in subsets] == [(True, [0]), (False, [1]), (True, [2])]


def test_independent_delegated_nodes_join_one_partition():
    plan = [PlanNode(0, (0,), (1,)), PlanNode(1, (0,), (2,)), PlanNode(2, (1, 2), (3,))]
    subsets = partition_graph_into_independent_node_subsets(plan, {0, 1}, graph_outputs=[3])
    assert [(s.delegated, s.nodes) for s in subsets] == [(True, [0, 1]), (False, [2])]
    assert subsets[0].output_tensors == [1, 2]


def test_constants_and_optional_inputs_are_partition_inputs_but_not_outputs():
    plan = [PlanNode(0, (0, 9, -1), (1,)), PlanNode(1, (1,), (2,))]
    subsets = partition_graph_into_independent_node_subsets(plan, {0, 1}, graph_outputs=[2])
    assert len(subsets) == 1 and subsets[0].input_tensors == [0, 9] and subsets[0].output_tensors == [2]


def random_plan(rng: np.random.Generator, num_nodes: int, num_inputs: int) -> tuple[list[PlanNode], list[int]]:
    """A random DAG in topological order: each node reads 1-3 earlier tensors, writes 1-2 new ones."""
    available = list(range(num_inputs))
    plan, next_tensor, read = [], num_inputs, set()
    for index in range(num_nodes):
        inputs = tuple(int(t) for t in rng.choice(available, size=min(len(available), int(rng.integers(1, 4))), replace=False))
        outputs = tuple(range(next_tensor, next_tensor + int(rng.integers(1, 3))))
        next_tensor += len(outputs)
        read.update(inputs)
        available.extend(outputs)
        plan.append(PlanNode(index, inputs, outputs))
    produced = [t for node in plan for t in node.outputs]
    outputs = [t for t in produced if t not in read] + [t for t in produced if rng.random() < 0.1]
    return plan, sorted(set(outputs))


@pytest.mark.parametrize("seed", range(400))
def test_random_graphs_partition_into_an_acyclic_homogeneous_order(seed):
    rng = np.random.default_rng(seed)
    plan, graph_outputs = random_plan(rng, int(rng.integers(1, 25)), int(rng.integers(1, 4)))
    supported = {node.index for node in plan if rng.random() < rng.uniform(0.2, 0.9)}
    subsets = partition_graph_into_independent_node_subsets(plan, supported, graph_outputs)
    by_index = {node.index: node for node in plan}
    # Every node is in exactly one subset, and a subset is all delegated or all CPU.
    assert sorted(n for s in subsets for n in s.nodes) == sorted(by_index)
    for subset in subsets:
        assert all((n in supported) == subset.delegated for n in subset.nodes)
    # Running the subsets in order never reads a tensor before it is written: no cycle.
    producer_subset = {t: i for i, s in enumerate(subsets) for n in s.nodes for t in by_index[n].outputs}
    for i, subset in enumerate(subsets):
        for n in subset.nodes:
            for t in by_index[n].inputs:
                assert producer_subset.get(t, -1) <= i
        # Boundary tensors: exactly what crosses the subset's edge.
        inside = {t for n in subset.nodes for t in by_index[n].outputs}
        read_inside = {t for n in subset.nodes for t in by_index[n].inputs}
        assert set(subset.input_tensors) == read_inside - inside
        read_elsewhere = {t for j, other in enumerate(subsets) if j != i for n in other.nodes for t in by_index[n].inputs}
        assert set(subset.output_tensors) == inside & (read_elsewhere | set(graph_outputs))
