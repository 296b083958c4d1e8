"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR on the GPU (float32).

Semantics are the CPU kernel's (``backends/cpu/kernels/resize.py``): the source indices
and weights are computed on the host at prepare with the CPU kernel's own float32
functions (TFLite's exact index arithmetic) and uploaded once; then one launch of
``cuda/resize.cu``: bilinear mixes the four neighbours in TFLite's order of operations,
``a*(1-dy)*(1-dx) + b*dy*(1-dx) + c*(1-dy)*dx + d*dy*dx``, nearest gathers. In host
emulation the launch runs its kernel's numpy twin (``cuda/windows.py``).

Versions claimed:

- RESIZE_BILINEAR 1 and 3 (align_corners; v3 adds half_pixel_centers). v2 is int8.
- RESIZE_NEAREST_NEIGHBOR 1 and 3 (v3: align_corners / half_pixel_centers). v2 is int8.
"""

from __future__ import annotations

import numpy as np

from backends.gpu.cuda.windows import ResizeBilinearCuda, ResizeNearestCuda, bilinear_tables, nearest_tables
from backends.gpu.ops.base import FloatOp
from backends.gpu.ops.moving_base import constant_shape_int_reason
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


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
        reason = constant_shape_int_reason(size, "size", (T.INT32,))
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
        rows, cols, wy, wx = bilinear_tables(h, w, out_h, out_w, *self.flags())
        self.tables = (self.upload(rows, np.int32), self.upload(cols, np.int32), self.upload(wy, np.float32), self.upload(wx, np.float32))
        self.launcher = ResizeBilinearCuda(self.storage, **self.device.launcher_arguments("resize.cu"))

    def run(self, args):
        return [self.launcher(args[0], *self.tables)]


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
        rows, cols = nearest_tables(h, w, out_h, out_w, *self.flags())
        self.rows, self.cols = self.upload(rows, np.int32), self.upload(cols, np.int32)
        self.launcher = ResizeNearestCuda(self.storage, **self.device.launcher_arguments("resize.cu"))

    def run(self, args):
        return [self.launcher(args[0], self.rows, self.cols)]
