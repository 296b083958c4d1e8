"""SLICE and STRIDED_SLICE.

STRIDED_SLICE follows TFLite's ``strided_slice.cc`` (``BuildStridedSliceParams``: the
ellipsis and new-axis masks are folded into an "effective" input shape with begin/end
masks) and ``reference/strided_slice.h`` (``StartForAxis`` / ``EndForAxis``: negative
indices count from the end, then clamp to ``[0, size]`` for positive strides and
``[-1, size - 1]`` for negative ones; ``offset`` makes ``end`` relative to ``begin``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import INDEX_TYPES, MOVABLE_TYPES, inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

#: STRING too: TFLite slices strings at every version (v3 of SLICE and v5 of STRIDED_SLICE
#: are the versions the converter stamps for them); complex64 (not complex128) at every version.
SLICE_TYPES = (*MOVABLE_TYPES, TensorType.UINT32, TensorType.STRING, TensorType.COMPLEX64)
#: What SLICE (not STRIDED_SLICE) moves beyond SLICE_TYPES: LiteRT's kernel copies by element size.
SLICE_EXTRA_TYPES = (TensorType.INT4, TensorType.FLOAT16, TensorType.BFLOAT16, TensorType.UINT16, TensorType.FLOAT64)


# --------------------------------------------------------------------------------------
# SLICE
# --------------------------------------------------------------------------------------


# v1: float32, int32, int64, uint8, bool up to 4-D; v2: int8; v3: string; v4: int16;
# v5: more than 4 dimensions; v6: uint32; v7: int4 (one value an element here). v8: LiteRT 2.3
# registers it (TFLite's tables predate it); its kernel copies elements by size, so it adds
# float16, bfloat16, uint16 and float64, and so does this one at every version.
@register(BuiltinOperator.SLICE, 1, 8)
class Slice(CpuKernel):
    """SLICE v1-v8: ``size`` elements from ``begin`` along each axis (-1: to the end)."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, begin, size = self.inputs
        self.require_types(x, *SLICE_TYPES, *SLICE_EXTRA_TYPES)
        self.require_types(begin, *INDEX_TYPES, role="begin")
        self.require_types(size, begin.type, role="size")
        self.require_types(self.outputs[0], x.type, role="output")
        for t, role in ((begin, "begin"), (size, "size")):
            if t.shape != (len(x.shape),):
                raise self.unsupported(f"{role} has shape {list(t.shape)}; it must be [{len(x.shape)}]")
        self.from_values = not (begin.is_constant and size.is_constant)
        if self.from_values:
            self.outputs[0].set_dynamic()
            return
        self.index, shape = self.plan(x.shape)
        self.outputs[0].resize(shape)

    def plan(self, shape: tuple[int, ...]) -> tuple[tuple[slice, ...], list[int]]:
        begins, sizes = int_values(self.inputs[1]), int_values(self.inputs[2])
        index, out_shape = [], []
        for axis, (dim, b, s) in enumerate(zip(shape, begins, sizes)):
            if b < 0 or b > dim:
                raise self.unsupported(f"begin {begins} is out of range for input shape {list(shape)} (axis {axis})")
            if s == -1:
                s = dim - b
            elif s < 0 or b + s > dim:
                raise self.unsupported(f"begin {begins} and size {sizes} do not fit input shape {list(shape)}")
            index.append(slice(b, b + s))
            out_shape.append(s)
        return tuple(index), out_shape

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0]
        if self.from_values:
            index, _ = self.plan(x.shape)
            value, data = x[index], out.data
            if data is not None and data.shape == value.shape and data.dtype == value.dtype and data.flags.writeable:
                np.copyto(data, value)  # (the same output array while its shape holds, as LiteRT)
            else:
                out.set_data(value.copy())
        else:
            np.copyto(out.data, x[self.index])


# --------------------------------------------------------------------------------------
# STRIDED_SLICE
# --------------------------------------------------------------------------------------


def _bit(mask: int, i: int) -> bool:
    return bool(mask & (1 << i))


