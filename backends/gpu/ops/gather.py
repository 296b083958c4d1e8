"""Index-driven copies on the GPU: GATHER (float32, int8, uint8, int32) and ONE_HOT.

Semantics are the CPU kernels' (``backends/cpu/kernels/gather.py``, ``one_hot.py``), i.e.
TFLite's reference kernels:

- GATHER: ``input[:axis] x indices x input[axis+1:]`` (``batch_dims`` 0). Constant
  indices are checked at prepare (an index out of range is refused, as TFLite refuses it)
  and uploaded once; runtime int32/int64 indices are read on the device, clamped to the
  axis (TFLite and the CPU kernel raise an error for an index out of range; a device
  cannot, inside a CUDA graph: such an index reads the nearest row instead). Values are
  moved bit for bit.
- ONE_HOT: ``on`` where ``indices == d`` along the new axis, else ``off`` (an index out
  of ``[0, depth)`` gives a row of ``off``).

How: ``take`` with index arrays laid out at prepare, or slice assignment into a
preallocated output; every output is a new array (never a view of an input).

Versions claimed (``schema/versioning/op_version.py``):

- GATHER 1 (float32, uint8, int32) and 2 (int8); not 3 (bool), 4 (int16), 5
  (batch_dims), 6 (int16 indices).
- ONE_HOT 1 (int32/int64 indices, constant depth, constant float32 on/off values).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from backends.gpu.ops.base import MAX_RANK, GpuOp
from backends.gpu.ops.moving_base import (
    INDEX_TYPES,
    LayoutOp,
    axis_reason,
    constant_int_reason,
    int_list,
    named_inputs_reason,
    type_names,
)
from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


class Gather(LayoutOp):
    """GATHER v1 (float32, uint8, int32) and v2 (int8): int32/int64 indices, constant or
    read on the device, ``batch_dims`` 0."""

    ops = {B.GATHER: 2}
    #: The indices are never a data tensor; runtime indices are uploaded all the same
    #: (``device_inputs``), constant ones are laid out at prepare.
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = named_inputs_reason(node, ("input", "indices"))
        if reason:
            return reason
        x, indices = (tensors[i] for i in node.inputs)
        if indices.type not in INDEX_TYPES:
            return f"indices {indices.name!r} is {indices.type_name}; it must be {type_names(INDEX_TYPES).replace('/', ' or ')}"
        if indices.is_dynamic:
            return f"indices {indices.name!r} has a shape known only at run time (dynamic tensor)"
        batch_dims = int(getattr(node.params, "batch_dims", 0) or 0)
        if batch_dims != 0:
            return f"batch_dims {batch_dims} is not supported (only 0)"
        rank = len(x.shape)
        if rank == 0:
            return "a scalar input cannot be gathered from"
        axis = int(getattr(node.params, "axis", 0) or 0)
        reason = axis_reason(axis, rank)
        if reason:
            return reason
        axis %= rank
        out_rank = rank - 1 + len(indices.shape)
        if out_rank > MAX_RANK:
            return f"the output would have rank {out_rank}; at most {MAX_RANK} is supported"
        size = x.shape[axis]
        if indices.is_constant:
            values = np.asarray(indices.data)
            if values.size and (values.min() < 0 or values.max() >= size):
                bad = int(values.min()) if values.min() < 0 else int(values.max())
                return f"index {bad} is out of range [0, {size}) for axis {axis} of shape {list(x.shape)}"
        elif size == 0 and indices.num_elements:
            return f"axis {axis} of input shape {list(x.shape)} is empty: no index is in range"
        return None

    def prepare(self) -> None:
        x, indices = self.inputs
        self.axis = int(getattr(self.params, "axis", 0) or 0) % len(x.shape)
        self.limit = max(int(x.shape[self.axis]) - 1, 0)
        self.indices = None
        if indices.is_constant:
            # (reshaped on the device: Device.upload makes a 0-d array 1-d, as np.ascontiguousarray does)
            self.indices = self.upload(np.asarray(indices.data), np.int64).reshape(indices.shape)

    def device_inputs(self) -> list[int]:
        return [0] if self.indices is not None else [0, 1]

    def run(self, args):
        xp = self.xp
        indices = self.indices if self.indices is not None else xp.clip(args[1], 0, self.limit)
        return [xp.take(args[0], indices, axis=self.axis)]


class OneHot(GpuOp):
    """ONE_HOT v1: int32/int64 indices (rank <= 3) read on the device, constant depth,
    constant float32 scalar on/off values, float32 output."""

    ops = {B.ONE_HOT: 1}
    index_inputs = (1, 2, 3)

    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        reason = named_inputs_reason(node, ("indices", "depth", "on_value", "off_value"))
        if reason:
            return reason
        indices, depth, on, off = (tensors[i] for i in node.inputs)
        out = tensors[node.outputs[0]]
        if indices.type not in INDEX_TYPES:
            return f"indices {indices.name!r} is {indices.type_name}; it must be INT32 or INT64"
        if indices.is_dynamic:
            return f"indices {indices.name!r} has a shape known only at run time (dynamic tensor)"
        if out.type != T.FLOAT32:
            return f"output {out.name!r} is {out.type_name}; the GPU delegate runs ONE_HOT with FLOAT32 on/off values only"
        reason = constant_int_reason(depth, "depth", (T.INT32,))
        if reason:
            return reason
        if depth.num_elements != 1 or int_list(depth)[0] < 0:
            return f"depth must be one non-negative value, it is {int_list(depth)}"
        for tensor, role in ((on, "on_value"), (off, "off_value")):
            if tensor.type != T.FLOAT32:
                return f"{role} {tensor.name!r} is {tensor.type_name}; it must be FLOAT32"
            if not tensor.is_constant or tensor.num_elements != 1:
                return f"{role} must be a constant scalar"
        rank = len(indices.shape) + 1
        if rank > MAX_RANK:
            return f"the output would have rank {rank}; at most {MAX_RANK} is supported"
        axis = int(getattr(node.params, "axis", -1))
        if not -1 <= axis < rank:
            return f"axis {axis} is out of range for an output of rank {rank}"
        return None

    def prepare(self) -> None:
        indices, depth, on, off = self.inputs
        rank = len(indices.shape) + 1
        axis = int(getattr(self.params, "axis", -1))
        self.axis = rank - 1 if axis == -1 else axis
        count = int_list(depth)[0]
        # indices with a 1 where the depth axis goes, compared with 0..depth-1 along it
        self.expanded = tuple(indices.shape[: self.axis]) + (1,) + tuple(indices.shape[self.axis :])
        positions = np.arange(count, dtype=np.int64).reshape((1,) * self.axis + (count,) + (1,) * (rank - 1 - self.axis))
        self.positions = self.upload(positions, np.int64)
        self.on = self.upload(np.asarray(on.data, np.float32)).reshape(())
        self.off = self.upload(np.asarray(off.data, np.float32)).reshape(())

    def device_inputs(self) -> list[int]:
        return [0]

    def run(self, args):
        xp = self.xp
        hot = args[0].reshape(self.expanded) == self.positions
        return [xp.where(hot, self.on, self.off).astype(self.storage, copy=False)]
