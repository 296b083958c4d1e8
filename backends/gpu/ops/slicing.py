"""Slicing on the GPU: SLICE (float32, int8, uint8, int32) and STRIDED_SLICE (float32, int8,
uint8), bit-exact (values are moved, never computed).

Semantics are the CPU kernels' (``backends/cpu/kernels/slice.py``), and so is the host
arithmetic:

- SLICE: ``size`` elements from ``begin`` along each axis (size -1: to the end); begin
  and size constant (the output shape depends on them).
- STRIDED_SLICE: the index (masks, ellipsis, new axes, shrink, ``offset``) is
  ``slice.strided_slice_plan``, computed once at prepare from constant begin/end/strides.

How: one slice (and a copy) per node: every output is a new array (never a view of an
input).

Versions claimed (``schema/versioning/op_version.py``):

- SLICE 1 (float32, uint8, int32) and 2 (int8); not 3 (string), 4 (int16), 5 (rank 5),
  6 (uint32).
- STRIDED_SLICE 1 (float32, uint8), 2 (int8), 6 (ellipsis / new-axis masks) and 8
  (``offset``); not 3 (bool), 4 (rank 5), 5 (string), 7 (uint32).
"""

from __future__ import annotations

from typing import Sequence

from backends.cpu.kernels.slice import strided_slice_plan
from backends.gpu.ops.moving_base import (
    INDEX_TYPES,
    LayoutOp,
    MovingOp,
    constant_int_reason,
    int_list,
    named_inputs_reason,
)
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


def slice_plan(shape: Sequence[int], begins: Sequence[int], sizes: Sequence[int]) -> tuple[tuple[slice, ...], list[int]]:
    """The CPU kernel's SLICE plan: (index, output shape); ValueError when it does not fit."""
    index, out_shape = [], []
    for axis, (dim, b, s) in enumerate(zip(shape, begins, sizes)):
        if b < 0 or b > dim:
            raise ValueError(f"begin {list(begins)} is out of range for input shape {list(shape)} (axis {axis})")
        if s == -1:
            s = dim - b
        elif s < 0 or b + s > dim:
            raise ValueError(f"begin {list(begins)} and size {list(sizes)} do not fit input shape {list(shape)}")
        index.append(slice(b, b + s))
        out_shape.append(s)
    return tuple(index), out_shape


class Slice(LayoutOp):
    """SLICE v1 (float32, uint8, int32) and v2 (int8) with constant begin and size."""

    ops = {B.SLICE: 2}
    index_inputs = (1, 2)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = named_inputs_reason(node, ("input", "begin", "size"))
        if reason:
            return reason
        x, begin, size = (tensors[i] for i in node.inputs)
        for tensor, role in ((begin, "begin"), (size, "size")):
            reason = constant_int_reason(tensor, role, INDEX_TYPES)
            if reason:
                return reason
            if tensor.shape != (len(x.shape),):
                return f"{role} has shape {list(tensor.shape)}; it must be [{len(x.shape)}]"
        if begin.type != size.type:
            return f"begin is {begin.type_name} but size is {size.type_name}; they must have one type"
        try:
            slice_plan(x.shape, int_list(begin), int_list(size))
        except ValueError as error:
            return str(error)
        return None

    def prepare(self) -> None:
        x, begin, size = self.inputs
        self.index, _ = slice_plan(x.shape, int_list(begin), int_list(size))

    def run(self, args):
        return [args[0][self.index].copy()]  # a copy: a slice is a view of the input


class StridedSlice(MovingOp):
    """STRIDED_SLICE v1, v2, v6, v8 with constant begin/end/strides."""

    ops = {B.STRIDED_SLICE: frozenset({1, 2, 6, 8})}
    index_inputs = (1, 2, 3)

    @staticmethod
    def plan(x, begin, end, strides, params):
        """The CPU kernel's plan: (effective shape, index, output shape); ValueError if invalid."""
        return strided_slice_plan(x.shape, int_list(begin), int_list(end), int_list(strides), params)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 4 or min(node.inputs) < 0:
            return f"expected inputs (input, begin, end, strides), got {len(node.inputs)} inputs"
        _, begin, end, strides = (tensors[i] for i in node.inputs)
        for tensor, role in ((begin, "begin"), (end, "end"), (strides, "strides")):
            reason = constant_int_reason(tensor, role, (T.INT32,))
            if reason:
                return reason
            if len(tensor.shape) != 1:
                return f"{role} must be a vector, it has shape {list(tensor.shape)}"
        if begin.shape != end.shape or begin.shape != strides.shape:
            return f"begin {list(begin.shape)}, end {list(end.shape)} and strides {list(strides.shape)} differ in length"
        if begin.shape[0] > 31:
            return "at most 31 indices are supported"
        try:
            cls.plan(*(tensors[i] for i in node.inputs), node.params)
        except ValueError as error:
            return str(error)
        return None

    def prepare(self) -> None:
        self.shape, self.index, out_shape = self.plan(*self.inputs, self.params)
        self.out_shape = tuple(out_shape)

    def run(self, args):
        # copy(): a new contiguous array (a strided view would alias the input's buffer).
        return [args[0].reshape(self.shape)[self.index].copy().reshape(self.out_shape)]