@dataclass
class _Effective:
    """The node's begin/end/strides over the effective input shape (TFLite's op_params)."""

    shape: list[int]  # input shape with the new axes inserted
    begin: list[int]
    end: list[int]
    strides: list[int]
    original_axis: list[int | None]  # index into the begin/end tensors, None for added axes
    begin_mask: int = 0
    end_mask: int = 0
    shrink_mask: int = 0


def effective_params(input_shape, begin, end, strides, params) -> _Effective:
    """TFLite's ``BuildStridedSliceParams``: expand the ellipsis, insert new axes.

    A ValueError when begin, end and strides differ in length, or when the masks ask for
    more axes than the input has (an ellipsis after new axes that took its place)."""
    begin_count = len(begin)
    input_dims = len(input_shape)
    if not begin_count == len(end) == len(strides):
        raise ValueError(f"begin, end and strides have {begin_count}, {len(end)} and {len(strides)} values")
    ellipsis_mask, new_axis_mask = params.ellipsis_mask, params.new_axis_mask
    num_add_axis = sum(1 for i in range(begin_count) if not _bit(ellipsis_mask, i) and _bit(new_axis_mask, i))
    dims = input_dims + num_add_axis

    effective_ellipsis, effective_new_axis = 0, 0
    ellipsis_start, expanded_ellipsis = dims, 0
    i = 0
    while i < dims:
        if _bit(ellipsis_mask, i):
            ellipsis_start = i
            ellipsis_end = max(i + 1, min(i + 1 + num_add_axis + input_dims - begin_count, dims))
            expanded_ellipsis = ellipsis_end - ellipsis_start - 1
            while i < ellipsis_end:
                effective_ellipsis |= 1 << i
                i += 1
            continue
        if _bit(new_axis_mask, i - expanded_ellipsis):
            effective_new_axis |= 1 << i
        i += 1

    e = _Effective(shape=[0] * dims, begin=[0] * dims, end=[0] * dims, strides=[1] * dims, original_axis=[None] * dims)
    added_ellipsis, added_axes = 0, 0
    for i in range(dims):
        if _bit(effective_ellipsis, i):
            added_ellipsis = max(0, i - ellipsis_start)
            e.begin_mask |= 1 << i
            e.end_mask |= 1 << i
            e.shape[i] = _input_dim(input_shape, i - added_axes)
        elif _bit(effective_new_axis, i):
            e.end[i] = 1
            e.shape[i] = 1
            added_axes += 1
        elif i >= begin_count + expanded_ellipsis:
            e.begin_mask |= 1 << i
            e.end_mask |= 1 << i
            e.shape[i] = _input_dim(input_shape, i - added_axes)
        else:
            original = i - added_ellipsis
            e.original_axis[i] = original
            e.begin[i], e.end[i], e.strides[i] = begin[original], end[original], strides[original]
            if _bit(params.begin_mask, original):
                e.begin_mask |= 1 << i
            if _bit(params.end_mask, original):
                e.end_mask |= 1 << i
            if _bit(params.shrink_axis_mask, original):
                e.shrink_mask |= 1 << i
            e.shape[i] = _input_dim(input_shape, i - added_axes)
    return e


def _input_dim(input_shape, axis: int) -> int:
    if not 0 <= axis < len(input_shape):
        raise ValueError(f"the masks address input axis {axis} of an input of shape {list(input_shape)}")
    return input_shape[axis]


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(value, high))


def start_for_axis(e: _Effective, axis: int) -> int:
    size, stride = e.shape[axis], e.strides[axis]
    start = e.begin[axis]
    if start < 0:
        start += size
    start = _clamp(start, 0, size) if stride > 0 else _clamp(start, -1, size - 1)
    if _bit(e.begin_mask, axis):
        start = 0 if stride > 0 else size - 1
    return start


def end_for_axis(e: _Effective, axis: int, start: int, offset: bool) -> int:
    size, stride = e.shape[axis], e.strides[axis]
    if _bit(e.shrink_mask, axis):
        return start if start >= size else start + 1
    end = e.end[axis] + (start if offset else 0)
    if end < 0:
        end += size
    end = _clamp(end, 0, size) if stride > 0 else _clamp(end, -1, size - 1)
    if _bit(e.end_mask, axis):
        end = size if stride > 0 else -1
    return end


