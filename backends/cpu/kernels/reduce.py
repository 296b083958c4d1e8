"""MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL: reduce a tensor
over the axes listed in a second (int32) tensor.

Semantics of TFLite's reference kernels (``kernels/reduce.cc``, ``reference/reduce.h``):

- axes may be negative (counted from the end) and repeated (duplicates are ignored);
  an empty axis list reduces nothing; a scalar input is copied;
- ``keep_dims`` keeps every reduced axis with extent 1;
- the axis tensor need not be constant: then the output shape is only known at invoke
  (a dynamic output, as in TFLite);
- accumulation happens in the input type (float32 sums in float32, int32 sums wrap),
  except MEAN of int32 which sums in int64; MEAN divides the sum by the number of
  reduced elements (integer MEAN truncates toward zero, as C++ ``/`` does). TFLite adds
  float32 values one by one; numpy (pairwise) and BLAS (blocked) add them in another
  order, which changes results by float32 rounding only (well inside 1e-5 relative);
- an empty input gives the reducer's initial value: 0 for SUM, 1 for PROD, the type's
  lowest/highest finite value for MAX/MIN, false/true for ANY/ALL, NaN for a float MEAN
  (0 for an integer MEAN);
- MAX/MIN compare with ``in > current`` starting from the lowest finite value, so NaNs
  are skipped (a slot of only NaN or -inf gives the lowest finite value). When every
  axis is reduced TFLite starts from the first element instead, so a NaN there wins.

Version 1 of each op is implemented for its non-quantized types; later versions (int8,
int16) are quantized (``reduce_quantized.py``), except REDUCE_PROD v2, registered here too
for the float and integer types, as TFLite's kernel looks at the types only.

Speed: with constant axes the plan (and, for float MEAN, the divisor as an array of the
output's shape, dividing on numpy's same-shape path) is made at prepare; float SUM and
MEAN call the reduction with the views of the arena buffers made once per allocation.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import require_planned_shapes
from schema.enums import BuiltinOperator, TensorType, tensor_type_name

try:  # the C implementation behind np.einsum(optimize=False), without its Python wrapper
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # pragma: no cover - older numpy
    _einsum = np.einsum

B = BuiltinOperator
T = TensorType

#: Input types each op implements at version 1 (uint8 at v1 is quantized: not here).
SUPPORTED_TYPES = {
    B.MEAN: (T.FLOAT32, T.INT32, T.INT64),
    B.SUM: (T.FLOAT32, T.INT32, T.INT64),
    B.REDUCE_PROD: (T.FLOAT32, T.INT32, T.INT64),
    B.REDUCE_MAX: (T.FLOAT32, T.INT32, T.INT64, T.BOOL),
    B.REDUCE_MIN: (T.FLOAT32, T.INT32, T.INT64, T.BOOL),
    B.REDUCE_ANY: (T.BOOL,),
    B.REDUCE_ALL: (T.BOOL,),
}


def resolve_axes(axis_values: np.ndarray, rank: int) -> tuple[int, ...]:
    """TFLite's ``ResolveAxis``: wrap negative axes, drop duplicates, keep the order."""
    if rank == 0:
        return ()  # a scalar: nothing to reduce, whatever the axis list says
    resolved: list[int] = []
    for value in np.asarray(axis_values).reshape(-1).tolist():
        axis = value + rank if value < 0 else value
        if not 0 <= axis < rank:
            raise ValueError(f"axis {value} is out of range for an input of rank {rank}")
        if axis not in resolved:
            resolved.append(axis)
    return tuple(resolved)


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _lowest(dtype: np.dtype):
    if dtype == np.bool_:
        return False
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype: np.dtype):
    if dtype == np.bool_:
        return True
    return np.finfo(dtype).max if dtype.kind == "f" else np.iinfo(dtype).max


