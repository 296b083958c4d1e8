"""Quantized elementwise binary ops: ADD, SUB, MUL, DIV, SQUARED_DIFFERENCE, MAXIMUM,
MINIMUM on uint8, int8 and int16 tensors with scales and zero points, bit-exact with
TFLite's reference kernels (``kernels/{add,sub,mul,div,squared_difference,
maximum_minimum}.cc``, ``internal/reference/{add,sub,div}.h``,
``reference/integer_ops/mul.h``).

The arithmetic, per element, with ``q1``, ``q2`` the raw inputs and ``z``/``s`` the zero
points and scales (``M(x, m, n)`` is ``MultiplyByQuantizedMultiplier``):

- ADD / SUB (``left_shift`` 20 for 8-bit, 15 for int16 with general scales)::

      a = M((q1 - z1) << left_shift, m1, n1)      m1 ~ s1 / (2 max(s1, s2))
      b = M((q2 - z2) << left_shift, m2, n2)      m2 ~ s2 / (2 max(s1, s2))
      out = clamp(M(a +- b, mo, no) + zo)         mo ~ 2 max(s1, s2) / (2^left_shift so)

  int16 with ``pot_scale_int16`` (the default) and power-of-two scales takes TFLite's
  LSTM path instead: the input whose scale is smaller is rounding-shifted right to the
  output's scale, and the two are added (subtracted) with int16 saturation.
- MUL: ``out = clamp(M((q1 - z1) * (q2 - z2), m, n) + zo)`` with ``m ~ s1 s2 / so``
  computed in float32 (``input1->params.scale * input2->params.scale / ...``). int16
  inputs with an int8/uint8 output use gemmlowp's Q0.15 product, rounded by 2^8.
- DIV (uint8, int8): a fixed-point reciprocal of the divisor times the numerator, see
  ``QuantizedDiv``.
- SQUARED_DIFFERENCE (int8): like SUB with ``left_shift`` 7, the difference squared,
  then ``M(d^2, mo, no)`` with ``mo ~ (2 max(s1, s2))^2 / (2^14 so)``; no activation.
- MAXIMUM / MINIMUM compare the raw values (TFLite checks no quantization parameters).

``clamp`` is the fused activation's range in the output's quantized domain (TANH and
SIGN_BIT clamp nothing). Every double/float step of TFLite's Prepare is reproduced in
the same precision. Where TFLite aborts (a rescale factor out of range) or its result is
undefined behaviour (a negative shift count), the node is refused at prepare, except
for DIV's data-dependent case (see ``QuantizedDiv``). A node whose types need a later
version than it claims (an int8 ADD stamped version 1) is refused too.

How: an output depends only on the pair of raw input values, so for 8-bit inputs the
whole function is tabulated at prepare (a 256 x 256 table) and invoke is one gather
(its index assembled from the inputs' bytes, see ``PairTableLookup``); int16 inputs
are computed directly in int64.

One copy of the arithmetic for both backends: ``configure`` (the checks and TFLite's
Prepare-time parameters, with no effect on the tensors) and ``compute`` (the per-element
integer arithmetic, written against the array namespace of its arguments) are what the
GPU delegate's quantized ADD/SUB/MUL call too (``backends/gpu/ops/elementwise.py``:
``compute`` on device arrays).
"""

from __future__ import annotations

import math
import sys
from typing import Callable

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernel import CpuKernel, register
from backends.cpu.quantization import (
    activation_range_quantized,
    is_quantized,
    multiply_by_quantized_multiplier,
    namespace_of,
    quantize_multiplier,
    requantization_multiplier,
    requantize_outer_sum,
    rounding_divide_by_pot,
)
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType

QUANTIZED_DTYPES = {T.UINT8: np.uint8, T.INT8: np.int8, T.INT16: np.int16}


# ---------------------------------------------------------------------------------------
# Helpers shared by the quantized kernels of this family (also used by the comparisons)
# ---------------------------------------------------------------------------------------


