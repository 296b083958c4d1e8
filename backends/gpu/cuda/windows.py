"""Launchers and numpy twins of the window kernels: ``pool2d.cu`` (AVERAGE_POOL_2D,
MAX_POOL_2D, and MEAN: a pool over whole axes), ``resize.cu`` (RESIZE_BILINEAR,
RESIZE_NEAREST_NEIGHBOR) and ``depthwise_conv2d.cu``'s fused entry points (DEPTHWISE_CONV_2D
with a PAD folded in front and a residual ADD / PRELU / RELU after it).

Each launcher (a ``sources._Launcher``) computes the grid and the arguments of one launch
and calls ``launch``: on a device the ``.cu`` kernel runs, in host emulation its twin (the
``*_twin`` function below) runs as one launch of the emulated machine. The twins compute
what the kernels compute, in the same float32 operations and order:
``tests/gpu/test_window_kernels.py`` checks each against its kernel built by the host shim.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from backends.cpu.common import compute_padding
from backends.cpu.kernels.resize import bilinear_float_coordinates, nearest_indices
from backends.gpu.cuda.sources import (
    _Launcher,
    _clamp_into,
    _contiguous,
    _pair,
    _padding,
    _storage_kernel,
    activation_range,
    elementwise_launch_config,
)
from schema.enums import ActivationFunctionType, Padding

F32 = np.float32


def _check_storage(storage: np.dtype, *arrays: Any) -> None:
    for array in arrays:
        if array.dtype != storage:
            raise TypeError(f"expected {storage} arrays, got {array.dtype}")


def _output(xp: Any, out: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """``out``, checked, or a new C-contiguous array."""
    if out is None:
        return xp.empty(shape, dtype=dtype)
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {np.dtype(dtype)} array of shape {tuple(shape)}")
    return out


# -- AVERAGE_POOL_2D / MAX_POOL_2D ----------------------------------------------------------------


@dataclass(frozen=True)
class PoolGeometry:
    """The integer arguments of the pool kernels, from TFLite's padding rule
    (``backends.cpu.common.compute_padding``, as the CPU kernel)."""

    batches: int
    in_h: int
    in_w: int
    channels: int
    out_h: int
    out_w: int
    filter_h: int
    filter_w: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_left: int

    @classmethod
    def of(cls, input_shape: Sequence[int], filter_hw: Sequence[int], stride: int | Sequence[int], padding: int | str) -> "PoolGeometry":
        """From an NHWC input shape, the filter's (height, width), the strides and SAME/VALID."""
        if len(input_shape) != 4:
            raise ValueError(f"input must be [N, H, W, C], got {list(input_shape)}")
        batches, in_h, in_w, channels = (int(d) for d in input_shape)
        filter_h, filter_w = _pair(filter_hw, "filter size")
        stride_h, stride_w = _pair(stride, "stride")
        padding = _padding(padding)
        rows = compute_padding(padding, in_h, filter_h, stride_h)
        cols = compute_padding(padding, in_w, filter_w, stride_w)
        if rows.out_size <= 0 or cols.out_size <= 0:
            raise ValueError(f"the {filter_h}x{filter_w} window does not fit the {in_h}x{in_w} input with {padding.name} padding")
        return cls(batches, in_h, in_w, channels, rows.out_size, cols.out_size, filter_h, filter_w,
                   stride_h, stride_w, rows.before, cols.before)

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return (self.batches, self.out_h, self.out_w, self.channels)

    def scalar_args(self) -> tuple[np.int32, ...]:
        """The int parameters of the kernels, in their order."""
        return tuple(
            np.int32(v)
            for v in (
                self.batches, self.in_h, self.in_w, self.channels, self.out_h, self.out_w,
                self.filter_h, self.filter_w, self.stride_h, self.stride_w, self.pad_top, self.pad_left,
            )
        )

    def tap_blocks(self) -> list[tuple[tuple[slice, slice], tuple[slice, slice]]]:
        """For each filter tap (ky, then kx) that falls inside the input somewhere: the
        (rows, columns) block of outputs where it does, and the strided block of input it
        reads there."""
        rows = [_tap_range(ky, self.out_h, self.in_h, self.stride_h, self.pad_top)
                for ky in _taps_touching_input(self.filter_h, self.out_h, self.in_h, self.stride_h, self.pad_top)]
        cols = [_tap_range(kx, self.out_w, self.in_w, self.stride_w, self.pad_left)
                for kx in _taps_touching_input(self.filter_w, self.out_w, self.in_w, self.stride_w, self.pad_left)]
        return [
            ((out_rows, out_cols), (in_rows, in_cols))
            for out_rows, in_rows in filter(None, rows)
            for out_cols, in_cols in filter(None, cols)
        ]

    def counts(self) -> np.ndarray:
        """``[out_h, out_w, 1]`` float32: how many window elements are inside the input."""
        def along(out_size: int, in_size: int, filter_size: int, stride: int, pad: int) -> np.ndarray:
            origin = np.arange(out_size) * stride - pad
            return np.minimum(filter_size, in_size - origin) - np.maximum(0, -origin)

        rows = along(self.out_h, self.in_h, self.filter_h, self.stride_h, self.pad_top)
        cols = along(self.out_w, self.in_w, self.filter_w, self.stride_w, self.pad_left)
        return (rows[:, None] * cols[None, :]).astype(F32)[:, :, None]


