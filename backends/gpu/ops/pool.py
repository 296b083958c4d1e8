"""AVERAGE_POOL_2D, MAX_POOL_2D and MEAN (over constant axes) on the GPU.

Semantics are the CPU kernels' (``backends/cpu/kernels/pool2d.py``, ``reduce.py``), i.e.
TFLite's reference kernels:

- pools: each window is clipped to the input and only the inside elements count: the
  average divides by that count (not the filter size); the max skips NaN (``std::max``
  with the running value first: ``m < v ? v : m`` from -inf); then the fused activation
  as a clamp (TANH not applied) with TFLite's activation range, which is [-FLT_MAX,
  FLT_MAX] even with no activation (+-inf saturates; a max window of only NaN / -inf
  gives lowest). How: one launch of ``cuda/pool2d.cu`` (one thread per output, the
  window's taps in a loop, the clamp fused); host emulation runs its numpy twin
  (``cuda/windows.py``) as that one launch.
- MEAN: a float32 sum over the axes (negative and repeated axes resolved as TFLite),
  divided by the number of reduced elements; ``keep_dims``; an empty input gives NaN.
  How: one launch of ``cuda/pool2d.cu``'s mean kernel (one thread per output, the reduced
  elements summed in a loop); an empty input is one fill.

Versions claimed: 1 for each (v2 int8 and v3 int16 are quantized versions).
"""

from __future__ import annotations

import numpy as np

from backends.gpu.cuda.windows import MeanCuda, Pool2DCuda
from backends.gpu.ops.conv import window_reason
from backends.gpu.ops.elementwise import FloatOp, fused_activation, fused_activation_reason
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator


def resolve_axes(values, rank: int) -> tuple[int, ...]:
    """TFLite's ``ResolveAxis``: wrap negative axes, drop duplicates, keep the order
    (ValueError for an axis out of range). A scalar reduces nothing."""
    if rank == 0:
        return ()
    resolved: list[int] = []
    for value in np.asarray(values).reshape(-1).tolist():
        axis = value + rank if value < 0 else value
        if not 0 <= axis < rank:
            raise ValueError(f"axis {value} is out of range for an input of rank {rank}")
        if axis not in resolved:
            resolved.append(axis)
    return tuple(resolved)


def axes_reason(node, tensors) -> str | None:
    """Why the (input, axes) of a reduction cannot run, or None: a constant INT32 axis
    list (or an empty one) whose axes are in range."""
    if len(node.inputs) != 2 or min(node.inputs) < 0:
        return f"expected inputs (input, axes), got {len(node.inputs)} inputs"
    x, axes = (tensors[i] for i in node.inputs)
    if axes.type != TensorType.INT32:
        return f"axes {axes.name!r} is {axes.type_name}; it must be INT32"
    if axes.num_elements and not axes.is_constant:
        return "the axes must be a constant tensor (the output shape depends on them)"
    try:
        resolve_axes(axis_values(axes), len(x.shape))
    except ValueError as error:
        return str(error)
    return None


def axis_values(axes) -> np.ndarray:
    """The axis list (an empty list is stored without a buffer)."""
    return np.asarray(axes.data) if axes.num_elements else np.zeros(0, np.int32)


class Pool2D(FloatOp):
    """AVERAGE_POOL_2D and MAX_POOL_2D version 1 (float32)."""

    ops = {B.AVERAGE_POOL_2D: 1, B.MAX_POOL_2D: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        x = tensors[node.inputs[0]]
        if len(x.shape) != 4:
            return f"input must be 4-D NHWC, got {list(x.shape)}"
        params = node.params
        if params.filter_height <= 0 or params.filter_width <= 0:
            return f"filter size must be positive, got {[params.filter_height, params.filter_width]}"
        _, reason = window_reason(x.shape, (params.filter_height, params.filter_width), params)
        return reason or fused_activation_reason(params)

    def prepare(self) -> None:
        params = self.params
        self.launcher = Pool2DCuda(
            self.op == B.MAX_POOL_2D, (params.filter_height, params.filter_width), (params.stride_h, params.stride_w),
            params.padding, fused_activation(params), self.storage, **self.device.launcher_arguments("pool2d.cu"),
        )

    def run(self, args):
        return [self.launcher(args[0])]


class Mean(FloatOp):
    """MEAN version 1 (float32) over a constant axis list."""

    ops = {B.MEAN: 1}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        return axes_reason(node, tensors)

    def prepare(self) -> None:
        x, axes = self.inputs
        values = axis_values(axes)
        self.axes = resolve_axes(values, len(x.shape))
        self.empty = x.num_elements == 0
        self.out_shape = tuple(self.outputs[0].shape)
        self.launcher = None if self.empty else MeanCuda(self.axes, self.storage, **self.device.launcher_arguments("pool2d.cu"))

    def run(self, args):
        if self.empty:
            return [self.xp.full(self.out_shape, np.nan, dtype=self.storage)]
        return [self.launcher(args[0], self.out_shape)]
