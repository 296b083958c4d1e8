"""Reductions on the GPU: MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN over a constant
axis list (float32; MEAN and SUM also int8 / uint8, REDUCE_MAX / REDUCE_MIN also int8,
uint8, int32), and CUMSUM along a constant axis (float32).

Semantics are the CPU kernels' (``backends/cpu/kernels/reduce.py``,
``reduce_quantized.py``, ``cumsum.py``), i.e. TFLite's reference kernels:

- axes: negative ones wrap, repeated ones count once, an empty list reduces nothing (the
  input is copied), a scalar input is copied; ``keep_dims`` keeps the reduced axes with
  extent 1. The axis tensor must be constant (the output shape depends on it).
- MEAN of float32: a float32 sum over the axes divided by the number of reduced
  elements; an empty input gives NaN. How: one launch of ``cuda/pool2d.cu``'s mean kernel
  (one thread per output, the reduced elements summed in a loop); an empty input is one
  fill.
- SUM and REDUCE_PROD of float32 accumulate in float32 (in another order than TFLite's
  one-by-one loop: float32 rounding only). An empty input gives 0 (SUM) or 1 (PROD).
- REDUCE_MAX / REDUCE_MIN of float32 compare as TFLite's ``in > current`` starting from
  the lowest (highest) finite value: NaN is skipped, and a slot of only NaN or -inf
  (+inf) gives -FLT_MAX (FLT_MAX). When every axis is reduced TFLite starts from the
  first element instead: -inf survives, and a NaN first element is the result. An
  empty input gives -FLT_MAX (FLT_MAX). How: NaN replaced by -inf (+inf), one max (min),
  then the clamp to the finite range, or the first element's NaN put back.
- REDUCE_MAX / REDUCE_MIN of int8, uint8 and int32 compare raw values (exact); int8 and
  uint8 need the output to have the input's scale and zero point (TFLite checks it). An
  empty input gives the type's lowest (highest) value.
- MEAN and SUM of int8 / uint8 (``reference_ops::QuantizedMeanOrSum``), bit-exact with
  our CPU path (TFLite's reference arithmetic; LiteRT 2.3's reference SUM runs its uint8
  code on int8 data, a bug of that build that the CPU kernel documents and does not
  reproduce: int8 SUM equals the CPU path, uint8 SUM and MEAN equal BUILTIN_REF too).
  For each output element with ``n`` reduced input elements::

      acc = sum(q)                                 (int32, wrapping like TFLite's temp_sum)
      (m, e) = QuantizeMultiplier(double(s_in) / double(s_out)), 1/n folded in (MEAN only)
      out = clamp(MultiplyByQuantizedMultiplier(int32(acc - z_in * n), m, e) + z_out)

  with the type's range as the clamp (no fused activation). The multiplier
  (``mean_sum_multiplier``), its fold (``folded_multiplier``) and the requantization
  (``requantize_sums``) are the CPU kernel's own functions. An empty input gives 0. How:
  one launch of ``cuda/int8_windows.cu``'s quantized mean (a thread per output, the sum
  and the requantization fused); host emulation runs its twin as that one launch.
- CUMSUM: running float32 sums along the axis, ``exclusive`` (the first is 0, each sum
  leaves out its own element) and ``reverse`` (from the end of the axis).

Float results are stored in the storage dtype (float16 storage: -FLT_MAX becomes -inf).

Versions claimed (``schema/versioning/op_version.py``):

- MEAN 1 (float32, uint8) and 2 (int8); v3 (int16) is not claimed.
- SUM 1 (float32, uint8) and 2 (int8).
- REDUCE_PROD 1 (float32); v2 is int8/int16.
- REDUCE_MAX, REDUCE_MIN 1 (float32, uint8, int32) and 2 (int8); not 3 (int16).
- CUMSUM 1 (float32; int32/int64 CUMSUM, also v1, are refused by type): the op's only
  version.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels.reduce import reduced_shape, resolve_axes
from backends.cpu.kernels.reduce_quantized import folded_multiplier, mean_sum_multiplier
from backends.cpu.quantization import legacy_params
from backends.gpu.cuda.int8_windows import QuantizedMeanCuda, QuantizedMeanParams
from backends.gpu.cuda.windows import MeanCuda
from backends.gpu.ops.base import FloatOp
from backends.gpu.ops.moving_base import INT8_TYPES, MovingOp, quantization_differs
from backends.gpu.ops.quantized_base import QuantizedOp, parameter_reason, per_tensor
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


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


def require_reduced_shape(x, out, axes: tuple[int, ...], keep_dims: bool) -> None:
    """A ValueError unless ``out`` has the shape reducing ``x`` over ``axes`` gives (the
    CPU kernel's prepare set it; another node writing the same tensor may have resized
    it since)."""
    want = reduced_shape(x.shape, axes, keep_dims)
    if tuple(out.shape) != want:
        raise ValueError(
            f"output {out.name!r} has shape {list(out.shape)} but reducing {list(x.shape)} over axes "
            f"{list(axes)} gives {list(want)} (another node writes the same tensor?)"
        )


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


class _Reduce:
    """Shared prepare: the resolved axes, keep_dims, the output shape, the special cases."""

    def prepare_axes(self) -> None:
        x, axes = self.inputs
        self.axes = resolve_axes(axis_values(axes), len(x.shape))
        self.keep_dims = bool(getattr(self.params, "keep_dims", False))
        require_reduced_shape(x, self.outputs[0], self.axes, self.keep_dims)
        self.out_shape = tuple(self.outputs[0].shape)
        self.empty = x.num_elements == 0
        self.all_dims = len(self.axes) == len(x.shape)  # TFLite's IsReduceAllDims (a scalar too)


class FloatReduce(_Reduce, FloatOp):
    """SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN version 1 (float32) over a constant axis list."""

    ops = {B.SUM: 1, B.REDUCE_PROD: 1, B.REDUCE_MAX: 1, B.REDUCE_MIN: 1}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        return axes_reason(node, tensors)

    def prepare(self) -> None:
        self.prepare_axes()
        finfo = np.finfo(np.float32)
        self.is_max = self.op == B.REDUCE_MAX
        self.initial = {
            B.SUM: 0.0, B.REDUCE_PROD: 1.0, B.REDUCE_MAX: float(finfo.min), B.REDUCE_MIN: float(finfo.max),
        }[self.op]

    def run(self, args):
        xp = self.xp
        if self.empty:
            return [xp.full(self.out_shape, self.initial, dtype=self.storage)]
        x = self.compute(args[0])
        if self.op in (B.SUM, B.REDUCE_PROD):
            if not self.axes:
                return [self.store(x.copy()).reshape(self.out_shape)]
            reduce = xp.sum if self.op == B.SUM else xp.prod
            return [self.store(reduce(x, axis=self.axes, dtype=self.compute_dtype)).reshape(self.out_shape)]
        return [self.store(self.extreme(x)).reshape(self.out_shape)]

    def extreme(self, x):
        """REDUCE_MAX / REDUCE_MIN with TFLite's NaN and infinity rules (module docstring)."""
        xp = self.xp
        skipped = -np.inf if self.is_max else np.inf  # what NaN becomes: it never wins
        values = xp.where(xp.isnan(x), self.compute_dtype.type(skipped), x)
        if self.axes:
            values = (xp.max if self.is_max else xp.min)(values, axis=self.axes)
        if self.all_dims:  # started from the first element: -inf stays, its NaN wins
            first = x.reshape(-1)[0]
            return xp.where(xp.isnan(first), first, values)
        bound = self.compute_dtype.type(self.initial)
        return xp.maximum(values, bound) if self.is_max else xp.minimum(values, bound)


