"""AVERAGE_POOL_2D, MAX_POOL_2D and MEAN (over constant axes) on the GPU.

Semantics are the CPU kernels' (``backends/cpu/kernels/pool2d.py``, ``reduce.py``), i.e.
TFLite's reference kernels:

- pools: each window is clipped to the input and only the inside elements count: the
  average divides by that count (not the filter size); the max skips NaN (``fmax``, as
  ``std::max`` with the running value first); then the fused activation as a clamp
  (TANH not applied). How: a loop over the filter taps; each tap combines the strided
  block of input it reads into the block of outputs where it falls inside the input
  (``conv.WindowGeometry.clipped_taps``, planned on the host at prepare), so no padded copy;
  then TFLite's activation range, which is [-FLT_MAX, FLT_MAX] even with no activation.
- MEAN: a float32 sum over the axes (negative and repeated axes resolved as TFLite),
  divided by the number of reduced elements; ``keep_dims``; an empty input gives NaN.

Versions claimed: 1 for each (v2 int8 and v3 int16 are quantized versions).
"""

from __future__ import annotations

import numpy as np

from backends.gpu.ops.conv import WindowGeometry, window_reason
from backends.gpu.ops.elementwise import FloatOp, clamp, fused_activation, fused_activation_reason, saturating_bounds
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
        g = WindowGeometry.of(
            self.inputs[0].shape, (params.filter_height, params.filter_width), params.padding,
            (params.stride_h, params.stride_w),
        )
        self.geometry = g
        self.is_max = self.op == B.MAX_POOL_2D
        self.tap_blocks = g.clipped_taps()
        self.identity = -np.inf if self.is_max else 0.0
        self.counts = None if self.is_max else self.upload(g.valid_counts(), self.compute_dtype)  # [OH, OW, 1]
        # TFLite's activation range, [lowest, max] of float32 even with no activation: +-inf
        # becomes +-FLT_MAX, and a max window of only NaN / -inf gives lowest.
        self.bounds = saturating_bounds(fused_activation(params))

    def run(self, args):
        xp, g = self.xp, self.geometry
        x = self.compute(args[0])
        out = xp.full((g.batch, g.out_h, g.out_w, g.channels), self.identity, dtype=self.compute_dtype)
        for out_block, in_block in self.tap_blocks:
            if self.is_max:
                out[out_block] = xp.fmax(out[out_block], x[in_block])  # NaN loses, as in TFLite
            else:
                out[out_block] += x[in_block]
        if self.counts is not None:
            out = out / self.counts
        return [self.store(clamp(xp, out, self.bounds))]


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
        self.keep_dims = bool(getattr(self.params, "keep_dims", False))
        self.count = int(np.prod([x.shape[a] for a in self.axes], dtype=np.int64))
        self.empty = x.num_elements == 0
        self.out_shape = tuple(self.outputs[0].shape)

    def run(self, args):
        xp = self.xp
        if self.empty:
            return [xp.full(self.out_shape, np.nan, dtype=self.storage)]
        x = self.compute(args[0])
        if not self.axes:
            return [self.store(x.copy()).reshape(self.out_shape)]
        total = xp.sum(x, axis=self.axes, keepdims=self.keep_dims, dtype=self.compute_dtype)
        return [self.store(total / self.compute_dtype.type(self.count)).reshape(self.out_shape)]
