"""Data movement on the GPU: CONCATENATION, RESHAPE, PAD, RESIZE_BILINEAR,
RESIZE_NEAREST_NEIGHBOR.

Semantics are the CPU kernels' (``backends/cpu/kernels/concat_split.py``, ``reshape.py``,
``pad.py``, ``resize.py``):

- CONCATENATION joins along ``axis`` (negative counts from the end), then applies the
  fused activation as a clamp (TANH not applied, as TFLite's float kernels).
- RESHAPE takes the output's static shape (set by the CPU kernel's prepare from the
  constant shape tensor or the params); a shape tensor known only at run time is rejected.
- PAD pads with 0 by constant paddings.
- RESIZE_*: the source indices and weights are computed on the host at prepare with the
  CPU kernel's own float32 functions (TFLite's exact index arithmetic), then one gather
  per axis; bilinear mixes the four neighbours in TFLite's order of operations.

Versions claimed:

- CONCATENATION 1, PAD 1: v2+ are int8/int16/uint32/int4/bool or rank 5 (the int8 ones:
  ``layout_quantized.py``).
- RESHAPE 1: the op has a single version.
- RESIZE_BILINEAR 1 and 3 (align_corners; v3 adds half_pixel_centers). v2 is int8.
- RESIZE_NEAREST_NEIGHBOR 1 and 3 (v3: align_corners / half_pixel_centers). v2 is int8.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels.resize import bilinear_float_coordinates, nearest_indices
from backends.gpu.ops.elementwise import (
    FloatOp,
    clamp,
    clamp_bounds,
    fused_activation,
    fused_activation_reason,
    input_tensor,
)
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


def _constant_int_reason(tensor, what: str, types=(T.INT32, T.INT64)) -> str | None:
    if tensor is None:
        return f"the {what} input is missing"
    if tensor.type not in types:
        return f"{what} {tensor.name!r} is {tensor.type_name}; it must be {' or '.join(TensorType(t).name for t in types)}"
    if not tensor.is_constant:
        return f"the {what} must be a constant tensor (the output shape depends on it)"
    return None


def concatenation_shape_reason(node, tensors) -> str | None:
    """Why a CONCATENATION's inputs cannot be joined (any element type), or None."""
    if not node.inputs or min(node.inputs) < 0:
        return "every input must be present"
    inputs = [tensors[i] for i in node.inputs]
    rank = len(inputs[0].shape)
    if rank == 0:
        return "scalars cannot be concatenated on the GPU"
    axis = int(getattr(node.params, "axis", 0))
    if not -rank <= axis < rank:
        return f"axis {axis} is out of range for rank {rank}"
    axis %= rank
    for t in inputs:
        if len(t.shape) != rank or any(d != e for i, (d, e) in enumerate(zip(t.shape, inputs[0].shape)) if i != axis):
            return f"input shapes {[list(t.shape) for t in inputs]} differ outside axis {axis}"
    return None