class IntegerReduceMaxMin(_Reduce, MovingOp):
    """REDUCE_MAX, REDUCE_MIN v1 (uint8, int32) and v2 (int8): raw values compared, over a
    constant axis list; int8/uint8 with the output's quantization."""

    ops = {B.REDUCE_MAX: 2, B.REDUCE_MIN: 2}
    index_inputs = (1,)
    data_types = (T.INT8, T.UINT8, T.INT32)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = axes_reason(node, tensors)
        if reason:
            return reason
        x, out = tensors[node.inputs[0]], tensors[node.outputs[0]]
        if x.type in INT8_TYPES:
            return quantization_differs(x, out)
        return None

    def prepare(self) -> None:
        self.prepare_axes()
        self.is_max = self.op == B.REDUCE_MAX
        self.dtype = np.dtype(self.outputs[0].dtype)
        info = np.iinfo(self.dtype)
        self.initial = int(info.min if self.is_max else info.max)

    def run(self, args):
        xp = self.xp
        if self.empty:
            return [xp.full(self.out_shape, self.initial, dtype=self.dtype)]
        x = args[0]
        if not self.axes:
            return [x.copy().reshape(self.out_shape)]
        reduce = xp.max if self.is_max else xp.min
        return [reduce(x, axis=self.axes).reshape(self.out_shape)]