def tensor_params(tensor) -> tuple[float, int]:
    """TFLite's per-tensor ``params``: (scale, zero_point); the scale is the float32
    value held exactly in a Python float."""
    q = tensor.quantization
    if q is None or q.scale is None or q.scale.size == 0:
        return 0.0, 0
    zero_point = int(q.zero_point[0]) if q.zero_point is not None and q.zero_point.size else 0
    return float(np.float32(q.scale[0])), zero_point


def quantize_multiplier_smaller_than_one(kernel: CpuKernel, real: float, what: str) -> tuple[int, int]:
    """TFLite's ``QuantizeMultiplierSmallerThanOneExp``: 0 < real < 1, shift <= 0.

    TFLite aborts the process (``TFLITE_CHECK``) outside that range; here the node is
    refused with a clear error instead.
    """
    if not 0.0 < real < 1.0:
        raise kernel.unsupported(
            f"the {what} rescale factor is {real!r}; TFLite's kernel needs it in (0, 1) "
            "(the quantization scales are too far apart)"
        )
    multiplier, shift = quantize_multiplier(real)
    if shift > 0:  # cannot happen for real < 1, kept as TFLite's check
        raise kernel.unsupported(f"the {what} rescale factor {real!r} gives a left shift")
    return multiplier, shift


def activation_of(params) -> int:
    activation = getattr(params, "fused_activation_function", ActivationFunctionType.NONE) if params is not None else 0
    return int(activation)


def pair_table(function, dtype: np.dtype, out_dtype: np.dtype) -> np.ndarray:
    """``function(a, b)`` for every pair of 8-bit raw values, flat, indexed by
    ``a_bits * 256 + b_bits`` (the values' bit patterns as uint8)."""
    values = np.arange(256, dtype=np.uint8).view(dtype).astype(np.int64)
    table = np.asarray(function(values[:, None], values[None, :]))
    return np.ascontiguousarray(np.broadcast_to(table, (256, 256)).astype(out_dtype).reshape(-1))


class PairTableLookup:
    """``out = table[x_bits * 256 + y_bits]`` with numpy broadcasting of x and y.

    The index is never computed with arithmetic: it lives in an intp buffer of the
    output's shape whose byte 1 holds x's bits and byte 0 y's (little-endian), every
    other byte staying 0, so invoke is one or two byte stores (broadcasting) and one
    ``take``. A constant input's bytes are stored once, when the buffers are bound; a
    constant single value is folded into the table instead (one row of 256 entries,
    indexed by the other input's bits alone).
    """

    def __init__(self, table: np.ndarray, out_shape: tuple[int, ...], x, y) -> None:
        self.out_shape = tuple(out_shape)
        self.table = table
        self.x_constant = x.data if x.is_constant else None
        self.y_constant = y.data if y.is_constant else None
        rows = table.reshape(256, 256)  # [x bits, y bits]
        self.row = None  # (256-entry table, whether x is the variable input)
        if self.y_constant is not None and self.x_constant is None and self.y_constant.size == 1:
            self.row = (np.ascontiguousarray(rows[:, _bits(self.y_constant).reshape(-1)[0]]), True)
        elif self.x_constant is not None and self.y_constant is None and self.x_constant.size == 1:
            self.row = (np.ascontiguousarray(rows[_bits(self.x_constant).reshape(-1)[0]]), False)

    def bind(self, x: np.ndarray, y: np.ndarray, out: np.ndarray) -> Callable[[], None]:
        """``out = f(x, y)`` as a function of no argument on these arrays (x and y may
        be the constant inputs' own data)."""
        index = np.zeros(self.out_shape, np.intp)
        # [..., byte]: the index's bytes; little-endian, so byte b weighs 256**b.
        index_bytes = index.reshape(-1).view(np.uint8).reshape(*self.out_shape, index.itemsize)
        if self.row is not None:
            table, x_varies = self.row
            copies = [(index_bytes[..., 0], _bits(x if x_varies else y))]
        else:
            table = self.table
            copies = []
            for byte, source, constant in ((1, x, self.x_constant), (0, y, self.y_constant)):
                if constant is not None:
                    index_bytes[..., byte] = _bits(constant)
                else:
                    copies.append((index_bytes[..., byte], _bits(source)))
        take = table.take  # (the method: np.take adds a Python wrapper)
        # "clip" mode (every index is valid): "raise" would buffer ``out``.
        if len(copies) == 2:
            (high, x_bits), (low, y_bits) = copies

            def lookup2() -> None:
                high[...] = x_bits
                low[...] = y_bits
                take(index, None, out, "clip")

            return lookup2
        if len(copies) == 1:
            ((target, bits),) = copies

            def lookup1() -> None:
                target[...] = bits
                take(index, None, out, "clip")

            return lookup1
        return lambda: take(index, None, out, "clip")


