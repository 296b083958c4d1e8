"""DENSIFY: expand a sparse constant (TFLite's TACO-like format) into a dense tensor.

The sparse tensor is stored as a tree with one level per *traversed* dimension:
``traversal_order`` lists the original dimensions (0..rank-1) and the block
dimensions (rank..rank+len(block_map)-1, block ``k`` splitting original dimension
``block_map[k]``) from outermost to innermost. Level ``L`` of the tree is either
DENSE (``dense_size`` children per node) or SPARSE_CSR (node ``p``'s children are
``array_indices[array_segments[p]:array_segments[p + 1]]``). The leaves, in
depth-first order, are the stored values (``tensor.data``, 1-D).

TFLite walks the tree recursively (``FormatConverter::Populate`` in
``kernels/internal/utils/sparsity_format_converter.cc``); here it is expanded one
level at a time with numpy at prepare, which yields, for every stored value, its
flat position in the dense output. The input is always constant, so the node is
folded at prepare and invoke is one scatter.
"""

from __future__ import annotations

import math

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from delegate_sdk.tensor import Allocation
from schema.enums import BuiltinOperator, TensorType

DENSE, SPARSE_CSR = 0, 1


# v1: float32, float16 and int8 sparse constants (the only version)
@register(BuiltinOperator.DENSIFY, 1, 1)
class Densify(CpuKernel):
    """DENSIFY v1: a sparse float32/float16/int8 constant to its dense value."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(x, TensorType.FLOAT32, TensorType.FLOAT16, TensorType.INT8)
        self.require_types(out, x.type, role="output")
        if x.sparsity is None:
            raise self.unsupported(f"input {x.name!r} has no sparsity parameters")
        if x.is_constant:
            self.values = np.asarray(x.data).reshape(-1)
        elif x.data is None and x.allocation is Allocation.NONE:
            # The reader keeps no data for an empty buffer: a sparse tensor with no stored values.
            self.values = np.zeros(0, dtype=x.dtype)
        else:
            raise self.unsupported(f"input {x.name!r} is not a constant; DENSIFY expands constant weights only")
        out.resize(x.shape)
        self.flat_index = dense_positions(x.sparsity, x.shape)
        if self.flat_index.size > self.values.size:
            raise self.unsupported(
                f"the sparsity of {x.name!r} describes {self.flat_index.size} values but the buffer holds "
                f"{self.values.size}"
            )
        self.values = self.values[: self.flat_index.size]

    def invoke(self) -> None:
        out = self.outputs[0].data
        out.fill(0)
        out.reshape(-1)[self.flat_index] = self.values


def dense_positions(sparsity, dense_shape) -> np.ndarray:
    """Flat index in the dense tensor of each stored value, in storage order."""
    fast = _dense_positions_in_order(sparsity, dense_shape)
    if fast is not None:
        return fast
    return _dense_positions(sparsity, dense_shape)


def _dense_positions_in_order(sparsity, dense_shape) -> np.ndarray | None:
    """``dense_positions`` for the usual layout (the dimensions traversed in their own
    order, no blocks: what the converter writes for sparse weights), or None for any
    other layout and wherever a check would fail (``_dense_positions`` then decides,
    with its messages). The nodes of a level are always a contiguous run of positions
    (``first`` .. ``first + count - 1``): a SPARSE_CSR level reads its indices as one
    slice, and each node's flat index is carried along (``index * extent +
    coordinate``), with no per-level re-indexing of every coordinate."""
    rank = len(dense_shape)
    order = [int(d) for d in sparsity.traversal_order]
    levels = sparsity.dim_metadata
    if len(sparsity.block_map) or order != list(range(rank)) or len(levels) != rank:
        return None
    total = max(math.prod(int(d) for d in dense_shape), 1)
    first, count = 0, 1  # the level's nodes: positions first .. first + count - 1
    flat = np.zeros(1, dtype=np.int64)  # each node's flat index over the dimensions so far
    for level, meta in enumerate(levels):
        extent = int(dense_shape[level])
        if meta.format == DENSE:
            size = int(meta.dense_size)
            if size < 0 or count * size > total or (size > extent and count):
                return None
            child = np.arange(size, dtype=np.int64)
            flat = (flat[:, None] * extent + child).reshape(-1)
            first, count = first * size, count * size
        elif meta.format == SPARSE_CSR:
            if meta.array_segments is None or meta.array_indices is None:
                return None
            segments = np.asarray(meta.array_segments, dtype=np.int64)
            indices = np.asarray(meta.array_indices, dtype=np.int64)
            if count and first + count >= segments.size:
                return None
            bounds = segments[first : first + count + 1]
            counts = np.diff(bounds)
            if count and (counts.min() < 0 or bounds[0] < 0 or bounds[-1] > indices.size):
                return None
            start, leaves = (int(bounds[0]), int(bounds[-1] - bounds[0])) if count else (0, 0)
            if leaves > total:
                return None
            coord = indices[start : start + leaves]
            if leaves and (coord.min() < 0 or coord.max() >= extent):
                return None
            flat = np.repeat(flat * extent, counts) + coord if count else flat[:0]
            first, count = start, leaves
        else:
            return None
    return flat


def _dense_positions(sparsity, dense_shape) -> np.ndarray:
    """``dense_positions`` for any layout: the tree walked level by level."""
    rank = len(dense_shape)
    order = [int(d) for d in sparsity.traversal_order]
    block_map = [int(d) for d in sparsity.block_map]
    levels = sparsity.dim_metadata
    if (
        len(order) != rank + len(block_map)
        or len(levels) != len(order)
        or sorted(order) != list(range(len(order)))
        or sorted(order[:rank]) != list(range(rank))
    ):
        raise ValueError(
            f"sparsity of a rank-{rank} tensor with {len(block_map)} block dimensions needs a traversal_order "
            f"permuting 0..{len(order) - 1} (original dimensions first) and one dim_metadata per entry; got "
            f"traversal_order {order} and "
            f"{len(levels)} dim_metadata"
        )

    # Walk the tree level by level: `position` is each node's index within its level
    # (what the next level's segments are indexed by), `coords[L]` its index at level L.
    # A valid tree has at most one leaf per dense element (at most one node per
    # element at every level): a level with more is refused before numpy builds it.
    total = math.prod(int(d) for d in dense_shape)
    position = np.zeros(1, dtype=np.int64)
    coords: list[np.ndarray] = []
    for level, meta in enumerate(levels):
        if meta.format == DENSE:
            size = int(meta.dense_size)
            if size < 0 or position.size * size > max(total, 1):
                raise ValueError(
                    f"dim_metadata {level}: dense_size {size} gives {position.size * size} nodes, more than the "
                    f"{total} elements of the dense shape {list(dense_shape)}"
                )
            parent = np.repeat(np.arange(position.size), size)
            child = np.tile(np.arange(size, dtype=np.int64), position.size)
            position = position[parent] * size + child
            coord = child
        elif meta.format == SPARSE_CSR:
            segments = _index_array(meta.array_segments, level, "array_segments")
            indices = _index_array(meta.array_indices, level, "array_indices")
            if position.size and position.max() + 1 >= segments.size:
                raise ValueError(f"dim_metadata {level}: array_segments has {segments.size} entries, too few")
            starts, stops = segments[position], segments[position + 1]
            counts = stops - starts
            if (
                (counts < 0).any()
                or (starts.size and starts.min() < 0)
                or (stops.size and stops.max() > indices.size)
            ):
                raise ValueError(f"dim_metadata {level}: array_segments do not index array_indices")
            if int(counts.sum()) > max(total, 1):
                raise ValueError(
                    f"dim_metadata {level}: array_segments give {int(counts.sum())} nodes, more than the {total} "
                    f"elements of the dense shape {list(dense_shape)}"
                )
            parent = np.repeat(np.arange(position.size), counts)
            first_of_parent = np.cumsum(counts) - counts
            position = starts[parent] + (np.arange(parent.size) - first_of_parent[parent])
            coord = indices[position]
        else:
            raise ValueError(f"dim_metadata {level}: unknown dimension format {meta.format}")
        coords = [c[parent] for c in coords]
        coords.append(coord)

    # Leaf -> index in the original (unblocked) dimensions.
    # As in TFLite, block k's size is read from dim_metadata[traversal_order[rank + k]].
    block_size = [int(levels[order[rank + k]].dense_size) for k in range(len(block_map))]
    original = [None] * rank
    for level in range(rank):
        original[order[level]] = coords[level]
    for level in range(rank, len(order)):
        block = order[level] - rank
        dim = block_map[block]
        original[dim] = original[dim] * block_size[block] + coords[level]
    if not coords:
        return np.zeros(1, dtype=np.int64)  # a scalar
    for dim, (coordinate, size) in enumerate(zip(original, dense_shape)):
        if coordinate.size and (coordinate.min() < 0 or coordinate.max() >= size):
            bad = int(coordinate.min()) if coordinate.min() < 0 else int(coordinate.max())
            raise ValueError(
                f"the sparsity addresses index {bad} of dimension {dim} (size {size}) of the dense shape "
                f"{list(dense_shape)}: its array_indices or block sizes are out of range"
            )
    return np.ravel_multi_index(tuple(original), tuple(dense_shape))


def _index_array(values, level: int, name: str) -> np.ndarray:
    if values is None:
        raise ValueError(f"dim_metadata {level} is SPARSE_CSR but has no {name}")
    return np.asarray(values, dtype=np.int64)
