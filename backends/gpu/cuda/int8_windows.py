"""Launchers and numpy twins of the GPU delegate's quantized (int8 / uint8) pools (kernels in
``pool2d.cu``), MEAN and SOFTMAX (``int8_windows.cu``), one launch per node.

- :class:`QuantizedPool2DCuda`: AVERAGE_POOL_2D / MAX_POOL_2D on raw values (the output
  shares the input's quantization), the rounded average and the quantized clamp fused;
- :class:`QuantizedMeanCuda`: MEAN over constant axes, the int32 sum requantized with
  1/count folded into the multiplier;
- :class:`QuantizedSoftmaxCuda`: SOFTMAX along the last axis, gemmlowp's fixed point with
  the CPU kernel's tables.

The twins compute with the CPU kernels' own functions (``rounded_average``,
``requantize_sums``, ``row_reciprocals``, ``backends.cpu.quantization``) on numpy, as one
launch; ``tests/gpu/test_int8_window_kernels.py`` checks each twin against its kernel (built
by the host shim) bit for bit, and both against the CPU path.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from backends.cpu.kernels.pool2d_quantized import rounded_average
from backends.cpu.kernels.reduce_quantized import requantize_sums
from backends.cpu.kernels.softmax_quantized import row_reciprocals
from backends.cpu.quantization import rounding_divide_by_pot, saturating_rounding_doubling_high_mul, wrap_int32
from backends.gpu.cuda.int8_elementwise import EIGHT_BIT, _code, _contiguous
from backends.gpu.cuda.sources import _Launcher, elementwise_launch_config
from backends.gpu.cuda.windows import PoolGeometry

OUTPUT_CODES = {**EIGHT_BIT, np.dtype(np.int16): "i16"}

#: Threads per block of the reductions (block_reduce.cuh's REDUCTION_THREADS).
REDUCTION_THREADS = 256
_MAX_GRID_X = 2**31 - 1


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def _power_of_two_at_most(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def _grid(blocks: int, what: str) -> tuple[int, int, int]:
    if blocks <= 0:
        raise ValueError(f"nothing to launch for {what}")
    if blocks > _MAX_GRID_X:
        raise ValueError(f"{what} needs {blocks} blocks, more than a grid holds")
    return (blocks, 1, 1)


def row_reduction_launch_config(rows: int, length: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` of a kernel that combines each of ``rows`` rows of ``length``
    contiguous values (quantized SOFTMAX): block.x threads per row (a power of two, as many as
    the row has values, up to 256), block.y rows per block (the rest of 256 threads, but at
    most half the rows: two rows or more take two blocks or more); grid.x over the rows."""
    per_row = min(REDUCTION_THREADS, _power_of_two_at_least(length))
    rows_per_block = REDUCTION_THREADS // per_row
    if rows >= 2:
        rows_per_block = min(rows_per_block, _power_of_two_at_most(rows // 2))
    return _grid(-(-int(rows) // rows_per_block), f"{rows} rows"), (per_row, rows_per_block, 1)


def column_reduction_launch_config(outputs: int, length: int, rows: int = 1) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` of a kernel that sums ``length`` values into each of ``outputs``
    outputs whose values sit side by side (the quantized MEAN over outer axes,
    FULLY_CONNECTED's units), for each of ``rows`` rows: block.x outputs per block (adjacent
    outputs read adjacent memory; up to 32, and at most half the outputs: two outputs or more
    take two blocks or more), block.y threads per output (a power of two, no more than the
    values, up to the rest of 256 threads); grid.x over (row, tile of block.x outputs)."""
    width = min(32, _power_of_two_at_least(outputs))
    if outputs >= 2:
        width = min(width, _power_of_two_at_most(outputs // 2))
    slices = min(REDUCTION_THREADS // width, _power_of_two_at_least(length))
    tiles = -(-int(outputs) // width)
    return _grid(int(rows) * tiles, f"{rows} x {outputs} outputs"), (width, slices, 1)


# -- AVERAGE_POOL_2D / MAX_POOL_2D ----------------------------------------------------------------


class QuantizedPool2DCuda(_Launcher):
    """AVERAGE_POOL_2D (``is_max`` False) or MAX_POOL_2D (True) on int8/uint8 NHWC, the
    clamp ``bounds`` (the fused activation's quantized range) fused. One launch of
    ``pool2d.cu``'s quantized pool (beside the float pools: no shared memory)."""

    source = "pool2d.cu"

    def __init__(
        self, is_max: bool, filter_hw: Sequence[int], stride: Sequence[int], padding: Any, bounds: tuple[int, int],
        dtype: Any, *, xp: Any = None, module: Any = None, host_device: Any = None,
    ) -> None:
        self.is_max = bool(is_max)
        self.filter_hw, self.stride, self.padding = tuple(filter_hw), tuple(stride), padding
        self.bounds = (int(bounds[0]), int(bounds[1]))
        self.dtype = np.dtype(dtype)
        kind = "max" if self.is_max else "average"
        self.kernel_name = f"quantized_{kind}_pool2d_{_code(self.dtype, EIGHT_BIT, 'the tensors')}"
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any) -> Any:
        if x.dtype != self.dtype:
            raise TypeError(f"expected a {self.dtype} input, got {x.dtype}")
        geometry = PoolGeometry.of(x.shape, self.filter_hw, self.stride, self.padding)
        x = _contiguous(self.xp, x)
        out = self.xp.empty(geometry.out_shape, dtype=self.dtype)
        if out.size == 0:
            return out
        grid, block = elementwise_launch_config(out.size)
        args = (x, out, *geometry.scalar_args(), np.int32(self.bounds[0]), np.int32(self.bounds[1]))
        twin = functools.partial(quantized_pool2d_twin, geometry=geometry, is_max=self.is_max, bounds=self.bounds)
        self.launch(self.kernel_name, grid, block, args, twin, (x,), (out,))
        return out


def quantized_pool2d_twin(x: np.ndarray, out: np.ndarray, *, geometry: PoolGeometry, is_max: bool, bounds: tuple[int, int]) -> None:
    """The quantized pools in numpy: each filter tap combined into the outputs whose window
    it falls in (an int32 sum, or a max from the type's minimum), the CPU kernel's
    ``rounded_average`` over the inside counts, then the clamp."""
    if is_max:
        acc = np.full(geometry.out_shape, np.iinfo(x.dtype).min, np.int32)
    else:
        acc = np.zeros(geometry.out_shape, np.int32)
    values = x.astype(np.int32)
    for (out_rows, out_cols), (in_rows, in_cols) in geometry.tap_blocks():
        target = acc[:, out_rows, out_cols]
        if is_max:
            np.maximum(target, values[:, in_rows, in_cols], out=target)
        else:
            target += values[:, in_rows, in_cols]
    if not is_max:
        acc = rounded_average(acc, geometry.counts().astype(np.int32))
    out[...] = np.clip(acc, *bounds)


# -- MEAN --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuantizedMeanParams:
    """The requantization of a quantized MEAN (the CPU kernel's, 1/count folded in)."""

    zero_sum: int
    multiplier: int
    shift: int
    out_zero_point: int
    bounds: tuple[int, int]


def _mean_shape_and_flags(shape: Sequence[int], axes: Sequence[int]) -> tuple[tuple[int, ...], list[int]]:
    rank = len(shape)
    if rank > 4:
        raise ValueError(f"mean takes rank <= 4, got {list(shape)}")
    lead = 4 - rank
    flags = [0] * 4
    for axis in axes:
        flags[lead + int(axis)] = 1
    return (1,) * lead + tuple(int(d) for d in shape), flags


class QuantizedMeanCuda(_Launcher):
    """MEAN of int8/uint8 over resolved ``axes`` (in range, no repeats): the output (any
    shape holding the kept elements in row-major order) requantized with ``params``. One
    launch, threads sharing each output's sum (``column_reduction_launch_config``); the input
    must not be empty (the op fills zeros instead)."""

    source = "int8_windows.cu"

    def __init__(self, axes: Sequence[int], params: QuantizedMeanParams, dtype: Any, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.axes = tuple(int(a) for a in axes)
        self.params = params
        self.dtype = np.dtype(dtype)
        self.kernel_name = f"quantized_mean_{_code(self.dtype, EIGHT_BIT, 'the tensors')}"
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, out_shape: Sequence[int]) -> Any:
        if x.dtype != self.dtype:
            raise TypeError(f"expected a {self.dtype} input, got {x.dtype}")
        shape4, flags = _mean_shape_and_flags(x.shape, self.axes)
        x = _contiguous(self.xp, x)
        out = self.xp.empty(tuple(out_shape), dtype=self.dtype)
        if out.size == 0:
            return out
        p = self.params
        args = (
            x, out, *(np.int32(v) for v in (*shape4, *flags)), np.int64(p.zero_sum),
            *(np.int32(v) for v in (p.multiplier, p.shift, p.out_zero_point, *p.bounds)),
        )
        count = int(np.prod([x.shape[a] for a in self.axes], dtype=np.int64))
        grid, block = column_reduction_launch_config(out.size, count)
        twin = functools.partial(quantized_mean_twin, axes=self.axes, params=p)
        self.launch(self.kernel_name, grid, block, args, twin, (x,), (out,))
        return out


def quantized_mean_twin(x: np.ndarray, out: np.ndarray, *, axes: Sequence[int], params: QuantizedMeanParams) -> None:
    """The quantized MEAN in numpy: the int64 sum wrapped to int32 (TFLite's temp_sum),
    then the CPU kernel's ``requantize_sums``."""
    sums = wrap_int32(np.sum(x, axis=tuple(axes), dtype=np.int64)) if axes else x.astype(np.int64)
    values = requantize_sums(np.asarray(sums, np.int64), params.zero_sum, params.multiplier, params.shift, params.out_zero_point, params.bounds)
    out.reshape(-1)[...] = values.reshape(-1)


# -- SOFTMAX -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuantizedSoftmaxParams:
    """The CPU kernel's Prepare: the tables' index offset (``d + in_range``), the output
    exponent's offset and the output type's range."""

    in_range: int
    exponent_offset: int
    out_min: int
    out_max: int


class QuantizedSoftmaxCuda(_Launcher):
    """SOFTMAX of an int8/uint8 tensor along its last axis into ``out_dtype`` (the input's
    type, or int16), from the CPU kernel's tables (device int32 arrays: ``exp_table`` Q0.31
    and ``accumulated`` Q12.19, indexed by ``d + in_range``). One launch, threads sharing each
    row (``row_reduction_launch_config``)."""

    source = "int8_windows.cu"

    def __init__(self, params: QuantizedSoftmaxParams, dtype: Any, out_dtype: Any, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.params = params
        self.dtype, self.out_dtype = np.dtype(dtype), np.dtype(out_dtype)
        in_code = _code(self.dtype, EIGHT_BIT, "the input")
        self.kernel_name = f"quantized_softmax_{in_code}_{_code(self.out_dtype, OUTPUT_CODES, 'the output')}"
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, exp_table: Any, accumulated: Any) -> Any:
        if x.dtype != self.dtype:
            raise TypeError(f"expected a {self.dtype} input, got {x.dtype}")
        x = _contiguous(self.xp, x)
        out = self.xp.empty(x.shape, dtype=self.out_dtype)
        if out.size == 0:
            return out
        depth = int(x.shape[-1])
        rows = out.size // depth
        p = self.params
        args = (x, exp_table, accumulated, out, np.int64(rows), *(np.int32(v) for v in (depth, p.in_range, p.exponent_offset, p.out_min, p.out_max)))
        grid, block = row_reduction_launch_config(rows, depth)
        twin = functools.partial(quantized_softmax_twin, params=p)
        self.launch(self.kernel_name, grid, block, args, twin, (x, exp_table, accumulated), (out,))
        return out


def quantized_softmax_twin(x: np.ndarray, exp_table: np.ndarray, accumulated: np.ndarray, out: np.ndarray, *, params: QuantizedSoftmaxParams) -> None:
    """The quantized SOFTMAX in numpy, vectorized over rows: the tables gathered at
    ``d + in_range``, the int32 (wrapped) row sums, the CPU kernel's ``row_reciprocals``,
    then ``RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(r, exp), exponent)``."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.int64)
    index = rows - rows.max(axis=1, keepdims=True) + params.in_range
    exp = exp_table.astype(np.int64)[index]
    sums = wrap_int32(accumulated.astype(np.int64)[index].sum(axis=1, keepdims=True))
    scale, exponent = row_reciprocals(sums, params.exponent_offset)
    exponent = np.clip(exponent, 0, 31)
    values = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(scale, exp, may_saturate=False), exponent)
    out.reshape(rows.shape)[...] = np.minimum(values + params.out_min, params.out_max)
