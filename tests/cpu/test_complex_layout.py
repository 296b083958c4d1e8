"""Complex tensors through the ops that only move values, against ai-edge-litert (BUILTIN_REF).

Each op gets a one-node model with complex inputs (LiteRT takes complex model inputs). Where
LiteRT runs the node, ours gives its bits; where LiteRT refuses the type, so do we, with an
error naming the op, version and type.
"""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_matches_litert, run_litert, run_ours

from delegate_sdk.context import KernelError
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.params import (
    ConcatenationParams,
    GatherParams,
    MirrorPadParams,
    PackParams,
    SplitParams,
    SqueezeParams,
    StridedSliceParams,
    UnpackParams,
)

B = BuiltinOperator
C64, C128 = np.complex64, np.complex128
SHAPE = [2, 3, 4]


def layout_case(op, dtype):
    """(op, inputs, outputs, params) of a one-node model of ``op`` on [2, 3, 4] ``dtype``
    values: inputs are (name, shape, dtype) for model inputs or an int/bool array constant."""
    x = ("x", SHAPE, dtype)

    def i32(*values):
        return np.array(values, np.int32)

    return {
        B.RESHAPE: ([x, i32(6, 4)], [([6, 4], dtype)], None),
        B.SQUEEZE: ([("x", [2, 1, 4], dtype)], [([2, 4], dtype)], SqueezeParams(squeeze_dims=[1])),
        B.EXPAND_DIMS: ([x, np.array(1, np.int32)], [([2, 1, 3, 4], dtype)], None),
        B.BROADCAST_TO: ([("x", [3, 1], dtype), i32(2, 3, 4)], [([2, 3, 4], dtype)], None),
        B.TRANSPOSE: ([x, i32(2, 0, 1)], [([4, 2, 3], dtype)], None),
        B.SLICE: ([x, i32(0, 1, 1), i32(2, 2, 2)], [([2, 2, 2], dtype)], None),
        B.STRIDED_SLICE: ([x, i32(0, 2, 0), i32(2, 0, 4), i32(1, -1, 2)], [([2, 2, 2], dtype)], StridedSliceParams()),
        B.TILE: ([x, i32(1, 2, 1)], [([2, 6, 4], dtype)], None),
        B.MIRROR_PAD: ([x, np.array([[0, 1], [1, 0], [1, 1]], np.int32)], [([3, 4, 6], dtype)], MirrorPadParams(mode=1)),
        B.FILL: ([i32(2, 3), ("value", [], dtype)], [([2, 3], dtype)], None),
        B.SELECT: ([("condition", SHAPE, np.bool_), x, ("y", SHAPE, dtype)], [(SHAPE, dtype)], None),
        B.SELECT_V2: ([("condition", [3, 1], np.bool_), x, ("y", [4], dtype)], [(SHAPE, dtype)], None),
        B.GATHER: ([x, i32(2, 0)], [([2, 2, 4], dtype)], GatherParams(axis=1)),
        B.GATHER_ND: ([x, np.array([[1, 0], [0, 2]], np.int32)], [([2, 4], dtype)], None),
        B.CONCATENATION: ([x, ("y", SHAPE, dtype)], [([2, 3, 8], dtype)], ConcatenationParams(axis=2)),
        B.PACK: ([x, ("y", SHAPE, dtype)], [([2, 2, 3, 4], dtype)], PackParams(values_count=2, axis=1)),
        B.UNPACK: ([x], [([2, 4], dtype)] * 3, UnpackParams(num=3, axis=1)),
        B.SPLIT: ([np.array(2, np.int32), x], [([2, 3, 2], dtype)] * 2, SplitParams(num_splits=2)),
        B.PAD: ([x, np.array([[0, 1], [1, 0], [0, 0]], np.int32)], [([3, 4, 4], dtype)], None),
        B.REVERSE_V2: ([x, i32(1)], [(SHAPE, dtype)], None),
    }[op]


def layout_model(op, dtype) -> tuple[bytes, list[np.ndarray]]:
    """The one-node model and random values for its model inputs."""
    inputs, outputs, params = layout_case(op, dtype)
    rng = np.random.default_rng(int(op))
    builder = ModelBuilder()
    graph = builder.subgraph()
    indices, values = [], []
    for position, entry in enumerate(inputs):
        if isinstance(entry, np.ndarray):
            indices.append(graph.add_constant(f"constant{position}", entry))
            continue
        name, shape, input_dtype = entry
        indices.append(graph.add_input(name, shape, input_dtype))
        if input_dtype is np.bool_:
            values.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            values.append((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(input_dtype))
    results = [graph.add_tensor(f"out{i}", shape, out_dtype) for i, (shape, out_dtype) in enumerate(outputs)]
    graph.add_operator(op, indices, results, params)
    for result in results:
        graph.add_output(result)
    return builder.build(), values


#: (op, dtype) LiteRT runs, and the version the converter stamps on the node.
RUNS = [
    (B.RESHAPE, C64, 1), (B.RESHAPE, C128, 1),
    (B.SQUEEZE, C64, 1), (B.SQUEEZE, C128, 1),
    (B.EXPAND_DIMS, C64, 1), (B.EXPAND_DIMS, C128, 1),
    (B.BROADCAST_TO, C64, 2), (B.BROADCAST_TO, C128, 2),
    (B.TRANSPOSE, C64, 1), (B.SLICE, C64, 1), (B.STRIDED_SLICE, C64, 1), (B.TILE, C64, 1),
    (B.MIRROR_PAD, C64, 1), (B.FILL, C64, 1), (B.SELECT, C64, 1), (B.SELECT_V2, C64, 1),
]

#: (op, dtype) LiteRT refuses.
REFUSED = [
    (B.TRANSPOSE, C128), (B.SLICE, C128), (B.STRIDED_SLICE, C128), (B.TILE, C128),
    (B.MIRROR_PAD, C128), (B.FILL, C128), (B.SELECT, C128), (B.SELECT_V2, C128),
    *((op, dtype) for op in (B.GATHER, B.GATHER_ND, B.CONCATENATION, B.PACK, B.UNPACK, B.SPLIT, B.PAD, B.REVERSE_V2)
      for dtype in (C64, C128)),
]


def case_id(case) -> str:
    return f"{case[0].name}-{np.dtype(case[1]).name}"


@pytest.mark.parametrize("case", RUNS, ids=case_id)
def test_complex_values_move_as_in_litert(case):
    op, dtype, version = case
    model, values = layout_model(op, dtype)
    assert stamped_version(model) == version
    assert_matches_litert(model, values, rtol=0, atol=0)


@pytest.mark.parametrize("case", REFUSED, ids=case_id)
def test_complex_type_litert_refuses_is_refused_with_a_clear_error(case):
    op, dtype = case
    model, values = layout_model(op, dtype)
    with pytest.raises(RuntimeError):
        run_litert(model, values)
    type_name = "COMPLEX64" if dtype is C64 else "COMPLEX128"
    with pytest.raises(KernelError, match=rf"{op.name} v\d: .*has type {type_name}; this kernel supports"):
        run_ours(model, values)

