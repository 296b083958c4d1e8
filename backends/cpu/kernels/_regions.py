"""The "region" of a StableHLO op: a subgraph that says how two values combine
(STABLEHLO_SCATTER's update computation, STABLEHLO_REDUCE_WINDOW's body).

LiteRT never runs the region: it reads which op the region's one node is (an empty region,
for scatter, means "replace") and runs that op's arithmetic itself. So do the kernels
here, with ``region_ops``. The region's nodes are read as the model has them: a node that a
delegate took stands for the nodes it replaced (LiteRT reads the plan before delegation).
"""

from __future__ import annotations

from typing import Any

from schema.enums import builtin_operator_name


def region_ops(kernel, index: int, role: str) -> list[int]:
    """The builtin codes of the nodes of subgraph ``index`` (the node's ``role``: "update
    computation", "body"), in plan order, or the kernel's error when there is no such
    subgraph or it is the one the node is in."""
    try:
        subgraph = kernel.context.get_subgraph(index)
    except ValueError as error:
        raise kernel.unsupported(f"the {role} subgraph {index} does not exist: {error}") from None
    if subgraph is kernel.context:
        raise kernel.unsupported(f"the {role} subgraph {index} is the subgraph the node is in")
    codes = []
    for node_index in subgraph.execution_plan:
        node, registration = subgraph.get_node_and_registration(node_index)
        replaced = node.delegate_params.nodes_to_replace if node.delegate_params is not None else (node_index,)
        codes.extend(subgraph.get_node_and_registration(i)[1].builtin_code for i in replaced)
    return codes


def region_op(kernel, index: int, role: str, allowed: dict[int, Any]) -> Any:
    """The combination a region of one node computes (``allowed``: builtin code -> what the
    kernel calls that combination), or
    the kernel's error naming what the region holds and what LiteRT takes."""
    ops = region_ops(kernel, index, role)
    if len(ops) == 1 and ops[0] in allowed:
        return allowed[ops[0]]
    names = sorted({builtin_operator_name(code) for code in allowed})
    held = [builtin_operator_name(code) for code in ops]
    raise kernel.unsupported(
        f"the {role} subgraph {index} holds {held or 'no node'}; LiteRT runs {role} subgraphs of one node, of {names}"
    )
