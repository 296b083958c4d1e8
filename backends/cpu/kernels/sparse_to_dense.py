"""SPARSE_TO_DENSE: a dense tensor of ``default_value`` with ``values`` at ``indices``.

TFLite (``kernels/sparse_to_dense.cc``, ``reference_ops::SparseToDense``): inputs
(indices, output_shape, values, default_value).

- ``indices``: 0-D or 1-D (positions in a 1-D output) or 2-D [n, rank] (one row per
  value); int32 or int64.
- ``output_shape``: 1-D int32 or int64, at most 4 elements; a non-constant one makes the
  output dynamic (sized at invoke).
- ``values``: 0-D (one value for every index) or 1-D (one per index); ``default_value``
  one value of the same type.

Every element is ``default_value``, then each index gets its value in order, so a
repeated index keeps the last one. ``validate_indices`` is ignored, as TFLite ignores it
(a TODO there); an index outside the output, which TFLite writes out of bounds, is an
error here. Versions: v1 float32 and int32 values; v2 int64; v3 int8 and uint8.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.gather import check_indices
from backends.cpu.kernels.reshape import INDEX_TYPES, inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

T = TensorType

VALUE_TYPES = (T.FLOAT32, T.INT32, T.INT64, T.INT8, T.UINT8)
MAX_DIMENSIONS = 4


@register(BuiltinOperator.SPARSE_TO_DENSE, 1, 3)  # v1 float32/int32; v2 int64; v3 int8/uint8 values
class SparseToDense(CpuKernel):
    """SPARSE_TO_DENSE v1-v3."""

    def prepare(self) -> None:
        self.require_num_inputs(4)
        if inputs_pending(self):
            return
        indices, shape, values, default = self.inputs
        self.require_types(indices, *INDEX_TYPES, role="indices")
        self.require_types(shape, *INDEX_TYPES, role="output_shape")
        self.require_types(values, *VALUE_TYPES, role="values")
        self.require_types(default, values.type, role="default_value")
        self.require_types(self.outputs[0], values.type, role="output")
        if len(indices.shape) > 2 or len(shape.shape) != 1 or len(values.shape) > 1:
            raise self.unsupported(
                f"indices {list(indices.shape)} must be 0-D to 2-D, output_shape {list(shape.shape)} 1-D and "
                f"values {list(values.shape)} 0-D or 1-D"
            )
        if default.num_elements != 1:
            raise self.unsupported(f"default_value must hold one value, it has shape {list(default.shape)}")
        rank = indices.shape[1] if len(indices.shape) == 2 else 1
        if shape.shape[0] != rank or rank > MAX_DIMENSIONS:
            raise self.unsupported(
                f"indices {list(indices.shape)} give {rank}-D positions; output_shape has {shape.shape[0]} elements "
                f"and must have as many, at most {MAX_DIMENSIONS}"
            )
        self.count = indices.shape[0] if len(indices.shape) else 1
        if len(values.shape) == 1 and values.shape[0] != self.count:
            raise self.unsupported(f"values has {values.shape[0]} elements for {self.count} indices (one per index, or a scalar)")
        self.from_values = not shape.is_constant
        if self.from_values:
            self.outputs[0].set_dynamic()
            return
        self.outputs[0].resize(self.output_shape())

    def output_shape(self) -> list[int]:
        shape = int_values(self.inputs[1])
        if any(d < 0 for d in shape):
            raise self.unsupported(f"output_shape {shape} has a negative dimension")
        return shape

    def invoke(self) -> None:
        indices, _, values, default = self.inputs
        out = self.outputs[0]
        if self.from_values:
            out.set_data(np.empty(self.output_shape(), out.dtype))
        dense = out.data
        positions = indices.data.reshape(self.count, len(dense.shape)).astype(np.int64)
        for axis, size in enumerate(dense.shape):
            check_indices(self.op_name, positions[:, axis], size, f"for axis {axis} of output shape {list(dense.shape)}")
        dense[...] = default.data.reshape(-1)[0]
        if self.count == 0:
            return
        flat = np.ravel_multi_index(tuple(positions.T), dense.shape)
        # a repeated index keeps its last value: assign only each position's last occurrence
        _, first_from_end = np.unique(flat[::-1], return_index=True)
        last = self.count - 1 - first_from_end
        source = values.data.reshape(-1)
        dense.reshape(-1)[flat[last]] = source[last] if source.size == self.count else source[0]
