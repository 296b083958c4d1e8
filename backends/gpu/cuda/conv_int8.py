"""Launchers, launch shapes and numpy twins of the quantized convolution family, one launch
per node each: ``conv2d_int8.cu`` (CONV_2D), ``depthwise_conv2d_int8.cu``
(DEPTHWISE_CONV_2D) and ``fully_connected_int8.cu`` (FULLY_CONNECTED), on int8 or uint8
tensors, and ``batch_matmul_int8.cu`` (BATCH_MATMUL, int8), the quantized matrix product
of the same family.

Each launch does the whole node: the int32 accumulation with the zero points, the bias,
the requantization (``fixed_point.cuh``: ``MultiplyByQuantizedMultiplier`` per output
channel; FULLY_CONNECTED's double rescale), the fused activation's clamp and the store.
The output-stage parameters (:class:`OutputStage`) are the CPU kernels' own, computed at
prepare by the ops (``backends/gpu/ops/*_quantized.py``).

The launchers follow ``sources._Launcher``: on a device they launch the ``.cu`` kernel, in
host emulation (``host_device=...``) their numpy twin, as one launch of the emulated
machine. The twins are exact: integer sums computed by a float matmul where every partial
sum is an integer below 2**53 (float64; float32 below 2**24), wrapped to int32 as the
kernels' accumulators, then the CPU's array-namespace requantization
(``backends.cpu.quantization``, which ``tests/gpu/test_quantized_arithmetic.py`` checks
equal to ``fixed_point.cuh``). ``tests/gpu/test_int8_conv_kernels.py`` checks twin, kernel
(through the host shim) and the CPU kernels equal, bit for bit.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from backends.cpu.kernels._window import window_view
from backends.cpu.kernels.fully_connected_quantized import rescale_double
from backends.cpu.quantization import exact_float_dtype, multiply_by_quantized_multiplier, wrap_int32
from backends.gpu.cuda.conv2d import Conv2DGeometry, _check_out, _contiguous, conv2d_launch_config
from backends.gpu.cuda.depthwise import DepthwiseGeometry, depthwise_launch_config, depthwise_tap_sums
from backends.gpu.cuda.int8_windows import column_reduction_launch_config
from backends.gpu.cuda.matmul import MatmulShape, matmul_bias_act_launch_config
from backends.gpu.cuda.sources import _Launcher

_NULL = np.uint64(0)  # an absent pointer argument, passed by value: 8 zero bytes
_TYPES = {np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8"}


def quantized_kernel_name(prefix: str, dtype: Any) -> str:
    """``<prefix>_int8`` or ``<prefix>_uint8`` for the tensors' integer type."""
    name = _TYPES.get(np.dtype(dtype))
    if name is None:
        raise TypeError(f"the quantized {prefix} kernels take int8 or uint8 tensors, not {np.dtype(dtype)}")
    return f"{prefix}_{name}"


@dataclass(frozen=True)
class OutputStage:
    """The zero points and the quantized clamp of a quantized kernel, as its int32
    arguments: ``input_offset = -z_in``, ``filter_offset = -z_w`` (0 where TFLite ignores
    the filter's zero points), ``output_offset = z_out``, and the fused activation's clamp
    ``[act_min, act_max]`` (``CalculateActivationRangeQuantized``)."""

    input_offset: int
    filter_offset: int
    output_offset: int
    act_min: int
    act_max: int

    def scalar_args(self) -> tuple[np.int32, ...]:
        return tuple(
            np.int32(v) for v in (self.input_offset, self.filter_offset, self.output_offset, self.act_min, self.act_max)
        )


def _exact_dtype(filter_abs_sums: np.ndarray, input_offset: int, dtype: np.dtype) -> np.dtype:
    """The float type in which the twin's dot products are exact (the kernels' int32 sums
    are exact too whenever this bound is below 2**31)."""
    info = np.iinfo(dtype)
    x_max = max(abs(int(info.min) + input_offset), abs(int(info.max) + input_offset))
    bound = int(np.max(filter_abs_sums, initial=0)) * x_max
    found = exact_float_dtype(bound)
    if found is None:
        raise ValueError(f"the dot products (up to {bound}) are too large for the twin to compute exactly")
    return found


