"""Quantized SOFTMAX (uint8 v1, int8 v2, int16 v3) and LOG_SOFTMAX (uint8 v1, int8 v2),
bit-exact with TFLite's reference kernels (``kernels/activations.cc``, ``SoftmaxPrepare``
and ``LogSoftmaxPrepare`` with ``kReference``; ``internal/reference/softmax.h``,
``reference/log_softmax.h``, ``reference/integer_ops/log_softmax.h``).

Per row of the last axis, with ``d = q - max(row)`` (raw values, ``d <= 0``):

- SOFTMAX, 8-bit inputs (gemmlowp fixed point; the output's scale and zero point are
  not read: the result is 1/256 steps from the type's minimum, 1/65536 for an int16
  output)::

      e(d)  = exp_on_negative_values(M(d, m, s)) in Q0.31     for d >= diff_min, else 0
      sum   = sum over the row of e(d) rescaled to Q12.19
      1/sum = GetReciprocal(sum) = (Q0.31 scale, bits over unit n)
      out   = clamp(RDBPOT(scale * e(d), n + 31 - bits(out)) + min(out))

  where ``M(d, m, s)`` multiplies by ``beta * s_in * 2**26`` (``PreprocessSoftmaxScaling``,
  in double) and ``diff_min = -floor(31 * 2**26 / 2**s)`` (``CalculateInputRadius``).
- SOFTMAX int16 (LUT-based, ``SoftmaxInt16``): ``d`` is rescaled so that [-65535, 0]
  spans [-10, 0], looked up in a 513-entry exp table (interpolated), the row sum is
  normalized and looked up in a 1/(1 + x) table, and each exp is multiplied by it.
- LOG_SOFTMAX (uint8 zero point 255, int8 127, scale 16/256): the same sum of exps, its
  fixed-point log ``L`` (``log_x_for_x_greater_than_or_equal_to_1``), then
  ``out = clamp(RDBPOT(M(d) - L, 22) + zero_point)`` for ``d`` above a per-row threshold,
  the type's minimum below it.

How: ``d`` takes only 256 values for 8-bit inputs (65536 for int16), so everything that
depends on ``d`` alone (the rescaled difference, its exp) is tabulated at prepare; invoke
gathers from the tables and does the per-row normalization vectorized over rows. A small
8-bit SOFTMAX with an 8-bit output (up to 32 values, e.g. a classifier's head) runs on
Python ints and bytes instead, through a function bound once per allocation
(``_bind_bytes``): ``bytes.translate`` turns the raw input into table indices, and the
output bytes are written into the arena at once.

The GPU delegate's quantized SOFTMAX (``backends/gpu/ops/softmax.py``) takes
this kernel's Prepare (``configure``: the checks and the tables) and its per-row
reciprocal (:func:`row_reciprocals`, written against the array namespace), and does the
same gathers, row sums and final rescaling on device arrays.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels import _fixed_point as fp
from backends.cpu.quantization import SINGLE_ROUNDING, is_quantized, multiply_by_quantized_multiplier, quantize_multiplier
from delegate_sdk.tensor import Allocation
from schema.enums import BuiltinOperator, TensorType

T = TensorType

SCALED_DIFF_INTEGER_BITS = 5  # kScaledDiffIntegerBits: exp's input is Q5.26
ACCUMULATION_INTEGER_BITS = 12  # kAccumulationIntegerBits: the sum of exps is Q12.19
INT32_MAX = (1 << 31) - 1

#: ``bytes.translate`` tables. int8 bytes to order-preserving codes ``x + 128`` (uint8
#: bytes are their own codes); and, per row maximum code ``m``, a code ``c`` to the exp
#: tables' index ``(c - m) mod 256`` (``d = c - m`` in [-255, 0], negative from the end).
_INT8_CODES = bytes(b ^ 0x80 for b in range(256))
_IDENTITY = bytes(range(256))
_DIFFERENCE_INDEX = [_IDENTITY[-m:] + _IDENTITY[:-m] if m else _IDENTITY for m in range(256)]


def tensor_scale_zero_point(tensor) -> tuple[float, int]:
    """TFLite's per-tensor ``params``: (scale as the float32 value in a Python float, zero point)."""
    q = tensor.quantization
    return float(np.float32(q.scale[0])), int(q.zero_point[0]) if q.zero_point is not None and q.zero_point.size else 0


