"""ONE_HOT: a one-hot encoding of integer indices along a new axis.

TFLite (``kernels/one_hot.cc``): inputs (indices, depth, on_value, off_value); the output
has the indices' shape with ``depth`` inserted at ``axis`` (-1: last):

    out[p..., d, s...] = on_value if indices[p..., s...] == d else off_value

so an index that is negative or at least ``depth`` gives a row of ``off_value``. indices
are int32 or int64; depth one int32 value >= 0 (not constant: the output is dynamic);
on_value and off_value one value each, of the output's type. Version 1 (the only one):
float32, int32, int64, int8, uint8 and bool outputs. (TFLite's Prepare also lets int16
through, but its Eval has no int16 case and fails at invoke; refused here at prepare.)
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import INDEX_TYPES, inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

T = TensorType

OUTPUT_TYPES = (T.FLOAT32, T.INT32, T.INT64, T.INT8, T.UINT8, T.BOOL)


@register(BuiltinOperator.ONE_HOT, 1, 1)
class OneHot(CpuKernel):
    """ONE_HOT v1."""

    def prepare(self) -> None:
        self.require_num_inputs(4)
        if inputs_pending(self):
            return
        indices, depth, on_value, off_value = self.inputs
        out = self.outputs[0]
        self.require_types(indices, *INDEX_TYPES, role="indices")
        self.require_types(depth, T.INT32, role="depth")
        self.require_types(out, *OUTPUT_TYPES, role="output")
        self.require_types(on_value, out.type, role="on_value")
        self.require_types(off_value, out.type, role="off_value")
        for tensor, role in ((depth, "depth"), (on_value, "on_value"), (off_value, "off_value")):
            if tensor.num_elements != 1:
                raise self.unsupported(f"{role} must hold one value, it has shape {list(tensor.shape)}")
        rank = len(indices.shape) + 1
        axis = int(getattr(self.params, "axis", -1))
        self.axis = rank - 1 if axis == -1 else axis
        if not 0 <= self.axis < rank:
            raise self.unsupported(f"axis {axis} is out of range for an output of rank {rank} (-1 means the last)")
        self.from_values = not depth.is_constant
        if self.from_values:
            out.set_dynamic()
            return
        out.resize(self.output_shape(int_values(depth)[0]))

    def output_shape(self, depth: int) -> list[int]:
        if depth < 0:
            raise self.unsupported(f"depth is {depth}; it must not be negative")
        shape = list(self.inputs[0].shape)
        return shape[: self.axis] + [depth] + shape[self.axis :]

    def invoke(self) -> None:
        indices, depth, on_value, off_value = self.inputs
        out = self.outputs[0]
        count = int_values(depth)[0]
        if self.from_values:
            out.set_data(np.empty(self.output_shape(count), out.dtype))
        # indices with a 1 where the depth axis goes, compared with 0..depth-1 along it
        expanded = np.expand_dims(indices.data, self.axis)
        positions = np.arange(count, dtype=np.int64).reshape([count if i == self.axis else 1 for i in range(out.data.ndim)])
        np.copyto(out.data, np.where(expanded == positions, on_value.data.reshape(()), off_value.data.reshape(())))
