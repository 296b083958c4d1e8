"""SCATTER_ND: a zero tensor of a given shape with ``updates`` added at ``indices``.

TFLite (``kernels/scatter_nd.cc``, ``reference_ops::ScatterNd``): inputs (indices,
updates, shape). ``indices`` [..., k] holds k-tuples indexing the first k axes of the
output, whose shape is the ``shape`` vector; ``updates`` has shape
``indices.shape[:-1] + shape[k:]``. Every tuple's slice is added in order, so repeated
tuples sum (integers wrap; bool ones are OR-ed: C++'s ``bool += bool``):

    out = zeros(shape);  for each i: out[indices[i]] += updates[i]

An index outside its axis is an error at invoke (LiteRT 2.3 refuses it too). indices and
shape are int32 (LiteRT refuses int64); a non-constant shape makes the output dynamic.
Version 1 (the only one): float32, int8, uint8, int32, int64 and bool updates.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.gather import check_indices
from backends.cpu.kernels.reshape import inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

T = TensorType

UPDATE_TYPES = (T.FLOAT32, T.INT8, T.UINT8, T.INT32, T.INT64, T.BOOL)


@register(BuiltinOperator.SCATTER_ND, 1, 1)  # v1 (the only version)
class ScatterNd(CpuKernel):
    """SCATTER_ND v1."""

    def prepare(self) -> None:
        self.require_num_inputs(3)
        if inputs_pending(self):
            return
        indices, updates, shape = self.inputs
        self.require_types(indices, T.INT32, role="indices")
        self.require_types(updates, *UPDATE_TYPES, role="updates")
        self.require_types(shape, T.INT32, role="shape")
        self.require_types(self.outputs[0], updates.type, role="output")
        if len(indices.shape) < 1 or len(updates.shape) < 1 or len(shape.shape) != 1:
            raise self.unsupported(
                f"indices {list(indices.shape)} and updates {list(updates.shape)} must be at least 1-D and "
                f"shape {list(shape.shape)} 1-D"
            )
        self.from_values = not shape.is_constant
        if self.from_values:
            self.outputs[0].set_dynamic()
            return
        self.outputs[0].resize(self.output_shape(int_values(shape)))

    def output_shape(self, shape: list[int]) -> list[int]:
        """``shape``, checked against the indices' and updates' shapes (TFLite's CheckShapes)."""
        indices, updates = self.inputs[0].shape, self.inputs[1].shape
        depth = indices[-1]
        if any(d < 0 for d in shape) or depth > len(shape):
            raise self.unsupported(f"output shape {shape} must be non-negative with at least {depth} axes (the index depth)")
        expected = [*indices[:-1], *shape[depth:]]
        if list(updates) != expected:
            raise self.unsupported(
                f"updates {list(updates)} do not fit indices {list(indices)} and output shape {shape}: "
                f"they must have shape indices.shape[:-1] + shape[{depth}:] = {expected}"
            )
        return shape

    def invoke(self) -> None:
        indices, updates, shape = self.inputs
        out = self.outputs[0]
        if self.from_values:
            out.set_data(np.empty(self.output_shape(int_values(shape)), out.dtype))
        target = out.data
        depth = indices.shape[-1]
        count = int(np.prod(indices.shape[:-1], dtype=np.int64))
        tuples = indices.data.reshape(count, depth)
        for axis in range(depth):
            check_indices(self.op_name, tuples[:, axis], target.shape[axis], f"for axis {axis} of output shape {list(target.shape)}")
        target[...] = 0
        if count == 0 or target.size == 0:
            return
        # the output as rows, one per index tuple of its first `depth` axes
        leading = target.shape[:depth]
        rows = target.reshape(int(np.prod(leading, dtype=np.int64)), -1)
        row_of_tuple = np.ravel_multi_index(tuple(tuples.T.astype(np.intp)), leading) if depth else np.zeros(count, np.intp)
        accumulate = np.logical_or if target.dtype == np.bool_ else np.add
        accumulate.at(rows, row_of_tuple, updates.data.reshape(count, -1))
