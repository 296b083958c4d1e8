"""Property: random DAG models with random support sets run to the CPU's outputs."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.testing import ReferenceDelegate
from interpreter.testing import run_model
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator

UNARY = [BuiltinOperator.RELU, BuiltinOperator.RELU6, BuiltinOperator.RELU_N1_TO_1]
BINARY = [BuiltinOperator.ADD, BuiltinOperator.MUL, BuiltinOperator.SUB]
SHAPE = [2, 3]


def random_model(rng: np.random.Generator) -> tuple[bytes, int]:
    builder = ModelBuilder()
    graph = builder.subgraph()
    available = [graph.add_input(f"in{i}", SHAPE) for i in range(int(rng.integers(1, 4)))]
    read = set()
    num_nodes = int(rng.integers(1, 16))
    for i in range(num_nodes):
        out = graph.add_tensor(f"t{i}", SHAPE)
        if rng.random() < 0.5:
            op = UNARY[int(rng.integers(len(UNARY)))]
            inputs = [available[int(rng.integers(len(available)))]]
        else:
            op = BINARY[int(rng.integers(len(BINARY)))]
            inputs = [available[int(rng.integers(len(available)))] for _ in range(2)]
        graph.add_operator(op, inputs, [out])
        read.update(inputs)
        available.append(out)
    produced = available[len(graph.inputs):]
    for tensor in produced:
        if tensor not in read or rng.random() < 0.15:
            graph.add_output(tensor)
    return builder.build(), num_nodes


@pytest.mark.parametrize("seed", range(300))
def test_random_graph_with_random_support_set_matches_the_cpu(seed):
    rng = np.random.default_rng(seed)
    model, num_nodes = random_model(rng)
    supported = [i for i in range(num_nodes) if rng.random() < 0.6]
    delegate = ReferenceDelegate({op: 1 for op in UNARY + BINARY}, only_nodes=supported)
    inputs = [rng.uniform(-2, 2, SHAPE).astype(np.float32) for _ in Interpreter(model_content=model).get_input_details()]
    expected, _ = run_model(model, inputs)
    got, interpreter = run_model(model, inputs, [delegate])
    main = interpreter._main
    # The plan runs in an order where every input is ready: no cycle.
    ready = {t for t in main.inputs} | {t.index for t in main.tensors if t.is_constant}
    for node_index in main.execution_plan:
        node = main.nodes[node_index]
        assert all(t in ready for t in node.inputs if t >= 0)
        ready.update(node.outputs)
    delegated = sorted(p.node for p in interpreter.node_placements() if p.delegated)
    assert delegated == supported
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