def _taps_touching_input(filter_size: int, out_size: int, in_size: int, stride: int, pad: int) -> range:
    """The taps k that read inside the input for some output o (0 <= o*stride + k - pad <
    in_size): at most the input plus the strides between outputs, whatever the filter size
    (so the work is bounded by the tensors, not by a 2**31-row filter)."""
    return range(max(0, pad - (out_size - 1) * stride), min(filter_size, in_size + pad))


def _tap_range(k: int, out_size: int, in_size: int, stride: int, pad: int) -> tuple[slice, slice] | None:
    """The outputs o where tap k reads inside the input (0 <= o*stride + k - pad < in_size),
    as a slice, and the input positions they read, as a strided slice; None if none."""
    first = max(0, -((k - pad) // stride))  # ceil((pad - k) / stride)
    last = min(out_size - 1, (in_size - 1 + pad - k) // stride)
    if first > last:
        return None
    start = first * stride + k - pad
    return slice(first, last + 1), slice(start, start + (last - first) * stride + 1, stride)


def pool2d_kernel_name(is_max: bool, storage: Any) -> str:
    """The kernel for an op and a storage dtype: ``max_pool2d_f16``..."""
    return _storage_kernel("max_pool2d" if is_max else "average_pool2d", storage)


def pool2d_args(x: Any, out: Any, geometry: PoolGeometry, activation: int) -> tuple:
    """The argument tuple of a pool kernel launch, in parameter order."""
    act_min, act_max = activation_range(activation)
    return (x, out, *geometry.scalar_args(), np.float32(act_min), np.float32(act_max))


class Pool2DCuda(_Launcher):
    """AVERAGE_POOL_2D (``is_max`` False) or MAX_POOL_2D (True) version 1, NHWC, stored as
    ``storage`` (float32 or float16), computed in float32, the fused activation's clamp
    fused (TFLite's range: NONE saturates at +-FLT_MAX). One launch.

    ``xp``, ``module`` and ``host_device`` as in ``sources._Launcher``.
    """

    source = "pool2d.cu"

    def __init__(
        self,
        is_max: bool,
        filter_hw: Sequence[int],
        stride: int | Sequence[int] = 1,
        padding: int | str = Padding.VALID,
        activation: int = ActivationFunctionType.NONE,
        storage: Any = np.float32,
        *,
        xp: Any = None,
        module: Any = None,
        host_device: Any = None,
    ) -> None:
        self.is_max = bool(is_max)
        self.filter_hw = _pair(filter_hw, "filter size")
        self.stride = _pair(stride, "stride")
        self.padding = _padding(padding)
        self.activation = ActivationFunctionType(activation)
        self.storage = np.dtype(storage)
        self.kernel_name = pool2d_kernel_name(self.is_max, self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, out: Any = None) -> Any:
        _check_storage(self.storage, x)
        geometry = PoolGeometry.of(x.shape, self.filter_hw, self.stride, self.padding)
        x = _contiguous(self.xp, x)
        out = _output(self.xp, out, geometry.out_shape, self.storage)
        if out.size == 0:
            return out
        grid, block = elementwise_launch_config(out.size)
        args = pool2d_args(x, out, geometry, self.activation)
        twin = functools.partial(pool2d_twin, geometry=geometry, is_max=self.is_max, activation=self.activation)
        self.launch(self.kernel_name, grid, block, args, twin, (x,), (out,))
        return out


def pool2d_twin(x: np.ndarray, out: np.ndarray, *, geometry: PoolGeometry, is_max: bool, activation: int) -> None:
    """``average_pool2d_*`` / ``max_pool2d_*`` in numpy: each tap in the kernel's order (ky,
    then kx) combined into the outputs whose window it falls in (a float32 sum from 0, or
    ``acc < v ? v : acc`` from -inf, so NaN never wins), the average divided by the
    count of inside elements, then the clamp."""
    x = x.astype(F32, copy=False)
    acc = np.full(geometry.out_shape, -np.inf if is_max else 0.0, F32)
    for (out_rows, out_cols), (in_rows, in_cols) in geometry.tap_blocks():
        target = acc[:, out_rows, out_cols]
        values = x[:, in_rows, in_cols]
        if is_max:
            np.copyto(target, values, where=target < values)
        else:
            target += values
    if not is_max:
        acc /= geometry.counts()
    _clamp_into(out, acc, *activation_range(activation))


# -- MEAN --------------------------------------------------------------------------------------------


def mean_args(x: Any, out: Any, axes: Sequence[int]) -> tuple:
    """The arguments of a ``mean_*`` launch: the input's shape left-padded to 4-D and a
    flag per axis (1: reduced), in parameter order."""
    rank = x.ndim
    if rank > 4:
        raise ValueError(f"mean takes rank <= 4, got {list(x.shape)}")
    lead = 4 - rank
    shape = (1,) * lead + tuple(int(d) for d in x.shape)
    flags = [0] * 4
    for axis in axes:
        flags[lead + int(axis)] = 1
    return (x, out, *(np.int32(v) for v in (*shape, *flags)))


class MeanCuda(_Launcher):
    """MEAN version 1 over ``axes`` (resolved: in range, no repeats), ``storage`` float32
    or float16: ``out`` holds the kept coordinates in row-major order (any shape of that
    size: keep_dims or not), each the float32 sum of its reduced elements (row-major
    order, from 0) divided by their count. One launch. ``xp``, ``module`` and
    ``host_device`` as in ``sources._Launcher``."""

    source = "pool2d.cu"

    def __init__(self, axes: Sequence[int], storage: Any = np.float32, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.axes = tuple(int(a) for a in axes)
        if len(set(self.axes)) != len(self.axes) or min(self.axes, default=0) < 0:
            raise ValueError(f"axes {list(axes)} must be resolved: non-negative, no repeats")
        self.storage = np.dtype(storage)
        self.kernel_name = _storage_kernel("mean", self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, out_shape: Sequence[int] | None = None) -> Any:
        _check_storage(self.storage, x)
        if max(self.axes, default=-1) >= x.ndim:
            raise ValueError(f"axes {list(self.axes)} out of range for rank {x.ndim}")
        kept = tuple(int(d) for k, d in enumerate(x.shape) if k not in self.axes)
        shape = kept if out_shape is None else tuple(int(d) for d in out_shape)
        if int(np.prod(shape, dtype=np.int64)) != int(np.prod(kept, dtype=np.int64)):
            raise ValueError(f"out_shape {list(shape)} does not hold the {list(kept)} kept elements")
        if int(np.prod([x.shape[a] for a in self.axes], dtype=np.int64)) == 0:
            raise ValueError("the mean of no elements: the caller gives NaN")
        out = self.xp.empty(shape, dtype=self.storage)
        if out.size == 0:
            return out
        x = _contiguous(self.xp, x)
        grid, block = elementwise_launch_config(out.size)
        twin = functools.partial(mean_twin, axes=self.axes)
        self.launch(self.kernel_name, grid, block, mean_args(x, out, self.axes), twin, (x,), (out,))
        return out


def mean_twin(x: np.ndarray, out: np.ndarray, *, axes: Sequence[int]) -> None:
    """``mean_*`` in numpy: the reduced axes moved first, then a running float32 sum over
    them (``cumsum`` adds one element after the other, as the kernel's loop), divided by
    the count."""
    kept = [k for k in range(x.ndim) if k not in axes]
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    values = np.transpose(x.astype(F32, copy=False), [*sorted(axes), *kept]).reshape(count, -1)
    total = np.cumsum(values, axis=0, dtype=F32)[-1]
    out.reshape(-1)[...] = total / F32(count)


# -- RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR ------------------------------------------------------


def bilinear_tables(in_h: int, in_w: int, out_h: int, out_w: int, align_corners: bool, half_pixel_centers: bool):
    """The tables ``resize_bilinear_*`` reads, from the CPU kernel's own float32 functions
    (TFLite's arithmetic): rows [2, out_h] int32 (y0, y1), cols [2, out_w] int32 (x0, x1),
    wy [2, out_h] float32 (1 - dy, dy), wx [2, out_w] float32 (1 - dx, dx)."""
    y0, y1, dy = bilinear_float_coordinates(in_h, out_h, align_corners, half_pixel_centers)
    x0, x1, dx = bilinear_float_coordinates(in_w, out_w, align_corners, half_pixel_centers)
    one = F32(1)
    rows = np.stack([y0, y1]).astype(np.int32)
    cols = np.stack([x0, x1]).astype(np.int32)
    wy = np.stack([one - dy, dy]).astype(F32)
    wx = np.stack([one - dx, dx]).astype(F32)
    return rows, cols, wy, wx


def nearest_tables(in_h: int, in_w: int, out_h: int, out_w: int, align_corners: bool, half_pixel_centers: bool):
    """The source row of each output row and the source column of each output column
    (int32), TFLite's ``GetNearestNeighbor`` through the CPU kernel's function."""
    rows = nearest_indices(in_h, out_h, align_corners, half_pixel_centers) if out_h else np.zeros(0)
    cols = nearest_indices(in_w, out_w, align_corners, half_pixel_centers) if out_w else np.zeros(0)
    return rows.astype(np.int32), cols.astype(np.int32)


def _resize_scalars(x: Any, out_h: int, out_w: int) -> tuple[np.int32, ...]:
    batches, in_h, in_w, channels = (int(d) for d in x.shape)
    return tuple(np.int32(v) for v in (batches, in_h, in_w, channels, out_h, out_w))


class ResizeBilinearCuda(_Launcher):
    """RESIZE_BILINEAR versions 1 and 3, NHWC, ``storage`` float32 or float16, from the
    tables of :func:`bilinear_tables` (device arrays, uploaded once by the caller). One
    launch. ``xp``, ``module`` and ``host_device`` as in ``sources._Launcher``."""

    source = "resize.cu"

    def __init__(self, storage: Any = np.float32, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.storage = np.dtype(storage)
        self.kernel_name = _storage_kernel("resize_bilinear", self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, rows: Any, cols: Any, wy: Any, wx: Any, out: Any = None) -> Any:
        _check_storage(self.storage, x)
        if x.ndim != 4:
            raise ValueError(f"input must be [N, H, W, C], got {list(x.shape)}")
        out_h, out_w = int(rows.shape[-1]), int(cols.shape[-1])
        if tuple(rows.shape) != (2, out_h) or tuple(wy.shape) != (2, out_h) or tuple(cols.shape) != (2, out_w) or tuple(wx.shape) != (2, out_w):
            raise ValueError("rows/wy must be [2, out_h] and cols/wx [2, out_w]")
        if rows.dtype != np.int32 or cols.dtype != np.int32 or wy.dtype != F32 or wx.dtype != F32:
            raise TypeError("rows/cols must be int32 and wy/wx float32")
        xp = self.xp
        x = _contiguous(xp, x)
        rows, cols, wy, wx = (_contiguous(xp, a) for a in (rows, cols, wy, wx))
        out = _output(xp, out, (x.shape[0], out_h, out_w, x.shape[3]), self.storage)
        if out.size == 0:
            return out
        grid, block = elementwise_launch_config(out.size)
        args = (x, rows, cols, wy, wx, out, *_resize_scalars(x, out_h, out_w))
        self.launch(self.kernel_name, grid, block, args, resize_bilinear_twin, (x, rows, cols, wy, wx), (out,))
        return out


def resize_bilinear_twin(x: np.ndarray, rows: np.ndarray, cols: np.ndarray, wy: np.ndarray, wx: np.ndarray, out: np.ndarray) -> None:
    """``resize_bilinear_*`` in numpy: the four neighbours gathered, then TFLite's
    ``a*(1-dy)*(1-dx) + b*dy*(1-dx) + c*(1-dy)*dx + d*dy*dx``, each operation a float32
    rounding, left to right (the kernel's order)."""
    x = x.astype(F32, copy=False)
    top, bottom = x[:, rows[0]], x[:, rows[1]]
    a, b = top[:, :, cols[0]], bottom[:, :, cols[0]]
    c, d = top[:, :, cols[1]], bottom[:, :, cols[1]]
    wy0, wy1 = wy[0][None, :, None, None], wy[1][None, :, None, None]
    wx0, wx1 = wx[0][None, None, :, None], wx[1][None, None, :, None]
    out[...] = a * wy0 * wx0 + b * wy1 * wx0 + c * wy0 * wx1 + d * wy1 * wx1


class ResizeNearestCuda(_Launcher):
    """RESIZE_NEAREST_NEIGHBOR versions 1 and 3, NHWC, ``storage`` float32 or float16:
    ``out[b, y, x, c] = in[b, rows[y], cols[x], c]`` with the int32 tables of
    :func:`nearest_tables` (device arrays). One launch; values are moved, not computed.
    ``xp``, ``module`` and ``host_device`` as in ``sources._Launcher``."""

    source = "resize.cu"

    def __init__(self, storage: Any = np.float32, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.storage = np.dtype(storage)
        self.kernel_name = _storage_kernel("resize_nearest", self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, rows: Any, cols: Any, out: Any = None) -> Any:
        _check_storage(self.storage, x)
        if x.ndim != 4 or rows.ndim != 1 or cols.ndim != 1:
            raise ValueError(f"input must be [N, H, W, C] and rows/cols vectors, got {list(x.shape)}")
        if rows.dtype != np.int32 or cols.dtype != np.int32:
            raise TypeError("rows/cols must be int32")
        xp = self.xp
        out_h, out_w = int(rows.shape[0]), int(cols.shape[0])
        out = _output(xp, out, (x.shape[0], out_h, out_w, x.shape[3]), self.storage)
        if out.size == 0:
            return out
        x, rows, cols = (_contiguous(xp, a) for a in (x, rows, cols))
        grid, block = elementwise_launch_config(out.size)
        args = (x, rows, cols, out, *_resize_scalars(x, out_h, out_w))
        self.launch(self.kernel_name, grid, block, args, resize_nearest_twin, (x, rows, cols), (out,))
        return out


def resize_nearest_twin(x: np.ndarray, rows: np.ndarray, cols: np.ndarray, out: np.ndarray) -> None:
    """``resize_nearest_*`` in numpy: one gather of rows, then of columns."""
    out[...] = x[:, rows][:, :, cols]