def preprocess_softmax_scaling(kernel: CpuKernel, beta: float, input_scale: float) -> tuple[int, int]:
    """TFLite's ``PreprocessSoftmaxScaling(beta, input_scale, 5)``: the multiplier of
    ``beta * input_scale`` onto Q5.26, in double, capped (``QuantizeMultiplierGreaterThanOne``)."""
    max_real_multiplier = float((1 << 30) - 1) if SINGLE_ROUNDING else float((1 << 31) - 1)
    real = min(beta * input_scale * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), max_real_multiplier)
    if not real > 1.0:
        raise kernel.unsupported(
            f"beta * input scale * 2^26 is {real!r}; TFLite's kernel needs it above 1 "
            "(QuantizeMultiplierGreaterThanOne aborts otherwise)"
        )
    return quantize_multiplier(real)


def row_reciprocals(sums, exponent_offset: int):
    """Per row, from the sum of exps (Q12.19, int32 values in int64 arrays of any
    namespace), TFLite's ``GetReciprocal``: (1/sum as a Q0.31 scale, the output exponent
    ``num_bits_over_unit + exponent_offset``). Each output is then
    ``RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(scale, exp), exponent) + min``,
    clamped to the type's maximum. TFLite aborts where the exponent leaves [0, 31]."""
    shifted_scale, num_bits_over_unit = fp.get_reciprocal(sums, ACCUMULATION_INTEGER_BITS)
    return shifted_scale, num_bits_over_unit + exponent_offset


def calculate_input_radius(integer_bits: int, left_shift: int, total_signed_bits: int = 31) -> int:
    """TFLite's ``CalculateInputRadius`` (double arithmetic, floored)."""
    max_input_rescaled = 1.0 * ((1 << integer_bits) - 1) * (1 << (total_signed_bits - integer_bits)) / (1 << left_shift)
    return int(math.floor(max_input_rescaled))


class _QuantizedLastAxis(CpuKernel):
    """Shared: quantized input; rows along the last axis; the difference tables."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        index = node.inputs[0] if len(node.inputs) else -1
        return index >= 0 and is_quantized(context.tensors[index])

    #: the first version of the op for each input type (TFLite's op_version.cc)
    MIN_VERSION: dict[int, int] = {}

    def check_io(self, allowed: dict[int, tuple[int, ...]]) -> None:
        self.require_num_inputs(1)
        x, y = self.inputs[0], self.outputs[0]
        self.require_types(x, *allowed)
        self.require_types(y, *allowed[x.type], role="output")
        for tensor, role in ((x, "input"), (y, "output")):
            if not is_quantized(tensor):
                raise self.unsupported(f"the {role} {tensor.name!r} ({tensor.type_name}) has no quantization parameters")
            if tensor.quantization.is_per_channel:
                raise self.unsupported(f"the {role} {tensor.name!r} is quantized per channel; TFLite needs one scale")
        if len(x.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        self.in_min = int(np.iinfo(x.dtype).min)
        self.in_range = int(np.iinfo(x.dtype).max) - self.in_min  # the most negative difference
        self.out_info = np.iinfo(y.dtype)

    def rows(self):
        """The input as int32 rows, each row's max, and the table index ``d + range``."""
        x = self.inputs[0].data
        if x.size == 0:
            return x.reshape(0, 1)
        rows = x.reshape(-1, x.shape[-1]).astype(np.int32)
        row_max = rows.max(axis=1, keepdims=True)
        index = rows - row_max
        index += self.in_range
        return index


