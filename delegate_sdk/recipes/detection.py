"""Recipes of the detector and sorting ops (TOPK_V2, UNIQUE, NON_MAX_SUPPRESSION_V4/V5):
the input type makes TOPK_V2's version; the others have one version."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import F32, I8Q, I16Q, I32, S2, B, Graph, Kind, Recipe
from schema.enums import TensorType as T

FAMILY = "detection"


def topk(t: Kind, k: int = 2, shape=S2) -> bytes:
    m = Graph()
    x = m.input("x", shape, t)
    count = m.i32("k", k)
    values = m.tensor("values", (*shape[:-1], k), t)
    indices = m.tensor("indices", (*shape[:-1], k), I32)
    m.op(B.TOPK_V2, [x, count], [values, indices])
    return m.build(values, indices)


def unique(length: int = 6) -> bytes:
    m = Graph()
    x = m.input("x", (length,), F32)
    values = m.g.add_tensor("values", [1], T.FLOAT32, shape_signature=[-1])
    positions = m.tensor("idx", (length,), I32)
    m.op(B.UNIQUE, [x], [values, positions], idx_out_type=T.INT32)
    return m.build(values, positions)


def non_max_suppression(op: int, boxes: int = 6, max_output_size: int = 3) -> bytes:
    """Five inputs for V4 (indices, count); six for V5 (soft NMS: indices, scores, count)."""
    m = Graph()
    inputs = [m.input("boxes", (boxes, 4)), m.input("scores", (boxes,)), m.i32("max_output_size", max_output_size)]
    inputs += [m.g.add_constant(name, np.array(value, np.float32)) for name, value in (("iou", 0.5), ("score", 0.0))]
    outputs = [m.tensor("selected_indices", (max_output_size,), I32)]
    if op == B.NON_MAX_SUPPRESSION_V5:
        inputs.append(m.g.add_constant("sigma", np.array(0.5, np.float32)))
        outputs.append(m.tensor("selected_scores", (max_output_size,)))
    outputs.append(m.tensor("num_selected", (), I32))
    m.op(op, inputs, outputs)
    return m.build(*outputs)


def recipes() -> Iterator[Recipe]:
    for version, t in {1: F32, 2: I8Q.same(), 3: I16Q.same()}.items():
        yield Recipe(B.TOPK_V2, version, lambda t=t: topk(t), f"{t.name}, k 2 of 3, int32 indices", FAMILY)
    yield Recipe(B.UNIQUE, 1, unique, "float32 vector, int32 idx", FAMILY)
    yield Recipe(B.NON_MAX_SUPPRESSION_V4, 1, lambda: non_max_suppression(B.NON_MAX_SUPPRESSION_V4), "6 boxes, 3 kept", FAMILY)
    yield Recipe(B.NON_MAX_SUPPRESSION_V5, 1, lambda: non_max_suppression(B.NON_MAX_SUPPRESSION_V5), "6 boxes, soft NMS", FAMILY)
