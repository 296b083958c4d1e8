"""GATHER (with ``axis`` and ``batch_dims``) and GATHER_ND.

Indices out of range, negative ones included, are an error, as in TFLite (which
checks every index before gathering).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import MOVABLE_OR_STRING_TYPES, inputs_pending, normalize_axis
from schema.enums import BuiltinOperator, TensorType

T = TensorType
INDICES_TYPES = (T.INT16, T.INT32, T.INT64)
#: Types LiteRT 2.3's GATHER and GATHER_ND move beyond MOVABLE_OR_STRING_TYPES (GATHER: int4
#: too, one value an element here).
HALF_TYPES = (T.FLOAT16, T.BFLOAT16)


def check_indices(op_name: str, indices: np.ndarray, size: int, what: str) -> None:
    """Every index in ``[0, size)``, else a clear error naming the first bad one."""
    if indices.size == 0:
        return
    low, high = int(indices.min()), int(indices.max())
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise ValueError(f"{op_name}: index {bad} is out of range [0, {size}) {what}")


# v1: float32, int32, int64, uint8, string; v2: int8; v3: bool; v4: int16; v5: batch_dims;
# v6: int16 indices; v7: int4. v8: LiteRT 2.3 registers it (TFLite's tables predate it); its
# kernel adds float16 and bfloat16, and so does this one at every version. Strings are gathered
# at any of these versions, from a 1-D input only (TFLite's gather.cc checks
# ``NumDimensions(input) == 1`` for them).
@register(BuiltinOperator.GATHER, 1, 8)
class Gather(CpuKernel):
    """GATHER v1-v8: ``output = input[:axis] x positions[batch_dims:] x input[axis+1:]``
    (a STRING input must be a vector)."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, positions = self.inputs
        self.require_types(x, *MOVABLE_OR_STRING_TYPES, *HALF_TYPES, T.INT4)
        self.require_types(positions, *INDICES_TYPES, role="positions")
        self.require_types(self.outputs[0], x.type, role="output")
        if x.type == T.STRING and len(x.shape) != 1:
            raise self.unsupported(
                f"a STRING input must be 1-D, {x.name!r} has shape {list(x.shape)} "
                "(TFLite gathers strings only from vectors)"
            )
        rank, index_rank = len(x.shape), len(positions.shape)
        self.axis = normalize_axis(self, self.params.axis, rank)
        batch_dims = self.params.batch_dims
        if batch_dims < 0:
            batch_dims += index_rank
        if not (0 <= batch_dims <= self.axis and batch_dims < rank and batch_dims <= index_rank):
            raise self.unsupported(
                f"batch_dims {self.params.batch_dims} is invalid for axis {self.axis}, input rank {rank} "
                f"and positions rank {index_rank}"
            )
        if x.shape[:batch_dims] != positions.shape[:batch_dims]:
            raise self.unsupported(
                f"the first {batch_dims} dimensions of input {list(x.shape)} and positions "
                f"{list(positions.shape)} must be equal (batch_dims)"
            )
        self.batch_dims = batch_dims
        self.outputs[0].resize([*x.shape[: self.axis], *positions.shape[batch_dims:], *x.shape[self.axis + 1 :]])
        if batch_dims:
            batch = int(np.prod(x.shape[:batch_dims], dtype=np.int64))
            outer = int(np.prod(x.shape[batch_dims : self.axis], dtype=np.int64))
            inner = int(np.prod(x.shape[self.axis + 1 :], dtype=np.int64))
            self.input_view = (batch, outer, x.shape[self.axis], inner)
            self.index_view = (batch, 1, -1, 1)

    def invoke(self) -> None:
        x, positions, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        if positions is None:  # an empty constant (the file gives it no buffer)
            positions = np.zeros(self.inputs[1].shape, np.int32)
        check_indices(self.op_name, positions, x.shape[self.axis], f"for axis {self.axis} of shape {list(x.shape)}")
        if not self.batch_dims:
            np.take(x, positions, axis=self.axis, out=out, mode="clip")
            return
        picked = np.take_along_axis(x.reshape(self.input_view), positions.reshape(self.index_view), axis=2)
        np.copyto(out, picked.reshape(out.shape))


# v1: float32, int32, int64, int8, uint8; v2: string; v3: int16; v4: int16 indices; v5: bool.
# v6: LiteRT 2.3 registers it (TFLite's tables predate it); its kernel adds float16 and
# bfloat16. (LiteRT's kernel takes every type at every version; so does this one.)
@register(BuiltinOperator.GATHER_ND, 1, 6)
class GatherNd(CpuKernel):
    """GATHER_ND v1-v6: slices of ``params`` at the index tuples in ``indices``' last axis."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        params, indices = self.inputs
        self.require_types(params, *MOVABLE_OR_STRING_TYPES, *HALF_TYPES)
        self.require_types(indices, *INDICES_TYPES, role="indices")
        self.require_types(self.outputs[0], params.type, role="output")
        if len(params.shape) < 1 or len(indices.shape) < 1:
            raise self.unsupported("params and indices must be at least vectors")
        nd = indices.shape[-1]
        if nd > len(params.shape):
            raise self.unsupported(f"index depth {nd} is larger than the params rank {len(params.shape)}")
        if params.num_elements == 0 and indices.num_elements != 0:
            raise self.unsupported("params is empty but indices is not")
        self.nd = nd
        self.outputs[0].resize([*indices.shape[:-1], *params.shape[nd:]])
        # Row-major strides of the indexed leading axes, to make one flat index per tuple.
        self.leading = params.shape[:nd]
        self.strides = np.array([int(np.prod(self.leading[k + 1 :], dtype=np.int64)) for k in range(nd)], np.int64)
        self.rows = (int(np.prod(self.leading, dtype=np.int64)), int(np.prod(params.shape[nd:], dtype=np.int64)))

    def invoke(self) -> None:
        params, indices, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        for k, size in enumerate(self.leading):
            check_indices(self.op_name, indices[..., k], size, f"for axis {k} of params shape {list(params.shape)}")
        flat = indices.astype(np.int64, copy=False) @ self.strides
        rows = params.reshape(self.rows)
        np.take(rows, flat, axis=0, out=out.reshape(*flat.shape, self.rows[1]), mode="clip")
