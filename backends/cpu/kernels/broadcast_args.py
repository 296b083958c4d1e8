"""BROADCAST_ARGS: the shape two shapes broadcast to.

TFLite (``kernels/broadcast_args.cc``, ``reference_ops::BroadcastArgs``): two 1-D int32
or int64 shape tensors (one type, the output's too); the output is 1-D with as many
elements as the longer one, so its shape never depends on the values. Aligned from the
right, a missing dimension counts as 1; a 1 takes the other side's size; otherwise both
must be equal (TFLite aborts the process on a mismatch: here a clear error at invoke).
The values are not checked otherwise (a negative size passes through, as in TFLite).
With constant inputs the result is computed once, at prepare.
Version 1 (the only one).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

T = TensorType


@register(BuiltinOperator.BROADCAST_ARGS, 1, 1)  # v1: int32, int64 (the only version)
class BroadcastArgs(CpuKernel):
    """BROADCAST_ARGS v1."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        first, second = self.inputs
        self.require_types(first, T.INT32, T.INT64, role="shape 1")
        self.require_types(second, first.type, role="shape 2")
        self.require_types(self.outputs[0], first.type, role="output")
        for tensor, role in ((first, "shape 1"), (second, "shape 2")):
            if len(tensor.shape) != 1:
                raise self.unsupported(f"{role} {tensor.name!r} must be 1-D, it has shape {list(tensor.shape)}")
        self.outputs[0].resize([max(first.shape[0], second.shape[0])])

    def invoke(self) -> None:
        first, second = (tensor.data.astype(np.int64) for tensor in self.inputs)
        length = len(self.outputs[0].data)
        # aligned from the right, a missing dimension is 1
        first = np.concatenate([np.ones(length - len(first), np.int64), first])
        second = np.concatenate([np.ones(length - len(second), np.int64), second])
        clash = (first != 1) & (second != 1) & (first != second)
        if clash.any():
            raise ValueError(
                f"{self.op_name}: shapes {self.inputs[0].data.tolist()} and {self.inputs[1].data.tolist()} are not "
                "broadcast-compatible"
            )
        self.outputs[0].data[...] = np.where(first == 1, second, first)
