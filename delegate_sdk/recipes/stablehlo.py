"""Recipes of the StableHLO builtins LiteRT runs (version 1 each, the only one), and of the
deprecated REDUCE_WINDOW: elementwise ops on two tensors of one shape, pad, gather and
scatter, window reductions, the bit generator, and the ops that call subgraphs (CASE,
COMPOSITE; a scatter's or reduce window's body)."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import F32, I32, B, Graph, Recipe


def elementwise(op: int, t=F32, counts=None) -> bytes:
    """``op(x, y)`` on two inputs of one shape (SHIFT_LEFT: a constant count per element,
    within the type's width, where C++'s shift is defined)."""
    m = Graph()
    x = m.input("x", (2, 3), t)
    y = m.input("y", (2, 3), t) if counts is None else m.g.add_constant("counts", np.asarray(counts, np.int32))
    z = m.tensor("z", (2, 3), t)
    m.op(op, [x, y], [z])
    return m.build(z)


def pad() -> bytes:
    """Edge padding, cropping (a negative edge) and interior padding on a [2, 3] tensor."""
    from schema.params import StablehloPadParams

    m = Graph()
    x = m.input("x", (2, 3))
    value = m.g.add_constant("value", np.array(-1.5, np.float32))
    y = m.tensor("y", (4, 7))
    params = StablehloPadParams(edge_padding_low=(1, -1), edge_padding_high=(0, 2), interior_padding=(1, 2))
    m.op(B.STABLEHLO_PAD, [x, value], [y], params)
    return m.build(y)


def gather() -> bytes:
    """StableHLO's gather example: [3, 4, 2] operand, index vectors (axis 2) into axes 1 and 0."""
    from schema.params import StablehloGatherParams

    m = Graph()
    x = m.input("x", (3, 4, 2))
    indices = m.g.add_constant("indices", np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 2]]], np.int32))
    y = m.tensor("y", (2, 3, 2, 2))
    params = StablehloGatherParams(offset_dims=(2, 3), collapsed_slice_dims=(0,), start_index_map=(1, 0),
                                   index_vector_dim=2, slice_sizes=(1, 2, 2))
    m.op(B.STABLEHLO_GATHER, [x, indices], [y], params)
    return m.build(y)


def combining_region(m: Graph, op: int | None, t=F32) -> int:
    """A scatter's or reduce window's region: ``op(a, b)`` on two scalars (None: no node, b)."""
    region = m.builder.subgraph("region")
    a, b = region.add_input("a", [], t.type), region.add_input("b", [], t.type)
    if op is None:
        region.add_output(b)
    else:
        result = region.add_tensor("result", [], t.type)
        region.add_operator(op, [a, b], [result])
        region.add_output(result)
    return region.index


def scatter() -> bytes:
    """Rows of a [4, 3] operand added to by rows of updates, row 1 three times."""
    from schema.params import StablehloScatterParams

    m = Graph()
    x = m.input("x", (4, 3))
    indices = m.g.add_constant("indices", np.array([[1], [3], [1], [1]], np.int32))
    updates = m.input("updates", (4, 3))
    y = m.tensor("y", (4, 3))
    params = StablehloScatterParams(update_window_dims=(1,), inserted_window_dims=(0,),
                                    scatter_dims_to_operand_dims=(0,), index_vector_dim=1,
                                    update_computation_subgraph_index=combining_region(m, B.STABLEHLO_ADD))
    m.op(B.STABLEHLO_SCATTER, [x, indices, updates], [y], params)
    return m.build(y)


def reduce_window() -> bytes:
    """REDUCE_WINDOW: a 2x2 window, strides 1x2, sums of a [4, 5] tensor."""
    from schema.enums import ReduceWindowFunction
    from schema.params import ReduceWindowParams

    m = Graph()
    x = m.input("x", (4, 5))
    init = m.g.add_constant("init", np.array(0, np.float32))
    window, strides, dilations = (m.g.add_constant(name, np.array(v, np.int64))
                                  for name, v in (("window", [2, 2]), ("strides", [1, 2]), ("dilations", [1, 1])))
    y = m.tensor("y", (3, 2))
    m.op(B.REDUCE_WINDOW, [x, init, window, strides, dilations], [y],
         ReduceWindowParams(reduce_function=ReduceWindowFunction.ADD))
    return m.build(y)


def stablehlo_reduce_window() -> bytes:
    """STABLEHLO_REDUCE_WINDOW: maxima of 2x2 windows over a base-dilated, padded [4, 5] tensor."""
    from schema.params import StablehloReduceWindowParams

    m = Graph()
    x = m.input("x", (4, 5))
    init = m.g.add_constant("init", np.array(-1.0, np.float32))
    y = m.tensor("y", (5, 4))
    params = StablehloReduceWindowParams(window_dimensions=(2, 2), window_strides=(2, 3), base_dilations=(2, 1),
                                         padding=(1, 1, 0, 1), body_subgraph_index=combining_region(m, B.STABLEHLO_MAXIMUM))
    m.op(B.STABLEHLO_REDUCE_WINDOW, [x, init], [y], params)
    return m.build(y)