def _requantize_into(out: np.ndarray, acc: np.ndarray, bias: np.ndarray | None, multipliers: np.ndarray,
                     shifts: np.ndarray, stage: OutputStage) -> None:
    """``out = clamp(MultiplyByQuantizedMultiplier(wrap32(acc + bias), m[c], s[c]) + z_out)``,
    channels last: the kernels' epilogue in the CPU's array-namespace arithmetic."""
    if bias is not None:
        acc = acc + bias.astype(np.int64).reshape(-1)
    scaled = multiply_by_quantized_multiplier(wrap_int32(acc), multipliers.astype(np.int64), shifts.astype(np.int64))
    out[...] = np.clip(scaled + stage.output_offset, stage.act_min, stage.act_max)


# -- CONV_2D -------------------------------------------------------------------------------------


def conv2d_int8_args(x: Any, w: Any, bias: Any, multipliers: Any, shifts: Any, out: Any, geometry: Conv2DGeometry,
                     stage: OutputStage, null: Any) -> tuple:
    """The argument tuple of a ``conv2d_int8/_uint8`` launch, in parameter order."""
    return (x, w, null if bias is None else bias, multipliers, shifts, out, *geometry.scalar_args(), *stage.scalar_args())


class _ConvolutionInt8Cuda(_Launcher):
    """What the quantized convolutions' launchers share: the window (stride, dilation,
    padding) and the output stage, fixed at construction; at each call the shapes checked,
    one launch of ``kernel_family`` (its int8 or uint8 entry point) or, in host emulation, its
    numpy twin. Subclasses say which kernel, geometry, launch layout, arguments and twin.
    ``xp``, ``module`` and ``host_device`` as in ``_Launcher``."""

    kernel_family = ""  # the entry points are KERNEL_FAMILY_int8 and _uint8

    def __init__(self, stride: Sequence[int], dilation: Sequence[int], padding: int | str, stage: OutputStage, *,
                 xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.stride = tuple(int(s) for s in stride)
        self.dilation = tuple(int(d) for d in dilation)
        self.padding = padding
        self.stage = stage
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, w: Any, bias: Any, multipliers: Any, shifts: Any, out: Any = None) -> Any:
        xp = self.xp
        name = quantized_kernel_name(self.kernel_family, x.dtype)
        if w.dtype != x.dtype:
            raise TypeError(f"the filter must be {x.dtype} like the input, got {w.dtype}")
        geometry = self.geometry(x.shape, w.shape)
        x, w = _contiguous(xp, x), _contiguous(xp, w)
        out = _check_out(xp, out, geometry.out_shape, np.dtype(x.dtype))
        if out.size == 0:
            return out
        grid, block = self.launch_config(geometry)
        args = self.arguments(x, w, bias, multipliers, shifts, out, geometry)
        twin = functools.partial(self.twin, geometry=geometry)
        self.launch(name, grid, block, args, twin, (x, w, bias, multipliers, shifts), (out,))
        return out


class Conv2DInt8Cuda(_ConvolutionInt8Cuda):
    """Quantized CONV_2D in one launch of ``conv2d_int8.cu``: NHWC int8/uint8 input, the
    filter of the same type laid out by ``conv2d.conv2d_filter_layout``
    (``[groups, KH, KW, I, O]``), an optional int32 bias, int32 per-channel multipliers and
    shifts, the zero points and clamp of ``stage``."""

    source = "conv2d_int8.cu"
    kernel_family = "conv2d"

    def geometry(self, x_shape, w_shape) -> Conv2DGeometry:
        return Conv2DGeometry.of(x_shape, w_shape, self.stride, self.dilation, self.padding)

    def launch_config(self, geometry: Conv2DGeometry):
        return conv2d_launch_config(geometry)

    def arguments(self, x, w, bias, multipliers, shifts, out, geometry: Conv2DGeometry) -> tuple:
        return conv2d_int8_args(x, w, bias, multipliers, shifts, out, geometry, self.stage, null=_NULL)

    def twin(self, *arrays: np.ndarray, geometry: Conv2DGeometry) -> None:
        conv2d_int8_twin(*arrays, geometry=geometry, stage=self.stage)