def _extent(start: int, stop: int, stride: int) -> int:
    """Iterations of ``for (i = start; stride > 0 ? i < stop : i > stop; i += stride)``."""
    span = stop - start
    if (span < 0) != (stride < 0) or span == 0:
        return 0
    return (span - 1) // stride + 1 if stride > 0 else (span + 1) // stride + 1


def declared_offset_shape(e: _Effective) -> list[int | None]:
    """Output extents TFLite declares in offset mode (from ``end`` alone); None where it
    depends on ``begin``. TFLite writes garbage when the slice does not have that extent."""
    shape = []
    for axis in range(len(e.shape)):
        stride = e.strides[axis]
        if _bit(e.shrink_mask, axis):
            continue
        if e.original_axis[axis] is None or _bit(e.begin_mask, axis) and _bit(e.end_mask, axis):
            start = start_for_axis(e, axis)
            shape.append(_extent(start, end_for_axis(e, axis, start, True), stride))
        elif _bit(e.end_mask, axis):
            shape.append(None)
        else:
            shape.append(_extent(0, e.end[axis], stride))
    return shape


def check_strides(e: _Effective) -> None:
    """A ValueError when a stride is 0."""
    if 0 in e.strides:
        raise ValueError(f"strides {e.strides} contain 0")


def strided_slice_plan(
    shape, begin, end, strides, params, *, prefix: bool = False
) -> tuple[list[int], tuple[slice, ...], list[int]]:
    """(effective input shape, index, output shape) of STRIDED_SLICE on an input of
    ``shape`` with these begin/end/strides values (Python ints) and the node's params
    (masks, ``offset``): ``x.reshape(effective)[index].reshape(output shape)`` is the result.

    Shared by the CPU kernel and the GPU delegate (which applies the index to a device
    array). Raises ValueError, saying why, for a node TFLite would reject.

    New axes (``new_axis_mask``) that take the place of input axes leave those axes out
    of the effective shape (TFLite builds it so: a mask with bits set past the input's
    axes); TFLite then reads the input's first elements as an array of the effective
    shape. With ``prefix`` that is what the plan means (``effective_source`` reads it);
    without it (the GPU delegate) such a node is refused.
    """
    offset = bool(getattr(params, "offset", False))
    e = effective_params(shape, begin, end, strides, params)
    check_strides(e)
    effective_size, size = math.prod(e.shape), math.prod(shape)
    if effective_size != size and (not prefix or effective_size > size):
        raise ValueError(
            f"the effective input shape {e.shape} (input {list(shape)} with the new axes of new_axis_mask "
            f"{params.new_axis_mask:#x} and ellipsis_mask {params.ellipsis_mask:#x}) does not cover the input"
        )
    index, out_shape = [], []
    for axis in range(len(e.shape)):
        stride = e.strides[axis]
        start = start_for_axis(e, axis)
        stop = end_for_axis(e, axis, start, offset)
        count = _extent(start, stop, stride)
        # A Python slice with these bounds (-1 as a stop means "before index 0").
        index.append(slice(start, start + count * stride if start + count * stride >= 0 else None, stride)
                     if count else slice(0, 0))
        if _bit(e.shrink_mask, axis):
            if count != 1:
                raise ValueError(f"shrink axis {axis}: index {e.begin[axis]} is out of range for size {e.shape[axis]}")
        else:
            out_shape.append(count)
    if offset:
        declared = declared_offset_shape(e)
        kept = [a for a in range(len(e.shape)) if not _bit(e.shrink_mask, a)]
        for axis, want, got in zip(kept, declared, out_shape):
            if want is not None and want != got:
                raise ValueError(
                    f"offset slice along axis {axis} asks for {want} elements but only {got} remain "
                    f"(begin {e.begin[axis]}, size {e.end[axis]}, input size {e.shape[axis]})"
                )
    return e.shape, tuple(index), out_shape


