"""CONV_3D and CONV_3D_TRANSPOSE on float32 (TFLite's ``conv3d.cc``, ``conv3d_transpose.cc``).

CONV_3D: NDHWC input, filter ``[KD, KH, KW, I, O]``, optional bias ``[O]``:

    out[n, z, y, x, o] = bias[o] + sum_{kz, ky, kx, i} in[n, z*sd + kz*dd - pad_d, y*sh + ky*dh - pad_h,
                                                           x*sw + kx*dw - pad_w, i] * filter[kz, ky, kx, i, o]

positions outside the input skipped (TFLite's reference ``Conv3D``), then
``ActivationFunctionWithMinMax`` (so even with no activation +-inf comes out as +-FLT_MAX).
The output size and padding of each axis are TFLite's (``ComputePadding3DValues``: the 2-D
rule per axis, ``common.compute_padding``). There are no groups: the input channels must
equal the filter's.

CONV_3D_TRANSPOSE: inputs ``output_shape`` (int32 ``[5]``), filter ``[KD, KH, KW, O, I]``,
input ``[N, D, H, W, I]``, optional bias ``[O]``. Every input voxel scatters its weighted
filter into the output (TFLite's reference ``Conv3DTranspose``):

    out[n, z*sd + kz*dd - pad_d, y*sh + ky*dh - pad_h, x*sw + kx*dw - pad_w, o] += in[n, z, y, x, i]
                                                                                  * filter[kz, ky, kx, o, i]

(contributions outside the output dropped), then bias and the activation clamp. The
padding is the one CONV_3D would use on an output-sized input, which must give back the
input's size (LiteRT checks this too).

How: the 2-D kernels' BLAS formulation in three dimensions. CONV_3D copies, tap by tap, the
input voxels each filter tap reads into an im2col matrix ``[N*OD*OH*OW, taps*I]`` (positions
that read the padding stay 0) and multiplies it by the filter as ``[taps*I, O]``, a slab
of output depths at a time when the matrix would exceed ``IM2COL_BLOCK_BYTES``. Taps that
only ever read the padding (a huge dilation) are left out. As CONV_2D does
(``_float_reference``), one BLAS dot of the input tells whether a partial sum could reach
the float32 range; if so TFLite's loop runs instead (slow, exact). CONV_3D_TRANSPOSE
computes every voxel's patch in one matmul (``[N*D*H*W, I] x [I, taps*O]``) and adds each
tap's patches into the output with strided slices (col2im); like TRANSPOSE_CONV it has no
overflow guard: its sums run in another order than TFLite's, which only shows when they
overflow.

Version 1 of each is the only one, float32 only (LiteRT 2.3 refuses int8 CONV_3D_TRANSPOSE).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backends.cpu.common import AxisPadding, compute_padding
from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._float_reference import (
    activation_range,
    bias_max,
    max_row_norm,
    norm_bound,
    square_limit,
)
from backends.cpu.kernels._window import _clipped_axis, check_shapes, remember_shapes
from backends.cpu.kernels.conv2d import IM2COL_BLOCK_BYTES
from backends.cpu.kernels.transpose_conv import OutputShapeFromInput
from schema.enums import BuiltinOperator, TensorType

AXES = ("depth", "height", "width")


@dataclass(frozen=True)
class Tap:
    """One filter tap (kz, ky, kx) that reaches the data on every axis, with the output
    positions it touches and the input positions they pair with, per axis: CONV_3D's
    ``(outputs, inputs read)``; CONV_3D_TRANSPOSE's ``(inputs, outputs written)``."""

    index: tuple[int, int, int]
    first: tuple[slice, slice, slice]
    second: tuple[slice, slice, slice]


def axis_paddings(kernel, spatial, filter_spatial) -> list[AxisPadding]:
    """TFLite's ``ComputePadding3DValues``: output size and padding of the depth, height and
    width axes, or the kernel's error naming what does not fit."""
    params = kernel.params
    strides = (params.stride_d, params.stride_h, params.stride_w)
    dilations = (params.dilation_d_factor, params.dilation_h_factor, params.dilation_w_factor)
    for name, values in (("strides", strides), ("dilation factors", dilations)):
        if min(values) <= 0:
            raise kernel.unsupported(f"{name} (depth, height, width) must be positive, got {list(values)}")
    if min(filter_spatial) <= 0:
        raise kernel.unsupported(f"the filter's depth, height and width must be positive, got {list(filter_spatial)}")
    return [
        compute_padding(params.padding, int(size), int(k), int(s), int(d))
        for size, k, s, d in zip(spatial, filter_spatial, strides, dilations)
    ]