def _bits(values: np.ndarray) -> np.ndarray:
    """The 8-bit values' bit patterns (a uint8 view)."""
    return np.asarray(values).view(np.uint8)


_LITTLE_ENDIAN = sys.byteorder == "little"


class QuantizedPairwise(CpuKernel):
    """Shared prepare/invoke of elementwise ops on two quantized inputs of one type.

    Subclasses implement ``setup`` (checks and TFLite's prepare-time arithmetic) and
    ``compute(a, b)``: the int64 result for raw values ``a``, ``b`` (broadcastable int64
    arrays of any namespace: numpy here, device arrays on the GPU), already clamped to
    the output range.
    """

    #: Input tensor types the subclass takes.
    types: tuple[int, ...] = (T.UINT8, T.INT8, T.INT16)
    #: Whether the output must have the input type (False for comparisons).
    same_output_type = True

    @classmethod
    def accepts(cls, context, node) -> bool:
        """Run the nodes whose first input is quantized (the float classes of the same
        (op, version) refuse them)."""
        first = node.inputs[0] if len(node.inputs) else -1
        return first >= 0 and is_quantized(context.tensors[first])

    def prepare(self) -> None:
        self.configure()
        x, y = self.inputs
        out = self.outputs[0]
        out.resize(self.out_shape)
        self.lookup = None
        if x.type in (T.UINT8, T.INT8) and _LITTLE_ENDIAN:
            self.lookup = PairTableLookup(self.table(x.dtype, out.dtype), self.out_shape, x, y)
        self._step = None  # (arrays, step) of the last direct invoke

    def configure(self) -> None:
        """The checks and the Prepare-time parameters of ``compute`` (``self.out_shape``
        included), with no effect on the tensors: also what another backend calls to
        reuse this kernel's arithmetic (raises ``UnsupportedKernelError``)."""
        self.require_num_inputs(2)
        x, y = self.inputs
        out = self.outputs[0]
        self.require_types(x, *self.types, role="input 1")
        self.require_types(y, x.type, role="input 2")
        if self.same_output_type:
            self.require_types(out, x.type, role="output")
        for tensor in (x, y, out) if self.same_output_type else (x, y):
            if not is_quantized(tensor):
                raise self.unsupported(
                    f"tensor {tensor.name!r} ({tensor.type_name}) has no quantization scale; "
                    "this kernel takes quantized tensors only"
                )
            if tensor.quantization.is_per_channel:
                raise self.unsupported(f"tensor {tensor.name!r} is quantized per channel; only per-tensor is supported")
        self.out_shape = broadcast_shape(x.shape, y.shape)
        self.setup()

    def setup(self) -> None:
        raise NotImplementedError

    def table(self, dtype: np.dtype, out_dtype: np.dtype) -> np.ndarray:
        """The 256 x 256 table of ``compute`` for 8-bit inputs (``pair_table``'s layout)."""
        return pair_table(self.compute, dtype, out_dtype)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def invoke(self) -> None:
        x, y, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        if self.lookup is None:
            out[...] = self.compute(x.astype(np.int64), y.astype(np.int64))
            return
        step = self._step
        if step is None or step[0][0] is not x or step[0][1] is not y or step[0][2] is not out:
            step = self._step = ((x, y, out), self.lookup.bind(x, y, out))
        step[1]()

    def bind(self) -> Callable[[], None]:
        if self.lookup is None or not self.buffers_are_fixed():
            return self.invoke
        return self.lookup.bind(self.inputs[0].data, self.inputs[1].data, self.outputs[0].data)

    # -- shared pieces of setup ---------------------------------------------------------
    def activation_range(self) -> tuple[int, int]:
        out = self.outputs[0]
        scale, zero_point = tensor_params(out)
        return activation_range_quantized(activation_of(self.params), scale, zero_point, out.dtype)

    def require_zero_points_zero(self, why: str) -> None:
        for tensor in (*self.inputs, self.outputs[0]):
            if tensor_params(tensor)[1] != 0:
                raise self.unsupported(f"{why}: tensor {tensor.name!r} must have zero point 0")

    def require_zero_points_in_type(self) -> None:
        info = np.iinfo(self.outputs[0].dtype)
        for tensor in (*self.inputs, self.outputs[0]):
            zero_point = tensor_params(tensor)[1]
            if not info.min <= zero_point <= info.max:
                raise self.unsupported(f"tensor {tensor.name!r} has zero point {zero_point} outside the {info.dtype} range")


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLite's ``CheckedLog2`` in float32: (is a power of two within 1e-3, rounded log2)."""
    x32 = np.float32(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        log2 = np.float32(np.log(x32)) * np.float32(np.float32(1.0) / np.float32(np.log(np.float32(2.0))))
    if not np.isfinite(log2):
        return False, 0
    rounded = np.float32(math.copysign(math.floor(abs(float(log2)) + 0.5), float(log2)))
    return bool(abs(np.float32(log2 - rounded)) < np.float32(1e-3)), int(rounded)


# ---------------------------------------------------------------------------------------
# ADD and SUB
# ---------------------------------------------------------------------------------------


# v1: uint8, and int16 whose pot_scale_int16 is true (the default); v2: int8;
# v3: int16 with pot_scale_int16 false (general scales).
@register(B.ADD, 1, 3)
# v1: uint8 and int16 (pot_scale_int16 true); v2: int8; v3: any of them broadcasting
# more than 4-D; v5: int16 with pot_scale_int16 false. (v4 is int64: not quantized.)
@register(B.SUB, 1, 3)
@register(B.SUB, 5, 5)
class QuantizedAddSub(QuantizedPairwise):
    """ADD v1-v3, SUB v1-v3 and v5 on quantized uint8, int8 and int16."""

    def setup(self) -> None:
        x, y = self.inputs
        out = self.outputs[0]
        self.subtract = self.op == B.SUB
        s1, z1 = tensor_params(x)
        s2, z2 = tensor_params(y)
        so, zo = tensor_params(out)
        pot_flag = bool(getattr(self.params, "pot_scale_int16", True)) if self.params is not None else True
        self.pot_int16 = False
        if x.type == T.INT16:
            general = not pot_flag
            if not general:
                pots = [checked_log2(s) for s in (s1, s2, so)]
                general = not all(is_pot for is_pot, _ in pots)
            self.pot_int16 = not general
            # Both int16 paths need symmetric int16 (LiteRT 2.3 checks it in Prepare).
            self.require_zero_points_zero("int16 " + self.op_name)
        self.low, self.high = self.activation_range()
        if self.pot_int16:
            self.setup_power_of_two(pots)
            return
        if self.subtract:
            self.require_zero_points_in_type()
        self.offsets = (-z1, -z2, zo)
        self.left_shift = 15 if x.type == T.INT16 else 20
        twice_max = 2.0 * max(s1, s2)  # TFLite: 2 * double(max(float, float))
        self.m1 = quantize_multiplier_smaller_than_one(self, s1 / twice_max, "input 1")
        self.m2 = quantize_multiplier_smaller_than_one(self, s2 / twice_max, "input 2")
        real_output = twice_max / (float(1 << self.left_shift) * so)
        if self.subtract and real_output > 1.0:
            # TFLite's SUB then takes QuantizeMultiplierGreaterThanOne but applies it with
            # MultiplyByQuantizedMultiplierSmallerThanOneExp, whose result for a left
            # shift is not defined (a negative shift count): no behaviour to match.
            raise self.unsupported(
                f"the output rescale factor is {real_output!r} (> 1: the output scale is tiny "
                "compared with the inputs'); TFLite's result is undefined there"
            )
        self.mo = quantize_multiplier_smaller_than_one(self, real_output, "output")

    def setup_power_of_two(self, pots) -> None:
        """TFLite's LSTM path for int16 with power-of-two scales (``PrepareInt16SubOpPOT``
        and ADD's equivalent): one input is rounding-shifted right to the output's scale."""
        (_, log1), (_, log2), (_, log_out) = pots
        shift1, shift2 = log1 - log_out, log2 - log_out
        if not (shift1 == 0 or shift2 == 0) or shift1 > 0 or shift2 > 0:
            raise self.unsupported(
                f"int16 with power-of-two scales needs one input at the output's scale and the "
                f"other at a smaller one (input shifts {shift1}, {shift2})"
            )
        x, y = self.inputs
        if not self.subtract and x.shape != y.shape:
            # TFLite's ADD has no broadcasting on this path (it reads past the smaller input).
            raise self.unsupported(
                f"int16 ADD with power-of-two scales does not broadcast ({list(x.shape)} vs {list(y.shape)})"
            )
        self.pot_shifts = (-shift1, -shift2)

    def table(self, dtype: np.dtype, out_dtype: np.dtype) -> np.ndarray:
        """``compute``'s table, the inputs rescaled once per raw value and the output stage
        run on their outer sum in a few passes (``requantize_outer_sum``)."""
        values = np.arange(256, dtype=np.uint8).view(dtype).astype(np.int64)
        off1, off2, off_out = self.offsets
        first = multiply_by_quantized_multiplier((values + off1) << self.left_shift, *self.m1)
        second = multiply_by_quantized_multiplier((values + off2) << self.left_shift, *self.m2)
        table = np.empty((256, 256), out_dtype)
        if requantize_outer_sum(first, -second if self.subtract else second, *self.mo, off_out, self.low, self.high, table):
            return table.reshape(-1)
        return super().table(dtype, out_dtype)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.pot_int16:
            a = rounding_divide_by_pot(a, self.pot_shifts[0])
            b = rounding_divide_by_pot(b, self.pot_shifts[1])
            total = a - b if self.subtract else a + b
            return np.clip(total, self.low, self.high)  # (within int16 saturation)
        off1, off2, off_out = self.offsets
        scaled1 = multiply_by_quantized_multiplier((a + off1) << self.left_shift, *self.m1)
        scaled2 = multiply_by_quantized_multiplier((b + off2) << self.left_shift, *self.m2)
        total = scaled1 - scaled2 if self.subtract else scaled1 + scaled2
        result = multiply_by_quantized_multiplier(total, *self.mo) + off_out
        return namespace_of(result).clip(result, self.low, self.high)


# ---------------------------------------------------------------------------------------
# MUL
# ---------------------------------------------------------------------------------------


# v1: uint8; v2: int8; v3: uint8/int8 whose s1 * s2 / s_out >= 1; v4: int16 (int16
# output, or the int16 x int16 -> int8/uint8 product of LSTM cells).
@register(B.MUL, 1, 4)
class QuantizedMul(QuantizedPairwise):
    """MUL v1-v4 on quantized uint8, int8, int16 (and int16 inputs to an 8-bit output)."""

    same_output_type = False

    def setup(self) -> None:
        x, y = self.inputs
        out = self.outputs[0]
        if not is_quantized(out):
            raise self.unsupported(f"output {out.name!r} has no quantization scale")
        s1, z1 = tensor_params(x)
        s2, z2 = tensor_params(y)
        so, zo = tensor_params(out)
        self.low, self.high = self.activation_range()
        self.offsets = (-z1, -z2, zo)
        self.int16_to_8bit = x.type == T.INT16 and out.type in (T.INT8, T.UINT8)
        if self.int16_to_8bit:
            if x.shape != y.shape:
                raise self.unsupported("int16 inputs to an 8-bit output do not broadcast in TFLite's kernel")
            return
        self.require_types(out, x.type, role="output")
        if x.type == T.INT16:
            self.require_zero_points_zero("int16 MUL")
        # TFLite: double real_multiplier = input1_scale * input2_scale / output_scale, a
        # float32 expression converted to double afterwards.
        real = float(np.float32(np.float32(s1) * np.float32(s2)) / np.float32(so))
        self.multiplier = requantization_multiplier(real, "input 1 scale x input 2 scale / output scale")

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        off1, off2, off_out = self.offsets
        if self.int16_to_8bit:
            product = q15_multiply(a, b)
            rescaled = rounding_divide_by_pot(product, 8)
            return np.clip(rescaled, self.low - off_out, self.high - off_out) + off_out
        product = (a + off1) * (b + off2)
        result = multiply_by_quantized_multiplier(product, *self.multiplier) + off_out
        return namespace_of(result).clip(result, self.low, self.high)


def q15_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` on int16 (a Q0.15 product)."""
    product = np.asarray(a, np.int64) * np.asarray(b, np.int64)
    nudge = np.where(product >= 0, 1 << 14, 1 - (1 << 14))
    total = product + nudge
    high = np.where(total >= 0, total >> 15, -((-total) >> 15))  # C division: toward zero
    return np.where((a == -32768) & (b == -32768), 32767, high)


# ---------------------------------------------------------------------------------------
# DIV
# ---------------------------------------------------------------------------------------


# v1: quantized uint8 and int8 (and float32/int32, in binary.py); v2: broadcasting of
# more than 4 dimensions.
@register(B.DIV, 1, 2)
class QuantizedDiv(QuantizedPairwise):
    """DIV v1-v2 on quantized uint8 and int8: TFLite's fixed-point reciprocal division.

    Per element (``reference_ops::DivElementwise``), with ``a = q1 - z1``, ``b = q2 - z2``
    (both negated when b < 0)::

        (r, k) = GetReciprocal(b)              r ~ 2^31 / (b / 2^k), in [2^30, 2^31)
        h = CountLeadingSignBits(a)
        u = M(a, r, h)                         (a << h) * r, high half
        out = clamp(M(u, m, n - k - h) + zo)   m ~ s1 / (s2 so) in float32

    A divisor equal to its zero point fails at invoke, as in TFLite.

    Where the last shift ``k + h - n`` exceeds 31 (a small numerator over a large
    divisor: the quotient is below half a step), TFLite's ``RoundingDivideByPOT`` shifts
    an int32 by 32 or more, which C++ leaves undefined; LiteRT's x86 build then returns
    values unrelated to the quotient. This kernel computes the defined rounding there
    (0 steps from the zero point) and so differs from LiteRT on exactly those elements.
    """

    types = (T.UINT8, T.INT8)

    def setup(self) -> None:
        x, y = self.inputs
        s1, z1 = tensor_params(x)
        s2, z2 = tensor_params(y)
        so, zo = tensor_params(self.outputs[0])
        self.low, self.high = self.activation_range()
        self.offsets = (-z1, -z2, zo)
        self.divisor_zero_point = z2
        # TFLite: double real_multiplier = input1_scale / (input2_scale * output_scale),
        # a float32 expression.
        real = float(np.float32(s1) / np.float32(np.float32(s2) * np.float32(so)))
        self.multiplier = quantize_multiplier(real)
        if self.multiplier[1] > 22:
            # The final shift (n - k - h, with h >= 23 for 8-bit values) would be positive:
            # TFLite's result is undefined there (a negative shift count).
            raise self.unsupported(f"the rescale factor {real!r} is too large for TFLite's quantized DIV")

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        from backends.cpu.kernels._div_reciprocal import count_leading_sign_bits, get_reciprocal

        off1, off2, off_out = self.offsets
        a, b = np.broadcast_arrays(np.asarray(a, np.int64) + off1, np.asarray(b, np.int64) + off2)
        negative = b < 0
        a = np.where(negative, -a, a)
        b = np.where(negative, -b, b)
        zero = b == 0  # rejected at invoke; any value here
        reciprocal, bits_over_unit = get_reciprocal(np.where(zero, 1, b))
        headroom = count_leading_sign_bits(a)
        unscaled = multiply_by_quantized_multiplier(a, reciprocal, headroom)
        multiplier, shift = self.multiplier
        result = multiply_by_quantized_multiplier(unscaled, multiplier, shift - bits_over_unit - headroom) + off_out
        return np.where(zero, 0, np.clip(result, self.low, self.high))

    def invoke(self) -> None:
        self.check_divisor(self.inputs[1].data)
        super().invoke()

    def bind(self) -> Callable[[], None]:
        step = super().bind()
        if step == self.invoke:
            return step
        divisor, check = self.inputs[1].data, self.check_divisor

        def divide() -> None:
            check(divisor)
            step()

        return divide

    def check_divisor(self, divisor: np.ndarray) -> None:
        if np.any(divisor == self.divisor_zero_point):
            raise ZeroDivisionError(
                f"DIV: division by zero (input 2 {self.inputs[1].name!r} holds its zero point {self.divisor_zero_point})"
            )


# ---------------------------------------------------------------------------------------
# SQUARED_DIFFERENCE
# ---------------------------------------------------------------------------------------


@register(B.SQUARED_DIFFERENCE, 2, 2)  # v2: int8 (v1 is float32/int32, in binary.py)
class QuantizedSquaredDifference(QuantizedPairwise):
    """SQUARED_DIFFERENCE v2: int8, rescaled like SUB (left shift 7), then squared."""

    types = (T.INT8,)

    def setup(self) -> None:
        x, y = self.inputs
        if len(self.out_shape) > 4 and x.shape != y.shape:
            raise self.unsupported("TFLite's int8 SQUARED_DIFFERENCE broadcasts at most 4-D shapes")
        self.require_zero_points_in_type()
        s1, z1 = tensor_params(x)
        s2, z2 = tensor_params(y)
        so, zo = tensor_params(self.outputs[0])
        self.offsets = (-z1, -z2, zo)
        twice_max = 2.0 * max(s1, s2)
        self.m1 = quantize_multiplier_smaller_than_one(self, s1 / twice_max, "input 1")
        self.m2 = quantize_multiplier_smaller_than_one(self, s2 / twice_max, "input 2")
        real_output = (twice_max * twice_max) / (float(1 << 14) * so)
        self.mo = quantize_multiplier_smaller_than_one(self, real_output, "output")

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        off1, off2, off_out = self.offsets
        scaled1 = multiply_by_quantized_multiplier((a + off1) << 7, *self.m1)
        scaled2 = multiply_by_quantized_multiplier((b + off2) << 7, *self.m2)
        difference = scaled1 - scaled2
        result = multiply_by_quantized_multiplier(difference * difference, *self.mo) + off_out
        return np.clip(result, -128, 127)


# ---------------------------------------------------------------------------------------
# MAXIMUM and MINIMUM
# ---------------------------------------------------------------------------------------


# v1: uint8; v2: int8; v3: broadcasting of more than 4 dimensions; v4: int16.
@register(B.MAXIMUM, 1, 4)
@register(B.MINIMUM, 1, 4)
class QuantizedMaximumMinimum(CpuKernel):
    """MAXIMUM, MINIMUM v1-v4 on uint8, int8, int16: the larger (smaller) raw value.

    TFLite compares the raw values whatever the quantization parameters (its Prepare
    checks none; converters give both inputs and the output the same ones), and so
    does this kernel.
    """

    @classmethod
    def accepts(cls, context, node) -> bool:
        first = node.inputs[0] if len(node.inputs) else -1
        return first >= 0 and context.tensors[first].type in QUANTIZED_DTYPES

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, y = self.inputs
        self.require_types(x, T.UINT8, T.INT8, T.INT16, role="input 1")
        self.require_types(y, x.type, role="input 2")
        self.require_types(self.outputs[0], x.type, role="output")
        self.outputs[0].resize(broadcast_shape(x.shape, y.shape))
        self.ufunc = np.maximum if self.op == B.MAXIMUM else np.minimum

    def invoke(self) -> None:
        self.ufunc(self.inputs[0].data, self.inputs[1].data, out=self.outputs[0].data)

    def bind(self) -> Callable[[], None]:
        if not self.buffers_are_fixed():
            return self.invoke
        ufunc, x, y, out = self.ufunc, self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        return lambda: ufunc(x, y, out=out)

