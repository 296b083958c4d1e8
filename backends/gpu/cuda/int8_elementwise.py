"""Launchers and numpy twins of ``int8_elementwise.cu``: the quantized (int8 / uint8)
elementwise ops of the GPU delegate, one launch per node.

- :class:`QuantizedBinaryCuda`: ADD, SUB, MUL with numpy broadcasting up to rank 4, the
  requantization and the fused activation's quantized clamp in the launch.
- :class:`LookupCuda`: ``out = table[bits(x)]``, the CPU kernels' 256-entry tables
  (LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, the 8-bit to 8-bit QUANTIZE).
- :class:`PairLookupCuda`: ``out = table[bits(a) * 256 + bits(b)]`` with broadcasting, the
  CPU kernels' 65536-entry pair tables (the quantized comparisons).
- :class:`QuantizeCuda`: float32 (or float16 storage) to int8/uint8, per tensor or per
  channel.
- :class:`DequantizeCuda`: int8/uint8 to float32 (or float16 storage), per tensor or per
  channel.

The parameters (multipliers, shifts, zero points, clamps, tables) are the CPU kernels'
own, from their ``configure``; the twins compute with ``backends.cpu.quantization`` (the
array-namespace integer arithmetic that ``fixed_point.cuh`` is tested equal to), so host
emulation runs the CPU kernels' arithmetic as one launch per node;
``tests/gpu/test_int8_elementwise_kernels.py`` checks each twin against its kernel (built
by the host shim) bit for bit, and both against the CPU path.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from backends.cpu.kernels.dequantize import dequantize_affine
from backends.cpu.kernels.quantize import quantize_quotient
from backends.cpu.quantization import multiply_by_quantized_multiplier
from backends.gpu.cuda.elementwise import MAX_RANK, broadcast_pair_shape, broadcast_strides
from backends.gpu.cuda.sources import _Launcher, _contiguous, elementwise_launch_config

#: ``enum QuantizedBinaryOp`` of int8_elementwise.cu (a test checks the two agree).
BINARY_OPS: dict[str, int] = {"ADD": 0, "SUB": 1, "MUL": 2}
#: TFLite's ``left_shift`` of the 8-bit ADD / SUB (the kernel's ADD_SUB_LEFT_SHIFT).
ADD_SUB_LEFT_SHIFT = 20

EIGHT_BIT = {np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8"}
FLOAT_STORAGE = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}


def _code(dtype: Any, table: dict, what: str) -> str:
    dtype = np.dtype(dtype)
    if dtype not in table:
        raise TypeError(f"{what} must be {' or '.join(str(d) for d in table)}, not {dtype}")
    return table[dtype]


# -- ADD / SUB / MUL ------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuantizedBinaryParams:
    """The integer parameters of one quantized ADD / SUB / MUL (TFLite's Prepare, from the
    CPU kernel): ``offsets`` (-z1, -z2, zo); ``(multiplier, shift)`` pairs for each input
    (ADD / SUB; (0, 0) for MUL) and for the output; the clamp ``(low, high)``."""

    op: str
    offsets: tuple[int, int, int]
    a: tuple[int, int]
    b: tuple[int, int]
    out: tuple[int, int]
    bounds: tuple[int, int]

    @classmethod
    def of(cls, op: str, kernel: Any) -> "QuantizedBinaryParams":
        """From a configured CPU kernel (``QuantizedAddSub`` for ADD / SUB, ``QuantizedMul``
        for MUL) of 8-bit tensors."""
        offsets = tuple(int(v) for v in kernel.offsets)
        bounds = (int(kernel.low), int(kernel.high))
        if op == "MUL":
            return cls(op, offsets, (0, 0), (0, 0), _pair(kernel.multiplier), bounds)
        if kernel.left_shift != ADD_SUB_LEFT_SHIFT or kernel.pot_int16:
            raise ValueError("the quantized binary kernel takes 8-bit ADD / SUB (left shift 20)")
        return cls(op, offsets, _pair(kernel.m1), _pair(kernel.m2), _pair(kernel.mo), bounds)


def _pair(pair: Sequence[int]) -> tuple[int, int]:
    return int(pair[0]), int(pair[1])


def quantized_binary_args(a: Any, b: Any, out: Any, params: QuantizedBinaryParams) -> tuple:
    """The arguments of a ``quantized_binary_*`` launch, in parameter order."""
    out_shape = tuple(out.shape)
    dims = (1,) * (MAX_RANK - len(out_shape)) + out_shape
    broadcast = tuple(a.shape) != out_shape or tuple(b.shape) != out_shape
    i64, i32 = np.int64, np.int32
    return (
        a, b, out, i64(out.size), i32(BINARY_OPS[params.op]), i32(broadcast),
        *(i64(d) for d in dims[1:]),
        *(i64(s) for s in broadcast_strides(a.shape, out_shape)),
        *(i64(s) for s in broadcast_strides(b.shape, out_shape)),
        *(i32(v) for v in (*params.offsets, *params.a, *params.b, *params.out, *params.bounds)),
    )


class QuantizedBinaryCuda(_Launcher):
    """``out = clamp(requantized op(a, b))`` of 8-bit ``a`` and ``b`` (int8 or uint8, one
    type) with numpy broadcasting up to rank 4, in one launch. ``xp``, ``module`` and
    ``host_device`` as in ``sources._Launcher``."""

    source = "int8_elementwise.cu"

    def __init__(self, params: QuantizedBinaryParams, dtype: Any, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        if params.op not in BINARY_OPS:
            raise ValueError(f"unknown quantized binary op {params.op!r}; int8_elementwise.cu has {list(BINARY_OPS)}")
        self.params = params
        self.dtype = np.dtype(dtype)
        self.kernel_name = f"quantized_binary_{_code(self.dtype, EIGHT_BIT, 'the tensors')}"
        super().__init__(xp, module, host_device)

    def __call__(self, a: Any, b: Any) -> Any:
        for array in (a, b):
            if array.dtype != self.dtype:
                raise TypeError(f"expected {self.dtype} arrays, got {array.dtype}")
        shape = broadcast_pair_shape(a, b)
        a, b = _contiguous(self.xp, a), _contiguous(self.xp, b)
        out = self.xp.empty(shape, dtype=self.dtype)
        if out.size == 0:
            return out
        grid, block = elementwise_launch_config(out.size)
        twin = functools.partial(quantized_binary_twin, params=self.params)
        self.launch(self.kernel_name, grid, block, quantized_binary_args(a, b, out, self.params), twin, (a, b), (out,))
        return out


def quantized_binary_twin(a: np.ndarray, b: np.ndarray, out: np.ndarray, *, params: QuantizedBinaryParams) -> None:
    """``quantized_binary_*`` in numpy: TFLite's arithmetic in int64 with
    ``multiply_by_quantized_multiplier`` (the CPU kernels' ``compute``), broadcast."""
    a_offset, b_offset, out_offset = params.offsets
    x = a.astype(np.int64) + a_offset
    y = b.astype(np.int64) + b_offset
    if params.op == "MUL":
        raw = multiply_by_quantized_multiplier(x * y, *params.out)
    else:
        scaled_x = multiply_by_quantized_multiplier(x << ADD_SUB_LEFT_SHIFT, *params.a)
        scaled_y = multiply_by_quantized_multiplier(y << ADD_SUB_LEFT_SHIFT, *params.b)
        raw = multiply_by_quantized_multiplier(scaled_x - scaled_y if params.op == "SUB" else scaled_x + scaled_y, *params.out)
    out[...] = np.clip(np.broadcast_to(raw + out_offset, out.shape), *params.bounds)


# -- 256-entry tables ----------------------------------------------------------------------------


class LookupCuda(_Launcher):
    """``out[i] = table[bits(x[i])]`` for an 8-bit ``x`` and a 256-entry 8-bit ``table``
    (a device array; the output has its dtype), in one launch."""

    source = "int8_elementwise.cu"
    kernel_name = "lookup_b8"

    def __call__(self, x: Any, table: Any) -> Any:
        if x.dtype.itemsize != 1 or table.dtype.itemsize != 1 or tuple(table.shape) != (256,):
            raise TypeError(f"expected an 8-bit input and a [256] 8-bit table, got {x.dtype} and {table.dtype}{list(table.shape)}")
        x = _contiguous(self.xp, x)
        out = self.xp.empty(x.shape, dtype=table.dtype)
        if out.size == 0:
            return out
        grid, block = elementwise_launch_config(out.size)
        self.launch(self.kernel_name, grid, block, (x, table, out, np.int64(out.size)), lookup_twin, (x, table), (out,))
        return out


def lookup_twin(x: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    """``lookup_b8`` in numpy: one ``take`` at the input's bits."""
    np.take(table, x.view(np.uint8), out=out)


class PairLookupCuda(_Launcher):
    """``out = table[bits(a) * 256 + bits(b)]`` for 8-bit ``a`` and ``b`` with numpy
    broadcasting up to rank 4 and a 65536-entry 8-bit ``table`` (a device array; the output
    has its dtype: bool for the comparisons), in one launch."""

    source = "int8_elementwise.cu"
    kernel_name = "pair_lookup_b8"

    def __call__(self, a: Any, b: Any, table: Any) -> Any:
        if a.dtype.itemsize != 1 or b.dtype.itemsize != 1 or table.dtype.itemsize != 1 or tuple(table.shape) != (65536,):
            raise TypeError("expected 8-bit inputs and a [65536] 8-bit table")
        shape = broadcast_pair_shape(a, b)
        a, b = _contiguous(self.xp, a), _contiguous(self.xp, b)
        out = self.xp.empty(shape, dtype=table.dtype)
        if out.size == 0:
            return out
        dims = (1,) * (MAX_RANK - len(shape)) + shape
        broadcast = tuple(a.shape) != shape or tuple(b.shape) != shape
        i64 = np.int64
        args = (
            a, b, table, out, i64(out.size), np.int32(broadcast), *(i64(d) for d in dims[1:]),
            *(i64(s) for s in broadcast_strides(a.shape, shape)), *(i64(s) for s in broadcast_strides(b.shape, shape)),
        )
        grid, block = elementwise_launch_config(out.size)
        self.launch(self.kernel_name, grid, block, args, pair_lookup_twin, (a, b, table), (out,))
        return out


def pair_lookup_twin(a: np.ndarray, b: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    """``pair_lookup_b8`` in numpy: the pair's index assembled from the bits, one ``take``."""
    index = (a.view(np.uint8).astype(np.intp) << 8) | b.view(np.uint8)
    np.take(table, np.broadcast_to(index, out.shape), out=out)


# -- QUANTIZE / DEQUANTIZE -----------------------------------------------------------------------


@dataclass(frozen=True)
class ChannelLayout:
    """Where the per-channel parameters apply: ``c = (i / inner) % channels`` for the flat
    index ``i`` of a C-contiguous tensor, the channel axis followed by ``trailing`` axes
    (per tensor: 1 channel, inner 1)."""

    channels: int
    inner: int
    trailing: int

    @classmethod
    def of(cls, shape: Sequence[int], axis: int | None) -> "ChannelLayout":
        """Per channel along ``axis`` of ``shape``; ``axis`` None: per tensor."""
        if axis is None:
            return cls(1, 1, 0)
        shape = tuple(int(d) for d in shape)
        return cls(shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64)), len(shape) - axis - 1)

    def broadcast(self, values: np.ndarray) -> np.ndarray:
        """``values[c]`` shaped to broadcast against the tensor (for the twins)."""
        if self.channels == 1:
            return values.reshape(())
        return values.reshape(self.channels, *(1,) * self.trailing)


def channel_parameters(scale: Any, zero_point: Any, shape: Sequence[int]) -> tuple[ChannelLayout, np.ndarray, np.ndarray]:
    """From a CPU kernel's ``scale`` and ``zero_point`` (scalars per tensor; arrays shaped
    ``[1, .., C, .., 1]`` per channel) for a tensor of ``shape``: the layout, and the
    scales (float32[C]) and zero points (int32[C]) the kernels read."""
    scale = np.asarray(scale, np.float32)
    axis = int(np.argmax(scale.shape)) if scale.size > 1 else None
    layout = ChannelLayout.of(shape, axis)
    scales = scale.reshape(-1)[:1] if axis is None else scale.reshape(-1)
    zero_points = np.broadcast_to(np.asarray(zero_point, np.int64).reshape(-1), (layout.channels,))
    return layout, np.ascontiguousarray(scales), np.ascontiguousarray(zero_points.astype(np.int32))


class QuantizeCuda(_Launcher):
    """QUANTIZE of float32 or float16 (the input's dtype picks the kernel) to ``dtype``
    (int8 or uint8): ``clamp(int32(roundf(x / scale[c])) + zero_point[c], low, high)``, in
    one launch. ``scales`` (float32) and ``zero_points`` (int32) are device arrays of
    ``layout.channels`` values."""

    source = "int8_elementwise.cu"

    def __init__(self, dtype: Any, layout: ChannelLayout, bounds: tuple[int, int], *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.dtype = np.dtype(dtype)
        self.out_code = _code(self.dtype, EIGHT_BIT, "the output")
        self.layout = layout
        self.bounds = (int(bounds[0]), int(bounds[1]))
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, scales: Any, zero_points: Any) -> Any:
        kernel_name = f"quantize_{_code(x.dtype, FLOAT_STORAGE, 'the input')}_{self.out_code}"
        x = _contiguous(self.xp, x)
        out = self.xp.empty(x.shape, dtype=self.dtype)
        if out.size == 0:
            return out
        grid, block = elementwise_launch_config(out.size)
        args = (x, scales, zero_points, out, np.int64(out.size), np.int64(self.layout.channels), np.int64(self.layout.inner),
                np.int32(self.bounds[0]), np.int32(self.bounds[1]))
        twin = functools.partial(quantize_twin, layout=self.layout, bounds=self.bounds)
        self.launch(kernel_name, grid, block, args, twin, (x, scales, zero_points), (out,))
        return out


def quantize_twin(x: np.ndarray, scales: np.ndarray, zero_points: np.ndarray, out: np.ndarray, *, layout: ChannelLayout, bounds: tuple[int, int]) -> None:
    """``quantize_*`` in numpy: the CPU kernel's ``quantize_quotient`` of the float32
    quotients."""
    scale = layout.broadcast(scales)
    zero_point = layout.broadcast(zero_points.astype(np.int64))
    out[...] = quantize_quotient(x.astype(np.float32) / scale, zero_point, *bounds)


class DequantizeCuda(_Launcher):
    """DEQUANTIZE of int8/uint8 to float32 stored as ``storage`` (float32 or float16):
    ``scale[c] * (q - zero_point[c])``, in one launch. ``scales`` (float32) and
    ``zero_points`` (int32) are device arrays of ``layout.channels`` values."""

    source = "int8_elementwise.cu"

    def __init__(self, dtype: Any, storage: Any, layout: ChannelLayout, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.dtype, self.storage = np.dtype(dtype), np.dtype(storage)
        self.layout = layout
        self.kernel_name = f"dequantize_{_code(self.dtype, EIGHT_BIT, 'the input')}_{_code(self.storage, FLOAT_STORAGE, 'the output')}"
        super().__init__(xp, module, host_device)

    def __call__(self, q: Any, scales: Any, zero_points: Any) -> Any:
        if q.dtype != self.dtype:
            raise TypeError(f"expected a {self.dtype} input, got {q.dtype}")
        q = _contiguous(self.xp, q)
        out = self.xp.empty(q.shape, dtype=self.storage)
        if out.size == 0:
            return out
        grid, block = elementwise_launch_config(out.size)
        args = (q, scales, zero_points, out, np.int64(out.size), np.int64(self.layout.channels), np.int64(self.layout.inner))
        twin = functools.partial(dequantize_twin, layout=self.layout)
        self.launch(self.kernel_name, grid, block, args, twin, (q, scales, zero_points), (out,))
        return out


def dequantize_twin(q: np.ndarray, scales: np.ndarray, zero_points: np.ndarray, out: np.ndarray, *, layout: ChannelLayout) -> None:
    """``dequantize_*`` in numpy: the CPU kernel's ``dequantize_affine``, then the storage
    dtype (float16: round to nearest even)."""
    scale = layout.broadcast(scales)
    zero_point = layout.broadcast(zero_points.astype(np.float32))
    out[...] = dequantize_affine(q, scale, zero_point)