def taps(kernel, filter_spatial, axes: list[AxisPadding], count_spatial, reach_spatial) -> list[Tap]:
    """The filter taps, in TFLite's order (kz, ky, kx), that pair some of ``count_spatial``
    positions (CONV_3D: outputs; transpose: inputs) with positions inside ``reach_spatial``
    (CONV_3D: the input; transpose: the output), with those positions per axis."""
    params = kernel.params
    strides = (params.stride_d, params.stride_h, params.stride_w)
    dilations = (params.dilation_d_factor, params.dilation_h_factor, params.dilation_w_factor)
    per_axis = []
    for k, axis, s, d, count, reach in zip(filter_spatial, axes, strides, dilations, count_spatial, reach_spatial):
        per_axis.append([(t, _clipped_axis(t * d - axis.before, s, count, reach)) for t in range(k)])
    return [
        Tap((z, y, x), (sz[0], sy[0], sx[0]), (sz[1], sy[1], sx[1]))
        for z, sz in per_axis[0]
        if sz is not None
        for y, sy in per_axis[1]
        if sy is not None
        for x, sx in per_axis[2]
        if sx is not None
    ]


def tap_axes(tap_list: list[Tap]) -> tuple[list[int], list[int], list[int]]:
    """The filter indices of each axis that some tap of ``tap_list`` uses (sorted)."""
    return tuple(sorted({tap.index[a] for tap in tap_list}) for a in range(3))


def finish(total: np.ndarray, bias: np.ndarray | None, bounds: tuple[float, float], out: np.ndarray) -> None:
    """``out = min(max(total + bias, low), high)`` (NaN stays NaN, as ``np.clip``)."""
    if bias is not None:
        np.add(total, bias.reshape(-1), out=total)
    np.clip(total, np.float32(bounds[0]), np.float32(bounds[1]), out=out)


def check_float32(kernel, tensor, role: str) -> None:
    kernel.require_types(tensor, TensorType.FLOAT32, role=role)


