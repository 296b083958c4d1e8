"""STABLEHLO_GATHER and STABLEHLO_SCATTER: StableHLO's general gather and scatter.

TFLite (``kernels/stablehlo_gather.cc``, ``stablehlo_scatter.cc``, ``tensor_slice_util``),
StableHLO's ``gather`` and ``scatter``. The start indices (int32 or int64) hold, along
``index_vector_dim``, one index vector per batch position (``index_vector_dim`` equal to
their rank: vectors of one element); ``start_index_map`` / ``scatter_dims_to_operand_dims``
say which operand axis each vector element indexes (the others start at 0).

GATHER: each batch position reads a slice of ``slice_sizes`` from the operand at its start
(clamped so that the slice fits: ``min(start, size - slice)``, and here also at least 0,
StableHLO's clamp); the result holds, per batch position, the slice without its
``collapsed_slice_dims`` along ``offset_dims``, the batch axes in the other positions.

SCATTER: the output is the operand, then every update element (in row-major order of the
updates) combines into the operand element at its start plus its window offset (the
window axes of the updates, ``update_window_dims``, fill the operand axes not in
``inserted_window_dims``); one that falls outside the operand is skipped. The combination
is the update computation subgraph's: LiteRT takes an empty subgraph (replace) or one
node of STABLEHLO_ADD, MULTIPLY, MAXIMUM (``std::max(operand, update)``) or MINIMUM, and
runs its arithmetic itself (``_regions``). Updates that hit one element combine in order:
here in rounds, each round one update per element (the n-th round the n-th update of every
element), which is the sequential result, vectorized.

A start index below 0 differs from LiteRT, which does not check it (a gather reads before
the slice's start, out of the operand's memory for a 1-D operand, and a scatter writes
there): here it is clamped to 0 (gather) or skipped (scatter), StableHLO's definitions.
Version 1 (the only one of each): float16/32/64, int8 to int64, uint8 to uint64 (no bool).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._regions import region_op, region_ops
from schema.enums import BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator

DATA_TYPES = (T.FLOAT16, T.FLOAT32, T.FLOAT64, T.INT8, T.INT16, T.INT32, T.INT64, T.UINT8, T.UINT16, T.UINT32,
              T.UINT64)
INDEX_TYPES = (T.INT32, T.INT64)


def row_major_strides(shape) -> np.ndarray:
    """Elements between neighbours along each axis of a C-ordered array of ``shape``."""
    strides = np.ones(len(shape), np.int64)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    return strides


class IndexVectors:
    """The start indices as ``[batch..., vector]`` (``index_vector_dim`` moved last, or a
    vector of one element added when it equals their rank)."""

    def __init__(self, kernel, indices, index_vector_dim: int, role: str) -> None:
        rank = len(indices.shape)
        if not 0 <= index_vector_dim <= rank:
            raise kernel.unsupported(f"index_vector_dim {index_vector_dim} is outside 0..{rank} (the {role}' rank)")
        self.axis = index_vector_dim
        self.at_end = index_vector_dim == rank
        shape = list(indices.shape)
        self.length = 1 if self.at_end else shape.pop(index_vector_dim)
        self.batch_shape = tuple(int(d) for d in shape)

    def vectors(self, indices: np.ndarray) -> np.ndarray:
        if self.at_end:
            return indices[..., None].astype(np.int64)
        return np.moveaxis(indices, self.axis, -1).astype(np.int64)


def check_axes(kernel, name: str, axes, limit: int) -> tuple[int, ...]:
    """``axes`` (an options vector), distinct and each in ``0..limit-1``, or the kernel's error."""
    if axes is None:
        raise kernel.unsupported(f"{name} is absent")
    axes = tuple(int(a) for a in axes)
    if len(set(axes)) != len(axes) or any(not 0 <= a < limit for a in axes):
        raise kernel.unsupported(f"{name} {list(axes)} must be distinct axes in 0..{limit - 1}")
    return axes


def operand_starts(vectors: np.ndarray, axis_map: tuple[int, ...], rank: int) -> np.ndarray:
    """``[batch..., rank]`` starts: vector element k on operand axis ``axis_map[k]``, 0 elsewhere."""
    starts = np.zeros((*vectors.shape[:-1], rank), np.int64)
    starts[..., list(axis_map)] = vectors
    return starts