def conv2d_int8_twin(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, multipliers: np.ndarray,
                     shifts: np.ndarray, out: np.ndarray, *, geometry: Conv2DGeometry, stage: OutputStage) -> None:
    """``conv2d_int8/_uint8`` in numpy: im2col over the input plus its offset, padded with 0
    (a tap outside the input adds nothing, as the kernel skips it), one exact float product
    per group, then the epilogue (:func:`_requantize_into`)."""
    g, groups = geometry.window, geometry.groups
    group_in, group_out = geometry.group_in, geometry.group_out
    weights = w.astype(np.int64) + stage.filter_offset  # [groups, KH, KW, I, O]
    dtype = _exact_dtype(np.abs(weights).reshape(groups, -1, group_out).sum(axis=1), stage.input_offset, x.dtype)
    shifted = x.astype(dtype) + dtype.type(stage.input_offset)
    padded = np.pad(shifted, ((0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right), (0, 0)))
    windows = window_view(g, padded)  # [N, OH, OW, KH, KW, groups * I]
    rows = g.batch * g.out_h * g.out_w
    columns = windows.reshape(rows, g.filter_h * g.filter_w, groups, group_in).transpose(2, 0, 1, 3)
    products = np.matmul(columns.reshape(groups, rows, -1), weights.astype(dtype).reshape(groups, -1, group_out))
    acc = products.transpose(1, 0, 2).reshape(geometry.out_shape).astype(np.int64)
    _requantize_into(out, acc, bias, multipliers, shifts, stage)


# -- DEPTHWISE_CONV_2D -----------------------------------------------------------------------------


def depthwise_int8_args(x: Any, w: Any, bias: Any, multipliers: Any, shifts: Any, out: Any, geometry: DepthwiseGeometry,
                        stage: OutputStage, null: Any) -> tuple:
    """The argument tuple of a ``depthwise_conv2d_int8/_uint8`` launch, in parameter order."""
    return (x, w, null if bias is None else bias, multipliers, shifts, out, *geometry.scalar_args(), *stage.scalar_args())


class DepthwiseConv2DInt8Cuda(_ConvolutionInt8Cuda):
    """Quantized DEPTHWISE_CONV_2D in one launch of ``depthwise_conv2d_int8.cu``: NHWC
    int8/uint8 input, TFLite's filter ``[1, KH, KW, C*M]`` of the same type, an optional
    int32 bias, int32 per-channel multipliers and shifts, the zero points and clamp of
    ``stage``."""

    source = "depthwise_conv2d_int8.cu"
    kernel_family = "depthwise_conv2d"

    def geometry(self, x_shape, w_shape) -> DepthwiseGeometry:
        return DepthwiseGeometry.of(x_shape, w_shape, self.stride, self.dilation, self.padding)

    def launch_config(self, geometry: DepthwiseGeometry):
        return depthwise_launch_config(geometry.out_shape)

    def arguments(self, x, w, bias, multipliers, shifts, out, geometry: DepthwiseGeometry) -> tuple:
        return depthwise_int8_args(x, w, bias, multipliers, shifts, out, geometry, self.stage, null=_NULL)

    def twin(self, *arrays: np.ndarray, geometry: DepthwiseGeometry) -> None:
        depthwise_conv2d_int8_twin(*arrays, geometry=geometry, stage=self.stage)


