"""INTERIM (branch i32-misc): the subset of ``model_helpers.single_op_model`` (branch
i32-infra: In / Const / Out specs) that the issue-32 op tests use, until that branch is
merged; then these tests import it from ``model_helpers`` and this file goes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from schema.builder import ModelBuilder
from schema.model import Quantization


@dataclass(frozen=True)
class In:
    shape: Sequence[int]
    dtype: Any = np.float32
    q: Quantization | None = None


@dataclass(frozen=True)
class Const:
    value: Any
    q: Quantization | None = None


@dataclass(frozen=True)
class Out:
    shape: Sequence[int]
    dtype: Any = np.float32
    q: Quantization | None = None


def single_op_model(op, inputs, outputs, params=None, *, version=None) -> bytes:
    outputs = [outputs] if isinstance(outputs, Out) else list(outputs)
    builder = ModelBuilder()
    graph = builder.subgraph()
    indices = []
    for k, spec in enumerate(inputs):
        if spec is None:
            indices.append(-1)
        elif isinstance(spec, In):
            indices.append(graph.add_input(f"x{k}", list(spec.shape), spec.dtype, quantization=spec.q))
        else:
            spec = spec if isinstance(spec, Const) else Const(spec)
            indices.append(graph.add_constant(f"c{k}", spec.value, quantization=spec.q))
    outs = [
        graph.add_tensor(f"y{k}", [1 if d == -1 else d for d in o.shape], o.dtype, quantization=o.q,
                         shape_signature=list(o.shape) if -1 in o.shape else None)
        for k, o in enumerate(outputs)
    ]
    graph.add_operator(op, indices, outs, params, version=version)
    for tensor in outs:
        graph.add_output(tensor)
    builder.add_signature("serving_default", graph)
    return builder.build()