@register(BuiltinOperator.CONV_3D, 1, 1)  # v1: float32 (the only version)
class Conv3D(CpuKernel):
    """CONV_3D v1 (float32)."""

    def prepare(self) -> None:
        self.require_num_inputs(2, 3)
        x, filters = self.inputs[0], self.inputs[1]
        bias = self.inputs[2] if len(self.inputs) == 3 else None
        for tensor, role in ((x, "input"), (filters, "filter"), (bias, "bias"), (self.outputs[0], "output")):
            if tensor is not None:
                check_float32(self, tensor, role)
        if len(x.shape) != 5 or len(filters.shape) != 5:
            raise self.unsupported(
                f"input and filter must be 5-D (NDHWC, [KD, KH, KW, I, O]), got {list(x.shape)} and {list(filters.shape)}"
            )
        batch, *spatial, channels = (int(d) for d in x.shape)
        *filter_spatial, filter_in, out_channels = (int(d) for d in filters.shape)
        if channels != filter_in:
            raise self.unsupported(f"input channels ({channels}) differ from the filter's in-channels ({filter_in})")
        if bias is not None and bias.num_elements != out_channels:
            raise self.unsupported(f"bias has {bias.num_elements} elements, expected {out_channels}")
        axes = axis_paddings(self, spatial, filter_spatial)
        out_spatial = [a.out_size for a in axes]
        if min(out_spatial) <= 0:
            raise self.unsupported(
                f"the filter {filter_spatial} (dilated) does not fit the input's {spatial}: output would be {out_spatial}"
            )
        self.outputs[0].resize((batch, *out_spatial, out_channels))
        self.bounds = activation_range(self.params.fused_activation_function)
        self.taps = taps(self, filter_spatial, axes, out_spatial, spatial)
        self.kept = tap_axes(self.taps)  # (a huge dilation: taps that only read the padding are left out)
        kept_shape = [len(k) for k in self.kept]
        self.depth = int(np.prod(kept_shape)) * channels  # K of the matmul
        # The im2col matrix of all the outputs, or of a slab of output depths of one image
        # when that would be too big: [images, depths, OH, OW, kz, ky, kx, I].
        depth_bytes = out_spatial[1] * out_spatial[2] * self.depth * 4
        if batch * out_spatial[0] * depth_bytes <= IM2COL_BLOCK_BYTES:
            self.block_images, self.block_depths = batch, out_spatial[0]
        else:
            self.block_images = 1
            self.block_depths = max(1, min(out_spatial[0], IM2COL_BLOCK_BYTES // max(depth_bytes, 1)))
        self.columns = np.zeros(
            (self.block_images, self.block_depths, *out_spatial[1:], *kept_shape, channels), np.float32
        )
        # (the positions no tap writes stay 0 while one block covers every output)
        self.single_block = self.block_images == batch and self.block_depths == out_spatial[0]
        self.weights = self.weight_matrix(filters.data) if filters.is_constant else None
        self.square_limit = None  # the input sums of squares the matmul may take (_float_reference)
        if filters.is_constant and (bias is None or bias.is_constant):
            self.square_limit = square_limit(
                max_row_norm(self.weights.T), bias_max(None if bias is None else bias.data)
            )
        remember_shapes(self)

    def weight_matrix(self, filters: np.ndarray) -> np.ndarray:
        """``[KD, KH, KW, I, O]`` -> ``[taps*I, O]``, the kept taps only, in the columns' order."""
        z, y, x = self.kept
        return np.ascontiguousarray(filters[z][:, y][:, :, x]).reshape(-1, filters.shape[4])

    def bind(self):
        check_shapes(self)
        return super().bind()

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        bias = self.inputs[2].data if len(self.inputs) == 3 and self.inputs[2] is not None else None
        weights = self.weights if self.weights is not None else self.weight_matrix(self.inputs[1].data)
        limit = self.square_limit
        if limit is None:
            limit = square_limit(norm_bound(self.inputs[1].data), 0.0 if bias is None else norm_bound(bias))
        flat = x.reshape(-1)
        with np.errstate(over="ignore", invalid="ignore"):
            safe = bool(flat.dot(flat) < np.float32(limit))
        if not safe:
            self.reference(x, bias, out)
            return
        images, depths = out.shape[:2]
        for n in range(0, images, self.block_images):
            for start in range(0, depths, self.block_depths):
                stop = min(depths, start + self.block_depths)
                columns = self.im2col(x[n : n + self.block_images], start, stop)
                # (one image or every depth: a view of the output)
                rows = out[n : n + self.block_images, start:stop].reshape(-1, out.shape[4])
                np.dot(columns.reshape(rows.shape[0], self.depth), weights, out=rows)
        finish(out, bias, self.bounds, out)

    def im2col(self, images: np.ndarray, start: int, stop: int) -> np.ndarray:
        """The columns of output depths ``start..stop`` of ``images``: each kept tap's input
        voxels, 0 where it reads the padding."""
        columns = self.columns[:, : stop - start]
        if not self.single_block:
            columns.fill(0.0)
        place = [{k: i for i, k in enumerate(kept)} for kept in self.kept]
        for tap in self.taps:
            outputs_d, inputs_d = clip_to_block(tap.first[0], tap.second[0], start, stop)
            if outputs_d is None:
                continue
            z, y, x = (place[a][tap.index[a]] for a in range(3))
            columns[:, outputs_d, tap.first[1], tap.first[2], z, y, x] = images[:, inputs_d, tap.second[1], tap.second[2]]
        return columns

    def reference(self, x: np.ndarray, bias: np.ndarray | None, out: np.ndarray) -> None:
        """TFLite's loop, vectorized over the outputs: taps (kz, ky, kx) then input channels
        in order, taps outside the input skipped, float32 sums without FMA."""
        filters = self.inputs[1].data
        total = np.zeros(out.shape, np.float32)
        product = np.empty(out.shape, np.float32)
        every = slice(None)
        with np.errstate(all="ignore"):
            for tap in self.taps:
                kz, ky, kx = tap.index
                target_index = (every, *tap.first, every)
                target, part = total[target_index], product[target_index]
                voxels = x[(every, *tap.second)]
                for i in range(x.shape[4]):
                    np.multiply(voxels[..., i, None], filters[kz, ky, kx, i], out=part)
                    np.add(target, part, out=target)
            finish(total, bias, self.bounds, out)


def clip_to_block(outputs: slice, inputs: slice, start: int, stop: int) -> tuple[slice | None, slice | None]:
    """The part of an axis pairing (``outputs`` positions with the ``inputs`` they read, both
    step slices from ``_clipped_axis``) whose outputs lie in ``start..stop``, with the
    outputs counted from ``start``."""
    first, last = max(outputs.start, start), min(outputs.stop, stop)
    if first >= last:
        return None, None
    step = inputs.step
    begin = inputs.start + (first - outputs.start) * step
    return slice(first - start, last - start), slice(begin, begin + (last - first - 1) * step + 1, step)


@register(BuiltinOperator.CONV_3D_TRANSPOSE, 1, 1)  # v1: float32 (the only version)
class Conv3DTranspose(OutputShapeFromInput):
    """CONV_3D_TRANSPOSE v1 (float32)."""

    filter_out_channels = 3  # (filter [KD, KH, KW, O, I])

    def prepare(self) -> None:
        self.require_num_inputs(3, 4)
        filters, x = self.inputs[1], self.inputs[2]
        bias = self.inputs[3] if len(self.inputs) == 4 else None
        self.require_output_shape_input(5)
        for tensor, role in ((filters, "filter"), (x, "input"), (bias, "bias"), (self.outputs[0], "output")):
            if tensor is not None:
                check_float32(self, tensor, role)
        if len(x.shape) != 5 or len(filters.shape) != 5:
            raise self.unsupported(
                f"input and filter must be 5-D (NDHWC, [KD, KH, KW, O, I]), got {list(x.shape)} and {list(filters.shape)}"
            )
        if x.shape[4] != filters.shape[4]:
            raise self.unsupported(f"input channels ({x.shape[4]}) differ from the filter's in-channels ({filters.shape[4]})")
        if bias is not None and bias.num_elements != filters.shape[3]:
            raise self.unsupported(f"bias has {bias.num_elements} elements, expected {filters.shape[3]}")
        self.bounds = activation_range(self.params.fused_activation_function)
        self.plan_output()

    def plan(self, output_shape: tuple[int, ...]) -> None:
        """Padding and taps for one output shape (done once per shape)."""
        x, filters = self.inputs[2], self.inputs[1]
        out_spatial, spatial = output_shape[1:4], tuple(int(d) for d in x.shape[1:4])
        filter_spatial = tuple(int(d) for d in filters.shape[:3])
        axes = axis_paddings(self, out_spatial, filter_spatial)
        if tuple(a.out_size for a in axes) != spatial:
            # LiteRT checks this too: the output must be one this conv could have come from.
            raise self.unsupported(
                f"output_shape {list(output_shape)} does not match the input {list(x.shape)}: a CONV_3D of that "
                f"output with this filter, stride, dilation and padding gives {[a.out_size for a in axes]}, "
                f"not {list(spatial)}"
            )
        self.taps = taps(self, filter_spatial, axes, spatial, out_spatial)
        self.kept = tap_axes(self.taps)
        self.weights = self.patches_matrix(filters.data) if filters.is_constant else None
        self.plan_shape = tuple(output_shape)

    def patches_matrix(self, filters: np.ndarray) -> np.ndarray:
        """``[KD, KH, KW, O, I]`` -> ``[I, taps*O]`` (the kept taps): an input voxel times it
        is its output patch."""
        z, y, x = self.kept
        kept = filters[z][:, y][:, :, x]
        return np.ascontiguousarray(kept.transpose(4, 0, 1, 2, 3)).reshape(filters.shape[4], -1)

    def invoke(self) -> None:
        self.output_at_invoke()
        x, out = self.inputs[2].data, self.outputs[0].data
        kept_shape = [len(k) for k in self.kept]
        weights = self.weights if self.weights is not None else self.patches_matrix(self.inputs[1].data)
        place = [{k: i for i, k in enumerate(kept)} for kept in self.kept]
        total = np.zeros(out.shape, np.float32)
        every = slice(None)
        bias = self.inputs[3].data if len(self.inputs) == 4 and self.inputs[3] is not None else None
        with np.errstate(over="ignore", invalid="ignore"):  # (overflows saturate in the clamp, as in TFLite)
            patches = np.dot(x.reshape(-1, x.shape[4]), weights)
            patches = patches.reshape(*x.shape[:4], *kept_shape, out.shape[4])
            for tap in self.taps:
                z, y, xx = (place[a][tap.index[a]] for a in range(3))
                target = total[(every, *tap.second, every)]
                np.add(target, patches[(every, *tap.first, z, y, xx)], out=target)
            finish(total, bias, self.bounds, out)