@register(B.STABLEHLO_GATHER, 1, 1)  # v1 (the only version)
class StablehloGather(CpuKernel):
    """STABLEHLO_GATHER v1."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        operand, indices = self.inputs
        self.require_types(operand, *DATA_TYPES, role="operand")
        self.require_types(indices, *INDEX_TYPES, role="start_indices")
        self.require_types(self.outputs[0], operand.type, role="output")
        params, rank = self.params, len(operand.shape)
        self.vectors = IndexVectors(self, indices, params.index_vector_dim, "start indices")
        if params.slice_sizes is None or len(params.slice_sizes) != rank:
            raise self.unsupported(f"slice_sizes {params.slice_sizes} must hold one size per operand axis ({rank})")
        sizes = tuple(int(s) for s in params.slice_sizes)
        if any(not 0 <= s <= d for s, d in zip(sizes, operand.shape)):
            raise self.unsupported(f"slice_sizes {list(sizes)} must lie within the operand's shape {list(operand.shape)}")
        self.start_index_map = check_axes(self, "start_index_map", params.start_index_map, rank)
        if len(self.start_index_map) != self.vectors.length:
            raise self.unsupported(
                f"start_index_map {list(self.start_index_map)} must name one operand axis per index vector element "
                f"({self.vectors.length})"
            )
        collapsed = check_axes(self, "collapsed_slice_dims", params.collapsed_slice_dims, rank)
        kept = [a for a in range(rank) if a not in collapsed]  # the slice axes the result keeps
        result_rank = len(self.vectors.batch_shape) + len(kept)
        offset_dims = check_axes(self, "offset_dims", params.offset_dims, result_rank)
        if len(offset_dims) != len(kept):
            raise self.unsupported(
                f"offset_dims {list(offset_dims)} must place the {len(kept)} slice axes not collapsed"
            )
        self.sizes = np.array(sizes, np.int64)
        # result axis -> axis of [batch..., kept slice axes] (both in order)
        batch_count, offset_rank = len(self.vectors.batch_shape), 0
        self.order, batch_axis = [], 0
        for axis in range(result_rank):
            if axis in offset_dims:
                self.order.append(batch_count + offset_rank)
                offset_rank += 1
            else:
                self.order.append(batch_axis)
                batch_axis += 1
        strides = row_major_strides(operand.shape)
        self.strides = strides
        # the flat offset of every element of the slice, over the kept axes
        offsets = np.zeros([sizes[a] for a in kept], np.int64)
        for position, axis in enumerate(kept):
            shape = [1] * len(kept)
            shape[position] = sizes[axis]
            offsets = offsets + (np.arange(sizes[axis], dtype=np.int64) * strides[axis]).reshape(shape)
        self.offsets = offsets
        grid = (*self.vectors.batch_shape, *offsets.shape)
        self.outputs[0].resize([grid[axis] for axis in self.order])

    def invoke(self) -> None:
        operand, indices = self.inputs[0], self.inputs[1]
        starts = operand_starts(self.vectors.vectors(indices.data), self.start_index_map, len(operand.shape))
        starts = np.clip(starts, 0, np.array(operand.shape, np.int64) - self.sizes)
        flat_starts = starts @ self.strides
        flat = flat_starts.reshape(*flat_starts.shape, *[1] * self.offsets.ndim) + self.offsets
        np.take(operand.data.reshape(-1), flat.transpose(self.order), out=self.outputs[0].data)


@register(B.STABLEHLO_SCATTER, 1, 1)  # v1 (the only version)
class StablehloScatter(CpuKernel):
    """STABLEHLO_SCATTER v1."""

    #: The update computations LiteRT runs: the op of the region's one node.
    COMBINATIONS = {B.STABLEHLO_ADD: "add", B.STABLEHLO_MULTIPLY: "multiply", B.STABLEHLO_MAXIMUM: "maximum",
                    B.STABLEHLO_MINIMUM: "minimum"}

    def prepare(self) -> None:
        self.require_num_inputs(3)
        operand, indices, updates = self.inputs
        self.require_types(operand, *DATA_TYPES, role="operand")
        self.require_types(indices, *INDEX_TYPES, role="scatter_indices")
        self.require_types(updates, operand.type, role="updates")
        self.require_types(self.outputs[0], operand.type, role="output")
        params, rank = self.params, len(operand.shape)
        index = params.update_computation_subgraph_index
        if region_ops(self, index, "update computation"):
            self.combination = region_op(self, index, "update computation", self.COMBINATIONS)
        else:
            self.combination = "replace"  # an empty region
        vectors = IndexVectors(self, indices, params.index_vector_dim, "scatter indices")
        self.vectors = vectors
        axis_map = check_axes(self, "scatter_dims_to_operand_dims", params.scatter_dims_to_operand_dims, rank)
        if len(axis_map) != vectors.length:
            raise self.unsupported(
                f"scatter_dims_to_operand_dims {list(axis_map)} must name one operand axis per index vector element "
                f"({vectors.length})"
            )
        self.axis_map = axis_map
        window_dims = check_axes(self, "update_window_dims", params.update_window_dims, len(updates.shape))
        inserted = check_axes(self, "inserted_window_dims", params.inserted_window_dims, rank)
        window_axes = [a for a in range(rank) if a not in inserted]  # operand axes the windows span
        if len(window_dims) != len(window_axes):
            raise self.unsupported(
                f"update_window_dims {list(window_dims)} must give one updates axis per operand axis not in "
                f"inserted_window_dims ({len(window_axes)})"
            )
        scatter_dims = [a for a in range(len(updates.shape)) if a not in window_dims]
        batch_shape = tuple(int(updates.shape[a]) for a in scatter_dims)
        if batch_shape != vectors.batch_shape:
            raise self.unsupported(
                f"the updates' scatter axes {scatter_dims} have sizes {list(batch_shape)}; the scatter indices' "
                f"batch has {list(vectors.batch_shape)}"
            )
        self.window_dims, self.window_axes = window_dims, window_axes
        self.outputs[0].resize(operand.shape)

    def targets(self) -> tuple[np.ndarray, np.ndarray]:
        """The flat operand position of every update element (row-major), and whether it
        lies inside the operand."""
        operand, indices, updates = self.inputs
        shape, update_shape = operand.shape, updates.shape
        starts = operand_starts(self.vectors.vectors(indices.data), self.axis_map, len(shape))
        # the batch axes of ``starts`` go to the updates' scatter axes (in order), 1 elsewhere
        starts = np.expand_dims(starts, tuple(self.window_dims))  # [updates axes..., operand rank]
        positions = np.broadcast_to(starts, (*update_shape, len(shape))).copy()
        for window_dim, axis in zip(self.window_dims, self.window_axes):
            offset_shape = [1] * len(update_shape)
            offset_shape[window_dim] = update_shape[window_dim]
            positions[..., axis] += np.arange(update_shape[window_dim], dtype=np.int64).reshape(offset_shape)
        inside = np.all((positions >= 0) & (positions < np.array(shape, np.int64)), axis=-1)
        flat = positions @ row_major_strides(shape)
        return flat.reshape(-1), inside.reshape(-1)

    def invoke(self) -> None:
        out = self.outputs[0].data
        out[...] = self.inputs[0].data
        flat, inside = self.targets()
        values = self.inputs[2].data.reshape(-1)[inside]
        flat = flat[inside]
        target = out.reshape(-1)
        # Updates hitting the same element combine in row-major order: round n applies the
        # n-th update of every element, so each round's targets are distinct.
        order = np.argsort(flat, kind="stable")
        ranked = flat[order]
        first = np.r_[True, ranked[1:] != ranked[:-1]] if ranked.size else np.zeros(0, bool)
        group_start = np.maximum.accumulate(np.where(first, np.arange(ranked.size), 0))
        occurrence = np.empty(ranked.size, np.int64)
        occurrence[order] = np.arange(ranked.size) - group_start
        with np.errstate(over="ignore", invalid="ignore"):
            for round_number in range(int(occurrence.max(initial=-1)) + 1):
                chosen = occurrence == round_number
                where, update = flat[chosen], values[chosen]
                target[where] = self.combine(target[where], update)

    def combine(self, current: np.ndarray, update: np.ndarray) -> np.ndarray:
        if self.combination == "add":
            return current + update
        if self.combination == "multiply":
            return current * update
        if self.combination == "maximum":  # std::max(current, update)
            return np.where(current < update, update, current)
        if self.combination == "minimum":  # std::min(current, update)
            return np.where(update < current, update, current)
        return update