def rng_bit_generator() -> bytes:
    """Philox bits, uint32 [3, 5], from a state of two uint64 words (and the next state)."""
    from schema.enums import RngAlgorithm
    from schema.params import StablehloRngBitGeneratorParams

    m = Graph()
    state = m.g.add_input("state", [2], np.uint64)
    next_state = m.g.add_tensor("next_state", [2], np.uint64)
    bits = m.g.add_tensor("bits", [3, 5], np.uint32)
    m.op(B.STABLEHLO_RNG_BIT_GENERATOR, [state], [next_state, bits],
         StablehloRngBitGeneratorParams(algorithm=RngAlgorithm.PHILOX))
    return m.build(next_state, bits)


def binary_branch(m: Graph, op: int, name: str) -> int:
    """A subgraph ``op(x, y)`` on two float32 [2, 3] inputs, by index."""
    graph = m.builder.subgraph(name)
    x, y = graph.add_input("x", [2, 3]), graph.add_input("y", [2, 3])
    z = graph.add_tensor("z", [2, 3])
    graph.add_operator(op, [x, y], [z])
    graph.add_output(z)
    return graph.index


def case() -> bytes:
    """Three branches (ADD, MUL, SUB) picked by an int32 index (out of range: the last)."""
    from schema.params import StablehloCaseParams

    m = Graph()
    index = m.input("index", (), I32)
    x, y = m.input("x", (2, 3)), m.input("y", (2, 3))
    z = m.tensor("z", (2, 3))
    branches = tuple(binary_branch(m, op, name) for op, name in ((B.ADD, "add"), (B.MUL, "mul"), (B.SUB, "sub")))
    m.op(B.STABLEHLO_CASE, [index, x, y], [z], StablehloCaseParams(branch_subgraph_indices=branches))
    return m.build(z)


def composite() -> bytes:
    """A composite whose decomposition is one MUL (its name and attributes written: LiteRT's
    parser reads them unchecked)."""
    from schema.params import StableHLOCompositeParams

    m = Graph()
    x, y = m.input("x", (2, 3)), m.input("y", (2, 3))
    z = m.tensor("z", (2, 3))
    params = StableHLOCompositeParams(name="odml.multiply", decomposition_subgraph_index=binary_branch(m, B.MUL, "mul"),
                                      composite_attributes=(), version=1)
    m.op(B.STABLEHLO_COMPOSITE, [x, y], [z], params)
    return m.build(z)


def recipes() -> Iterator[Recipe]:
    family = "stablehlo"
    for op, what in ((B.STABLEHLO_ADD, "add"), (B.STABLEHLO_MULTIPLY, "multiply"), (B.STABLEHLO_MAXIMUM, "maximum"),
                     (B.STABLEHLO_MINIMUM, "minimum")):
        yield Recipe(op, 1, lambda op=op: elementwise(op), f"float32 {what} of two [2, 3] tensors", family)
    yield Recipe(B.STABLEHLO_AND, 1, lambda: elementwise(B.STABLEHLO_AND, I32), "int32 bitwise and", family)
    yield Recipe(B.STABLEHLO_SHIFT_LEFT, 1, lambda: elementwise(B.STABLEHLO_SHIFT_LEFT, I32, [[0, 1, 5], [31, 2, 17]]),
                 "int32 shifted by constant counts within 0..31", family)
    yield Recipe(B.STABLEHLO_PAD, 1, pad, "float32, edge (one negative) and interior padding", family)
    yield Recipe(B.STABLEHLO_GATHER, 1, gather, "float32, StableHLO's gather example", family)
    yield Recipe(B.STABLEHLO_REDUCE_WINDOW, 1, stablehlo_reduce_window,
                 "float32 maxima (STABLEHLO_MAXIMUM body), base dilation, padding, strides", family)
    yield Recipe(B.REDUCE_WINDOW, 1, reduce_window, "float32 sums of 2x2 windows, strides 1x2", "window reduction")
    yield Recipe(B.STABLEHLO_RNG_BIT_GENERATOR, 1, rng_bit_generator, "Philox, uint32 bits from a uint64 state", family)
    yield Recipe(B.STABLEHLO_CASE, 1, case, "float32 branches ADD, MUL, SUB picked by an int32 index", family)
    yield Recipe(B.STABLEHLO_COMPOSITE, 1, composite, "float32, its decomposition one MUL", family)
    yield Recipe(B.STABLEHLO_SCATTER, 1, scatter, "float32 rows added (STABLEHLO_ADD region), one row three times",
                 family)