def depthwise_conv2d_int8_twin(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, multipliers: np.ndarray,
                               shifts: np.ndarray, out: np.ndarray, *, geometry: DepthwiseGeometry,
                               stage: OutputStage) -> None:
    """``depthwise_conv2d_int8/_uint8`` in numpy: for each tap (ky, then kx) the strided
    block of input it reads, times the tap's weights, added where it falls inside (the
    kernel skips the others), in int64; then the epilogue (:func:`_requantize_into`)."""
    shifted = x.astype(np.int64) + stage.input_offset
    weights = w[0].astype(np.int64) + stage.filter_offset  # [KH, KW, C*M]
    acc = depthwise_tap_sums(shifted, weights, geometry, np.int64)
    _requantize_into(out, acc, bias, multipliers, shifts, stage)


# -- FULLY_CONNECTED -------------------------------------------------------------------------------


def fully_connected_int8_launch_config(rows: int, units: int, depth: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` of ``fully_connected_int8/_uint8``: a block per (row, tile of units),
    the depth split over the block's threads (``int8_windows.column_reduction_launch_config``):
    more than one block for more than one row."""
    return column_reduction_launch_config(units, depth, rows)


def fully_connected_int8_args(x: Any, w: Any, bias: Any, scales: Any, out: Any, stage: OutputStage, null: Any) -> tuple:
    """The argument tuple of a ``fully_connected_int8/_uint8`` launch, in parameter order:
    ``x`` [rows, depth], ``w`` [depth, units]."""
    rows, depth = (int(d) for d in x.shape)
    units = int(w.shape[1])
    return (x, w, null if bias is None else bias, scales, out, np.int32(rows), np.int32(units), np.int32(depth),
            *stage.scalar_args())


class FullyConnectedInt8Cuda(_Launcher):
    """Quantized FULLY_CONNECTED in one launch of ``fully_connected_int8.cu``: ``x``
    [rows, depth] int8/uint8, weights [depth, units] of the same type, an optional int32
    bias, float64 per-unit scales of the double rescale, the zero points and clamp of
    ``stage``. ``xp``, ``module`` and ``host_device`` as in ``_Launcher``."""

    source = "fully_connected_int8.cu"

    def __init__(self, stage: OutputStage, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.stage = stage
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, w: Any, bias: Any, scales: Any, out: Any = None) -> Any:
        xp = self.xp
        name = quantized_kernel_name("fully_connected", x.dtype)
        if w.dtype != x.dtype or x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[0]:
            raise ValueError(f"expected x [rows, depth] and weights [depth, units] of one type, got "
                             f"{x.dtype}{list(x.shape)} and {w.dtype}{list(w.shape)}")
        x, w = _contiguous(xp, x), _contiguous(xp, w)
        out = _check_out(xp, out, (int(x.shape[0]), int(w.shape[1])), np.dtype(x.dtype))
        if out.size == 0:
            return out
        grid, block = fully_connected_int8_launch_config(*out.shape, int(x.shape[1]))
        args = fully_connected_int8_args(x, w, bias, scales, out, self.stage, null=_NULL)
        twin = functools.partial(fully_connected_int8_twin, stage=self.stage)
        self.launch(name, grid, block, args, twin, (x, w, bias, scales), (out,))
        return out


def fully_connected_int8_twin(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, scales: np.ndarray,
                              out: np.ndarray, *, stage: OutputStage) -> None:
    """``fully_connected_int8/_uint8`` in numpy: one exact float product, the bias, the
    int32 wrap of the kernel's accumulator, then the CPU kernel's ``rescale_double``."""
    weights = w.astype(np.int64) + stage.filter_offset  # [depth, units]
    dtype = _exact_dtype(np.abs(weights).sum(axis=0), stage.input_offset, x.dtype)
    shifted = x.astype(dtype) + dtype.type(stage.input_offset)
    acc = np.matmul(shifted, weights.astype(dtype)).astype(np.int64)
    if bias is not None:
        acc += bias.astype(np.int64).reshape(-1)
    out[...] = rescale_double(wrap_int32(acc), scales.reshape(-1), stage.output_offset, stage.act_min, stage.act_max,
                              check_int32_conversion=True)



# -- BATCH_MATMUL ------------------------------------------------------------------------------------


def batch_matmul_int8_args(a: Any, b: Any, c: Any, shape: MatmulShape, stage: OutputStage, multiplier: int,
                           shift: int) -> tuple:
    """The argument tuple of a ``batch_matmul_int8`` launch, in parameter order (``stage``:
    ``input_offset = -z_x``, ``filter_offset = -z_y``, the output's zero point and range)."""
    return (a, b, c, *shape.scalar_args(), np.int32(stage.input_offset), np.int32(stage.filter_offset),
            np.int32(multiplier), np.int32(shift), np.int32(stage.output_offset), np.int32(stage.act_min),
            np.int32(stage.act_max))


class BatchMatmulInt8Cuda(_Launcher):
    """Quantized BATCH_MATMUL (int8) in one launch of ``batch_matmul_int8.cu``: ``a``
    ``[M, K]`` or ``[B or 1, M, K]`` (``[.., K, M]`` when ``adjoint_a``), ``b`` ``[K, N]``
    or ``[B or 1, K, N]`` (``[.., N, K]`` when ``adjoint_b``), read where they lie; one
    multiplier and shift; the zero points and range of ``stage``. The result is
    ``[B, M, N]``. ``xp``, ``module`` and ``host_device`` as in ``_Launcher``."""

    source = "batch_matmul_int8.cu"

    def __init__(self, stage: OutputStage, multiplier: int, shift: int, *, xp: Any = None, module: Any = None,
                 host_device: Any = None) -> None:
        self.stage = stage
        self.multiplier, self.shift = int(multiplier), int(shift)
        super().__init__(xp, module, host_device)

    def __call__(self, a: Any, b: Any, *, adjoint_a: bool = False, adjoint_b: bool = False) -> Any:
        xp = self.xp
        if a.dtype != np.int8 or b.dtype != np.int8:
            raise TypeError(f"batch_matmul_int8 multiplies int8 operands, got {a.dtype} and {b.dtype}")
        shape = MatmulShape.of(a.shape, b.shape, adjoint_a, adjoint_b)
        a, b = _contiguous(xp, a), _contiguous(xp, b)
        out = xp.empty((shape.batch, shape.m, shape.n), dtype=np.int8)
        if out.size == 0:
            return out
        grid, block = matmul_bias_act_launch_config(shape.batch, shape.m, shape.n)
        args = batch_matmul_int8_args(a, b, out, shape, self.stage, self.multiplier, self.shift)
        twin = functools.partial(batch_matmul_int8_twin, adjoint_a=adjoint_a, adjoint_b=adjoint_b, stage=self.stage,
                                 multiplier=self.multiplier, shift=self.shift)
        self.launch("batch_matmul_int8", grid, block, args, twin, (a, b), (out,))
        return out


def batch_matmul_int8_twin(a: np.ndarray, b: np.ndarray, out: np.ndarray, *, adjoint_a: bool, adjoint_b: bool,
                           stage: OutputStage, multiplier: int, shift: int) -> None:
    """``batch_matmul_int8`` in numpy: the exact float64 product of the operands plus their
    offsets (a shared operand broadcast), wrapped to int32, then
    ``MultiplyByQuantizedMultiplier``, the zero point and the clamp."""
    a = a.astype(np.float64) + stage.input_offset
    b = b.astype(np.float64) + stage.filter_offset
    if adjoint_a:
        a = np.swapaxes(a, -1, -2)
    if adjoint_b:
        b = np.swapaxes(b, -1, -2)
    acc = wrap_int32(np.matmul(a, b).astype(np.int64)).reshape(out.shape)
    scaled = multiply_by_quantized_multiplier(acc, multiplier, shift)
    out[...] = np.clip(scaled + stage.output_offset, stage.act_min, stage.act_max)
