"""CONV_2D on quantized tensors, bit-exact with TFLite's reference kernels.

Four arithmetics, chosen (as TFLite does) by the tensor types, not the version:

- uint8 (legacy, per tensor): ``acc = sum (w - z_w) * (x - z_in) + bias`` (int32),
  ``out = clamp(MultiplyByQuantizedMultiplier(acc, m, s) + z_out)`` with one
  multiplier from ``float(s_in * s_w) / s_out`` (``reference_ops::Conv``);
- int8 (filter per channel or per tensor, zero points 0): the same with one
  multiplier per output channel from ``double(s_in) * s_w[c] / s_out``
  (``reference_integer_ops::ConvPerChannel``);
- int16 activations x int8 filter ("16x8", zero points 0): int64 accumulators and an
  int64 bias, rescaled by the int64 ``MultiplyByQuantizedMultiplier`` (16-bit reduced
  multiplier); with ``quantized_bias_type`` INT32 the bias and the accumulators are
  int32 and the int32 rescaling applies;
- hybrid (float32 input and output, int8 filter): each batch of the input is
  quantized on the fly to int8, convolved in integers and scaled back to float:
  per tensor (``optimized_ops::HybridConv``, which TFLite also runs in its
  reference resolver): symmetric quantization, ``out = float(acc) * (s_b * s_w) +
  bias``; per channel (filter scales not all equal, or a grouped convolution):
  asymmetric quantization with offset ``o_b``, ``acc = sum w * (q - o_b)``,
  ``out = float(acc) * s_w[c] * s_b + bias`` (``reference_ops::HybridConvPerChannel``);
  then the float clamp of the fused activation.

Positions outside the input contribute nothing; grouped convolutions (input channels
= groups x filter in-channels) work for every type, as in TFLite's reference kernels.

As in TFLite, the arithmetic is chosen by the tensor types alone: a node stamped with
an older version than its types need (an under-stamped file) runs as LiteRT runs it.

How: im2col (see ``conv2d.py``) on the input converted to float and padded with its
zero point, one BLAS matmul per group against the filter (``w - z_w``) re-laid out at
prepare, in float32 when every dot product is below 2**24 (from the filter's actual
``sum |w|`` per channel, or the worst case for a non-constant filter), else in
float64 (below 2**53: always). The zero point of the input is folded into the bias
once: ``sum w (x - z) = sum w x - z sum w``, and the padding (filled with ``z``)
cancels in it. Then the requantization; once the arena is allocated (``bind``), the
float64 ``FloatOutputStage``: for small layers (few taps x output channels, see
``FOLD_LIMIT``) its per-channel scale and constant ride in a float64 matmul (weights
times the scale, one more column of ones), so the matmul gives the scaled values
themselves; larger layers keep the float32 matmul and scale after it. The bound
steps fill a column-major im2col matrix when a window's runs are short (as the float
kernel does: ``conv2d.column_major``).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._quantized_window import (
    ASYMMETRIC_ABS_MAX,
    RAW_ABS_MAX,
    SYMMETRIC_ABS_MAX,
    ConvQuantization,
    FloatInput,
    FloatOutputStage,
    accumulator_dtype,
    asymmetric_quantize,
    symmetric_quantize,
    select_conv_arithmetic,
    zero_point_of,
)
from backends.cpu.kernels._window import (
    activation_bounds,
    check_conv_window_params,
    check_shapes,
    clamp,
    conv_layout,
    node_geometry,
    record_pair,
    remember_shapes,
    require_inputs,
    window_view,
)
from backends.cpu.kernels.conv2d import IM2COL_BLOCK_BYTES, column_major, column_major_copy
from backends.cpu.quantization import is_quantized
from schema.enums import BuiltinOperator, TensorType

T = TensorType

#: When the output stage's scale and constant ride in a float64 matmul (``bind_folded``)
#: rather than a float32 matmul (when exact) then ``sums * scale + constant``: up to
#: FOLD_LIMIT filter taps x output channels with at most FOLD_DEPTH taps, or any layer of
#: at most FOLD_MACS multiply-adds. The float64 BLAS costs about twice the float32 one
#: per multiply-add (and its im2col twice the bytes) while it saves three passes over
#: the output: it pays when the taps are few or the whole product small. Measured in
#: the kernel (one thread): mltk_rock_paper_scissors [6724, 27] x [27, 16] folded 88 us,
#: scaled 103 us; mltk_fingerprint [1764, 72] x [72, 16] folded 119 us, scaled 75 us.
FOLD_LIMIT = 2048
FOLD_DEPTH = 48
FOLD_MACS = 32768


def _grouped(x, filters) -> bool:
    return len(x.shape) == 4 and len(filters.shape) == 4 and x.shape[3] != filters.shape[3]


def required_version(x, filters, params) -> int | None:
    """The least CONV_2D version whose features a quantized or hybrid node uses
    (TFLite's ``GetBuiltinOperatorVersion``), or None for other nodes."""
    if is_quantized(x):
        if x.type == T.INT16 and int(getattr(params, "quantized_bias_type", 0) or 0) != T.FLOAT32:
            return 8
        base = {T.UINT8: 1, T.INT8: 3, T.INT16: 1}[x.type]
    elif x.type == T.FLOAT32 and filters.type == T.INT8:
        scales = filters.quantization.scale.size if filters.quantization is not None else 0
        base = 5 if len(filters.shape) > 0 and scales == filters.shape[0] else 2
    else:
        return None
    return max(base, 6) if _grouped(x, filters) else base


# v1: uint8 (per tensor) here; float32 in conv2d.py. Also int16 x int8 without
#     quantized_bias_type: TFLite's rule gives it version 1 (its v4 test asks for an
#     int16 filter, which no 16x8 model has).
# v2: hybrid: float32 input, int8 filter quantized per tensor.
# v3: int8 (filter per channel or per tensor).
# v4: int16 activations; TFLite's kernel takes only int8 filters with them (16x8).
# v5: hybrid with a per-channel filter.
# v6: grouped convolution (here: of any quantized or hybrid type; float32 in conv2d.py).
# v7: int8 activations with an int4 filter (held one value an element; TFLite unpacks it to
#     int8 and runs the int8 kernel).
# v8: int16 x int8 with an explicit quantized_bias_type (INT32 or INT64 bias).
@register(BuiltinOperator.CONV_2D, 1, 8)
class QuantizedConv2D(CpuKernel):
    """CONV_2D v1-v8 on uint8, int8 (int8 or int4 filter), int16x8 and hybrid (float x int8) tensors."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        """Quantized and hybrid nodes (chosen by their types, as TFLite's kernel does)."""
        if len(node.inputs) < 2 or node.inputs[0] < 0 or node.inputs[1] < 0:
            return False
        x, filters = context.tensors[node.inputs[0]], context.tensors[node.inputs[1]]
        required = required_version(x, filters, node.params)
        return required is not None

    # -- prepare ---------------------------------------------------------------------
    def prepare(self) -> None:
        self.require_num_inputs(2, 3)
        require_inputs(self, "input", "filter")
        x, filters, output = self.inputs[0], self.inputs[1], self.outputs[0]
        bias = self.inputs[2] if len(self.inputs) == 3 else None
        self.check_types(x, filters, bias, output)
        out_channels, kh, kw, group_in, groups = conv_layout(self, x, filters, bias)
        self.check_filter_quantization(filters, out_channels)
        params = self.params
        check_conv_window_params(self, (params.dilation_h_factor, params.dilation_w_factor))
        geometry = node_geometry(self, x.shape, (kh, kw), (params.dilation_h_factor, params.dilation_w_factor))
        output.resize((*geometry.output_shape, out_channels))
        # Without the taps that only ever read the padding (a huge dilation; they add
        # (z - z) * w = 0): the buffers are then bounded by the tensors (_window.conv_cropped).
        geometry = geometry.conv_cropped()
        kh, kw = geometry.filter_h, geometry.filter_w

        self.geometry = geometry
        self.groups = groups
        self.out_channels = out_channels
        self.group_out = out_channels // groups
        self.rows = geometry.batch * geometry.out_h * geometry.out_w  # M of the matmul
        self.depth = kh * kw * group_in  # K of the matmul
        self.pointwise = geometry.is_pointwise  # (1x1, stride 1: the original test, as a geometry)
        self.blas_work = self.rows * (self.depth + 1) * out_channels  # (one matmul; +1: the folded constant)

        # Filter values as the kernel multiplies them: w - z_w (z_w only for uint8).
        self.filter_zero_point = zero_point_of(filters) if self.mode == "uint8" else 0
        input_abs_max = {
            "hybrid": SYMMETRIC_ABS_MAX,
            "hybrid_per_channel": ASYMMETRIC_ABS_MAX,
        }.get(self.mode, RAW_ABS_MAX.get(x.type))
        centered = None
        if filters.is_constant:
            centered = self.centered_filter(geometry.filter_view(filters.data))
            abs_sums = np.abs(centered).reshape(out_channels, -1).sum(axis=1)
        else:  # the worst case for any filter of this shape
            abs_sums = np.full(out_channels, self.depth * (255 if self.mode == "uint8" else 128), np.int64)
        try:
            self.float_type = accumulator_dtype(abs_sums, input_abs_max)
        except ValueError as error:
            raise self.unsupported(str(error)) from None

        fill = self.input_zero_point if self.quantized else 0.0
        self.block_rows = None
        self.float_input = FloatInput(geometry, self.float_type, fill=fill)
        source = self.float_input.buffer
        if self.pointwise:  # 1x1, stride 1: every pixel is its own window (no copy)
            self.column_matrices = source.reshape(self.rows, groups, self.depth).transpose(1, 0, 2)
        else:
            # All windows of the buffer, group-major (a view made once), and the im2col
            # buffer, so that each group's columns are one [M, K] matrix.
            windows = window_view(geometry, source)  # [N, OH, OW, KH, KW, C]
            windows = np.reshape(windows, (*geometry.output_shape, kh, kw, groups, group_in), copy=False)
            self.windows = windows.transpose(5, 0, 1, 2, 3, 4, 6)
            itemsize = np.dtype(self.float_type).itemsize
            if groups * self.rows * self.depth * itemsize > IM2COL_BLOCK_BYTES:
                # A block of output rows at a time (``convolve``): the im2col scratch stays
                # about IM2COL_BLOCK_BYTES, whatever the output's size.
                row_bytes = groups * geometry.out_w * self.depth * itemsize
                self.block_rows = max(1, min(geometry.out_h, IM2COL_BLOCK_BYTES // row_bytes))
                block_shape = (groups, self.block_rows, geometry.out_w, kh, kw, group_in)
                self.columns = np.empty(block_shape, self.float_type)
            else:
                self.columns = np.empty((groups, *geometry.output_shape, kh, kw, group_in), self.float_type)
                self.column_matrices = self.columns.reshape(groups, self.rows, self.depth)
        self.products = np.empty((groups, self.rows, self.group_out), self.float_type)

        self.weights = self.weight_matrices(None, centered) if filters.is_constant else None
        self.bias_values = None
        if bias is None or bias.is_constant:
            self.bias_values = self.read_bias()
        if self.quantized:
            self.quantization = ConvQuantization.of(
                x, filters, output, out_channels, params.fused_activation_function, wide=self.wide
            )
            self.acc_offset = None
            if filters.is_constant and self.bias_values is not None:
                self.acc_offset = self.accumulator_offset(self.weights_sums, self.bias_values)
                self.quantization.accumulator_bound = int(np.max(abs_sums * input_abs_max + np.abs(self.acc_offset)))
        else:
            self.bounds = activation_bounds(params.fused_activation_function)
            scales = np.asarray(filters.quantization.scale, np.float32)
            self.filter_scales = np.broadcast_to(scales, (out_channels,)).astype(np.float32)
            self.filter_scale = np.float32(scales[0])
            self.result = np.empty((self.rows, out_channels), np.float32)
        remember_shapes(self)

    def check_types(self, x, filters, bias, output) -> None:
        """Pick the arithmetic from the types (as TFLite does) and check the rest."""
        self.mode, self.wide = select_conv_arithmetic(self, x, filters, bias, output)
        self.quantized = self.mode != "hybrid"
        if self.mode == "hybrid":
            scales = np.asarray(filters.quantization.scale, np.float32)
            in_channels, group_in = int(x.shape[3]), int(filters.shape[3])
            grouped = group_in > 0 and in_channels != group_in
            distinct = scales.size > 1 and bool(np.any(scales != scales[0]))
            # TFLite: per-channel path when the scales differ, and for every grouped conv.
            self.mode = "hybrid_per_channel" if distinct or grouped else "hybrid"
            if grouped and scales.size != int(filters.shape[0]):
                # TFLite refuses it too (its grouped hybrid kernel reads one scale per channel).
                raise self.unsupported(
                    f"a grouped hybrid convolution needs one filter scale per output channel "
                    f"({filters.shape[0]}), got {scales.size}"
                )

    def check_filter_quantization(self, filters, out_channels: int) -> None:
        q = filters.quantization
        if q.scale.size not in (1, out_channels):
            raise self.unsupported(f"the filter has {q.scale.size} scales; expected 1 or {out_channels}")
        if q.scale.size > 1:
            if self.mode == "uint8":
                raise self.unsupported("a uint8 filter must be quantized per tensor (TFLite: per channel is int8/int16)")
            if int(q.quantized_dimension) != 0:
                raise self.unsupported(
                    f"a per-channel filter must be quantized along dimension 0, not {q.quantized_dimension}"
                )

    @property
    def input_zero_point(self) -> int:
        return zero_point_of(self.inputs[0]) if self.quantized else 0

    def centered_filter(self, filters: np.ndarray) -> np.ndarray:
        return filters.astype(np.int64) - self.filter_zero_point

    def weight_matrices(self, filters: np.ndarray | None, centered: np.ndarray | None = None) -> np.ndarray:
        """OHWI filter -> ``[groups, KH*KW*I, O/groups]`` (float), rows in the columns'
        (ky, kx, i) order; also keeps ``sum w`` per output channel (int64). ``centered``:
        ``centered_filter(filters)`` when the caller has it already."""
        if centered is None:
            centered = self.centered_filter(filters)
        out_channels, kh, kw, group_in = centered.shape
        self.weights_sums = centered.reshape(out_channels, -1).sum(axis=1)
        per_group = centered.reshape(self.groups, self.group_out, kh, kw, group_in)
        matrices = per_group.transpose(0, 2, 3, 4, 1).reshape(self.groups, self.depth, self.group_out)
        return np.ascontiguousarray(matrices, dtype=self.float_type)

    def read_bias(self) -> np.ndarray:
        bias = self.inputs[2] if len(self.inputs) == 3 else None
        dtype = np.int64 if self.quantized else np.float32
        if bias is None:
            return np.zeros(self.out_channels, dtype)
        return bias.data.reshape(-1).astype(dtype)

    def accumulator_offset(self, weight_sums: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """What every accumulator gets besides ``sum w * x``: ``bias - z_in * sum w``."""
        return bias - self.input_zero_point * weight_sums

    # -- invoke ----------------------------------------------------------------------
    def convolve(self, x: np.ndarray) -> np.ndarray:
        """``sum w * x`` for every output, ``[M, O]`` (exact integers in a float type)."""
        weights = self.weights
        if weights is None:
            weights = self.weight_matrices(self.geometry.filter_view(self.inputs[1].data))
        self.float_input(self.geometry.input_view(x))
        if self.block_rows is not None:
            self.convolve_blocks(weights)
        else:
            if not self.pointwise:
                self.columns[...] = self.windows
            columns = self.column_matrices
            if self.groups == 1:
                np.matmul(columns[0], weights[0], out=self.products[0])
            else:
                np.matmul(columns, weights, out=self.products)
        if self.groups == 1:
            return self.products[0]
        return self.products.transpose(1, 0, 2).reshape(self.rows, self.out_channels)

    def convolve_blocks(self, weights: np.ndarray) -> None:
        """``products`` a block of ``block_rows`` output rows of one image at a time: the
        block's windows (of the padded float input) into the block's im2col matrix, then
        one matmul per group into the block's rows of ``products``."""
        g, rows, groups = self.geometry, self.block_rows, self.groups
        for n in range(g.batch):
            for y0 in range(0, g.out_h, rows):
                count = min(rows, g.out_h - y0)
                columns = self.columns[:, :count]
                columns[...] = self.windows[:, n, y0 : y0 + count]
                first = (n * g.out_h + y0) * g.out_w
                products = self.products[:, first : first + count * g.out_w]
                np.matmul(columns.reshape(groups, count * g.out_w, self.depth), weights, out=products)

    def bind(self) -> Callable[[], None]:
        """Once the arena is allocated: for a quantized node with constant filter and
        bias and a single group, a closure over this allocation's input and output that
        runs the float64 output stage (``FloatOutputStage``); else ``invoke``."""
        check_shapes(self)
        x, output = self.inputs[0], self.outputs[0]
        if not self.quantized or self.acc_offset is None or not self.buffers_are_fixed():
            return self.invoke
        out = output.data.reshape(self.rows, self.out_channels)
        stage = None
        if self.groups == 1 and self.block_rows is None:
            stage = FloatOutputStage.make(self.quantization, self.acc_offset, out)
        if stage is None:
            return self.bind_general(x.data, out)
        self.output_stage = stage  # (which path: tests and profiling read it)
        if self.float_type == np.float64 or self.folds():
            return self.bind_folded(x.data, stage)
        return self.bind_scaled(x.data, stage)

    def bind_general(self, x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
        """Grouped, im2col by blocks of rows, or an output stage the float64 one refuses
        (left shifts, int16's int64 accumulators, single rounding), bound: the sums
        (``convolve``), then ``ConvQuantization.requantize`` in place, on this
        allocation's buffers with the offset prepared."""
        convolve, requantize, offset = self.convolve, self.quantization.requantize, self.acc_offset

        def run_general() -> None:
            requantize(convolve(x), offset, out)

        return run_general

    def folds(self) -> bool:
        """Whether the output stage rides in a float64 matmul (see ``FOLD_LIMIT``)."""
        taps_by_channels = self.depth * self.out_channels
        return (taps_by_channels <= FOLD_LIMIT and self.depth <= FOLD_DEPTH) or self.rows * taps_by_channels <= FOLD_MACS

    def bind_scaled(self, x: np.ndarray, stage: FloatOutputStage) -> Callable[[], None]:
        """The prepare-time path (float32 matmul when exact) then ``t = sums * scale +
        constant`` and the rest of the stage."""
        weights, sums, columns = self.weights[0], self.products[0], self.column_matrices[0]
        if not self.pointwise and column_major(self.geometry):
            columns = np.empty((self.depth, self.rows), self.float_type).T
        copies = self.column_copies(x, self.float_type, columns, self.float_input)
        requantize = stage.from_sums(sums)
        dot = np.dot

        def run() -> None:
            for target, source in copies:
                target[...] = source
            dot(columns, weights, out=sums)
            requantize()

        return run

    def bind_folded(self, x: np.ndarray, stage: FloatOutputStage) -> Callable[[], None]:
        """One float64 matmul computes ``t`` itself: the weights times ``scale`` (each
        product ``w * m * u`` an integer multiple of u), one more column of ones in the
        columns and the constant as one more row of the weights (``FloatOutputStage``
        bounds every partial sum, in any order, below 2**53 u)."""
        g, depth = self.geometry, self.depth
        weights = np.empty((depth + 1, self.out_channels), np.float64)
        weights[:depth] = self.weights[0]  # exact integers (float32 or float64)
        weights[:depth] *= stage.scale
        weights[depth] = stage.constant
        if not self.pointwise and column_major(g):
            columns = np.ones((depth + 1, self.rows), np.float64).T
        else:
            columns = np.ones((self.rows, depth + 1), np.float64)
        if self.pointwise:  # the input itself, in float64 with a channel of ones
            copies = ((columns.reshape(*g.output_shape, depth + 1)[..., :depth], x),)
        else:
            copies = self.column_copies(x, np.float64, columns[:, :depth])
        t, finish = stage.t, stage.finish()
        dot = np.dot

        def run() -> None:
            for target, source in copies:
                target[...] = source
            dot(columns, weights, out=t)
            finish()

        return run

    def column_copies(self, x: np.ndarray, dtype, matrix: np.ndarray, float_input: FloatInput | None = None) -> tuple:
        """``(target, source)`` pairs that fill ``matrix`` (``[M, K]``, ``dtype``, row- or
        column-major: see ``conv2d.column_major``) from ``x``: for a pointwise node the
        input converted in place; else the padded input then im2col."""
        g = self.geometry
        x = g.input_view(x)  # (the part of the input the windows read)
        if self.pointwise:
            return tuple((target, x) for target in float_input.targets)
        if float_input is None:
            float_input = FloatInput(g, dtype, fill=self.input_zero_point)
        copies = tuple((target, x) for target in float_input.targets)
        if matrix.strides[0] == matrix.itemsize:  # column-major
            return (*copies, column_major_copy(g, float_input.buffer, matrix))
        return (*copies, self.im2col_pair(float_input.buffer, matrix))

    def im2col_pair(self, buffer: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(target, source)``: ``target[...] = source`` copies every window of the padded
        ``buffer`` into ``matrix`` ([M, K] rows, one group), as runs of a window row (KW*C
        values) when dilation_w is 1, else of one pixel's C values (``record_pair``)."""
        g = self.geometry
        windows = window_view(g, buffer)  # [N, OH, OW, KH, KW, C]
        if g.dilation_w == 1:
            n, oh, ow, kh, kw, c = windows.shape
            bs, rs, ps, cs = buffer.strides
            windows = as_strided(
                buffer, (n, oh, ow, kh, kw * c), (bs, g.stride_h * rs, g.stride_w * ps, g.dilation_h * rs, cs),
                writeable=False,
            )
        return record_pair(np.reshape(matrix, windows.shape, copy=False), windows)

    def invoke(self) -> None:
        x = self.inputs[0].data
        out = self.outputs[0].data
        if self.mode == "hybrid":
            self.invoke_hybrid(x, out)
        elif self.mode == "hybrid_per_channel":
            self.invoke_hybrid_per_channel(x, out)
        else:
            sums = self.convolve(x)
            offset = self.acc_offset
            if offset is None:
                bias = self.bias_values if self.bias_values is not None else self.read_bias()
                offset = self.accumulator_offset(self.weights_sums, bias)
            self.quantization.requantize(sums, offset, out.reshape(self.rows, self.out_channels))

    def invoke_hybrid(self, x: np.ndarray, out: np.ndarray) -> None:
        """Per-tensor hybrid: symmetric per-batch quantization, one scale per batch."""
        batch = x.shape[0]
        quantized, scaling = symmetric_quantize(x.reshape(batch, -1))
        scaling = (scaling * self.filter_scale).astype(np.float32)  # scaling_factors[b] *= s_w
        sums = self.convolve(quantized.reshape(x.shape))
        result = self.result
        np.copyto(result, sums, casting="unsafe")  # float(acc)
        per_batch = result.reshape(batch, -1, self.out_channels)
        per_batch *= scaling[:, None, None]
        self.finish_float(result, out)

    def invoke_hybrid_per_channel(self, x: np.ndarray, out: np.ndarray) -> None:
        """Per-channel hybrid: asymmetric per-batch quantization; positions outside the
        input contribute 0, so the padding holds ``q - offset = 0``."""
        batch = x.shape[0]
        quantized, scaling, offsets = asymmetric_quantize(x.reshape(batch, -1))
        quantized -= offsets.astype(np.float32)[:, None]
        sums = self.convolve(quantized.reshape(x.shape))
        result = self.result
        np.copyto(result, sums, casting="unsafe")  # float(acc)
        result *= self.filter_scales  # acc * per_channel_scale[c] ...
        per_batch = result.reshape(batch, -1, self.out_channels)
        per_batch *= scaling[:, None, None]  # ... * scaling_factor[b]
        self.finish_float(result, out)

    def finish_float(self, result: np.ndarray, out: np.ndarray) -> None:
        bias = self.bias_values if self.bias_values is not None else self.read_bias()
        result += bias
        clamp(result, self.bounds)
        out.reshape(self.rows, self.out_channels)[...] = result
