"""DEPTHWISE_CONV_2D on float32: each input channel convolved with its own filters.

Input ``[N, H, W, C]``, filter ``[1, KH, KW, C*M]`` (M = depth multiplier, taken from
the shapes as TFLite does: the ``depth_multiplier`` field is redundant), optional
bias ``[C*M]``. Output channel ``o = c*M + m`` reads input channel ``c``:

    out[n, y, x, c*M + m] = bias[c*M + m]
        + sum_{ky, kx} in[n, y*sh + ky*dh - pad_top, x*sw + kx*dw - pad_left, c] * filter[0, ky, kx, c*M + m]

with dilation ``(dh, dw)`` (version 2; 1 in version 1), positions outside the input
reading 0 and the fused activation applied last (TFLite's reference ``DepthwiseConv``).

How: one ``einsum`` over the taps, accumulating in TFLite's order (the taps in
row-major order, then the bias, then the clamp), on a "source" buffer of ours
allocated at prepare whose border stays 0 and whose interior is refreshed at invoke:

- stride 1 across: the padded input (with M > 1 each input channel is also repeated
  M times there, so that channel o of the buffer feeds output channel o). For tap
  (ky, kx) the outputs of row y read one contiguous run of ``OW * C*M`` values, so the
  taps are a strided view ``[KH, KW, N, OH, OW*C*M]`` and the einsum's inner loop runs
  over whole output rows, multiplied by the filter tiled ``OW`` times (prepared once);
- stride sw > 1 across: the same, after a "row im2col": for every padded row and
  every kx, the OW input pixels that tap kx reads (``[N, Hp, KW, OW, C*M]``), so the
  runs are contiguous again; it costs KW strided copies of the input per invoke;
- a single output channel (no run of channels for the einsum to loop over): the
  windows copied as rows (im2col) and numpy's einsum over them, as before.

Overflow: TFLite clamps every output to the activation range, [lowest, FLT_MAX] even with
no activation (or a fused TANH / SIGN_BIT, which float DEPTHWISE_CONV_2D does not apply),
so +-inf comes out as +-FLT_MAX; it skips the taps outside the input (no ``0 * inf``) and
adds in filter order without FMA. One BLAS dot of the input first tells whether any
partial sum could reach the float32 range (``_float_reference``): if not, the einsum's
outputs are finite; if so, TFLite's loop runs instead (slow, exact).

Measured (one core of a Xeon, numpy 2.4, 3x3 filters), against the previous im2col
(copy of every window) + einsum: [1, 64, 64, 24] 0.60 -> 0.17 ms; [1, 16, 16, 8]
45 -> 12 us. The results are the same bits (same order of the float32 additions).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._float_reference import (
    OverflowGuard,
    bias_max,
    depthwise_reference,
    max_row_norm,
    square_limit,
)
from backends.cpu.kernels._window import (
    PaddedInput,
    WindowGeometry,
    depthwise_layout,
    node_geometry,
    activation_bounds,
    check_conv_window_params,
    check_shapes,
    make_clamp,
    record_pair,
    remember_shapes,
    reshaped_view,
    tiled_rows,
    window_view,
)
from schema.enums import BuiltinOperator, TensorType

try:  # the C implementation behind np.einsum(optimize=False), without its Python wrapper
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # pragma: no cover - older numpy
    _einsum = np.einsum

_SUBSCRIPTS = "abnyk,abk->nyk"  # taps (a, b), batch n, output row y, position-and-channel k
_FLAT_SUBSCRIPTS = "abnk,abk->nk"  # the same over FlatTaps: the rows of a batch as one run k


class FlatTaps:
    """Stride 1 with short output rows: every padded row computed whole, the rows of a batch
    as ONE run, so the taps einsum has KH*KW*N inner loops instead of KH*KW*N*OH.

    Over a padded source ``[N, Hp, Wp, C]`` (C counts repeated channels), position ``k`` of
    the run is ``(row, column, channel) = (k // (Wp*C), k // C % Wp, k % C)``; tap (ky, kx)
    reads ``source[n].flat[k + ky*dh*Wp*C + kx*dw*C]`` for it, which for ``column < OW`` is
    the depthwise window's tap. The other ``Wp - OW`` columns of each row are garbage (read
    across the row's end; discarded) and the run stops at the last row's ``OW``-th column,
    so every read stays inside the source: the last tap of the last output ends at
    ``(OH - 1 + (KH-1)*dh, OW - 1 + (KW-1)*dw) <= (Hp - 1, Wp - 1)``. Each output is still
    the sum of its taps in the same order (numpy's einsum), only the loops differ.

    Measured (numpy 2.4, 3x3): [1, 16, 16, 8] 6.0 -> 4.2 us, [1, 15, 13, 6] dilation 2
    5.3 -> 3.3 us, [1, 8, 8, 16] 3.7 -> 2.9 us; slower for long rows (the tiled weights
    no longer fit the L1 cache: [1, 16, 16, 16] 8.1 -> 8.9 us) or many garbage columns
    ([1, 4, 4, 32]: 2.5 -> 2.9 us), hence ``applies``.
    """

    ROW_LIMIT = 128  # output rows of at most this many values (OW * C)

    def __init__(self, geometry: WindowGeometry, source: np.ndarray) -> None:
        g = geometry
        batch, _, width, channels = source.shape
        item = source.itemsize
        row_stride = width * channels
        self.channels = channels
        self.length = (g.out_h - 1) * row_stride + g.out_w * channels
        self.taps = as_strided(  # [KH, KW, N, L], a read-only view
            source,
            (g.filter_h, g.filter_w, batch, self.length),
            (g.dilation_h * row_stride * item, g.dilation_w * channels * item, source.strides[0], item),
            writeable=False,
        )
        self.wide = np.empty((batch, self.length), source.dtype)  # the einsum's output
        #: the wide output's real rows ``[N, OH, OW*C]`` (a read-only view)
        self.rows = as_strided(
            self.wide, (batch, g.out_h, g.out_w * channels), (self.length * item, row_stride * item, item),
            writeable=False,
        )

    @classmethod
    def applies(cls, geometry: WindowGeometry) -> bool:
        """Stride 1, output rows of at most ROW_LIMIT values and at most a third more
        padded columns than output columns (the garbage the einsum computes)."""
        g = geometry
        padded_w = g.pad_left + g.in_w + g.pad_right
        return (
            g.stride_h == 1
            and g.stride_w == 1
            and g.out_w * g.channels <= cls.ROW_LIMIT
            and 3 * padded_w <= 4 * g.out_w
        )

    def tile(self, values: np.ndarray, dtype) -> np.ndarray:
        """``[..., C]`` -> ``[..., L]`` (the taps' weights ``[KH, KW, C]``, a bias ``[C]``):
        the channel values at every position of the run."""
        values = np.asarray(values, dtype)
        return np.ascontiguousarray(np.tile(values, (1,) * (values.ndim - 1) + (self.length // self.channels,)))


# Version 1: float32 depthwise convolution (depth multiplier, strides, SAME/VALID,
#            optional bias, fused activation).
# Version 2 added dilation (DepthwiseConv2DOptions.dilation_w_factor and
#            dilation_h_factor). Files written before version 2 have no such fields
#            and read as dilation 1 (the DepthwiseConv2DParams defaults), which is
#            exactly version 1's behaviour, so one kernel serves both versions.
# Versions 3-7 are quantized or hybrid (int8/int16/int4 filters): not this kernel.
@register(BuiltinOperator.DEPTHWISE_CONV_2D, 1, 2)
class DepthwiseConv2D(OverflowGuard, CpuKernel):
    """DEPTHWISE_CONV_2D versions 1-2 (float32; version 2 adds dilation)."""

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
        kh, kw, out_channels, self.multiplier = depthwise_layout(self, x, filters, bias)
        params = self.params
        self.activation = params.fused_activation_function
        self.bounds = activation_bounds(self.activation)
        dilation = (params.dilation_h_factor, params.dilation_w_factor)
        check_conv_window_params(self, dilation)
        # The windows are taken over the input with every channel repeated M times.
        geometry = node_geometry(self, (*x.shape[:3], out_channels), (kh, kw), dilation)
        output.resize((*geometry.output_shape, out_channels))
        # Without the taps that only ever read the padding (a huge dilation): the padded
        # buffer is then bounded by the tensors (_window.conv_cropped).
        geometry = geometry.conv_cropped()

        self.geometry = g = geometry
        self.row = g.out_w * out_channels  # one output row: OW positions x C*M channels
        self.has_bias = bias is not None
        self.columns = None
        self.flat = None
        if out_channels == 1:
            # One channel: every window as a row of KH*KW values, with numpy's own einsum
            # order over them (the taps einsum would have no run of channels to loop over).
            self.pad = PaddedInput(g, always=True)
            self.windows = window_view(g, self.pad.buffer)
            self.columns = np.empty(self.windows.shape, np.float32)
            self.row_columns = None
        elif g.stride_w == 1:
            self.pad = PaddedInput(g, repeat=self.multiplier, always=True)
            self.taps = self._taps_view(self.pad.buffer, g.dilation_w * out_channels * 4)
            self.row_columns = None
            self.flat = FlatTaps(g, self.pad.buffer) if FlatTaps.applies(g) else None
        else:
            self.pad = None
            self._prepare_row_columns()
        weights = g.filter_view(filters.data) if filters.is_constant else None
        self.tiled_weights = self.tile_weights(weights) if weights is not None and self.columns is None else None
        self.tiled_bias = None
        if bias is not None and bias.is_constant:
            self.tiled_bias = tiled_rows(bias.data, (g.batch, g.out_h, self.row))
        #: the input sums of squares that the einsum may take (see _float_reference);
        #: None: computed at invoke (weights or bias not constant)
        self.square_limit = None
        if filters.is_constant and (bias is None or bias.is_constant):
            self.square_limit = square_limit(
                max_row_norm(weights.reshape(-1, out_channels).T), bias_max(None if bias is None else bias.data)
            )
        self._bound = (None, None)
        remember_shapes(self)

    def reference(self) -> None:
        """TFLite's own loop (``_float_reference.depthwise_reference``): for inputs that could overflow."""
        bias = self.inputs[2].data if self.has_bias else None
        depthwise_reference(
            self.inputs[0].data, self.inputs[1].data, bias, self.geometry, self.activation, self.outputs[0].data
        )

    # -- prepare-time layouts ---------------------------------------------------------------
    def _taps_view(self, source: np.ndarray, tap_w_stride: int) -> np.ndarray:
        """The taps over ``source`` ([N, rows, ...] with rows of padded input): a read-only view
        ``[KH, KW, N, OH, OW*C*M]`` whose last axis is contiguous."""
        g = self.geometry
        batch_stride, row_stride = source.strides[0], source.strides[1]
        return as_strided(
            source,
            (g.filter_h, g.filter_w, g.batch, g.out_h, self.row),
            (g.dilation_h * row_stride, tap_w_stride, batch_stride, g.stride_h * row_stride, source.itemsize),
            writeable=False,
        )

    def _prepare_row_columns(self) -> None:
        """Stride > 1 across: ``columns[n, r, kx, x, o]`` = padded input row r at column
        ``x*sw + kx*dw`` (channel o, repeated channels included), 0 outside the input."""
        g, m = self.geometry, self.multiplier
        padded_h = g.pad_top + g.in_h + g.pad_bottom
        channels = g.channels // m
        grouped = np.zeros((g.batch, padded_h, g.filter_w, g.out_w, channels, m), np.float32)
        self.row_columns = grouped.reshape(g.batch, padded_h, g.filter_w, g.out_w, g.channels)
        # M > 1: the input with each channel repeated M times, filled by M strided copies.
        self.repeated = np.empty((g.batch, g.in_h, g.in_w, channels, m), np.float32) if m > 1 else None
        self.repeated_copies = [self.repeated[..., r] for r in range(m)] if m > 1 else []
        self.taps = self._taps_view(self.row_columns, self.row * 4)
        # For each kx: the output columns that read inside the input, and the input columns.
        self.column_copies = []
        for kx in range(g.filter_w):
            offset = kx * g.dilation_w - g.pad_left
            first = max(0, -(offset // g.stride_w))
            last = min(g.out_w - 1, (g.in_w - 1 - offset) // g.stride_w)
            if first > last:
                continue
            start = first * g.stride_w + offset
            target = grouped[:, g.pad_top : g.pad_top + g.in_h, kx, first : last + 1]
            self.column_copies.append((target, slice(start, start + (last - first) * g.stride_w + 1, g.stride_w)))

    def tile_weights(self, filters: np.ndarray) -> np.ndarray:
        """``[1, KH, KW, C*M]`` -> ``[KH, KW, OW*C*M]``: each tap's weights once per output column
        (``[KH, KW, L]`` for FlatTaps)."""
        if self.flat is not None:
            return self.flat.tile(filters[0], np.float32)
        _, kh, kw, channels = filters.shape
        tiled = np.broadcast_to(filters[0][:, :, None, :], (kh, kw, self.geometry.out_w, channels))
        return np.ascontiguousarray(tiled).reshape(kh, kw, self.row)

    # -- invoke -----------------------------------------------------------------------------
    def _bind(self, x: np.ndarray, out: np.ndarray) -> None:
        """Views of this allocation's input and output buffers (fixed until the next one)."""
        g = self.geometry
        self.rows_out = out.reshape(g.batch, g.out_h, self.row)
        self.clamp = make_clamp(self.bounds, out)
        self._bound = (x, out)  # (only views of x: valid whatever its layout)
        x = self.source_x = g.input_view(x)  # (the part of the input the windows read)
        if self.row_columns is not None:
            # Each pixel's C*M values are copied as one record (see _window.record_pair); with
            # M > 1 from a copy of the input with every channel repeated M times.
            source = x if self.repeated is None else self.repeated.reshape(*x.shape[:3], -1)
            self.column_sources = [
                record_pair(reshaped_view(target, (*target.shape[:3], -1)), source[:, :, columns])
                for target, columns in self.column_copies
            ]

    def bind(self) -> Callable[[], None]:
        """The taps einsum (stride 1 across) with constant weights and bias: ``invoke`` as a
        function of no argument on this allocation's buffers (``invoke`` itself otherwise)."""
        check_shapes(self)
        x, out = self.inputs[0].data, self.outputs[0].data
        if (
            self.square_limit is None  # (a filter or bias not constant)
            or (self.columns is None and self.tiled_weights is None)
            or (self.has_bias and self.tiled_bias is None)
            or not self.buffers_are_fixed()
            or not x.flags.c_contiguous
        ):
            return self.invoke
        self._bind(x, out)
        if self.columns is not None:
            return self.bind_single_channel(x)
        if self.row_columns is not None:
            return self.bind_row_columns(x)
        copies, taps, weights, rows, bias, clamp = (
            self.pad.copies, self.taps, self.tiled_weights, self.rows_out, self.tiled_bias, self.clamp
        )
        add = np.add
        # The overflow guard: the input's sum of squares (one BLAS dot) below the limit.
        flat, limit, reference = x.reshape(-1), self.square_limit, self.reference
        squares = flat.dot
        x = self.source_x  # (the part of the input the windows read)
        if self.flat is not None:
            # Bias and clamp on the contiguous wide rows, then one copy of their real columns:
            # cheaper than a ufunc reading the strided columns ([1, 16, 16, 8]: a strided add
            # 1.4 us, a contiguous one 0.5 us, the strided copy 0.4 us).
            taps, wide, wide_rows = self.flat.taps, self.flat.wide, self.flat.rows
            bias = self.flat.tile(self.inputs[2].data, np.float32) if self.has_bias else None
            clamp = make_clamp(self.bounds, wide)

            def depthwise_flat() -> None:
                if not squares(flat) < limit:
                    reference()
                    return
                for interior in copies:
                    interior[...] = x
                _einsum(_FLAT_SUBSCRIPTS, taps, weights, out=wide)
                if bias is not None:
                    add(wide, bias, out=wide)
                if clamp is not None:
                    clamp()
                rows[...] = wide_rows

            return depthwise_flat

        # (the padded input's interior, channels repeated M times)
        return self.bind_taps(self._bound[0], tuple((interior, x) for interior in copies))

    def bind_row_columns(self, x: np.ndarray) -> Callable[[], None]:
        """Stride > 1 across, bound: the row im2col's copies (from the input, or from its
        channels repeated M times), then as ``bind_taps``."""
        repeated = [(copy, self.source_x) for copy in self.repeated_copies]
        return self.bind_taps(x, tuple(repeated + list(self.column_sources)))

    def bind_taps(self, x: np.ndarray, copies: tuple) -> Callable[[], None]:
        """The overflow guard, ``copies`` (``(target, source)`` pairs that fill the taps'
        source), the taps einsum over whole output rows, the bias and the clamp."""
        taps, weights, rows, bias, clamp, add = self.taps, self.tiled_weights, self.rows_out, self.tiled_bias, self.clamp, np.add
        flat, limit, reference = x.reshape(-1), self.square_limit, self.reference
        squares = flat.dot

        def depthwise() -> None:
            if not squares(flat) < limit:
                reference()
                return
            for target, source in copies:
                target[...] = source
            _einsum(_SUBSCRIPTS, taps, weights, out=rows)
            if bias is not None:
                add(rows, bias, out=rows)
            if clamp is not None:
                clamp()

        return depthwise

    def bind_single_channel(self, x: np.ndarray) -> Callable[[], None]:
        """One output channel, bound: the padded input, its windows as rows, numpy's
        einsum over them, the bias and the clamp."""
        copies = tuple((interior, self.source_x) for interior in self.pad.copies) + ((self.columns, self.windows),)
        filters = self.geometry.filter_view(self.inputs[1].data)[0]
        out, rows, bias, clamp, add = self.outputs[0].data, self.rows_out, self.tiled_bias, self.clamp, np.add
        flat, limit, reference = x.reshape(-1), self.square_limit, self.reference
        squares, columns = flat.dot, self.columns

        def depthwise_one_channel() -> None:
            if not squares(flat) < limit:
                reference()
                return
            for target, source in copies:
                target[...] = source
            _einsum("nyxhwc,hwc->nyxc", columns, filters, out=out)
            if bias is not None:
                add(rows, bias, out=rows)
            if clamp is not None:
                clamp()

        return depthwise_one_channel

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        flat = x.reshape(-1)
        if not flat.dot(flat) < self.current_square_limit():
            self.reference()
            return
        if self._bound[0] is not x or self._bound[1] is not out:
            self._bind(x, out)
        source_x = self.source_x
        if self.row_columns is None:
            self.pad(source_x)
        else:
            if self.repeated is not None:
                for copy in self.repeated_copies:
                    copy[...] = source_x
            for target, source in self.column_sources:
                target[...] = source
        rows = self.rows_out
        if self.columns is not None:
            np.copyto(self.columns, self.windows)
            _einsum("nyxhwc,hwc->nyxc", self.columns, self.geometry.filter_view(self.inputs[1].data)[0], out=out)
        else:
            weights = self.tiled_weights
            if weights is None:
                weights = self.tile_weights(self.geometry.filter_view(self.inputs[1].data))
            if self.flat is None:
                _einsum(_SUBSCRIPTS, self.taps, weights, out=rows)
            else:
                _einsum(_FLAT_SUBSCRIPTS, self.flat.taps, weights, out=self.flat.wide)
                rows[...] = self.flat.rows
        if self.has_bias:
            bias = self.tiled_bias
            if bias is None:
                bias = tiled_rows(self.inputs[2].data, rows.shape)
            np.add(rows, bias, out=rows)
        if self.clamp is not None:
            self.clamp()