class QuantizedMean(QuantizedOp):
    """MEAN and SUM v1 (uint8) and v2 (int8) over a constant axis list."""

    ops = {B.MEAN: 2, B.SUM: 2}  # float32 v1: Mean and FloatReduce above
    data_inputs = (0,)
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected inputs (input, axes), got {len(node.inputs)} inputs"
        x, axes = (tensors[i] for i in node.inputs)
        out = tensors[node.outputs[0]]
        if axes.type != T.INT32:
            return f"axes {axes.name!r} is {axes.type_name}; it must be INT32"
        if axes.num_elements and not axes.is_constant:
            return "the axes must be a constant tensor (the output shape depends on them)"
        try:
            resolve_axes(axes.data if axes.num_elements else np.zeros(0, np.int32), len(x.shape))
        except ValueError as error:
            return str(error)
        if not per_tensor(x) or not per_tensor(out):
            return "the input and the output must be quantized per tensor"
        if legacy_params(out)[0] == 0.0:
            return f"output {out.name!r} has scale 0"
        return parameter_reason(lambda: mean_sum_multiplier(x, out))

    def prepare(self) -> None:
        x, axes = self.inputs
        out = self.outputs[0]
        values = axes.data if axes.num_elements else np.zeros(0, np.int32)
        self.axes = resolve_axes(values, len(x.shape))
        self.keep_dims = bool(getattr(self.params, "keep_dims", False))
        self.count = int(np.prod([x.shape[a] for a in self.axes], dtype=np.int64))
        self.empty = x.num_elements == 0
        self.out_shape = tuple(out.shape)
        require_reduced_shape(x, out, self.axes, self.keep_dims)
        z_in, z_out = legacy_params(x)[1], legacy_params(out)[1]
        multiplier, shift = mean_sum_multiplier(x, out)
        if not self.empty:
            self.multiplier, self.shift = folded_multiplier(multiplier, shift, self.count, is_mean=self.op == B.MEAN)
        self.launcher = None
        if not self.empty:
            info = np.iinfo(x.dtype)
            params = QuantizedMeanParams(z_in * self.count, self.multiplier, self.shift, z_out, (int(info.min), int(info.max)))
            self.launcher = QuantizedMeanCuda(self.axes, params, x.dtype, **self.device.launcher_arguments(QuantizedMeanCuda.source))

    def run(self, args):
        if self.empty:
            return [self.xp.zeros(self.out_shape, dtype=self.outputs[0].dtype)]
        return [self.launcher(args[0], self.out_shape)]


class Cumsum(FloatOp):
    """CUMSUM version 1 (float32) along a constant axis; ``exclusive`` and ``reverse``."""

    ops = {B.CUMSUM: 1}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected inputs (input, axis), got {len(node.inputs)} inputs"
        x, axis = (tensors[i] for i in node.inputs)
        if axis.type != T.INT32:
            return f"axis {axis.name!r} is {axis.type_name}; it must be INT32"
        if not axis.is_constant:
            return "the axis must be a constant tensor (the GPU kernel plans the sums at prepare)"
        if axis.num_elements != 1:
            return f"the axis tensor must hold one value, it has shape {list(axis.shape)}"
        rank = len(x.shape)
        if rank < 1:
            return "the input must have at least one dimension"
        value = int(np.asarray(axis.data).reshape(-1)[0])
        if not -rank <= value < rank:
            return f"axis {value} is out of range for an input of rank {rank}"
        return None

    def prepare(self) -> None:
        x, axis = self.inputs
        rank = len(x.shape)
        self.axis = int(np.asarray(axis.data).reshape(-1)[0]) % rank
        self.exclusive = bool(getattr(self.params, "exclusive", False))
        self.reverse = bool(getattr(self.params, "reverse", False))
        self.shape = tuple(x.shape)

        def along(s: slice) -> tuple:
            return (slice(None),) * self.axis + (s,)

        # exclusive: y[0] = 0, y[1:] = cumsum(x[:-1]) (the CPU kernel's plan)
        self.head, self.body_in, self.body_out = along(slice(0, 1)), along(slice(0, -1)), along(slice(1, None))

    def run(self, args):
        xp = self.xp
        x = self.compute(args[0])
        if self.reverse:
            x = xp.flip(x, self.axis)
        if self.exclusive:
            y = xp.empty(self.shape, dtype=self.compute_dtype)
            y[self.head] = 0
            y[self.body_out] = xp.cumsum(x[self.body_in], axis=self.axis, dtype=self.compute_dtype)
        else:
            y = xp.cumsum(x, axis=self.axis, dtype=self.compute_dtype)
        if self.reverse:
            y = xp.flip(y, self.axis).copy()  # a flipped view: copied in order
        return [self.store(y)]