class Concatenation(FloatOp):
    """CONCATENATION version 1 (float32, any number of inputs, constant or not)."""

    ops = {B.CONCATENATION: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        return concatenation_shape_reason(node, tensors) or fused_activation_reason(node.params)

    def prepare(self) -> None:
        rank = len(self.inputs[0].shape)
        self.axis = int(self.params.axis) % rank
        self.out_shape = tuple(self.outputs[0].shape)
        self.bounds = clamp_bounds(fused_activation(self.params))

    def run(self, args):
        # One copy per input into its place: not xp.concatenate, which for more than 8
        # arrays makes CuPy upload a table of their addresses from host memory (a copy a
        # CUDA graph cannot capture).
        out = self.xp.empty(self.out_shape, dtype=self.storage)
        start = 0
        for a in args:
            stop = start + a.shape[self.axis]
            out[(slice(None),) * self.axis + (slice(start, stop),)] = a
            start = stop
        return [clamp(self.xp, out, self.bounds)]


class Reshape(FloatOp):
    """RESHAPE version 1 (float32): the values under the output's static shape."""

    ops = {B.RESHAPE: 1}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if not node.inputs or node.inputs[0] < 0:
            return "the input is missing"
        shape = input_tensor(node, tensors, 1)
        # As TFLite (and the CPU kernel), the shape tensor is read only when it is an int32
        # vector; otherwise the params give the new shape.
        if shape is not None and len(shape.shape) == 1 and shape.type == T.INT32 and not shape.is_constant:
            return "the shape tensor must be constant (a shape known only at run time is not supported)"
        return None

    def prepare(self) -> None:
        self.out_shape = tuple(self.outputs[0].shape)

    def run(self, args):
        # A copy, not a view: the output must not alias the input's device buffer.
        return [self.store(args[0]).reshape(self.out_shape).copy()]


class Pad(FloatOp):
    """PAD version 1 (float32, rank <= 4, constant paddings, value 0)."""

    ops = {B.PAD: 1}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected inputs (input, paddings), got {len(node.inputs)} inputs"
        x, paddings = (tensors[i] for i in node.inputs)
        reason = _constant_int_reason(paddings, "paddings")
        if reason:
            return reason
        rank = len(x.shape)
        if paddings.shape != (rank, 2):
            return f"paddings has shape {list(paddings.shape)}; it must be [{rank}, 2]"
        if (np.asarray(paddings.data) < 0).any():
            return f"paddings {np.asarray(paddings.data).tolist()} has a negative entry"
        return None

    def prepare(self) -> None:
        x = self.inputs[0]
        pads = np.asarray(self.inputs[1].data).astype(np.int64).reshape(len(x.shape), 2)
        self.inner = tuple(slice(int(a), int(a) + d) for d, (a, _) in zip(x.shape, pads))
        self.out_shape = tuple(self.outputs[0].shape)

    def run(self, args):
        out = self.xp.zeros(self.out_shape, dtype=self.storage)
        out[self.inner] = args[0]
        return [out]


class _Resize(FloatOp):
    """Shared checks: 4-D input, constant int32 size [2]."""

    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected inputs (input, size), got {len(node.inputs)} inputs"
        x, size = (tensors[i] for i in node.inputs)
        if len(x.shape) != 4:
            return f"the input must be 4-D (NHWC), it has shape {list(x.shape)}"
        reason = _constant_int_reason(size, "size", (T.INT32,))
        if reason:
            return reason
        if size.shape != (2,):
            return f"size must have shape [2], it has {list(size.shape)}"
        return cls.size_reason([int(v) for v in np.asarray(size.data).reshape(-1)], node.params)

    @classmethod
    def size_reason(cls, size, params) -> str | None:
        return None

    def flags(self) -> tuple[bool, bool]:
        return bool(getattr(self.params, "align_corners", False)), bool(getattr(self.params, "half_pixel_centers", False))


class ResizeBilinear(_Resize):
    """RESIZE_BILINEAR versions 1 and 3 (float32; align_corners, v3 half_pixel_centers)."""

    ops = {B.RESIZE_BILINEAR: frozenset({1, 3})}  # v3: half_pixel_centers; v2 is int8

    @classmethod
    def size_reason(cls, size, params):
        if min(size) <= 0:
            return f"size {size} must be positive"
        if getattr(params, "align_corners", False) and getattr(params, "half_pixel_centers", False):
            return "half_pixel_centers and align_corners cannot both be true"
        return None

    def prepare(self) -> None:
        _, h, w, _ = self.inputs[0].shape
        _, out_h, out_w, _ = self.outputs[0].shape
        align, half = self.flags()
        y0, y1, dy = bilinear_float_coordinates(h, out_h, align, half)
        x0, x1, dx = bilinear_float_coordinates(w, out_w, align, half)
        one = np.float32(1)
        self.rows = (self.upload(y0, np.int64), self.upload(y1, np.int64))
        self.cols = (self.upload(x0, np.int64), self.upload(x1, np.int64))
        f = self.compute_dtype
        self.wy = (self.upload((one - dy)[None, :, None, None], f), self.upload(dy[None, :, None, None], f))
        self.wx = (self.upload((one - dx)[None, None, :, None], f), self.upload(dx[None, None, :, None], f))

    def run(self, args):
        xp = self.xp
        x = self.compute(args[0])
        (y0, y1), (x0, x1) = self.rows, self.cols
        (wy0, wy1), (wx0, wx1) = self.wy, self.wx
        top, bottom = xp.take(x, y0, axis=1), xp.take(x, y1, axis=1)
        tl, tr = xp.take(top, x0, axis=2), xp.take(top, x1, axis=2)
        bl, br = xp.take(bottom, x0, axis=2), xp.take(bottom, x1, axis=2)
        # TFLite's order: a*(1-dy)*(1-dx) + b*dy*(1-dx) + c*(1-dy)*dx + d*dy*dx.
        out = tl * wy0 * wx0 + bl * wy1 * wx0 + tr * wy0 * wx1 + br * wy1 * wx1
        return [self.store(out)]


class ResizeNearestNeighbor(_Resize):
    """RESIZE_NEAREST_NEIGHBOR versions 1 and 3 (float32; v3 align_corners /
    half_pixel_centers)."""

    ops = {B.RESIZE_NEAREST_NEIGHBOR: frozenset({1, 3})}  # v3: half_pixel_centers; v2 is int8

    @classmethod
    def size_reason(cls, size, params):
        if min(size) < 0:
            return f"size {size} must not be negative"
        return None

    def prepare(self) -> None:
        _, h, w, _ = self.inputs[0].shape
        _, out_h, out_w, _ = self.outputs[0].shape
        align, half = self.flags()
        rows = nearest_indices(h, out_h, align, half) if out_h else np.zeros(0, np.int64)
        cols = nearest_indices(w, out_w, align, half) if out_w else np.zeros(0, np.int64)
        self.rows, self.cols = self.upload(rows, np.int64), self.upload(cols, np.int64)

    def run(self, args):
        xp = self.xp
        return [self.store(xp.take(xp.take(args[0], self.rows, axis=1), self.cols, axis=2))]
