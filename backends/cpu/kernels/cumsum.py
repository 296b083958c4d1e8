"""CUMSUM: running sum along one axis, optionally exclusive and/or reversed.

TFLite (``kernels/cumsum.cc``, ``optimized_ops::CumSum``) accumulates sequentially in the
input type (int32 sums wrap), so does ``np.cumsum``:

    inclusive:  y[i] = x[0] + ... + x[i]
    exclusive:  y[i] = x[0] + ... + x[i-1]      (y[0] = 0)
    reverse:    the same, running from the end of the axis

The axis is one int32 value (negative counts from the end); it may be non-constant (the
output shape does not depend on it). Version 1: float32, int32, int64 (uint16, which
LiteRT dequantizes, is not implemented here).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType


def normalize_axis(axis_tensor_data: np.ndarray, rank: int) -> int:
    axis = int(np.asarray(axis_tensor_data).reshape(-1)[0])
    resolved = axis + rank if axis < 0 else axis
    if not 0 <= resolved < rank:
        raise ValueError(f"axis {axis} is out of range for an input of rank {rank}")
    return resolved


@register(BuiltinOperator.CUMSUM, 1, 1)  # v1: float32, int32, int64 (the only version)
class Cumsum(CpuKernel):
    """CUMSUM v1."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        data, axis = self.inputs
        self.require_types(data, TensorType.FLOAT32, TensorType.INT32, TensorType.INT64)
        self.require_types(axis, TensorType.INT32, role="axis")
        self.require_types(self.outputs[0], data.type, role="output")
        if axis.num_elements != 1:
            raise self.unsupported(f"the axis tensor must hold one value, it has shape {list(axis.shape)}")
        if len(data.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        self.exclusive = bool(self.params.exclusive) if self.params is not None else False
        self.reverse = bool(self.params.reverse) if self.params is not None else False
        self.rank = len(data.shape)
        self.plan = self._plan(normalize_axis(axis.data, self.rank)) if axis.is_constant else None
        self.outputs[0].resize(data.shape)

    def _plan(self, axis: int) -> tuple[int, tuple, tuple, tuple]:
        """The axis and the index tuples of the exclusive form: y[head] = 0, y[body_out] =
        cumsum(x[body_in])."""
        def along(s: slice) -> tuple:
            return tuple(s if i == axis else slice(None) for i in range(self.rank))

        return axis, along(slice(0, 1)), along(slice(0, -1)), along(slice(1, None))

    def invoke(self) -> None:
        x, y = self.inputs[0].data, self.outputs[0].data
        if y.size == 0:
            return
        axis, head, body_in, body_out = self.plan or self._plan(normalize_axis(self.inputs[1].data, self.rank))
        if self.reverse:  # run on reversed views: the writes land in the right places
            x, y = np.flip(x, axis), np.flip(y, axis)
        if not self.exclusive:
            np.cumsum(x, axis=axis, dtype=x.dtype, out=y)
            return
        y[head] = 0
        np.cumsum(x[body_in], axis=axis, dtype=x.dtype, out=y[body_out])
