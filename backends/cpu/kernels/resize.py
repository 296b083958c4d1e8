"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (NHWC), with TFLite's exact index arithmetic.

The source coordinates are computed as TFLite's reference kernels do, in float32
(``reference_ops::ComputeInterpolationValues`` / ``GetNearestNeighbor``), so that the
chosen pixels and weights are bit-identical; int8/int16 bilinear uses TFLite's
integer-only arithmetic (``ResizeBilinearInteger``: 10-bit fixed point coordinates).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import checked_bytes, inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

T = TensorType
f32 = np.float32


def float_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return f32(in_size - 1) / f32(out_size - 1)
    return f32(in_size) / f32(out_size)


def bilinear_float_coordinates(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """(lower index, upper index, fraction) per output position, in float32 like TFLite."""
    scale = float_scale(in_size, out_size, align_corners)
    position = np.arange(out_size, dtype=f32)
    scaled = (position + f32(0.5)) * scale - f32(0.5) if half_pixel else position * scale
    lower = np.maximum(np.floor(scaled).astype(np.int64), 0)
    upper = np.minimum(np.ceil(scaled).astype(np.int64), in_size - 1)
    return lower, upper, (scaled - lower.astype(f32)).astype(f32)


def _truncating_div(value: np.ndarray, divisor: int) -> np.ndarray:
    """C++ integer division (rounds toward zero)."""
    return np.where(value >= 0, value // divisor, -((-value) // divisor))


def bilinear_integer_coordinates(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """(lower, upper, 10-bit fixed-point position) per output position (``ResizeBilinearInteger``)."""
    if align_corners and out_size > 1:
        scale_10 = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale_10 = ((1 << 10) * in_size + out_size // 2) // out_size
    position = np.arange(out_size, dtype=np.int64)
    scaled = position * scale_10 + scale_10 // 2 - (1 << 9) if half_pixel else position * scale_10
    lower = np.maximum(_truncating_div(scaled, 1 << 10), 0)
    upper = np.minimum(_truncating_div(scaled + (1 << 10) - 1, 1 << 10), in_size - 1)
    return lower, upper, scaled


def nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """``GetNearestNeighbor``: float32 source coordinate, then round (align_corners) or floor."""
    scale = float_scale(in_size, out_size, align_corners)
    offset = f32(0.5) if half_pixel else f32(0.0)
    value = (np.arange(out_size, dtype=f32) + offset) * scale
    if align_corners:
        # TfLiteRound is std::round (half away from zero); exact on float32 values in float64.
        wide = value.astype(np.float64)
        index = (np.sign(wide) * np.floor(np.abs(wide) + 0.5)).astype(np.int64)
    else:
        index = np.floor(value).astype(np.int64)
    index = np.minimum(index, in_size - 1)
    return np.maximum(index, 0) if half_pixel else index


class _ResizeBase(CpuKernel):
    types: tuple[int, ...]

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, size = self.inputs
        self.require_types(x, *self.types)
        self.require_types(size, T.INT32, role="size")
        self.require_types(self.outputs[0], x.type, role="output")
        if len(x.shape) != 4:
            raise self.unsupported(f"the input must be 4-D (NHWC), it has shape {list(x.shape)}")
        if size.shape != (2,):
            raise self.unsupported(f"size must have shape [2], it has {list(size.shape)}")
        self.check_params()
        self.from_values = not size.is_constant
        if self.from_values:
            self.outputs[0].set_dynamic()
            return
        self.outputs[0].resize(self.plan(x.shape, int_values(size)))

    def check_params(self) -> None:
        pass

    def plan(self, shape, size) -> list[int]:
        """Precompute source indices and weights; return the output shape."""
        raise NotImplementedError

    def compute(self, x: np.ndarray, out: np.ndarray) -> None:
        raise NotImplementedError

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0]
        if self.from_values:
            out.set_data(np.empty(self.plan(x.shape, int_values(self.inputs[1])), x.dtype))
        self.compute(x, out.data)


# v1: float32, uint8 (align_corners included); v2: int8; v3: half_pixel_centers; v4: int16.
@register(BuiltinOperator.RESIZE_BILINEAR, 1, 4)
class ResizeBilinear(_ResizeBase):
    """RESIZE_BILINEAR v1-v4: float32/uint8 with float weights, int8/int16 with TFLite's
    10-bit fixed-point weights (all integer outputs bit-exact)."""

    types = (T.FLOAT32, T.UINT8, T.INT8, T.INT16)

    def check_params(self) -> None:
        if self.params.half_pixel_centers and self.params.align_corners:
            raise self.unsupported("half_pixel_centers and align_corners cannot both be true")

    def plan(self, shape, size) -> list[int]:
        n, h, w, c = shape
        out_h, out_w = size
        if out_h <= 0 or out_w <= 0:
            raise self.unsupported(f"size {list(size)} must be positive")
        out_shape = [n, out_h, out_w, c]
        checked_bytes(self, out_shape, np.float32 if self.inputs[0].type == T.FLOAT32 else np.int64, "the output")
        align, half = bool(self.params.align_corners), bool(self.params.half_pixel_centers)
        self.integer = self.inputs[0].type in (T.INT8, T.INT16)
        if self.integer:
            y0, y1, fy = bilinear_integer_coordinates(h, out_h, align, half)
            x0, x1, fx = bilinear_integer_coordinates(w, out_w, align, half)
            dy, dx = fy - (y0 << 10), fx - (x0 << 10)  # fraction in 1/1024
            one, self.wide = 1 << 10, np.int64
        else:
            y0, y1, dy = bilinear_float_coordinates(h, out_h, align, half)
            x0, x1, dx = bilinear_float_coordinates(w, out_w, align, half)
            one, self.wide = f32(1), f32
        self.rows, self.cols = (y0, y1), (x0, x1)
        # Weights shaped to broadcast over [N, out_h, W, C] and [N, out_h, out_w, C]; the
        # column weights are spelled out over C (a broadcast innermost axis is slow).
        self.wy = ((one - dy)[None, :, None, None], dy[None, :, None, None])
        self.wx = tuple(np.repeat(wx[None, None, :, None], c, axis=3) for wx in (one - dx, dx))
        # Scratch: one term, and the sum when the output type is not the sum's type.
        self.term = np.empty(out_shape, self.wide)
        self.total = None if self.inputs[0].type == T.FLOAT32 else np.empty(out_shape, self.wide)
        return out_shape

    def compute(self, x: np.ndarray, out: np.ndarray) -> None:
        (y0, y1), (x0, x1) = self.rows, self.cols
        (wy0, wy1), (wx0, wx1) = self.wy, self.wx
        upper = np.take(x, y0, axis=1).astype(self.wide, copy=False)
        upper *= wy0
        lower = np.take(x, y1, axis=1).astype(self.wide, copy=False)
        lower *= wy1
        term = self.term
        if self.total is None:
            # float32: rows first, then columns: (a*(1-dy) + b*dy)*(1-dx) + (...)*dx. The
            # weights and pixels are TFLite's; only the summation order differs from its
            # a*(1-dy)*(1-dx) + b*dy*(1-dx) + c*(1-dy)*dx + d*dy*dx (within a few ulp),
            # for half the memory traffic.
            upper += lower
            np.take(upper, x0, axis=2, out=out, mode="clip")
            out *= wx0
            np.take(upper, x1, axis=2, out=term, mode="clip")
            term *= wx1
            out += term
            return
        # uint8, int8, int16: TFLite's four terms in its order (the rounding of the integer
        # result depends on it); the row weight is applied before the column gather, which
        # gives the same products.
        total = self.total
        np.take(upper, x0, axis=2, out=total, mode="clip")
        total *= wx0
        for rows, columns, weight in ((lower, x0, wx0), (upper, x1, wx1), (lower, x1, wx1)):
            np.take(rows, columns, axis=2, out=term, mode="clip")
            term *= weight
            total += term
        if self.integer:
            # Round half away from zero on 20 fractional bits (C++ truncating division).
            total += np.where(total > 0, 1 << 19, -(1 << 19))
            np.copyto(out, _truncating_div(total, 1 << 20), casting="unsafe")
        else:
            total += f32(0.5)  # uint8: static_cast<uint8_t>(value + 0.5)
            np.copyto(out, total, casting="unsafe")


# v1: float32, uint8; v2: int8; v3: align_corners / half_pixel_centers; v4: int16.
@register(BuiltinOperator.RESIZE_NEAREST_NEIGHBOR, 1, 4)
class ResizeNearestNeighbor(_ResizeBase):
    """RESIZE_NEAREST_NEIGHBOR v1-v4: copy the nearest source pixel (float32, uint8, int8, int16)."""

    types = (T.FLOAT32, T.UINT8, T.INT8, T.INT16)

    def plan(self, shape, size) -> list[int]:
        n, h, w, c = shape
        out_h, out_w = size
        if out_h < 0 or out_w < 0:
            raise self.unsupported(f"size {list(size)} must not be negative")
        checked_bytes(self, [n, out_h, out_w, c], self.inputs[0].dtype, "the output")
        align, half = bool(self.params.align_corners), bool(self.params.half_pixel_centers)
        self.rows = nearest_indices(h, out_h, align, half) if out_h else np.zeros(0, np.int64)
        self.cols = nearest_indices(w, out_w, align, half) if out_w else np.zeros(0, np.int64)
        return [n, out_h, out_w, c]

    def compute(self, x: np.ndarray, out: np.ndarray) -> None:
        np.take(np.take(x, self.rows, axis=1), self.cols, axis=2, out=out, mode="clip")
