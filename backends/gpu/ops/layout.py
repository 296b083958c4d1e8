"""Data movement on the GPU: CONCATENATION, RESHAPE, PAD, RESIZE_BILINEAR,
RESIZE_NEAREST_NEIGHBOR.

Semantics are the CPU kernels' (``backends/cpu/kernels/concat_split.py``, ``reshape.py``,
``pad.py``, ``resize.py``):

- CONCATENATION joins along ``axis`` (negative counts from the end), then applies the
  fused activation as a clamp (RELU, RELU6, RELU_N1_TO_1; NONE and TANH move the values
  unchanged, as the CPU kernel). How: one launch of ``cuda/layout.cu``'s concatenation
  kernel, which takes up to 8 input pointers by value (more inputs: one launch per 8).
- RESHAPE takes the output's static shape (set by the CPU kernel's prepare from the
  constant shape tensor or the params); a shape tensor known only at run time is rejected.
  How: no launch, a view of the input (see ``Reshape``).
- PAD pads with 0 by constant paddings. How: one launch of ``cuda/layout.cu``'s pad
  kernel, which writes every output element (the value, or the input's).
- RESIZE_*: the source indices and weights are computed on the host at prepare with the
  CPU kernel's own float32 functions (TFLite's exact index arithmetic) and uploaded once;
  then one launch of ``cuda/resize.cu``: bilinear mixes the four neighbours in TFLite's
  order of operations, ``a*(1-dy)*(1-dx) + b*dy*(1-dx) + c*(1-dy)*dx + d*dy*dx``, nearest
  gathers.

In host emulation each of these launches runs its kernel's numpy twin
(``cuda/layout.py``, ``cuda/windows.py``) as one launch.

Versions claimed:

- CONCATENATION 1, PAD 1: v2+ are int8/int16/uint32/int4/bool or rank 5 (the int8 ones:
  ``layout_quantized.py``).
- RESHAPE 1: the op has a single version.
- RESIZE_BILINEAR 1 and 3 (align_corners; v3 adds half_pixel_centers). v2 is int8.
- RESIZE_NEAREST_NEIGHBOR 1 and 3 (v3: align_corners / half_pixel_centers). v2 is int8.
"""

from __future__ import annotations

import numpy as np

from backends.gpu.cuda.layout import ConcatenationCuda, PadCuda
from backends.gpu.cuda.windows import ResizeBilinearCuda, ResizeNearestCuda, bilinear_tables, nearest_tables
from backends.gpu.ops.elementwise import FloatOp, fused_activation, fused_activation_reason, input_tensor
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
        self.launcher = ConcatenationCuda(
            int(self.params.axis), fused_activation(self.params), self.storage, **self.device.launcher_arguments("layout.cu")
        )

    def run(self, args):
        # Not xp.concatenate: for more than 8 arrays CuPy uploads a table of their addresses
        # from host memory (a copy a CUDA graph cannot capture); the kernel takes the
        # pointers as arguments.
        return [self.launcher(args)]


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
        # A view of the input: no launch (a copy only if the input is not contiguous). The
        # output may share the input's device buffer because nothing in a partition writes
        # into a value after the op that made it: every op writes only arrays it allocated
        # (the in-place epilogues too), the partition's input buffers are refilled only
        # before the ops run, and hand-offs and downloads copy out of the values. So the
        # view always holds the input's current values, eagerly and in a replayed CUDA
        # graph (tests/gpu/test_layout_kernels.py checks those cases).
        return [self.store(args[0]).reshape(self.out_shape)]


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
        self.paddings = np.asarray(self.inputs[1].data).astype(np.int64).reshape(len(x.shape), 2).tolist()
        self.launcher = PadCuda(self.storage, **self.device.launcher_arguments("layout.cu"))

    def run(self, args):
        return [self.launcher(args[0], self.paddings, 0.0)]


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