def effective_source(x: np.ndarray, shape: list[int]) -> np.ndarray:
    """``x`` as an array of the effective input shape: TFLite's strided slice reads the
    input's first elements in that shape (all of them, unless new axes took the place of
    input axes; ``strided_slice_plan`` refuses an effective shape larger than the input)."""
    count = math.prod(shape)
    return x.reshape(shape) if count == x.size else x.reshape(-1)[:count].reshape(shape)


# v1: float32, int32, int64, uint8 up to 4-D; v2: int8; v3: bool; v4: 5-D; v5: string;
# v6: ellipsis_mask / new_axis_mask; v7: uint32; v8: the ``offset`` param (end = begin + end).
@register(BuiltinOperator.STRIDED_SLICE, 1, 8)
class StridedSlice(CpuKernel):
    """STRIDED_SLICE v1-v8: begin/end/strides with begin, end, ellipsis, new-axis and
    shrink-axis masks, and ``offset``."""

    blas_work = 0

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, begin, end, strides = self.inputs
        self.require_types(x, *SLICE_TYPES)
        for t, role in ((begin, "begin"), (end, "end"), (strides, "strides")):
            self.require_types(t, TensorType.INT32, role=role)
            if len(t.shape) != 1:
                raise self.unsupported(f"{role} must be a vector, it has shape {list(t.shape)}")
        if not begin.shape == end.shape == strides.shape:
            raise self.unsupported(
                f"begin {list(begin.shape)}, end {list(end.shape)} and strides {list(strides.shape)} differ in length"
            )
        if begin.shape[0] > 31:
            raise self.unsupported("at most 31 indices are supported")
        self.require_types(self.outputs[0], x.type, role="output")
        self.offset = bool(self.params.offset)
        out = self.outputs[0]
        self.static_plan = None
        self.declared_shape = None
        if strides.is_constant and begin.is_constant and end.is_constant:
            self.static_plan = self.plan(x.shape)
            out.resize(self.static_plan[2])
        elif strides.is_constant and end.is_constant and self.offset:
            # TFLite knows the shape from ``end`` alone: the size of each slice.
            try:
                e = effective_params(x.shape, [0] * begin.shape[0], int_values(end), int_values(strides), self.params)
            except ValueError as error:
                raise self.unsupported(str(error)) from None
            self.check_strides(e)
            declared = declared_offset_shape(e)
            if None in declared:
                out.set_dynamic()
            else:
                self.declared_shape = declared
                out.resize(declared)
        else:
            out.set_dynamic()

    def check_strides(self, e: _Effective) -> None:
        try:
            check_strides(e)
        except ValueError as error:
            raise self.unsupported(str(error)) from None

    def plan(self, shape) -> tuple[list[int], tuple[slice, ...], list[int]]:
        """(effective input shape, numpy index, output shape) for the current values."""
        _, begin, end, strides = self.inputs
        try:
            return strided_slice_plan(
                shape, int_values(begin), int_values(end), int_values(strides), self.params, prefix=True
            )
        except ValueError as error:
            raise self.unsupported(str(error)) from None

    static_plan = None
    declared_shape = None

    def bind(self) -> Callable[[], None]:
        """A static plan on this allocation's buffers: one copy from a view of the input
        made once (``invoke`` where the slice of the input is no view of it)."""
        x, out = self.inputs[0].data, self.outputs[0].data
        if self.static_plan is None or not self.buffers_are_fixed() or x is None or out is None:
            return self.invoke
        shape, index, _ = self.static_plan
        try:
            source = np.reshape(effective_source(x, shape)[index], out.shape, copy=False)
        except ValueError:  # (no view of that shape)
            return self.invoke
        if source.size and not np.may_share_memory(source, x):
            return self.invoke
        copyto = np.copyto
        return lambda: copyto(out, source)

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0]
        if self.static_plan is not None:
            shape, index, _ = self.static_plan
            np.copyto(out.data, effective_source(x, shape)[index].reshape(out.data.shape))
            return
        shape, index, out_shape = self.plan(x.shape)
        value = effective_source(x, shape)[index].reshape(out_shape)
        if self.declared_shape is not None:
            np.copyto(out.data, value)
        else:
            out.set_data(value.copy())