def _nothing() -> None:
    """The bound step of an empty tensor."""


@register(BuiltinOperator.SOFTMAX, 1, 3)  # v1: uint8 (float32 is softmax.py's); v2: int8; v3: int16
class QuantizedSoftmax(_QuantizedLastAxis):
    """SOFTMAX v1 (uint8), v2 (int8), v3 (int16): uint8 -> uint8/int16, int8 -> int8/int16, int16 -> int16."""

    MIN_VERSION = {T.UINT8: 1, T.INT8: 2, T.INT16: 3}

    def prepare(self) -> None:
        self.configure()
        self.outputs[0].resize(self.inputs[0].shape)

    def configure(self) -> None:
        """The checks and the tables, with no effect on the tensors: also what another
        backend calls to reuse them (raises ``UnsupportedKernelError``)."""
        self.check_io({T.UINT8: (T.UINT8, T.INT16), T.INT8: (T.INT8, T.INT16), T.INT16: (T.INT16,)})
        x, y = self.inputs[0], self.outputs[0]
        input_scale, input_zero_point = tensor_scale_zero_point(x)
        output_scale, output_zero_point = tensor_scale_zero_point(y)
        beta = float(np.float32(self.params.beta if self.params is not None else 0.0))
        # SoftmaxPrepare's checks on the output (the uint8 output is not checked).
        if x.type == T.INT8 and y.type == T.INT8:
            self.require_output_params(output_zero_point, -128, output_scale, 1 / 256)
        elif x.type == T.INT16:
            self.require_output_params(output_zero_point, 0, output_scale, 1 / 32768)
        if x.type == T.INT16:
            self.prepare_int16(input_scale, input_zero_point, beta)
        else:
            self.prepare_8bit(input_scale, beta)

    def require_output_params(self, zero_point: int, want_zero_point: int, scale: float, want_scale: float) -> None:
        want32 = np.float32(want_scale)
        if zero_point != want_zero_point or not abs(np.float32(scale) - want32) <= np.float32(0.001) * want32:
            raise self.unsupported(
                f"the output {self.outputs[0].name!r} has scale {scale!r} and zero point {zero_point}; "
                f"TFLite's kernel needs scale {want_scale!r} (within 0.1%) and zero point {want_zero_point}"
            )

    def prepare_8bit(self, input_scale: float, beta: float) -> None:
        multiplier, left_shift = preprocess_softmax_scaling(self, beta, input_scale)
        diff_min = -calculate_input_radius(SCALED_DIFF_INTEGER_BITS, left_shift)
        diffs = np.arange(-self.in_range, 1, dtype=np.int64)
        rescaled = multiply_by_quantized_multiplier(diffs, multiplier, left_shift)
        exp = fp.exp_on_negative_values(rescaled, SCALED_DIFF_INTEGER_BITS)
        #: exp(d) in Q0.31 per difference (0 below diff_min: the output is then the minimum).
        self.exp_table = np.where(diffs >= diff_min, exp, 0)
        #: the same in Q12.19, what the row sum adds
        self.exp_accumulated = fp.rescale(self.exp_table, 0, ACCUMULATION_INTEGER_BITS)
        self.exponent_offset = 31 - 8 * self.outputs[0].dtype.itemsize
        self._source = None
        self.invoke = self.invoke_8bit

    def bind(self) -> Callable[[], None]:
        x, y = self.inputs[0], self.outputs[0]
        static = x.allocation in (Allocation.ARENA, Allocation.CONSTANT, Allocation.PERSISTENT)
        if self.invoke != self.invoke_8bit or not static or y.allocation is not Allocation.ARENA:
            return self.invoke
        self._bind_8bit(x.data)
        if self._empty:
            return _nothing
        if self._small:
            return self._bind_bytes(x.data, y.data) or self._invoke_small
        return self._invoke_rows

    def invoke_8bit(self) -> None:
        x = self.inputs[0].data
        if x is not self._source:
            self._bind_8bit(x)
        if self._empty:
            return
        if self._small:
            self._invoke_small()
            return
        self._invoke_rows()

    def _invoke_rows(self) -> None:
        """The rows vectorized in numpy (int64), through views bound by ``_bind_8bit``."""
        rows, row_max, index, exp, accumulated = self._rows, self._row_max, self._index, self._exp, self._accumulated
        np.maximum.reduce(rows, axis=1, keepdims=True, out=row_max)
        np.subtract(rows, row_max, out=index, dtype=np.int16)  # d in [-range, 0]
        np.take(self._exp_by_difference, index, out=exp)  # negative d: index from the end
        np.take(self._accumulated_by_difference, index, out=accumulated)
        sums = np.add.reduce(accumulated, axis=1, out=self._sums)
        if self._sum_may_wrap:
            sums = fp.wrap32(sums)
        if sums.size <= 8:
            scale, shift, constant = self._row_factors(sums.tolist())
        else:
            scale, shift, constant = self._row_factor_arrays(sums)
        # RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(scale, exp), exponent). Both
        # factors are >= 0 (no saturation, halves round up), and the two roundings fold
        # into one shift: floor((p + 2^30 + 2^(30 + k)) / 2^(31 + k)), exact in int64
        # (p < 2^62); the type's minimum joins the constant where it fits.
        np.multiply(exp, scale, out=exp)
        np.add(exp, constant, out=exp)
        np.right_shift(exp, shift, out=exp)
        if self._separate_minimum:
            np.add(exp, self.out_info.min, out=exp)
        np.minimum(exp, self._out_max, out=exp)
        np.copyto(self._out_rows, exp, casting="unsafe")

    def _invoke_small(self) -> None:
        """The same arithmetic on Python ints, for a few values (cheaper than ~10 numpy
        calls): per row, exps from the tables, the sum, the memoized reciprocal."""
        exp_of, accumulated_of = self._exp_list, self._accumulated_list
        top, wrap = self._out_max, self._sum_may_wrap
        minimum = int(self.out_info.min)
        for row_index, row in enumerate(self._rows.tolist()):
            row_max = max(row)
            exps = [exp_of[v - row_max] for v in row]
            total = sum([accumulated_of[v - row_max] for v in row])
            if wrap:
                total = ((total + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
            scale, shift, constant = self._row_factor(total)
            if constant is None:
                half = (1 << 30) + (1 << (shift - 1))
                self._out_rows[row_index] = [min(((e * scale + half) >> shift) + minimum, top) for e in exps]
            else:
                self._out_rows[row_index] = [min((e * scale + constant) >> shift, top) for e in exps]

    def _bind_bytes(self, x: np.ndarray, y: np.ndarray) -> Callable[[], None] | None:
        """The small path on bytes for fixed arrays ``x`` and ``y`` (8-bit, contiguous),
        else None. Per row: the codes' maximum, the exp indices by one ``translate``,
        the sum of exps, the memoized row factors, then per value (Python ints; the
        product reaches 2^62)::

            out = min(((e * scale + 2^30 + 2^(shift - 1)) >> shift) + min(out), max(out))

        the two roundings of RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(scale, e),
        exponent) folded into one shift as in ``_invoke_rows``; the last two steps are one
        lookup in ``to_byte``, which covers every value the row can reach (``e`` is at
        most exp(0) = INT32_MAX, so the row's largest result is that of INT32_MAX)."""
        if y.dtype.itemsize != 1 or not (x.flags.c_contiguous and y.flags.c_contiguous):
            return None
        n, size = x.shape[-1], x.size
        codes_of = _INT8_CODES if x.dtype == np.int8 else None
        exp_of, accumulated_of = self._exp_list, self._accumulated_list
        wrap, factors, row_factor = self._sum_may_wrap, {}, self._row_factor
        minimum, top = int(self.out_info.min), int(self.out_info.max)
        to_byte = [min(o + minimum, top) & 0xFF for o in range(257)]
        out_bytes = memoryview(y).cast("B")
        index_tables = _DIFFERENCE_INDEX

        def factor(total: int) -> tuple[int, int, int]:
            """(scale, rounding constant, shift) of a row's sum (memoized); the constant
            leaves out the output's minimum, which ``to_byte`` adds."""
            scale, shift, _ = row_factor(total)
            constant = (1 << 30) + (1 << (shift - 1))
            # The row's maximum alone adds exp(0) = 2^19 in Q12.19, and for sums from 2^19
            # up the largest result is 256: this extension is a safeguard that never runs.
            largest = (INT32_MAX * scale + constant) >> shift
            to_byte.extend(min(o + minimum, top) & 0xFF for o in range(len(to_byte), largest + 1))
            if len(factors) < 4096:
                factors[total] = scale, constant, shift
            return scale, constant, shift

        def run_one_row() -> None:
            row = x.tobytes()
            if codes_of is not None:
                row = row.translate(codes_of)
            index = row.translate(index_tables[max(row)])
            total = sum(map(accumulated_of.__getitem__, index))  # below 2^31: no wrap (n <= 32)
            scale, constant, shift = factors.get(total) or factor(total)
            out_bytes[:] = bytes([to_byte[(exp_of[k] * scale + constant) >> shift] for k in index])

        def run() -> None:
            codes = x.tobytes()
            if codes_of is not None:
                codes = codes.translate(codes_of)
            pieces = []
            for start in range(0, size, n):
                row = codes[start : start + n]
                index = row.translate(index_tables[max(row)])
                total = sum(map(accumulated_of.__getitem__, index))
                if wrap:
                    total = ((total + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
                scale, constant, shift = factors.get(total) or factor(total)
                pieces.append(bytes([to_byte[(exp_of[k] * scale + constant) >> shift] for k in index]))
            out_bytes[:] = b"".join(pieces)

        return run_one_row if size == n and not wrap else run

    def _bind_8bit(self, x: np.ndarray) -> None:
        """Views and buffers for the arena arrays (fixed between allocations)."""
        self._source = x
        self._empty = x.size == 0
        if self._empty:
            return
        n = x.shape[-1]
        rows = x.reshape(-1, n)
        self._rows = rows
        self._out_rows = self.outputs[0].data.reshape(-1, n)
        count = rows.shape[0]
        self._row_max = np.empty((count, 1), x.dtype)
        self._index = np.empty(rows.shape, np.int16)
        self._exp = np.empty(rows.shape, np.int64)
        self._accumulated = np.empty(rows.shape, np.int64)
        self._sums = np.empty(count, np.int64)
        # d in [-range, 0] indexes from the end for d < 0: table[d mod (range + 1)].
        self._exp_by_difference = np.roll(self.exp_table, 1)
        self._accumulated_by_difference = np.roll(self.exp_accumulated, 1)
        self._sum_may_wrap = int(self.exp_accumulated.max(initial=0)) * n >= (1 << 31)
        self._out_max = int(self.out_info.max)
        self._reciprocals: dict[int, tuple[int, int, int]] = {}
        self._separate_minimum = False
        self._small = x.size <= 32
        self._exp_list = self._exp_by_difference.tolist()  # index d < 0 from the end
        self._accumulated_list = self._accumulated_by_difference.tolist()

    def _row_factor(self, total: int) -> tuple[int, int, int]:
        """(scale, 31 + exponent, rounding constant) of one row's sum of exps (memoized:
        a pure function of the sum)."""
        found = self._reciprocals.get(total)
        if found is not None:
            return found
        shifted_scale, exponent = row_reciprocals(int(total), self.exponent_offset)
        exponent = int(exponent)
        if exponent < 0 or exponent > 31:
            raise RuntimeError(
                f"{self.op_name}: the sum of exps of a row is too large (TFLite aborts here: the output "
                "exponent leaves [0, 31] once the sum reaches 2^28 in Q12.19, e.g. 512 equal maxima)"
            )
        shift = 31 + exponent
        constant = (1 << 30) + (1 << (30 + exponent))
        minimum = int(self.out_info.min)
        if -minimum < (1 << (62 - shift)):  # minimum << shift stays within int64
            constant += minimum << shift
        else:
            constant = None
        found = (int(shifted_scale), shift, constant)
        if len(self._reciprocals) < 4096:
            self._reciprocals[total] = found
        return found

    def _row_factors(self, sums: list[int]):
        factors = [self._row_factor(total) for total in sums]
        self._separate_minimum = any(f[2] is None for f in factors)
        if self._separate_minimum:
            factors = [(f[0], f[1], (1 << 30) + (1 << (f[1] - 1))) for f in factors]
        if len(factors) == 1:
            return factors[0]
        scale, shift, constant = zip(*factors)
        column = (len(factors), 1)
        return (np.array(scale, np.int64).reshape(column), np.array(shift, np.int64).reshape(column),
                np.array(constant, np.int64).reshape(column))

    def _row_factor_arrays(self, sums: np.ndarray):
        sums = sums.reshape(-1, 1)
        shifted_scale, exponent = row_reciprocals(sums, self.exponent_offset)
        if np.any((exponent < 0) | (exponent > 31)):
            raise RuntimeError(
                f"{self.op_name}: the sum of exps of a row is too large (TFLite aborts here: the output "
                "exponent leaves [0, 31] once the sum reaches 2^28 in Q12.19, e.g. 512 equal maxima)"
            )
        self._separate_minimum = True
        constant = (1 << 30) + (np.int64(1) << (30 + exponent))
        return shifted_scale, 31 + exponent, constant

    def prepare_int16(self, input_scale: float, input_zero_point: int, beta: float) -> None:
        if input_zero_point != 0:
            raise self.unsupported(f"the int16 input has zero point {input_zero_point}; TFLite's kernel needs 0")
        if not 1 <= len(self.inputs[0].shape) <= 4:
            raise self.unsupported("int16 SOFTMAX takes 1D to 4D tensors (as TFLite's kernel)")
        value_range = 32767 - (-32768)
        # exp on [-10, 0] and 1 / (1 + x) on [0, 1], both onto [-1, 1]; in double.
        exp_lut = fp.lut_populate_int16(math.exp, 10.0 / value_range, 32767, 2.0 / value_range, 0)
        self.one_over_one_plus_x_lut = fp.lut_populate_int16(
            lambda v: 1.0 / (1.0 + v), 1.0 / value_range, -32768, 2.0 / value_range, 0
        )
        # input->params.scale * params->beta is float32 math, then divided in double.
        rescale = float(np.float32(input_scale) * np.float32(beta)) / (10.0 / 65535.0)
        multiplier, shift = quantize_multiplier(rescale)
        diffs = np.arange(-value_range, 1, dtype=np.int64)
        scaled = multiply_by_quantized_multiplier(diffs, multiplier, shift)
        symmetric = np.clip(scaled + 32767, -32768, 32767)
        #: exp(d) in Q0.15 per difference d in [-65535, 0] (SoftMaxCalculateExp)
        self.exp_table = fp.lut_lookup_int16(symmetric, exp_lut)
        self.invoke = self.invoke_int16

    def invoke_int16(self) -> None:
        index = self.rows()
        if index.size == 0:
            return
        exp = self.exp_table[index]
        sum_of_exps = fp.wrap32(exp.sum(axis=1, keepdims=True))
        headroom_plus_one = fp.count_leading_zeros32(sum_of_exps)
        shifted_sum = ((sum_of_exps << (headroom_plus_one - 1)) + (1 << 13)) >> 14
        symmetric = np.clip(shifted_sum - ((1 << 15) + (1 << 16)), -32768, 32767)
        reciprocal = fp.lut_lookup_int16(symmetric, self.one_over_one_plus_x_lut)
        right_shift = 31 - headroom_plus_one
        result = fp.wrap32((exp * reciprocal + (np.int64(1) << (right_shift - 1))) >> right_shift)
        np.clip(result, 0, 32767, out=result)
        self.outputs[0].data[...] = result.reshape(self.outputs[0].shape)


@register(BuiltinOperator.LOG_SOFTMAX, 1, 2)  # v1: uint8 (float32 is softmax.py's); v2: int8
class QuantizedLogSoftmax(_QuantizedLastAxis):
    """LOG_SOFTMAX v1 (uint8) and v2 (int8): output scale 16/256, zero point 255 / 127."""

    MIN_VERSION = {T.UINT8: 1, T.INT8: 2}

    def prepare(self) -> None:
        self.check_io({T.UINT8: (T.UINT8,), T.INT8: (T.INT8,)})
        self.outputs[0].resize(self.inputs[0].shape)
        x, y = self.inputs[0], self.outputs[0]
        input_scale, _ = tensor_scale_zero_point(x)
        output_scale, output_zero_point = tensor_scale_zero_point(y)
        self.zero_point = 255 if x.type == T.UINT8 else 127
        if output_scale != 16.0 / 256 or output_zero_point != self.zero_point:
            raise self.unsupported(
                f"the output {y.name!r} has scale {output_scale!r} and zero point {output_zero_point}; "
                f"TFLite's kernel needs scale 0.0625 and zero point {self.zero_point}"
            )
        # PreprocessLogSoftmaxScalingExp(beta = 1.0, input_scale, 5)
        multiplier, left_shift = preprocess_softmax_scaling(self, 1.0, input_scale)
        real_reverse = (1 << (31 - left_shift)) / float(multiplier)
        if not 0.0 <= real_reverse < 1.0:
            raise self.unsupported(
                f"the reverse scaling factor is {real_reverse!r}; TFLite's kernel needs it in [0, 1) "
                "(QuantizeMultiplierSmallerThanOneExp aborts otherwise)"
            )
        self.reverse_multiplier, self.reverse_shift = quantize_multiplier(real_reverse)
        self.diff_min = -calculate_input_radius(SCALED_DIFF_INTEGER_BITS, left_shift)
        diffs = np.arange(-self.in_range, 1, dtype=np.int64)
        #: d in Q5.26 per difference (wraps below diff_min, where it is never used)
        self.diff_q5 = multiply_by_quantized_multiplier(diffs, multiplier, left_shift)
        exp = fp.exp_on_negative_values(self.diff_q5, SCALED_DIFF_INTEGER_BITS)
        self.exp_accumulated = np.where(diffs >= self.diff_min, fp.rescale(exp, 0, ACCUMULATION_INTEGER_BITS), 0)
        self.diffs = diffs

    def invoke(self) -> None:
        index = self.rows()
        if index.size == 0:
            return
        sum_of_exps = fp.wrap32(self.exp_accumulated[index].sum(axis=1, keepdims=True))
        log_sum = fp.per_value(
            fp.log_x_for_x_greater_than_or_equal_to_1, sum_of_exps, SCALED_DIFF_INTEGER_BITS, ACCUMULATION_INTEGER_BITS
        )
        threshold = multiply_by_quantized_multiplier(
            fp.wrap32(log_sum + np.iinfo(np.int32).min), self.reverse_multiplier, self.reverse_shift
        )
        adjusted_diff_min = np.maximum(self.diff_min - 1, threshold)
        out = fp.rdbpot(fp.wrap32(self.diff_q5[index] - log_sum), 31 - SCALED_DIFF_INTEGER_BITS - 4) + self.zero_point
        np.clip(out, self.out_info.min, self.out_info.max, out=out)
        out = np.where(self.diffs[index] > adjusted_diff_min, out, self.out_info.min)
        self.outputs[0].data[...] = out.reshape(self.outputs[0].shape)
