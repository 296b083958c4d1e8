"""AVERAGE_POOL_2D and MAX_POOL_2D on quantized uint8, int8 and int16 (NHWC), bit-exact
with TFLite's reference kernels (``kernels/pooling.cc``, ``reference/pooling.h``,
``reference/integer_ops/pooling.h``).

The output has the input's scale and zero point (TFLite's Prepare asserts it), so the
pools work on raw values, over the window clipped to the input (as the float pools):

    AVERAGE: acc = sum(window), count = elements of the window inside the input,
             out = (acc + count/2) / count      if acc > 0   (C integer division)
                   (acc - count/2) / count      otherwise    (rounds halves away from 0)
             (uint8: (acc + count/2) / count, acc >= 0 always)
    MAX:     out = max(window)

then the fused activation clamps to its range in the output's quantized domain
(``CalculateActivationRangeQuantized``; TANH/SIGN_BIT clamp nothing).

How: MAX gathers every window's pixels and reduces over the taps; AVERAGE sums the
windows with one float matmul and looks the results up in a table of every (count, sum)
(see ``prepare_gather``). Where those buffers would be too large, like the float pools:
a loop over the filter taps that combines each tap's input block into its output block
(sums in int32, exact for any window of 8/16-bit values below 2^15 taps), or, when there
are fewer output positions than taps (global pools), one reduction over all windows of a
padded copy.

The rounded division (``rounded_average``) and the quantization check
(``quantization_mismatch``) are plain functions, the first written against the array
namespace: the GPU delegate's quantized pools call them too.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._quantized_window import _clip
from backends.cpu.kernels._window import PaddedInput, check_shapes, node_geometry, remember_shapes, window_view
from backends.cpu.quantization import activation_range_quantized, exact_float_dtype, is_quantized, namespace_of
from schema.enums import BuiltinOperator, TensorType

T = TensorType

#: TFLite's Prepare: |input scale - output scale| <= 1e-6 and equal zero points.
SCALE_TOLERANCE = 1.0e-6
#: Largest table of the AVERAGE lookup (entries: per distinct window count, the count
#: times the input type's range).
AVERAGE_TABLE_LIMIT = 1 << 20


def quantization_mismatch(x, out) -> str | None:
    """TFLite's Prepare check that a quantized pool's input and output share their scale
    (within ``SCALE_TOLERANCE``) and zero point; a message when they do not."""
    (s_in, z_in), (s_out, z_out) = _params(x), _params(out)
    if abs(s_in - s_out) > SCALE_TOLERANCE or z_in != z_out:
        return (
            f"input (scale {s_in}, zero point {z_in}) and output (scale {s_out}, zero point {z_out}) "
            "must have the same quantization: TFLite's quantized pools do not requantize"
        )
    return None


def rounded_average(acc, counts):
    """TFLite's rounded average of window sums, ``acc > 0 ? (acc + count/2) / count :
    (acc - count/2) / count`` with C's truncating division (halves away from zero), as
    ``sign(acc) * ((|acc| + count/2) // count)``. ``acc`` holds integers (any integer
    type that holds ``|acc| + count/2``), ``counts`` an int or integer array broadcast
    against it; written against the array namespace of ``acc`` (the GPU delegate's
    quantized AVERAGE_POOL_2D calls it on device arrays)."""
    xp = namespace_of(acc, counts)
    quotient = (xp.abs(acc) + counts // 2) // counts
    return xp.where(acc < 0, -quotient, quotient)


# v1: uint8 (v1 float32 is in pool2d.py); v2: int8; v3: int16.
@register(BuiltinOperator.AVERAGE_POOL_2D, 1, 3)
@register(BuiltinOperator.MAX_POOL_2D, 1, 3)
class QuantizedPool2D(CpuKernel):
    """AVERAGE_POOL_2D and MAX_POOL_2D v1 (uint8), v2 (int8), v3 (int16), quantized."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        first = node.inputs[0] if len(node.inputs) else -1
        return first >= 0 and context.tensors[first].type in (T.UINT8, T.INT8, T.INT16)

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(x, T.UINT8, T.INT8, T.INT16, role="input")
        self.require_types(out, x.type, role="output")
        if len(x.shape) != 4:
            raise self.unsupported(f"input must be 4-D NHWC, got {list(x.shape)}")
        for tensor in (x, out):
            if not is_quantized(tensor) or tensor.quantization.is_per_channel:
                raise self.unsupported(f"tensor {tensor.name!r} must be quantized per tensor (a scale and zero point)")
        message = quantization_mismatch(x, out)
        if message:
            raise self.unsupported(message)
        s_out, z_out = _params(out)
        params = self.params
        if params.filter_height <= 0 or params.filter_width <= 0:
            raise self.unsupported(f"filter size must be positive, got {[params.filter_height, params.filter_width]}")
        geometry = node_geometry(self, x.shape, (params.filter_height, params.filter_width)).cropped_to_input()
        out.resize((*geometry.output_shape, geometry.channels))
        self.geometry = geometry
        self.low, self.high = activation_range_quantized(params.fused_activation_function, s_out, z_out, out.dtype)

        self.is_max = self.op == BuiltinOperator.MAX_POOL_2D
        # Max works in the input type; sums in int32.
        self.work_dtype = x.dtype if self.is_max else np.dtype(np.int32)
        self.identity = np.iinfo(x.dtype).min if self.is_max else 0
        self.combine = np.maximum if self.is_max else np.add
        self.accumulator = None if self.is_max else np.empty(out.shape, np.int32)
        if not self.is_max:
            counts = geometry.valid_counts().astype(np.int32)  # [OH, OW, 1]
            if np.any(counts == 0):
                raise self.unsupported("a pooling window lies entirely in the padding")
            self.counts = counts
        if geometry.filter_h * geometry.filter_w <= geometry.out_h * geometry.out_w:
            self.tap_blocks = geometry.clipped_taps()
            self.pad = None
        else:
            self.tap_blocks = None
            self.pad = PaddedInput(geometry, dtype=self.work_dtype, fill=self.identity)
        self.prepare_gather(x, out)
        remember_shapes(self)

    # -- the few-call paths ----------------------------------------------------------
    def prepare_gather(self, x, out) -> None:
        """Index arrays and tables for invoke in a few numpy calls.

        MAX: every window's input pixels, tap-major ``[taps, N*OH*OW]`` indices of
        the input's pixels (rows of C values), the positions in the padding replaced by
        one of the window's own pixels (a repeat leaves a max unchanged): one gather of
        rows, one max-reduction over the taps.
        AVERAGE (``average_table``): the window sums, each offset by a base that
        depends on the window's count, as one float matmul; the results are looked up
        in a table of every (count, sum). Where that table would be too large: the
        window means as one float64 matmul with 1/count inside each window, rounded
        halves away from zero (``v + copysign(0.5 + 1/(4 count), v)``, clamped,
        truncated by the store).
        """
        g = self.geometry
        self.gather = None
        self.pool_matrix = None
        self.sum_matrix = None
        self._source = None
        # The index lists below are built in Python, one entry per (window, tap): skip that
        # where neither path would be taken anyway (the same limits as below, checked
        # before the loops: a [1, 9, 8388617, 4] input has 16.8 million windows).
        positions, pixels_per_image = g.out_h * g.out_w, g.in_h * g.in_w
        taps = g.filter_h * g.filter_w
        if self.is_max and g.batch * positions * taps * g.channels > (1 << 20):
            return
        if not self.is_max and (positions * (pixels_per_image + 1) > (1 << 20) or positions * taps > (1 << 20)):
            return
        windows = []  # per output position: the flat pixel indices inside the input
        for oy in range(g.out_h):
            for ox in range(g.out_w):
                pixels = []
                for ky in range(g.filter_h):
                    iy = oy * g.stride_h + ky - g.pad_top
                    if not 0 <= iy < g.in_h:
                        continue
                    for kx in range(g.filter_w):
                        ix = ox * g.stride_w + kx - g.pad_left
                        if 0 <= ix < g.in_w:
                            pixels.append(iy * g.in_w + ix)
                if not pixels:
                    return
                windows.append(pixels)
        info = np.iinfo(x.dtype)
        self.full_range = self.low <= int(info.min) and self.high >= int(info.max)
        if self.is_max:
            if g.batch * positions * taps * g.channels > (1 << 20):
                return
            index = np.empty((g.batch, positions, taps), np.intp)
            for p, pixels in enumerate(windows):
                row = pixels + [pixels[0]] * (taps - len(pixels))
                index[:, p, :] = row
            index += (np.arange(g.batch, dtype=np.intp) * pixels_per_image)[:, None, None]
            # pixel (row) indices, tap-major: the max then reduces over the outer axis
            self.gather = np.ascontiguousarray(index.reshape(g.batch * positions, taps).T)  # [taps, N*P]
            self.gathered = np.empty((taps, g.batch * positions, g.channels), x.dtype)
            return
        if positions * (pixels_per_image + 1) > (1 << 20) or max(len(w) for w in windows) > 4096:
            return
        counts = [len(w) for w in windows]
        if self.average_table(windows, info):
            return
        matrix = np.zeros((positions, pixels_per_image), np.float64)
        for p, pixels in enumerate(windows):
            matrix[p, pixels] = 1.0 / counts[p]
        self.pool_matrix = matrix
        # The matmul gives acc / count within count * 2^15 * 2^-52 <= 2^-25 (at most
        # 4096 terms below 2^15 in magnitude, each add off by at most 2^-37); a quotient that is not a half is at least
        # 1 / (2 count) from one, so 0.5 + 1 / (4 count) rounds every half away from 0
        # and moves no other quotient across an integer.
        halves = 0.5 + 0.25 / np.array(counts, np.float64)
        self.pool_halves = np.ascontiguousarray(
            np.broadcast_to(halves[None, :, None], (g.batch, positions, g.channels))
        )
        self.pool_sums = np.empty((g.batch, positions, g.channels), np.float64)
        self.pool_half = np.empty_like(self.pool_sums)

    def average_table(self, windows: list[list[int]], info: np.iinfo) -> bool:
        """The AVERAGE path by lookup, when its table is at most ``AVERAGE_TABLE_LIMIT``.

        For each distinct count c the table holds TFLite's clamped, rounded acc / c for
        every possible window sum acc in [c min, c max], from ``start[c]``; position p's
        index is ``acc + start[c_p] - c_p min`` (>= 0). That base is the last column of
        ``sum_matrix`` ([P, H*W + 1]: 1 at each window's pixels), multiplied by a row of
        ones below the image, so one matmul gives the indices, exactly: every partial
        sum is an integer below ``exact_float_dtype``'s bound.
        """
        low, high = int(info.min), int(info.max)
        starts: dict[int, int] = {}
        parts = []
        size = 0
        for count in sorted({len(w) for w in windows}):
            starts[count] = size
            size += count * (high - low) + 1
            if size > AVERAGE_TABLE_LIMIT:
                return False
            acc = np.arange(count * low, count * high + 1, dtype=np.int64)
            parts.append(self.average_of(acc, count))
        # |partial sum| <= count max|q| (pixels) + base, and base <= size + count max|q|.
        dtype = exact_float_dtype(2 * max(starts) * max(-low, high) + size)
        if dtype is None:
            return False
        g = self.geometry
        pixels_per_image = g.in_h * g.in_w
        matrix = np.zeros((len(windows), pixels_per_image + 1), dtype)
        for p, pixels in enumerate(windows):
            matrix[p, pixels] = 1
            matrix[p, pixels_per_image] = starts[len(pixels)] - len(pixels) * low
        self.sum_matrix = matrix
        self.sum_table = np.concatenate(parts).astype(self.outputs[0].dtype)
        return True

    def average_of(self, acc: np.ndarray, count: int) -> np.ndarray:
        """TFLite's rounded average of window sums ``acc`` over ``count`` pixels, clamped."""
        return np.clip(rounded_average(np.asarray(acc, np.int64), count), self.low, self.high)

    def bind(self) -> Callable[[], None]:
        """The gather (MAX) and table (AVERAGE) paths as functions of no argument on
        this allocation's buffers; ``invoke`` otherwise."""
        check_shapes(self)
        x, out = self.inputs[0].data, self.outputs[0].data
        if not self.buffers_are_fixed() or not x.flags.c_contiguous or not out.flags.c_contiguous:
            return self.invoke
        if self.gather is not None:
            return self.bind_max(x, out)
        if self.sum_matrix is not None:
            return self.bind_average(x, out)
        if not self.is_max and self.tap_blocks is not None:
            return self.bind_average_taps(x, out) or self.invoke
        return self.invoke

    def bind_max(self, x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
        g = self.geometry
        # Whole pixels (rows of C values) are gathered: one index per pixel, not per value.
        take, index, gathered = x.reshape(-1, g.channels).take, self.gather, self.gathered
        taps = gathered.shape[0]
        out_rows = out.reshape(-1)
        gathered_rows = gathered.reshape(taps, -1)  # (a 2-D reduction is the cheaper one)
        maximum, minimum = np.maximum.reduce, np.minimum
        info = np.iinfo(x.dtype)
        # max(low, window max): the clamp's lower side as the reduction's initial value.
        low = x.dtype.type(max(self.low, int(info.min)))
        if self.high >= int(info.max):

            def max_pool() -> None:
                take(index, 0, gathered, "clip")  # (valid indices: "clip" skips a temporary)
                maximum(gathered_rows, 0, None, out_rows, False, low)  # (positional: cheaper)

            return max_pool
        high = np.full(out_rows.shape, self.high, x.dtype)

        def clamped_max_pool() -> None:
            take(index, 0, gathered, "clip")
            maximum(gathered_rows, 0, None, out_rows, False, low)
            minimum(out_rows, high, out=out_rows)

        return clamped_max_pool

    def bind_average(self, x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
        g = self.geometry
        pixels = g.in_h * g.in_w
        matrix, take = self.sum_matrix, self.sum_table.take
        positions = matrix.shape[0]
        # [N, H*W + 1, C]: the image, then a row of ones (the bases' column's factor).
        values = np.zeros((g.batch, pixels + 1, g.channels), matrix.dtype)
        values[:, pixels] = 1
        body, images = values[:, :pixels], x.reshape(g.batch, pixels, g.channels)
        sums = np.empty((g.batch, positions, g.channels), matrix.dtype)
        index = np.empty(sums.shape, np.intp)
        result = out.reshape(sums.shape)
        if g.batch == 1:
            # 2-D operands: the matrix's own dot method, the same BLAS call as np.matmul at
            # a fraction of its call cost (and without np.dot's dispatch)
            values, sums, index, result = values[0], sums[0], index[0], result[0]
            product = matrix.dot

            def average_pool() -> None:
                body[...] = images
                product(values, sums)
                index[...] = sums  # exact integers
                take(index, None, result, "clip")  # (valid indices: "clip" skips a temporary)

            return average_pool
        matmul = np.matmul

        def average_pool_batch() -> None:
            body[...] = images
            matmul(matrix, values, out=sums)
            index[...] = sums  # exact integers
            take(index, None, result, "clip")

        return average_pool_batch

    def bind_average_taps(self, x: np.ndarray, out: np.ndarray) -> Callable[[], None] | None:
        """AVERAGE on large images (no window-sum matrix): the window sums as one int32
        add per filter tap (``tap_blocks``) onto a per-position base, then a lookup of
        TFLite's clamped rounded average in a table of every (count, sum): the base
        ``start[c] - c * min`` makes ``sum + base`` the sum's index in the table of its
        count ``c`` (as ``average_table`` does), so rounding, clamp and store are one
        ``take``. None when the table would exceed ``AVERAGE_TABLE_LIMIT``.
        mltk_fingerprint's [1, 88, 88, 8] -> [1, 44, 44, 8] (2x2): 82 -> about 30 us."""
        info = np.iinfo(x.dtype)
        low, high = int(info.min), int(info.max)
        counts = self.counts[..., 0].astype(np.int64)  # [OH, OW]
        starts: dict[int, int] = {}
        parts, size = [], 0
        for count in sorted(set(counts.reshape(-1).tolist())):
            starts[count] = size
            size += count * (high - low) + 1
            if size > AVERAGE_TABLE_LIMIT:
                return None
            parts.append(self.average_of(np.arange(count * low, count * high + 1, dtype=np.int64), count))
        if size + max(starts) + max(-low, high) * int(counts.max()) >= (1 << 31):
            return None  # (the indices are int32 sums)
        table = np.concatenate(parts).astype(out.dtype)
        bases = np.vectorize(lambda c: starts[c] - c * low, otypes=[np.int64])(counts)
        base = np.ascontiguousarray(np.broadcast_to(bases[None, :, :, None], out.shape), dtype=np.int32)
        acc, add, take = self.accumulator, np.add, table.take
        blocks = [(acc[out_block], x[in_block]) for out_block, in_block in self.tap_blocks]
        index = acc.reshape(-1)
        result = out.reshape(-1)

        def average_pool_taps() -> None:
            acc[...] = base
            for target, source in blocks:
                add(target, source, out=target)
            take(index, None, result, "clip")  # (valid indices: "clip" skips a temporary)

        return average_pool_taps

    def _take_views(self, x: np.ndarray) -> None:
        """Views of the arena arrays (fixed between allocations)."""
        g = self.geometry
        self._source = x
        out = self.outputs[0].data
        self._images = x.reshape(g.batch, g.in_h * g.in_w, g.channels)
        self._store = out.reshape(self.pool_sums.shape)

    def invoke(self) -> None:
        if self.gather is not None or self.sum_matrix is not None:
            x, out = self.inputs[0].data, self.outputs[0].data
            if x.flags.c_contiguous and out.flags.c_contiguous:
                (self.bind_max if self.gather is not None else self.bind_average)(x, out)()
                return
        if self.pool_matrix is not None:
            x = self.inputs[0].data
            if x is not self._source:
                self._take_views(x)
            sums = np.matmul(self.pool_matrix, self._images, out=self.pool_sums)  # ~acc / count
            half = np.copysign(self.pool_halves, sums, out=self.pool_half)
            np.add(sums, half, out=sums)
            if not self.full_range:  # an average of values in the type's range stays in it
                _clip(sums, np.float64(self.low), np.float64(self.high), out=sums)
            np.copyto(self._store, sums, casting="unsafe")  # truncation toward zero
            return
        self.invoke_taps()

    def invoke_taps(self) -> None:
        out = self.outputs[0].data
        x = self.inputs[0].data
        target = out if self.is_max else self.accumulator
        if self.tap_blocks is not None:
            target.fill(self.identity)
            for out_block, in_block in self.tap_blocks:
                block = target[out_block]
                self.combine(block, x[in_block], out=block)
        else:
            windows = window_view(self.geometry, self.pad(x))
            self.combine.reduce(windows, axis=(3, 4), out=target, dtype=self.work_dtype)
        if not self.is_max:
            self.round_divide(target)
            np.clip(target, self.low, self.high, out=target)
            out[...] = target
        else:
            np.clip(out, self.low, self.high, out=out)

    def round_divide(self, acc: np.ndarray) -> None:
        """``acc > 0 ? (acc + count/2) / count : (acc - count/2) / count`` with C's
        truncating division (``rounded_average``), in place."""
        acc[...] = rounded_average(acc, self.counts)


def _params(tensor) -> tuple[float, int]:
    q = tensor.quantization
    return float(q.scale[0]), int(q.zero_point[0]) if q.zero_point.size else 0

