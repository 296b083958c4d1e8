"""CONV_2D on float32: NHWC input, OHWI filter, optional bias, fused activation.

    out[n, y, x, o] = bias[o] + sum_{ky, kx, i} in[n, y*sh + ky*dh - pad_top, x*sw + kx*dw - pad_left, g*I + i]
                                               * filter[o, ky, kx, i]        with g = o // (O / groups)

where ``groups = input channels / filter in-channels`` (1 for a plain convolution)
and positions outside the input read 0 (TFLite's reference ``Conv``).

How: im2col. The padded input (a buffer allocated at prepare, whose interior is
refreshed at invoke) is viewed, once at prepare, as all its windows
``[N, OH, OW, KH, KW, C]``, copied at invoke into a column buffer, and multiplied by
the filter, re-laid out at prepare as a ``[KH*KW*I, O]`` matrix, in one BLAS matmul per
group. The column matrix is row-major, or column-major when a window's contiguous
runs are short (few channels, or dilated across: ``column_major``). A 1x1 stride-1 convolution is a plain matmul of the input. The bias is added
as a prepared array of the output's shape (a broadcast add costs several times more),
and the activation clamp is bound to the output buffer (see ``_window``): the views of
the arena's input and output buffers are made on the first invoke after an allocation.

Overflow: TFLite clamps every output to the activation range, [lowest, FLT_MAX] even with
no activation (or a fused TANH / SIGN_BIT, which float CONV_2D does not apply), so +-inf
comes out as +-FLT_MAX; and its sums are plain float32 additions in filter order, where
BLAS uses its own order and FMA. One BLAS dot of the input first tells whether any
partial sum could reach the float32 range (``_float_reference``): if not, the matmul's
outputs are finite (and differ from TFLite's by rounding only, as before); if so,
TFLite's loop runs instead (slow, exact).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._float_reference import (
    OverflowGuard,
    bias_max,
    conv_reference,
    max_row_norm,
    square_limit,
)
from backends.cpu.kernels._window import (
    PaddedInput,
    WindowGeometry,
    conv_layout,
    node_geometry,
    activation_bounds,
    check_conv_window_params,
    check_shapes,
    make_clamp,
    record_pair,
    remember_shapes,
    reshaped_view,
    long_rows,
    tiled_rows,
    window_view,
)
from schema.enums import BuiltinOperator, TensorType


#: im2col into a column-major matrix (``column_major``) when a window's contiguous runs
#: hold at most this many values and output rows are at least ``COLUMN_MAJOR_MIN_WIDTH``
#: pixels long.
COLUMN_MAJOR_MAX_RUN = 4
COLUMN_MAJOR_MIN_WIDTH = 8

#: An im2col matrix of more bytes than this is filled and multiplied a block of output
#: rows at a time (``Conv2D.convolve_blocks``), each block from a padded slab of the input
#: rows it reads: the scratch then stays about this size, whatever the tensors' (a
#: [3, 256, 16000, 8] input with a 3x3 filter would need a 3.3 GiB matrix, and a padded
#: copy of the input besides).
IM2COL_BLOCK_BYTES = 64 << 20


def column_major(geometry: WindowGeometry) -> bool:
    """Whether im2col should fill a column-major ``[M, K]`` matrix (a ``[K, M]`` buffer).

    The row-major copy moves one contiguous run of a window per record (a window row,
    or one pixel's channels when dilated across), at a few ns each: many short runs make
    it slow (2304 runs of 4 values for a 3x3 dilated conv on 16x16x4). Column-major,
    the copy's inner loop runs along an output row instead, and BLAS also multiplies
    such a matrix faster when the output has few channels (measured: 2x at 8).
    """
    g = geometry
    run = g.channels * (g.filter_w if g.dilation_w == 1 else 1)
    return run <= COLUMN_MAJOR_MAX_RUN and g.out_w >= COLUMN_MAJOR_MIN_WIDTH


def column_major_copy(geometry: WindowGeometry, padded: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(target, source)``: ``target[...] = source`` copies every window of ``padded`` into
    ``matrix``, a column-major ``[M, K]`` view (``[K, M]`` buffer transposed)."""
    windows = window_view(geometry, padded)  # [N, OH, OW, KH, KW, C]
    return reshaped_view(matrix, windows.shape), windows


# v1: float32 input, filter and bias (strides, SAME/VALID, dilation, fused activation).
# v6: grouped convolution: input channels = groups x filter in-channels (float32 here).
# Versions 2-5, 7 and 8 are hybrid or quantized (int8/int16/int4 filters): not here.
@register(BuiltinOperator.CONV_2D, 1, 1)
@register(BuiltinOperator.CONV_2D, 6, 6)
class Conv2D(OverflowGuard, CpuKernel):
    """CONV_2D versions 1 and 6 (float32, grouped convolution)."""

    def prepare(self) -> None:
        self.require_num_inputs(2, 3)
        x, filters = self.inputs[0], self.inputs[1]
        bias = self.inputs[2] if len(self.inputs) == 3 else None
        output = self.outputs[0]
        self.require_types(x, TensorType.FLOAT32, role="input")
        self.require_types(filters, TensorType.FLOAT32, role="filter")
        if bias is not None:
            self.require_types(bias, TensorType.FLOAT32, role="bias")
        self.require_types(output, TensorType.FLOAT32, role="output")
        out_channels, kh, kw, group_in, groups = conv_layout(self, x, filters, bias)
        params = self.params
        self.activation = params.fused_activation_function
        self.bounds = activation_bounds(self.activation)
        check_conv_window_params(self, (params.dilation_h_factor, params.dilation_w_factor))
        geometry = node_geometry(self, x.shape, (kh, kw), (params.dilation_h_factor, params.dilation_w_factor))
        output.resize((*geometry.output_shape, out_channels))
        # Without the taps that only ever read the padding (a huge dilation): the padded
        # buffer and the im2col are then bounded by the tensors (_window.conv_cropped).
        geometry = geometry.conv_cropped()
        kh, kw = geometry.filter_h, geometry.filter_w

        self.geometry = geometry
        self.groups = groups
        self.group_out = out_channels // groups
        self.rows = geometry.batch * geometry.out_h * geometry.out_w  # M of the matmul
        self.depth = kh * kw * group_in  # K of the matmul
        self.pointwise = geometry.is_pointwise  # (1x1, stride 1: the original test, as a geometry)
        self.block_rows = None
        if not self.pointwise and groups * self.rows * self.depth * 4 > IM2COL_BLOCK_BYTES:
            self._prepare_blocks(group_in)
        elif not self.pointwise:
            self.pad = PaddedInput(geometry, always=True)
            # All windows of the padded buffer (ours: the view holds until the next prepare).
            windows = window_view(geometry, self.pad.buffer)  # [N, OH, OW, KH, KW, C]
            n, oh, ow, _, _, _ = windows.shape
            if groups == 1 and column_major(geometry):  # im2col buffer [K, M]: see column_major
                self.columns = np.empty((self.depth, self.rows), np.float32)
                self.column_matrices = self.columns.T[None]
                self.column_copy = column_major_copy(geometry, self.pad.buffer, self.column_matrices[0])
            else:  # im2col buffer, group-major so each group's columns are one [M, K] matrix
                self.columns = np.empty((groups, *geometry.output_shape, kh, kw, group_in), np.float32)
                self.column_matrices = self.columns.reshape(groups, self.rows, self.depth)
                if groups == 1:
                    # Copied as records of contiguous runs: a window row (KW*C values) when
                    # dilation_w is 1, else one pixel's C values (see _window.record_pair).
                    if geometry.dilation_w == 1:
                        buffer = self.pad.buffer
                        bs, rs, ps, cs = buffer.strides
                        windows = as_strided(
                            buffer, (n, oh, ow, kh, kw * geometry.channels),
                            (bs, geometry.stride_h * rs, geometry.stride_w * ps, geometry.dilation_h * rs, cs),
                            writeable=False,
                        )
                    target = self.columns.reshape(windows.shape)
                    self.column_copy = record_pair(target, windows)
                else:
                    windows = reshaped_view(windows, (n, oh, ow, kh, kw, groups, group_in))
                    self.column_copy = (self.columns, windows.transpose(5, 0, 1, 2, 3, 4, 6))
        if groups > 1 and self.block_rows is None:
            self.group_results = np.empty((groups, self.rows, self.group_out), np.float32)
        self.weights = self.weight_matrices(geometry.filter_view(filters.data)) if filters.is_constant else None
        self.has_bias = bias is not None
        self.tiled_bias = None
        if bias is not None and bias.is_constant:
            self.tiled_bias = tiled_rows(bias.data, (self.rows, out_channels))
        #: the input sums of squares that the matmul may take (see _float_reference);
        #: None: computed at invoke (weights or bias not constant)
        self.square_limit = None
        if filters.is_constant and (bias is None or bias.is_constant):
            self.square_limit = square_limit(
                max_row_norm(geometry.filter_view(filters.data).reshape(out_channels, -1)),
                bias_max(None if bias is None else bias.data),
            )
        self._bound = (None, None)
        remember_shapes(self)

    def _prepare_blocks(self, group_in: int) -> None:
        """The blocked im2col (``convolve_blocks``): ``block_rows`` output rows of one image
        at a time, from a zero-bordered slab of the padded input rows they read."""
        g, groups = self.geometry, self.groups
        row_bytes = groups * g.out_w * self.depth * 4
        self.block_rows = rows = max(1, min(g.out_h, IM2COL_BLOCK_BYTES // row_bytes))
        slab_h = (rows - 1) * g.stride_h + (g.filter_h - 1) * g.dilation_h + 1
        self.slab = np.zeros((1, slab_h, g.pad_left + g.in_w + g.pad_right, g.channels), np.float32)
        # The windows of one block: the geometry of one image of ``rows`` output rows.
        windows = window_view(dataclasses.replace(g, batch=1, out_h=rows), self.slab)  # [1, rows, OW, KH, KW, C]
        windows = reshaped_view(windows, (rows, g.out_w, g.filter_h, g.filter_w, groups, group_in))
        windows = windows.transpose(4, 0, 1, 2, 3, 5)  # [G, rows, OW, KH, KW, I]
        self.block_columns = columns = np.empty((groups, rows, g.out_w, g.filter_h, g.filter_w, group_in), np.float32)
        if groups == 1 and g.dilation_w == 1:  # a window row (KW*C values) is one contiguous run
            _, rs, ps, cs = self.slab.strides
            windows = as_strided(
                self.slab, (1, rows, g.out_w, g.filter_h, g.filter_w * g.channels),
                (0, g.stride_h * rs, g.stride_w * ps, g.dilation_h * rs, cs), writeable=False,
            )
            columns = columns.reshape(windows.shape)
        # (target, source) of the block's im2col, each run copied as one record (record_pair)
        self.block_copy = record_pair(columns, windows)
        self.block_results = np.empty((groups, rows * g.out_w, self.group_out), np.float32) if groups > 1 else None

    def convolve_blocks(self, x: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:
        """``out`` (before bias and clamp) a block of output rows at a time: the input rows
        the block reads copied into the slab (zero outside the input), its windows into
        the block's im2col matrix, one matmul per group into the block's output rows."""
        g, rows, slab = self.geometry, self.block_rows, self.slab
        x = g.input_view(x)
        slab_h = slab.shape[1]
        for n in range(g.batch):
            for y0 in range(0, g.out_h, rows):
                count = min(rows, g.out_h - y0)
                top = y0 * g.stride_h - g.pad_top  # the input row at the slab's row 0
                first, last = max(0, top), min(g.in_h, top + slab_h)
                slab.fill(0.0)
                if first < last:
                    slab[0, first - top : last - top, g.pad_left : g.pad_left + g.in_w] = x[n, first:last]
                target, source = self.block_copy
                target[:, :count] = source[:, :count]
                matrices = self.block_columns[:, :count].reshape(self.groups, count * g.out_w, self.depth)
                block_out = out[n, y0 : y0 + count].reshape(count * g.out_w, -1)
                if self.groups == 1:
                    np.dot(matrices[0], weights[0], out=block_out)
                else:
                    results = self.block_results[:, : count * g.out_w]
                    np.matmul(matrices, weights, out=results)
                    block_out.reshape(count * g.out_w, self.groups, self.group_out)[...] = results.transpose(1, 0, 2)

    def reference(self) -> None:
        """TFLite's own loop (``_float_reference.conv_reference``): for inputs that could overflow."""
        bias = self.inputs[2].data if self.has_bias else None
        x, filters, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        conv_reference(x, filters, bias, self.geometry, self.activation, out)

    def weight_matrices(self, filters: np.ndarray) -> np.ndarray:
        """OHWI filter -> ``[groups, KH*KW*I, O/groups]``, rows in the columns' (ky, kx, i) order.
        One group: the filter's own memory, transposed (``[O, K]`` is OHWI itself: BLAS
        reads the transpose as fast, and a model's weights are not copied again)."""
        out_channels, kh, kw, group_in = filters.shape
        if self.groups == 1:
            return filters.reshape(out_channels, self.depth).T[None]
        per_group = filters.reshape(self.groups, self.group_out, kh, kw, group_in)
        return np.ascontiguousarray(per_group.transpose(0, 2, 3, 4, 1)).reshape(self.groups, self.depth, self.group_out)

    def _bind(self, x: np.ndarray, out: np.ndarray) -> None:
        """Views of this allocation's input and output buffers (fixed until the next one)."""
        self.out_rows = out.reshape(self.rows, -1)
        if self.pointwise:  # 1x1, stride 1: every pixel is its own window (no copy)
            self.column_matrices = x.reshape(self.rows, self.groups, self.depth).transpose(1, 0, 2)
        self.out_groups = None
        if self.groups > 1:
            self.out_groups = out.reshape(self.rows, self.groups, self.group_out).transpose(1, 0, 2)
        self.clamp = make_clamp(self.bounds, out)
        # (a reshape of a non-contiguous array is a copy: then bind again at every invoke)
        self._bound = (x, out) if x.flags.c_contiguous else (None, None)

    def im2col(self, x: np.ndarray) -> np.ndarray:
        """The input's windows as ``[groups, M, K]`` (copied into the prepared buffer)."""
        if not self.pointwise:
            self.pad(self.geometry.input_view(x))
            target, source = self.column_copy
            target[...] = source
        return self.column_matrices

    def bind(self) -> Callable[[], None]:
        """One group with constant weights and bias: ``invoke`` as a function of no argument
        on this allocation's buffers (``invoke`` itself otherwise)."""
        check_shapes(self)
        x, out = self.inputs[0].data, self.outputs[0].data
        if (
            self.weights is None
            or self.square_limit is None
            or (self.has_bias and self.tiled_bias is None)
            or not self.buffers_are_fixed()
            or not x.flags.c_contiguous
        ):
            return self.invoke
        self._bind(x, out)
        if self.groups != 1 or self.block_rows is not None:
            return self.bind_general(x, out)
        dot, add, rows, weights, bias, clamp = np.dot, np.add, self.out_rows, self.weights[0], self.tiled_bias, self.clamp
        if self.pointwise:
            columns, copies, target, source = self.column_matrices[0], (), None, None
        else:
            columns, copies = self.column_matrices[0], self.pad.copies
            target, source = self.column_copy
        # The overflow guard: the input's sum of squares (one BLAS dot) below the limit.
        flat, limit, reference = x.reshape(-1), self.square_limit, self.reference
        squares = flat.dot
        source_x = self.geometry.input_view(x)  # (the part of the input the windows read)
        bias_rows = rows
        if bias is not None:  # (a large output: the bias tiled over long rows, not one row of N)
            bias_rows, bias = long_rows(rows, bias)
        if self.pointwise and bias is not None and clamp is None:

            def pointwise() -> None:
                if not squares(flat) < limit:
                    reference()
                    return
                dot(columns, weights, out=rows)
                add(bias_rows, bias, out=bias_rows)

            return pointwise

        def convolution() -> None:
            if not squares(flat) < limit:
                reference()
                return
            for interior in copies:  # (the padded input's interior)
                interior[...] = source_x
            if target is not None:
                target[...] = source  # im2col
            dot(columns, weights, out=rows)
            if bias is not None:
                add(bias_rows, bias, out=bias_rows)
            if clamp is not None:
                clamp()

        return convolution

    def bind_general(self, x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
        """Grouped, or im2col a block of rows at a time (a large output), bound: the same
        steps as ``invoke`` on this allocation's buffers, the weights and bias prepared."""
        weights, rows, bias, clamp, add = self.weights, self.out_rows, self.tiled_bias, self.clamp, np.add
        flat, limit, reference = x.reshape(-1), self.square_limit, self.reference
        squares = flat.dot
        if self.block_rows is not None:
            convolve_blocks = self.convolve_blocks

            def convolve() -> None:
                convolve_blocks(x, weights, out)

        else:
            im2col, results, out_groups, matmul = self.im2col, self.group_results, self.out_groups, np.matmul

            def convolve() -> None:
                matmul(im2col(x), weights, out=results)
                out_groups[...] = results

        def convolution_general() -> None:
            if not squares(flat) < limit:
                reference()
                return
            convolve()
            if bias is not None:
                add(rows, bias, out=rows)
            if clamp is not None:
                clamp()

        return convolution_general

    def invoke(self) -> None:
        x = self.inputs[0].data
        out = self.outputs[0].data
        flat = x.reshape(-1)
        if not flat.dot(flat) < self.current_square_limit():
            self.reference()
            return
        if self._bound[0] is not x or self._bound[1] is not out:
            self._bind(x, out)
        weights = self.weights
        if weights is None:
            weights = self.weight_matrices(self.geometry.filter_view(self.inputs[1].data))
        rows = self.out_rows
        if self.block_rows is not None:
            self.convolve_blocks(x, weights, out)
        elif self.groups == 1:
            columns = self.im2col(x)
            np.dot(columns[0], weights[0], out=rows)
        else:
            np.matmul(self.im2col(x), weights, out=self.group_results)
            self.out_groups[...] = self.group_results
        if self.has_bias:
            bias = self.tiled_bias if self.tiled_bias is not None else tiled_rows(self.inputs[2].data, rows.shape)
            np.add(rows, bias, out=rows)
        if self.clamp is not None:
            self.clamp()
