"""DEPTHWISE_CONV_2D on quantized tensors, bit-exact with TFLite's reference kernels.

Input ``[N, H, W, C]``, filter ``[1, KH, KW, C*M]`` (M, the depth multiplier, from
the shapes), output channel ``o = c*M + m`` reading input channel ``c``, with strides,
dilation and SAME/VALID padding as in the float kernel (``depthwise_conv2d.py``).
The arithmetic, chosen (as TFLite does) by the tensor types, not the version:

- uint8 (per tensor): ``acc = sum (w - z_w) * (x - z_in) + bias`` (int32),
  ``out = clamp(MultiplyByQuantizedMultiplier(acc, m, s) + z_out)``, one multiplier
  from ``float(s_in * s_w) / s_out`` (``reference_ops::DepthwiseConv``);
- int8 (filter per channel or per tensor, zero points 0): one multiplier per output
  channel from ``double(s_in) * s_w[o] / s_out``
  (``reference_integer_ops::DepthwiseConvPerChannel``);
- int16 activations x int8 filter (zero points 0): int64 accumulators, an int64
  bias, the int64 ``MultiplyByQuantizedMultiplier``;
- hybrid (float32 input and output, int8 filter): each batch of the input quantized
  asymmetrically to int8 on the fly (scale ``s_b``, offset ``o_b``),
  ``acc = sum w * (q - o_b)``, ``out = float(acc) * (s_w[o] * s_b) + bias``, then the
  float clamp (``reference_integer_ops::DepthwiseConvHybridPerChannel``; TFLite has
  no per-tensor hybrid path).

Positions outside the input contribute nothing. As for CONV_2D, the arithmetic is
chosen by the tensor types alone, as in TFLite.

How: the input is converted to float (exact), padded with its zero point and, for
M > 1, each channel repeated M times (a buffer allocated at prepare), then summed
against the taps with one ``einsum``. With a stride of 1 across (most depthwise
layers), the outputs of one row read, for each tap, one contiguous run of ``OW * C*M``
values of the buffer: the taps are a strided view ``[KH, KW, N, OH, OW*C*M]`` and the
einsum runs over whole rows against the taps tiled OW times (the float kernel's
layout; [1, 112, 112, 32] int8: 5.2 -> 0.7 ms; with short rows all rows as one run,
``FlatTaps``). With a stride sw > 1 across, a "row im2col" first (KW strided copies:
for every padded row and every kx, the OW pixels tap kx reads), which makes the runs
contiguous again. Every partial sum is an integer below the bound ``sum |w| * max |x|``
of its channel, so float32 is exact when that is below 2**24 (int8: always for
filters up to 512 taps), float64 otherwise (int16). The input zero point is folded
into the bias (``sum w (x - z) = sum w x - z sum w``; the padding, filled with ``z``,
cancels in it), then the requantization (once the arena is allocated, ``bind``: the
float64 ``FloatOutputStage`` on buffers fixed for the allocation). A node of one input
channel (``C = 1``, M > 1) is an ordinary convolution: im2col and one BLAS call
(``SingleChannelMatmul``) rather than the channel repeated M times for the einsum.

Where TFLite differs from its evident intent (not reproduced):
- the int16 and hybrid paths take the depth multiplier from the node's
  ``depth_multiplier`` option, not from the shapes (the uint8/int8 paths use the
  shapes); a node whose option disagrees with its shapes gets partly unwritten
  output in TFLite, here the shapes decide;
- a hybrid node whose filter has one scale (version 4) reads ``scale[o]`` for every
  channel past the array's end in TFLite; here the one scale applies to all channels
  (the result of the same node with the scale repeated per channel, version 6).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._quantized_window import (
    ASYMMETRIC_ABS_MAX,
    RAW_ABS_MAX,
    ConvQuantization,
    FloatInput,
    FloatOutputStage,
    accumulator_dtype,
    asymmetric_quantize,
    depthwise_taps,
    select_conv_arithmetic,
    zero_point_of,
)
from backends.cpu.kernels._window import (
    activation_bounds,
    check_conv_window_params,
    check_shapes,
    clamp,
    depthwise_layout,
    node_geometry,
    WindowGeometry,
    record_pair,
    remember_shapes,
    require_inputs,
    window_view,
)
from backends.cpu.kernels.conv2d import COLUMN_MAJOR_MIN_WIDTH, column_major, column_major_copy
from backends.cpu.kernels.depthwise_conv2d import FlatTaps
from backends.cpu.quantization import is_quantized
from schema.enums import BuiltinOperator, TensorType

try:  # the C implementation behind np.einsum(optimize=False), without its Python wrapper (~1.8 us)
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # pragma: no cover - older numpy
    _einsum = np.einsum

T = TensorType


def required_version(x, filters, params) -> int | None:
    """The least DEPTHWISE_CONV_2D version whose features a quantized or hybrid node
    uses (TFLite's ``GetBuiltinOperatorVersion``), or None for other nodes."""
    dilated = getattr(params, "dilation_h_factor", 1) != 1 or getattr(params, "dilation_w_factor", 1) != 1
    if is_quantized(x):
        return 3 if x.type == T.INT8 else (2 if dilated else 1)  # uint8 and int16 x int8
    if x.type == T.FLOAT32 and filters.type == T.INT8:
        scales = filters.quantization.scale.size if filters.quantization is not None else 0
        return 6 if len(filters.shape) == 4 and scales == filters.shape[3] else 4
    return None


# v1: uint8 (per tensor) here; float32 in depthwise_conv2d.py. Also int16 x int8:
#     TFLite's rule gives it version 1 (or 2 when dilated); its v5 test asks for an
#     int16 filter, which no 16x8 model has.
# v2: dilation; for uint8 (and int16 x int8) here, float32 in depthwise_conv2d.py.
# v3: int8 (filter per channel or per tensor), with or without dilation.
# v4: hybrid: float32 input, int8 filter with one scale.
# v5: int16 activations; TFLite's kernel takes only int8 filters with them (16x8).
# v6: hybrid with a per-channel filter.
# v7: int8 activations with an int4 filter (held one value an element; TFLite unpacks it to
#     int8 and runs the int8 kernel).
@register(BuiltinOperator.DEPTHWISE_CONV_2D, 1, 7)
class QuantizedDepthwiseConv2D(CpuKernel):
    """DEPTHWISE_CONV_2D v1-v7 on uint8, int8 (int8 or int4 filter), int16x8 and hybrid (float x int8) tensors."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        """Quantized and hybrid nodes (chosen by their types, as TFLite's kernel does)."""
        if len(node.inputs) < 2 or node.inputs[0] < 0 or node.inputs[1] < 0:
            return False
        x, filters = context.tensors[node.inputs[0]], context.tensors[node.inputs[1]]
        required = required_version(x, filters, node.params)
        return required is not None

    def prepare(self) -> None:
        self.require_num_inputs(2, 3)
        require_inputs(self, "input", "filter")
        x, filters, output = self.inputs[0], self.inputs[1], self.outputs[0]
        bias = self.inputs[2] if len(self.inputs) == 3 else None
        self.check_types(x, filters, bias, output)
        kh, kw, out_channels, self.multiplier = depthwise_layout(self, x, filters, bias)
        self.check_filter_quantization(filters, out_channels)
        params = self.params
        check_conv_window_params(self, (params.dilation_h_factor, params.dilation_w_factor))
        # The windows are taken over the input with every channel repeated M times.
        geometry = node_geometry(
            self, (*x.shape[:3], out_channels), (kh, kw), (params.dilation_h_factor, params.dilation_w_factor)
        )
        output.resize((*geometry.output_shape, out_channels))
        self.blas_work = 0  # (numpy's einsum over the taps; the one-channel case below is a matmul)
        if output.num_elements == 0:
            return  # nothing to compute (the interpreter does not run a node whose outputs are empty)
        # Without the taps that only ever read the padding (a huge dilation; they add
        # (z - z) * w = 0): the buffers are then bounded by the tensors (_window.conv_cropped).
        geometry = geometry.conv_cropped()
        kh, kw = geometry.filter_h, geometry.filter_w
        self.geometry = geometry
        self.out_channels = out_channels

        self.filter_zero_point = zero_point_of(filters) if self.mode == "uint8" else 0
        input_abs_max = ASYMMETRIC_ABS_MAX if self.mode == "hybrid" else RAW_ABS_MAX[x.type]
        if filters.is_constant:
            abs_sums = np.abs(self.centered_taps(geometry.filter_view(filters.data))).reshape(-1, out_channels).sum(axis=0)
        else:
            abs_sums = np.full(out_channels, kh * kw * (255 if self.mode == "uint8" else 128), np.int64)
        try:
            self.float_type = accumulator_dtype(abs_sums, input_abs_max)
        except ValueError as error:
            raise self.unsupported(str(error)) from None

        fill = zero_point_of(x) if self.mode != "hybrid" else 0.0
        self.sums = np.empty((*geometry.output_shape, out_channels), self.float_type)
        self.flat = None
        self.column_copies = []  # stride > 1 across: the row im2col, (target, source) pairs
        self.single_channel = None
        if int(x.shape[3]) == 1 and self.multiplier > 1 and self.mode != "hybrid" and filters.is_constant:
            # One input channel: an ordinary convolution (im2col, then one BLAS call).
            dilation = (params.dilation_h_factor, params.dilation_w_factor)
            full = (int(filters.shape[1]), int(filters.shape[2]))
            single = node_geometry(self, x.shape, full, dilation).conv_cropped()  # (the same crop: spatial)
            self.single_channel = SingleChannelMatmul(single, self.float_type, fill, self.sums)
            self.blas_work = math.prod(self.sums.shape) * single.filter_h * single.filter_w
            self.taps = self.single_channel.weights_of(self.centered_taps(geometry.filter_view(filters.data)))
            self.weight_sums = self.taps.sum(axis=0).astype(np.int64)
            self.bias_values = self.read_bias() if bias is None or bias.is_constant else None
            self.finish_quantized_prepare(x, filters, output, abs_sums, input_abs_max)
            return
        self.float_input = FloatInput(geometry, self.float_type, fill=fill, repeat=self.multiplier)
        source = self.float_input.buffer
        if geometry.stride_w != 1:
            source = self._prepare_row_columns(source)
        if FlatTaps.applies(geometry):  # short rows: all rows as one run
            self.flat = FlatTaps(geometry, source)
            self.tap_runs, self.sum_rows = self.flat.taps, self.flat.wide  # [KH, KW, N, L], [N, L]
            self.subscripts = "abnk,abk->nk"
            self.sums = self.flat.rows.reshape(self.sums.shape)  # a view of the wide sums
        else:  # each tap of each output row: one contiguous run of OW*C values
            self.tap_runs = self._tap_runs(source)  # [KH, KW, N, OH, OW*C]
            self.sum_rows = self.sums.reshape(geometry.batch, geometry.out_h, -1)
            self.subscripts = "abnyk,abk->nyk"
        self.taps = self.tap_weights(geometry.filter_view(filters.data)) if filters.is_constant else None
        self.bias_values = self.read_bias() if bias is None or bias.is_constant else None

        if self.mode == "hybrid":
            self.bounds = activation_bounds(params.fused_activation_function)
            scales = np.asarray(filters.quantization.scale, np.float32)
            self.filter_scales = np.broadcast_to(scales, (out_channels,)).astype(np.float32)
            self.result = np.empty(self.sums.shape, np.float32)
            remember_shapes(self)
            return
        self.finish_quantized_prepare(x, filters, output, abs_sums, input_abs_max)

    def finish_quantized_prepare(self, x, filters, output, abs_sums: np.ndarray, input_abs_max: int) -> None:
        """The output stage's parameters, the bias folded with the input zero point."""
        self.quantization = ConvQuantization.of(
            x, filters, output, self.out_channels, self.params.fused_activation_function, wide=self.mode == "int16"
        )
        self.acc_offset = None
        if filters.is_constant and self.bias_values is not None:
            self.acc_offset = self.accumulator_offset(self.bias_values)
            self.quantization.accumulator_bound = int(np.max(abs_sums * input_abs_max + np.abs(self.acc_offset)))
        remember_shapes(self)

    def _prepare_row_columns(self, padded: np.ndarray) -> np.ndarray:
        """Stride sw > 1 across: ``columns[n, r, kx, x, o] = padded[n, r, x*sw + kx*dw, o]``
        (a "row im2col", refreshed by KW strided copies of whole padded rows, each pixel's
        channels copied as one record), so that each tap of an output row reads one
        contiguous run of ``OW * C`` values again. Measured against a copy of every
        window and an einsum over channels: [1, 16, 16, 16] stride 2 9.0 -> 6.6 us,
        [1, 33, 33, 32] 48 -> 34 us. Returns the columns buffer."""
        g = self.geometry
        batch, rows, _, channels = padded.shape
        columns = np.empty((batch, rows, g.filter_w, g.out_w, channels), padded.dtype)
        last = (g.out_w - 1) * g.stride_w + 1
        for kx in range(g.filter_w):
            start = kx * g.dilation_w
            self.column_copies.append(record_pair(columns[:, :, kx], padded[:, :, start : start + last : g.stride_w]))
        return columns

    def _tap_runs(self, source: np.ndarray) -> np.ndarray:
        """The taps over ``source`` (the padded input ``[N, Hp, Wp, C]``, or the row im2col
        ``[N, Hp, KW, OW, C]``) as a read-only view ``[KH, KW, N, OH, OW*C]`` whose last
        axis is contiguous: tap (ky, kx) of output row y reads the run of ``OW * C`` values
        starting at padded row ``y*sh + ky*dh``, column ``kx*dw`` (im2col block ``kx``)."""
        g = self.geometry
        if source.ndim == 4:
            return depthwise_taps(source, g)
        item = source.itemsize
        batch_stride, row_stride, block_stride = source.strides[:3]
        return as_strided(
            source,
            (g.filter_h, g.filter_w, g.batch, g.out_h, g.out_w * g.channels),
            (g.dilation_h * row_stride, block_stride, batch_stride, g.stride_h * row_stride, item),
            writeable=False,
        )

    def check_types(self, x, filters, bias, output) -> None:
        """Pick the arithmetic from the types (as TFLite does) and check the rest."""
        self.mode, _ = select_conv_arithmetic(
            self, x, filters, bias, output, what="depthwise convolution", int16_bias_from_params=False
        )

    def check_filter_quantization(self, filters, out_channels: int) -> None:
        q = filters.quantization
        if q.scale.size not in (1, out_channels):
            raise self.unsupported(f"the filter has {q.scale.size} scales; expected 1 or {out_channels}")
        if q.scale.size > 1:
            if self.mode == "uint8":
                raise self.unsupported("a uint8 filter must be quantized per tensor (TFLite: per channel is int8/int16)")
            if int(q.quantized_dimension) != 3:
                raise self.unsupported(
                    f"a per-channel filter must be quantized along dimension 3, not {q.quantized_dimension}"
                )

    def centered_taps(self, filters: np.ndarray) -> np.ndarray:
        """``[KH, KW, C*M]`` int64: the filter as the kernel multiplies it (w - z_w)."""
        return filters[0].astype(np.int64) - self.filter_zero_point

    def tap_weights(self, filters: np.ndarray) -> np.ndarray:
        """The taps in the float type, tiled once per output column, ``[KH, KW, OW*C*M]``
        (``[KH, KW, L]`` for FlatTaps); also keeps ``sum w`` per channel (int64)."""
        taps = self.centered_taps(filters)
        self.weight_sums = taps.reshape(-1, self.out_channels).sum(axis=0)
        if self.flat is not None:
            return self.flat.tile(taps, self.float_type)
        kh, kw, channels = taps.shape
        taps = np.broadcast_to(taps[:, :, None, :], (kh, kw, self.geometry.out_w, channels)).reshape(kh, kw, -1)
        return np.ascontiguousarray(taps, dtype=self.float_type)

    def read_bias(self) -> np.ndarray:
        bias = self.inputs[2] if len(self.inputs) == 3 else None
        dtype = np.float32 if self.mode == "hybrid" else np.int64
        if bias is None:
            return np.zeros(self.out_channels, dtype)
        return bias.data.reshape(-1).astype(dtype)

    def accumulator_offset(self, bias: np.ndarray) -> np.ndarray:
        """What every accumulator gets besides ``sum w * x``: ``bias - z_in * sum w``."""
        return bias - zero_point_of(self.inputs[0]) * self.weight_sums

    def depthwise_sums(self, x: np.ndarray) -> np.ndarray:
        """``sum w * x`` over the taps for every output, ``[N, OH, OW, C*M]`` (exact
        integers in a float type)."""
        if self.single_channel is not None:
            self.single_channel(x, self.taps)  # (into a view of the sums)
            return self.sums
        taps = self.taps
        if taps is None:
            taps = self.tap_weights(self.geometry.filter_view(self.inputs[1].data))
        self.float_input(self.geometry.input_view(x))
        for target, source in self.column_copies:
            target[...] = source
        _einsum(self.subscripts, self.tap_runs, taps, out=self.sum_rows)
        return self.sums

    def bind(self) -> Callable[[], None]:
        """Once the arena is allocated: for a quantized node with constant filter and
        bias, a closure over this allocation's input and output (the same sums, then
        the float64 ``FloatOutputStage``); else ``invoke``."""
        check_shapes(self)
        x, output = self.inputs[0], self.outputs[0]
        if self.mode == "hybrid" or self.acc_offset is None or not self.buffers_are_fixed():
            return self.invoke
        stage = FloatOutputStage.make(self.quantization, self.acc_offset, output.data)
        if stage is None:
            # (left shifts, int16's int64 accumulators, single rounding): the sums, then
            # ConvQuantization.requantize in place, bound to this allocation's buffers
            sums_of, requantize, offset, xs, out = self.depthwise_sums, self.quantization.requantize, self.acc_offset, x.data, output.data

            def run_general() -> None:
                requantize(sums_of(xs), offset, out)

            return run_general
        self.output_stage = stage  # (which path: tests and profiling read it)
        if self.single_channel is not None:
            copies, dot = self.single_channel.copies(x.data), np.dot
            columns, weights, products, requantize = (
                self.single_channel.columns, self.taps, self.single_channel.products, stage.from_sums(self.sums)
            )

            def run_single_channel() -> None:
                for target, source in copies:
                    target[...] = source
                dot(columns, weights, out=products)
                requantize()

            return run_single_channel
        if self.is_single_window():
            return self.bind_single_window(x.data, output.data, stage)
        taps, requantize, einsum = self.taps, stage.from_sums(self.sums), _einsum
        runs, sum_rows, subscripts = self.tap_runs, self.sum_rows, self.subscripts
        copies = self.input_copies(x.data) + self.column_copies  # (then the row im2col, stride > 1)

        def run() -> None:
            for target, source in copies:
                target[...] = source
            einsum(subscripts, runs, taps, out=sum_rows)
            requantize()

        return run

    def is_single_window(self) -> bool:
        """One window covering the whole unpadded input, one image, one channel per input
        channel (a streaming model's depthwise layer over its buffered frames:
        ``[1, K, 1, C]`` -> ``[1, 1, 1, C]``)."""
        g = self.geometry
        return (
            g.batch == 1 and g.out_h == g.out_w == 1 and not g.is_padded and self.multiplier == 1
            and (g.filter_h, g.filter_w) == (g.in_h, g.in_w) and (g.dilation_h, g.dilation_w) == (1, 1)
            and (g.crop_top, g.crop_left) == (0, 0) and self.single_channel is None
        )

    def bind_single_window(self, x: np.ndarray, out: np.ndarray, stage: FloatOutputStage) -> Callable[[], None]:
        """One window: the output stage rides in a float64 einsum, as in CONV_2D's
        ``bind_folded``: the taps times ``scale`` (each product ``w * x * m * u`` an
        integer multiple of u) and one more tap, of ones, weighted by the constant, so the
        einsum gives ``t`` itself (every partial sum below 2**53 u in any order:
        ``FloatOutputStage.make``'s bound); then the stage's last passes."""
        g, channels = self.geometry, self.out_channels
        taps = g.filter_h * g.filter_w
        weights = np.empty((taps + 1, channels), np.float64)
        weights[:taps] = self.centered_taps(g.filter_view(self.inputs[1].data)).reshape(taps, channels)
        weights[:taps] *= stage.scale
        weights[taps] = stage.constant
        values = np.ones((taps + 1, channels), np.float64)  # the input, then the row of ones
        target, source = values[:taps], x.reshape(taps, channels)
        t, finish = stage.t.reshape(channels), stage.finish()
        einsum = _einsum

        def run_single_window() -> None:
            target[...] = source
            einsum("kc,kc->c", values, weights, out=t)
            finish()

        return run_single_window

    def input_copies(self, x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(target, source)`` pairs refreshing the float buffer from ``x``. With channels
        repeated (M > 1) and an integer input, ``x`` is converted once into a contiguous
        float copy, then copied M times: a little cheaper than M converting strided copies
        (int8 [1, 16, 16, 8]: M = 2 2.55 -> 2.45 us, M = 4 5.05 -> 4.53 us; [1, 32, 32, 16],
        M = 2: 15.8 -> 13.8 us)."""
        targets = self.float_input.targets
        x = self.geometry.input_view(x)  # (the part of the input the windows read)
        if len(targets) == 1 or x.dtype == self.float_type:
            return [(target, x) for target in targets]
        converted = np.empty(x.shape, self.float_type)
        return [(converted, x)] + [(target, converted) for target in targets]

    def invoke(self) -> None:
        x = self.inputs[0].data
        out = self.outputs[0].data
        if self.mode == "hybrid":
            self.invoke_hybrid(x, out)
            return
        sums = self.depthwise_sums(x)
        offset = self.acc_offset
        if offset is None:
            bias = self.bias_values if self.bias_values is not None else self.read_bias()
            offset = self.accumulator_offset(bias)
        self.quantization.requantize(sums, offset, out)

    def invoke_hybrid(self, x: np.ndarray, out: np.ndarray) -> None:
        """Asymmetric per-batch quantization; the padding holds ``q - offset = 0``."""
        batch = x.shape[0]
        quantized, scaling, offsets = asymmetric_quantize(x.reshape(batch, -1))
        quantized -= offsets.astype(np.float32)[:, None]
        sums = self.depthwise_sums(quantized.reshape(x.shape))
        result = self.result
        np.copyto(result, sums, casting="unsafe")  # float(acc)
        # acc_float *= per_channel_scale[o] * scaling_factors[b]  (the product first)
        factors = (self.filter_scales[None, :] * scaling[:, None]).astype(np.float32)  # [N, C*M]
        result *= factors[:, None, None, :]
        bias = self.bias_values if self.bias_values is not None else self.read_bias()
        result += bias
        clamp(result, self.bounds)
        out[...] = result


class SingleChannelMatmul:
    """A depthwise convolution of one input channel (``C = 1``, ``M`` output channels) is
    an ordinary convolution of ``K = KH*KW`` taps by M channels: im2col, then one BLAS
    call ``[rows, K] x [K, M]`` (exact: the same float type and bound as the taps'
    einsum), instead of repeating the channel M times for the einsum. The im2col matrix
    is column-major unless the output rows are narrow (a window row's runs are only KW
    values: the row-major copy moves them one record at a time). Measured on
    mltk_fingerprint's [1, 180, 180, 1] -> [1, 88, 88, 8] (5x5, stride 2): the bound
    step 440 us -> 215 us (row-major im2col) -> 135 us (column-major)."""

    def __init__(self, geometry: WindowGeometry, float_type, fill: float, sums: np.ndarray) -> None:
        g = self.geometry = geometry
        self.float_input = FloatInput(g, float_type, fill=fill)
        rows, depth = g.batch * g.out_h * g.out_w, g.filter_h * g.filter_w
        windows = window_view(g, self.float_input.buffer)  # [N, OH, OW, KH, KW, 1]
        if column_major(g) or g.out_w >= COLUMN_MAJOR_MIN_WIDTH:  # (runs of KW values: short)
            self.columns = np.empty((depth, rows), float_type).T
            self.column_pair = column_major_copy(g, self.float_input.buffer, self.columns)
        else:
            self.columns = np.empty((rows, depth), float_type)
            self.column_pair = record_pair(np.reshape(self.columns, windows.shape, copy=False), windows)
        self.products = sums.reshape(rows, -1)  # a view of the kernel's sums
        self.float_type = float_type

    def weights_of(self, taps: np.ndarray) -> np.ndarray:
        """``[KH, KW, M]`` centered taps (int64) -> the ``[K, M]`` weights in the float type."""
        return np.ascontiguousarray(taps.reshape(-1, taps.shape[-1]), dtype=self.float_type)

    def copies(self, x: np.ndarray) -> tuple:
        """``(target, source)`` pairs: ``x`` into the padded float buffer, then im2col."""
        x = self.geometry.input_view(x)
        return (*((target, x) for target in self.float_input.targets), self.column_pair)

    def __call__(self, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
        for target, source in self.copies(x):
            target[...] = source
        np.dot(self.columns, weights, out=self.products)
        return self.products