class _Plan:
    """What one (input shape, axes, keep_dims) needs at invoke: built once per shape."""

    def __init__(self, shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool) -> None:
        self.axes = axes
        self.keep_dims = keep_dims
        self.out_shape = reduced_shape(shape, axes, keep_dims)
        self.count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        self.empty = int(np.prod(shape, dtype=np.int64)) == 0
        # TFLite's IsReduceAllDims: every axis reduced (a scalar counts as that).
        self.all_dims = len(axes) == len(shape)
        # Reducing the trailing axes of a row-major array is a matrix-vector product with
        # ones (BLAS: several times faster than numpy's reduction over a contiguous axis).
        rank = len(shape)
        self.trailing_sum = bool(axes) and sorted(axes) == list(range(rank - len(axes), rank))
        if self.trailing_sum:
            self.rows = int(np.prod(shape[: rank - len(axes)], dtype=np.int64))
        self.ones = np.ones(self.count, dtype=np.float32)  # used by float SUM and MEAN
        # Reducing consecutive axes followed by kept axes of 2 or more values in all
        # ([A, R, K], K >= 2): numpy adds the R slices one after the other, with the K
        # values as its inner loop; einsum "irk->ik" adds in that same order (checked bit
        # for bit) at a fraction of the cost (one inner loop per slice, not per value).
        sorted_axes = sorted(axes)
        self.middle_sum = None
        if axes and not self.trailing_sum and sorted_axes == list(range(sorted_axes[0], sorted_axes[-1] + 1)):
            leading = int(np.prod(shape[: sorted_axes[0]], dtype=np.int64))
            trailing = int(np.prod(shape[sorted_axes[-1] + 1 :], dtype=np.int64))
            if trailing >= 2 and self.count >= 1:
                self.middle_sum = (leading, self.count, trailing)
        self.divisors = None  # float MEAN: the count as an array of the output's shape (made on use)
        self.bound = (None, None)

    def divisors_for(self, out: np.ndarray) -> np.ndarray:
        """Float MEAN's divisor: the count, as an array of the output's shape and type."""
        divisors = self.divisors
        if divisors is None or divisors.shape != out.shape or divisors.dtype != out.dtype:
            divisors = self.divisors = np.full(out.shape, self.count, dtype=out.dtype)
        return divisors

    def bind(self, x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
        """Float SUM of ``x`` into ``out`` as a function of no argument (``_float_sum``,
        with its reshaped views made once for these two buffers)."""
        if self.bound[0] is not x or self.bound[1] is not out:
            # (an array's own dot method: the same BLAS call as np.matmul at a fraction of
            # its call cost, and without np.dot's dispatch)
            if self.trailing_sum and x.flags.c_contiguous and x.dtype == np.float32:
                matrix, vector = x.reshape(self.rows, self.count), out.reshape(self.rows)
                ones, dot = self.ones, matrix.dot
                self.summed = lambda: dot(ones, vector)
            elif self.trailing_sum:  # (a reshape of a non-contiguous array is a copy: not kept)
                return lambda: _float_sum(x, self, out)
            elif self.middle_sum is not None and x.flags.c_contiguous and x.dtype == np.float32:
                leading, count, trailing = self.middle_sum
                if leading == 1:  # ones [1, R] @ x [R, K]: a BLAS sum (another order of the additions)
                    ones, matrix, row = self.ones.reshape(1, count), x.reshape(count, trailing), out.reshape(1, trailing)
                    dot = ones.dot
                    self.summed = lambda: dot(matrix, row)
                else:
                    slices, rows = x.reshape(leading, count, trailing), out.reshape(leading, trailing)
                    self.summed = lambda: _einsum("irk->ik", slices, out=rows)
            else:
                # (float32 sums in float32 by default: no dtype argument, which costs ~2 us a call)
                add, axes, keep_dims = np.add.reduce, self.axes, self.keep_dims
                if x.dtype == np.float32:
                    self.summed = lambda: add(x, axes, None, out, keep_dims)  # (positional: cheaper)
                else:
                    self.summed = lambda: add(x, axis=axes, dtype=x.dtype, keepdims=keep_dims, out=out)
            self.bound = (x, out)
        return self.summed


@register(B.MEAN, 1, 1)  # v1: float32, int32, int64 (and quantized uint8, not here); v2 int8; v3 int16
@register(B.SUM, 1, 1)  # v1: float32, int32, int64 (and quantized uint8, not here); v2 int8
@register(B.REDUCE_PROD, 1, 2)  # v1: float32, int32, int64; v2 int8/int16 (quantized: reduce_quantized.py)
@register(B.REDUCE_MAX, 1, 1)  # v1: float32, int32, int64, bool (and quantized uint8, not here); v2 int8; v3 int16
@register(B.REDUCE_MIN, 1, 1)  # v1: float32, int32, int64, bool (and quantized uint8, not here); v2 int8; v3 int16
@register(B.REDUCE_ANY, 1, 1)  # v1: bool (the only version)
@register(B.REDUCE_ALL, 1, 1)  # v1: bool (the only version)
class Reduce(CpuKernel):
    """MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL, version 1."""

    def prepare(self) -> None:
        data, axis = self.inputs
        allowed = SUPPORTED_TYPES[self.op]
        if data is not None and data.type not in allowed and data.type in (T.UINT8, T.INT8, T.INT16):
            raise self.unsupported(
                f"input {data.name!r} has type {data.type_name}: quantized reductions are not "
                f"implemented yet; this kernel supports {', '.join(tensor_type_name(t) for t in allowed)}"
            )
        self.require_types(data, *allowed)
        self.require_types(axis, T.INT32, role="axis")
        self.require_types(self.outputs[0], data.type, role="output")
        self.keep_dims = bool(self.params.keep_dims) if self.params is not None else False
        self.reducer = self._reducer()
        if axis.is_constant or axis.num_elements == 0:
            # An empty axis list is stored without a buffer (so it is not "constant").
            values = axis.data if axis.num_elements else np.zeros(0, np.int32)
            self.plan = _Plan(data.shape, resolve_axes(values, len(data.shape)), self.keep_dims)
            self.planned_shapes = [(data, tuple(data.shape)), (self.outputs[0], self.plan.out_shape)]
            self.outputs[0].resize(self.plan.out_shape)
        else:
            self.plan = None
            self.outputs[0].set_dynamic()

    def bind(self) -> Callable[[], None]:
        """Float MEAN and SUM over constant axes as a function of no argument (the plan's
        views of this allocation's buffers); ``invoke`` otherwise."""
        plan = self.plan
        if plan is not None and self.buffers_are_fixed():
            require_planned_shapes(self, self.planned_shapes)
        if plan is None or plan.empty or not self.buffers_are_fixed() or self.reducer not in (_mean_float, _bound_float_sum):
            return self.invoke
        x, out = self.inputs[0].data, self.outputs[0].data
        summed = plan.bind(x, out)
        if self.reducer is _bound_float_sum:
            return summed
        divisors, divide = plan.divisors_for(out), np.divide

        def mean() -> None:
            summed()
            divide(out, divisors, out)  # (positional: cheaper)

        return mean

    def invoke(self) -> None:
        x = self.inputs[0].data
        if self.plan is not None:
            out = self.outputs[0].data
            if self.reducer is _mean_float and not self.plan.empty:  # (the common case, inlined)
                self.plan.bind(x, out)()
                np.divide(out, self.plan.divisors_for(out), out=out)
                return
            self.reducer(x, self.plan, out)
            return
        plan = _Plan(x.shape, resolve_axes(self.inputs[1].data, x.ndim), self.keep_dims)
        out = np.empty(plan.out_shape, dtype=x.dtype)
        self.reducer(x, plan, out)
        self.outputs[0].set_data(out)

    # -- the reducers: each writes reduce(x over plan.axes) into out -------------------------
    def _reducer(self) -> Callable[[np.ndarray, _Plan, np.ndarray], None]:
        dtype = self.inputs[0].dtype
        if self.op == B.MEAN:
            return _mean_float if dtype.kind == "f" else _mean_integer
        if self.op == B.SUM:
            return _bound_float_sum if dtype.kind == "f" else _ufunc_reducer(np.add)
        if self.op == B.REDUCE_PROD:
            return _ufunc_reducer(np.multiply)
        if self.op == B.REDUCE_ANY:
            return _ufunc_reducer(np.logical_or)
        if self.op == B.REDUCE_ALL:
            return _ufunc_reducer(np.logical_and)
        is_max = self.op == B.REDUCE_MAX
        if dtype.kind == "f":
            return _nan_skipping_extreme(np.fmax if is_max else np.fmin, _lowest(dtype) if is_max else _highest(dtype))
        return _extreme(np.maximum if is_max else np.minimum, _lowest(dtype) if is_max else _highest(dtype))


def _ufunc_reducer(ufunc: np.ufunc) -> Callable[[np.ndarray, _Plan, np.ndarray], None]:
    """Accumulate in the input's own type (int32 sums wrap as in C++)."""

    def reduce(x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
        ufunc.reduce(x, axis=plan.axes, dtype=x.dtype, keepdims=plan.keep_dims, out=out)

    return reduce


def _bound_float_sum(x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
    """``_float_sum`` through the plan's views of these buffers."""
    plan.bind(x, out)()


def _float_sum(x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
    """float32 sum (in float32, as TFLite; the order of the additions may differ)."""
    if plan.trailing_sum:
        np.matmul(x.reshape(plan.rows, plan.count), plan.ones, out=out.reshape(plan.rows))
    else:
        np.add.reduce(x, axis=plan.axes, dtype=x.dtype, keepdims=plan.keep_dims, out=out)


def _extreme(ufunc: np.ufunc, initial) -> Callable[[np.ndarray, _Plan, np.ndarray], None]:
    def reduce(x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
        ufunc.reduce(x, axis=plan.axes, keepdims=plan.keep_dims, initial=initial, out=out)

    return reduce


def _nan_skipping_extreme(ufunc: np.ufunc, initial) -> Callable[[np.ndarray, _Plan, np.ndarray], None]:
    """Float MAX/MIN: fmax/fmin skip NaN like ``in > current`` does."""

    def reduce(x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
        if plan.all_dims and not plan.empty:
            # TFLite's ReduceAllDims starts from x[0] (not from the lowest value):
            # -inf survives, and a leading NaN is never replaced.
            ufunc.reduce(x, axis=plan.axes, keepdims=plan.keep_dims, out=out)
            if np.isnan(x.flat[0]):
                out[...] = np.nan
            return
        ufunc.reduce(x, axis=plan.axes, keepdims=plan.keep_dims, initial=initial, out=out)

    return reduce


def _mean_float(x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
    """float32 sum, then divide by the (float) number of reduced elements."""
    if plan.empty:
        out[...] = np.nan
        return
    plan.bind(x, out)()
    np.divide(out, plan.divisors_for(out), out=out)


def _mean_integer(x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
    """int64 sum, then C++ integer division (truncation toward zero)."""
    if plan.empty:
        out[...] = 0  # TFLite writes numeric_limits<int>::quiet_NaN(), which is 0
        return
    total = np.add.reduce(x, axis=plan.axes, dtype=np.int64, keepdims=plan.keep_dims)
    out[...] = (total - np.fmod(total, plan.count)) // plan.count
