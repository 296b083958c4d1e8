"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D on float32 (NHWC, TFLite's reference ``Pool``).

For each output position the window ``filter_height x filter_width`` at
``(y*sh - pad_top, x*sw - pad_left)`` is clipped to the input, and only the inside
elements count (TFLite's padding rule):

    AVERAGE: sum(window) / count         MAX: max(window)         L2: sqrt(sum(window**2) / count)

where ``count`` is the number of window elements inside the input (not the filter
size), then the fused activation is applied as TFLite's activation range, which is
[lowest, max] of float32 with no activation: inf becomes FLT_MAX, and a window of only
NaN and -inf gives lowest for the max (TFLite's max starts from lowest).

How, by size:

- when the output has fewer positions than the filter has taps (global pools), one
  reduction over the ``sliding_window_view`` of all windows of a padded input (padding
  adds 0, resp. -inf);
- otherwise the taps are combined one after the other, in TFLite's order, starting
  from the identity (0, or -inf for the max), in one of three ways that give the same
  bits:
  - tiny outputs (at most ``GATHER_LIMIT`` values for all taps): at prepare, the input
    pixel of every tap of every output pixel (``[KH*KW, output pixels]``, taps outside
    the input pointing at an extra pixel of identity values); invoke copies the input
    next to that pixel, gathers whole pixels with one ``take`` and combines the taps
    with one reduction (an ``einsum`` for the sums: it adds the rows one after the
    other, as the tap loop);
  - MAX_POOL_2D without padding: separably, the max over each column of taps first (one
    fmax per filter row, on whole input rows), then over the columns, then with the
    identity; fmax is exact, so the same max (up to the sign of a zero);
  - otherwise a loop over the filter taps. At prepare, each tap gets the block of output
    positions where it falls inside the input and the strided block of input it reads
    there (``WindowGeometry.clipped_taps``); invoke starts the output at the identity and
    combines each tap's input block into its output block, so no padded copy of the
    input is made (the blocks are views made once per allocation).

``count`` is a prepared array of the output's shape (dividing by a broadcast
``[OH, OW, 1]`` costs several times more on small outputs).

Measured (one core of a Xeon, numpy 2.4): [1, 9, 9, 4] 3x3/2 average: taps 14 us,
gather 4.7 us; [1, 64, 64, 32] 3x3/2 max: taps 0.14 ms, one reduction 0.35 ms;
[1, 7, 7, 1024] 7x7 global: taps 0.12 ms, one reduction 0.035 ms. On [1, 112, 112, 64]
3x3/2 skipping the padded copy saves 0.23 ms of 1.2 ms.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import (
    PaddedInput,
    node_geometry,
    activation_bounds,
    check_shapes,
    filled,
    make_clamp,
    remember_shapes,
    window_view,
)
from schema.enums import BuiltinOperator, TensorType

FLT_MAX = float(np.finfo(np.float32).max)

try:  # the C implementation behind np.einsum(optimize=False), without its Python wrapper
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # pragma: no cover - older numpy
    _einsum = np.einsum


#: Up to this many gathered values (taps x outputs), the gather path.
GATHER_LIMIT = 2048

#: AVERAGE and L2 pools whose (output positions x input positions) matrix has at most
#: MATRIX_LIMIT elements, and whose product has at most MATRIX_WORK_LIMIT multiply-adds,
#: are one BLAS product (``_prepare_matrix``).
MATRIX_LIMIT = 1 << 14
MATRIX_WORK_LIMIT = 1 << 16


# v1 of each op: float32. Not here: AVERAGE/MAX_POOL_2D v2 (int8) and v3 (int16).
@register(BuiltinOperator.AVERAGE_POOL_2D, 1, 1)
@register(BuiltinOperator.MAX_POOL_2D, 1, 1)
@register(BuiltinOperator.L2_POOL_2D, 1, 1)
class Pool2D(CpuKernel):
    """AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D version 1 (float32)."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x = self.inputs[0]
        self.require_types(x, TensorType.FLOAT32, role="input")
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        if len(x.shape) != 4:
            raise self.unsupported(f"input must be 4-D NHWC, got {list(x.shape)}")
        params = self.params
        #: the fused activation's clamp, or None; ``saturating``: TFLite's activation range,
        #: which is [lowest, max] of float32 even with no activation (inf becomes FLT_MAX,
        #: and a max pool starts from lowest: a window of NaN and -inf gives lowest)
        self.bounds = activation_bounds(params.fused_activation_function)
        low, high = self.bounds or (-FLT_MAX, FLT_MAX)
        self.saturating = (max(low, -FLT_MAX), min(high, FLT_MAX))
        if params.filter_height <= 0 or params.filter_width <= 0:
            raise self.unsupported(f"filter size must be positive, got {[params.filter_height, params.filter_width]}")
        geometry = node_geometry(self, x.shape, (params.filter_height, params.filter_width)).cropped_to_input()
        self.outputs[0].resize((*geometry.output_shape, geometry.channels))

        self.geometry = geometry
        self.is_max = self.op == BuiltinOperator.MAX_POOL_2D
        self.is_l2 = self.op == BuiltinOperator.L2_POOL_2D
        self.combine = np.fmax if self.is_max else np.add  # fmax: NaN loses, as with TFLite's std::max
        self.identity = -np.inf if self.is_max else 0.0
        out_shape = (*geometry.output_shape, geometry.channels)
        counts = None if self.is_max else geometry.valid_counts()  # [OH, OW, 1]
        self.counts = None if counts is None else np.ascontiguousarray(np.broadcast_to(counts, out_shape))
        taps = geometry.filter_h * geometry.filter_w
        outputs = int(np.prod(out_shape))
        self.gather = None
        self.tap_blocks = None
        self.pad = None
        self.separable = False
        if taps > geometry.out_h * geometry.out_w:
            self.pad = PaddedInput(geometry, fill=self.identity, always=True)
            self.windows = window_view(geometry, self.pad.buffer)
        elif taps * outputs <= GATHER_LIMIT:
            self._prepare_gather(x.shape)
        elif self.is_max and not geometry.is_padded and taps > 1:
            self._prepare_separable(x.shape)
        else:
            self.tap_blocks = geometry.clipped_taps()
            self.squares = np.empty(x.shape, np.float32) if self.is_l2 else None
        self.matrix = None
        positions_in, positions_out = geometry.in_h * geometry.in_w, geometry.out_h * geometry.out_w
        if (
            not self.is_max
            and positions_in * positions_out <= MATRIX_LIMIT
            and positions_in * positions_out * geometry.channels <= MATRIX_WORK_LIMIT
        ):
            self._prepare_matrix()
        self.squares_all = np.empty(x.shape, np.float32) if self.matrix is not None and self.is_l2 else None
        self._bound = (None, None)
        remember_shapes(self)

    def _prepare_matrix(self) -> None:
        """``matrix[o, i]``: 1 where input position i is a tap of output position o, else 0
        (positions row-major over H, W): the sum of every window is one matrix product per
        image, ``matrix @ x[n].reshape(H*W, C)``, the products by 1 and the additions of
        0 exact (only the order of the additions may differ from TFLite's)."""
        g = self.geometry
        positions = np.arange(g.in_h * g.in_w).reshape(1, g.in_h, g.in_w, 1)
        padded = np.full((1, *g.padded_shape[1:3], 1), -1, np.intp)
        padded[:, g.pad_top : g.pad_top + g.in_h, g.pad_left : g.pad_left + g.in_w] = positions
        windows = window_view(g, padded).reshape(g.out_h * g.out_w, -1)  # [OH*OW, KH*KW] (C is 1)
        matrix = np.zeros((g.out_h * g.out_w, g.in_h * g.in_w), np.float32)
        for o, taps in enumerate(windows):
            matrix[o, taps[taps >= 0]] = 1
        self.matrix = matrix

    def _prepare_gather(self, input_shape) -> None:
        """``index[t, p]``: the pixel (a row of C values) that output pixel p's tap t reads
        in ``extended`` (the input's pixels, then one pixel of identity values for the taps
        outside the input). Whole pixels are gathered: one index per pixel, not per value
        (a row ``take`` costs a fraction of an elementwise one)."""
        g = self.geometry
        pixels = g.batch * g.in_h * g.in_w
        self.extended = np.full((pixels + 1, g.channels), self.identity, np.float32)
        self.extended_input = self.extended[:pixels].reshape(input_shape)
        padded = np.full((*g.padded_shape[:3], 1), pixels, np.intp)
        inside = (slice(None), slice(g.pad_top, g.pad_top + g.in_h), slice(g.pad_left, g.pad_left + g.in_w))
        padded[inside] = np.arange(pixels).reshape(g.batch, g.in_h, g.in_w, 1)
        windows = window_view(g, padded)  # [N, OH, OW, KH, KW, 1]
        taps = g.filter_h * g.filter_w
        self.gather = np.ascontiguousarray(windows.transpose(3, 4, 0, 1, 2, 5)).reshape(taps, -1)
        self.gathered_pixels = np.empty((*self.gather.shape, g.channels), np.float32)
        self.gathered = self.gathered_pixels.reshape(taps, -1)  # [taps, outputs]

    def _prepare_separable(self, input_shape) -> None:
        """MAX_POOL_2D without padding: the max of each column of taps first (over whole
        rows of the input: long contiguous runs), then across the columns."""
        g = self.geometry
        self.separable = True
        self.column_max = np.empty((g.batch, g.out_h, g.in_w, g.channels), np.float32)
        self.lowest = filled(-np.inf, g.batch * g.out_h * g.out_w * g.channels).reshape(
            g.batch, g.out_h, g.out_w, g.channels
        )
        span_w = (g.out_w - 1) * g.stride_w + 1
        self.column_taps = [self.column_max[:, :, kx : kx + span_w : g.stride_w] for kx in range(g.filter_w)]

    def _bind(self, x: np.ndarray, out: np.ndarray) -> None:
        """Views of this allocation's input and output buffers (fixed until the next one)."""
        if self.separable:
            g = self.geometry
            span_h = (g.out_h - 1) * g.stride_h + 1
            self.row_taps = [x[:, ky : ky + span_h : g.stride_h] for ky in range(g.filter_h)]
        if self.tap_blocks is not None:
            source = self.squares if self.is_l2 else x
            self.tap_views = [(out[out_block], source[in_block]) for out_block, in_block in self.tap_blocks]
        if self.gather is not None:
            self.out_flat = out.reshape(-1)
        self.clamp = make_clamp(self.bounds, out)
        self.saturate = _saturation(self.bounds, self.saturating, out, self.is_max)
        #: whether ``saturate`` turns NaN into lowest (see ``_saturation``)
        self.saturation_fixes_nan = self.is_max and self.bounds is None and out.flags.c_contiguous
        self._bound = (x, out)  # (only views of x: valid whatever its layout)

    def bind(self) -> Callable[[], None]:
        """AVERAGE / L2 pools on the matrix path, and max pools on the gather path, as
        functions of no argument on this allocation's buffers; ``invoke`` otherwise."""
        check_shapes(self)
        x, out = self.inputs[0].data, self.outputs[0].data
        if not self.buffers_are_fixed() or not x.flags.c_contiguous or out.size == 0:
            return self.invoke
        self._bind(x, out)
        if self.matrix is not None:
            return self._bind_matrix(x, out)
        if self.gather is not None and self.is_max:
            extended_input, take, index = self.extended_input, self.extended.take, self.gather
            gathered, fmax, out_flat, clamp = self.gathered, np.fmax.reduce, self.out_flat, self.clamp
            pixels = self.gathered_pixels
            # TFLite's max starts from lowest (NaN never wins) and its activation range
            # caps inf at FLT_MAX: the input copy caps +inf (NaN stays NaN: fmax skips it),
            # the max starts from lowest; then the fused activation, if any.
            highest, minimum = filled(FLT_MAX, x.size).reshape(x.shape), np.minimum

            def max_pool() -> None:
                minimum(x, highest, out=extended_input)
                take(index, 0, pixels, "clip")  # (valid indices: "clip" skips a temporary)
                fmax(gathered, 0, None, out_flat, False, -FLT_MAX)  # (positional: cheaper)

            if clamp is None:
                return max_pool

            def max_pool_clamped() -> None:
                max_pool()
                clamp()

            return max_pool_clamped
        return self.invoke

    def _bind_matrix(self, x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
        """``out = clamp(matrix @ x / count)`` (L2: ``sqrt(matrix @ x**2 / count)``), per
        image. A product by 0 of an infinite or NaN input would make NaN where TFLite has
        none, so an input whose sum of squares is not finite is pooled by ``_compute``
        instead (that sum raises no floating-point warning for inf or NaN, unlike the
        product). A finite sum of squares bounds every |x| by 2**64: the averages are
        finite, and TFLite's saturation at FLT_MAX changes nothing."""
        g = self.geometry
        product, isfinite, compute = self.matrix.dot, math.isfinite, self._compute
        source = self.squares_all if self.is_l2 else x
        pairs = [
            (source[n].reshape(g.in_h * g.in_w, g.channels), out[n].reshape(g.out_h * g.out_w, g.channels))
            for n in range(g.batch)
        ]
        flat = x.reshape(-1)
        squared_norm = flat.dot  # (bound methods: the BLAS calls without np.dot's dispatch)
        square, sqrt, clamp, squares = np.square, np.sqrt, self.clamp, self.squares_all
        divide, counts, is_l2 = np.divide, self.counts, self.is_l2
        if len(pairs) == 1 and not is_l2 and clamp is None:
            ((image, result),) = pairs

            def average_pool() -> None:
                if not isfinite(squared_norm(flat)):
                    compute(x, out)
                    return
                product(image, result)
                divide(out, counts, out)

            return average_pool

        def pool() -> None:
            if not isfinite(squared_norm(flat)):
                compute(x, out)
                return
            if is_l2:
                square(x, squares)
            for image, result in pairs:
                product(image, result)
            divide(out, counts, out)
            if is_l2:
                sqrt(out, out)
            if clamp is not None:
                clamp()

        return pool

    def invoke(self) -> None:
        out = self.outputs[0].data
        x = self.inputs[0].data
        if self._bound[0] is not x or self._bound[1] is not out:
            self._bind(x, out)
        self._compute(x, out)

    def _compute(self, x: np.ndarray, out: np.ndarray) -> None:
        """The exact paths (the views of ``_bind`` made for these buffers)."""
        combine = self.combine
        if self.gather is not None:
            self.extended_input[...] = x
            gathered = self.gathered
            # (valid indices: "clip" skips a temporary)
            self.extended.take(self.gather, 0, self.gathered_pixels, "clip")
            if self.is_l2:
                np.square(gathered, out=gathered)
            if self.is_max:  # from the identity, as the tap loop: a window of NaN gives -inf
                combine.reduce(gathered, 0, None, self.out_flat, False, -np.inf)  # (positional: cheaper)
            elif gathered.shape[1] < 2:
                combine.reduce(gathered, 0, None, self.out_flat, False, 0.0)
            else:  # 0 + tap after tap, as the tap loop (see reduce.py), at a fraction of the cost
                _einsum("to->o", gathered, out=self.out_flat)
        elif self.separable:
            # fmax is exact and NaN loses: any grouping gives the max of the non-NaN taps;
            # a window of NaN only gives NaN here, and -inf (the identity) after the last
            # fmax, or lowest from the saturation (which checks first that any is needed).
            rows, columns, fmax = self.row_taps, self.column_taps, np.fmax
            column_max = self.column_max
            if len(rows) == 1:
                column_max[...] = rows[0]
            else:
                fmax(rows[0], rows[1], out=column_max)
                for row in rows[2:]:
                    fmax(column_max, row, out=column_max)
            if len(columns) == 1:
                out[...] = columns[0]
            else:
                fmax(columns[0], columns[1], out=out)
                for column in columns[2:]:
                    fmax(out, column, out=out)
            if not self.saturation_fixes_nan:
                fmax(out, self.lowest, out=out)
        elif self.tap_blocks is not None:
            if self.is_l2:
                np.square(x, out=self.squares)
            out.fill(self.identity)
            for target, source in self.tap_views:
                combine(target, source, out=target)
        else:
            self.pad(np.square(x) if self.is_l2 else x)
            combine.reduce(self.windows, axis=(3, 4), out=out, initial=self.identity)
        if self.counts is not None:
            np.divide(out, self.counts, out=out)
        if self.is_l2:
            np.sqrt(out, out=out)
        self.saturate()


def _saturation(bounds, saturating: tuple[float, float], out: np.ndarray, is_max: bool) -> Callable[[], None]:
    """TFLite's activation range on ``out``, bound to it: the fused activation's clamp
    with infinite ends capped at +-FLT_MAX; with no activation, a clamp to [-FLT_MAX,
    FLT_MAX] run only when some value is not finite (one BLAS dot tells). For a max pool
    that clamp also turns NaN (a window of only NaN, left by the separable path) into
    lowest, as TFLite's max starting from lowest gives."""
    if bounds is not None or not out.flags.c_contiguous:
        return make_clamp(saturating, out)  # (a max pool's NaN are gone by then)
    flat, isfinite, clip, fmax, fmin = out.reshape(-1), math.isfinite, np.clip, np.fmax, np.fmin

    def saturate() -> None:
        if not isfinite(flat.dot(flat)):
            clip(out, -FLT_MAX, FLT_MAX, out=out)

    def saturate_max() -> None:
        if not isfinite(flat.dot(flat)):
            fmax(out, -FLT_MAX, out=out)  # (NaN and -inf: lowest)
            fmin(out, FLT_MAX, out=out)

    return saturate_max if is_max else saturate
