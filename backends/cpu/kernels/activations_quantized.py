"""Quantized activations on uint8, int8 and int16 tensors, bit-exact with TFLite's
reference kernels (``kernels/activations.cc`` with ``kReference``; the arithmetic in
``internal/reference/{hard_swish,leaky_relu,prelu}.h``, ``reference/integer_ops/
{logistic,tanh}.h``, ``optimized_ops::ReluX`` and ``internal/common.h``'s ``LUTPopulate``).

Per element, with ``q`` the raw input, ``z``/``s`` zero points and scales, and
``M(x, m, n)`` TFLite's ``MultiplyByQuantizedMultiplier``:

- RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1 (``QuantizedReluX``)::

      out = clamp(z_out + M(q - z_in, m, n), lo, hi)        m ~ s_in / s_out (float32 ratio)

  with ``lo``/``hi`` the clamp bounds quantized on the output (``z_out + roundf(b / s_out)``).
- LEAKY_RELU: ``M`` by ``s_in / s_out`` for ``q >= z_in``, by ``s_in * alpha / s_out``
  (sign kept apart) below.
- PRELU: ``M(q - z_in, s_in / s_out)`` for ``q >= z_in``, else
  ``M((q - z_in) * (a - z_a), s_in * s_a / s_out)``; alpha broadcast against the input.
- HARD_SWISH: TFLite's 16-bit fixed-point evaluation of ``x * relu6(x + 3) / 6``
  (``reference_ops::HardSwish`` with the multipliers of ``HardSwishPrepare``).
- LOGISTIC, TANH on uint8/int8, and ELU on int8: a 256-entry table built from the float
  function (``LUTPopulate``: ``roundf(f(s_in * (q - z_in)) / s_out) + z_out``, float32,
  with the C library's ``expf``/``tanhf``/``expm1f``). LOGISTIC needs the output scale
  1/256.
- LOGISTIC, TANH on int16 (symmetric, output scale 2^-15): the input is rescaled to
  1/4096 (times 3) and looked up, interpolated, in gemmlowp's 256-entry sigmoid table.

How: every one of these maps an input value to an output value, so the whole function is
tabulated at prepare over every possible input (256 values, 65536 for int16; 256 x 256
(alpha, input) pairs for PRELU) and invoke is one ``take`` (for 8-bit types on a table of
byte pairs, two elements per lookup).

ELU is missing from LiteRT's reference resolver; its int8 kernel (the LUT above) is the
one of the default resolver.

The GPU delegate's quantized activations (``backends/gpu/ops/activations.py``)
upload the very table ``configure`` builds here, and look it up on the device.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels import _fixed_point as fp
from backends.cpu.quantization import (
    INT32_MIN,
    is_quantized,
    multiply_by_quantized_multiplier,
    requantization_multiplier,
)
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType

#: The unsigned type whose view of a tensor indexes a table of every value of its type
#: (tables are in code order: the value's bits read unsigned).
UNSIGNED_VIEW = {np.dtype(np.uint8): np.uint8, np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16}


def scale_zero_point(tensor) -> tuple[float, int]:
    """TFLite's per-tensor ``params``: (float32 scale held in a Python float, zero point)."""
    q = tensor.quantization
    zero_point = int(q.zero_point[0]) if q.zero_point is not None and q.zero_point.size else 0
    return float(np.float32(q.scale[0])), zero_point


def f32(value) -> np.float32:
    return np.float32(value)


def all_values(dtype: np.dtype) -> np.ndarray:
    """Every value of an integer type, in code order (the order of its unsigned view):
    0, 1, ..., max, min, ..., -1 for signed types, as int64."""
    dtype = np.dtype(dtype)
    codes = np.arange(1 << (8 * dtype.itemsize), dtype=np.int64)
    return codes.astype(UNSIGNED_VIEW[dtype]).view(dtype).astype(np.int64)


def c_int32_of_float(value: np.float32) -> int:
    """``static_cast<int32_t>`` of a float (truncation; x86 gives INT32_MIN out of range)."""
    value = float(value)
    if not math.isfinite(value) or not -2147483648.0 <= math.trunc(value) <= 2147483647.0:
        return INT32_MIN
    return int(math.trunc(value))


class QuantizedElementwise(CpuKernel):
    """A quantized unary op tabulated over every input value; invoke is one ``take``.

    Subclasses set :attr:`TYPES` and implement :meth:`compute` (raw input values, int64,
    to raw output values) after :meth:`prepare_params`.
    """

    blas_work = 0  # (table lookups)

    #: the input types this op takes (the output has the same type)
    TYPES: tuple[int, ...] = (T.UINT8, T.INT8)
    #: the first version of the op for each type (TFLite's op_version.cc); a node of a
    #: lower version with that type is refused, as the float kernel would refuse it
    MIN_VERSION: dict[int, int] = {T.UINT8: 1, T.INT8: 1}

    @classmethod
    def accepts(cls, context, node) -> bool:
        return len(node.inputs) > 0 and node.inputs[0] >= 0 and is_quantized(context.tensors[node.inputs[0]])

    def prepare(self) -> None:
        self.configure()
        x, y = self.inputs[0], self.outputs[0]
        #: for 8-bit types, the table of byte pairs (two lookups per ``take`` element)
        self.pairs = fp.pair_table(self.table) if x.dtype.itemsize == 1 else None
        y.resize(x.shape)

    def configure(self) -> None:
        """The checks, the Prepare-time parameters and ``self.table`` (every input value's
        output, in code order), with no effect on the tensors: also what another backend
        calls to reuse this kernel's table (raises ``UnsupportedKernelError``)."""
        self.require_num_inputs(1)
        x, y = self.inputs[0], self.outputs[0]
        self.check_quantized(x, "input")
        self.require_types(y, x.type, role="output")
        self.check_quantized(y, "output")
        self.input_scale, self.input_zero_point = scale_zero_point(x)
        self.output_scale, self.output_zero_point = scale_zero_point(y)
        if x.type == T.INT16 and (self.input_zero_point or self.output_zero_point):  # TFLite: symmetric int16
            raise self.unsupported(
                f"int16 tensors need zero point 0 (got {self.input_zero_point} in, {self.output_zero_point} out)"
            )
        self.prepare_params()
        info = np.iinfo(y.dtype)
        values = all_values(x.dtype)
        self.table = np.clip(self.compute(values), info.min, info.max).astype(y.dtype)
        self.view = UNSIGNED_VIEW[np.dtype(x.dtype)]

    @property
    def min_version(self) -> dict[int, int]:
        return self.MIN_VERSION

    def check_quantized(self, tensor, role: str) -> None:
        self.require_types(tensor, *self.TYPES, role=role)
        if not is_quantized(tensor):
            raise self.unsupported(f"the {role} {tensor.name!r} ({tensor.type_name}) has no quantization parameters")
        if tensor.quantization.is_per_channel:
            raise self.unsupported(f"the {role} {tensor.name!r} is quantized per channel; TFLite needs one scale")

    def prepare_params(self) -> None:
        """Prepare-time parameters (multipliers, shifts, checks) for :meth:`compute`."""

    def compute(self, values: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def bind(self) -> Callable[[], None]:
        """The lookups of ``invoke`` on this allocation's buffers, their views made once."""
        x, out = self.inputs[0].data, self.outputs[0].data
        if not self.buffers_are_fixed() or not (x.flags.c_contiguous and out.flags.c_contiguous):
            return self.invoke
        if self.pairs is None or x.size < 2:
            take, index = self.table.take, x.view(self.view)
            return lambda: take(index, None, out, "wrap")
        flat_x, flat_out = x.reshape(-1), out.reshape(-1)
        even = flat_x.size - (flat_x.size & 1)
        take_pairs, pair_index, pair_out = self.pairs.take, flat_x[:even].view(np.uint16), flat_out[:even].view(np.uint16)
        if even == flat_x.size:
            return lambda: take_pairs(pair_index, None, pair_out, "wrap")
        take, last_index, last_out = self.table.take, flat_x[even:].view(self.view), flat_out[even:]

        def look_up_pairs() -> None:
            take_pairs(pair_index, None, pair_out, "wrap")
            take(last_index, None, last_out, "wrap")

        return look_up_pairs

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        # The indices (unsigned views) never exceed the table: mode="wrap" skips the checks.
        if self.pairs is None or not (x.flags.c_contiguous and out.flags.c_contiguous):
            np.take(self.table, x.view(self.view), out=out, mode="wrap")
            return
        flat_x, flat_out = x.reshape(-1), out.reshape(-1)
        even = flat_x.size - (flat_x.size & 1)
        np.take(self.pairs, flat_x[:even].view(np.uint16), out=flat_out[:even].view(np.uint16), mode="wrap")
        if even < flat_x.size:
            flat_out[even:] = self.table[flat_x[even:].view(self.view)]


# --- RELU family ------------------------------------------------------------------------

#: (lower, upper) clamp bounds in real numbers; None = the type's limit.
RELU_BOUNDS = {
    B.RELU: (0.0, None),
    B.RELU6: (0.0, 6.0),
    B.RELU_N1_TO_1: (-1.0, 1.0),
    B.RELU_0_TO_1: (0.0, 1.0),
}


#: the first version of each RELU op for each quantized type
RELU_MIN_VERSION = {
    B.RELU: {T.UINT8: 2, T.INT8: 2, T.INT16: 3},
    B.RELU6: {T.UINT8: 1, T.INT8: 2, T.INT16: 3},
    B.RELU_N1_TO_1: {T.UINT8: 1, T.INT8: 1},
    B.RELU_0_TO_1: {T.UINT8: 1, T.INT8: 1},
}


@register(B.RELU, 2, 3)  # v1: float32 only (relu.py); v2: int8 and uint8; v3: int16
@register(B.RELU6, 1, 3)  # v1: float32 (relu.py) and uint8; v2: int8; v3: int16
@register(B.RELU_N1_TO_1, 1, 1)  # v1: float32 (relu.py), uint8 and int8
@register(B.RELU_0_TO_1, 1, 1)  # v1: float32 (relu.py), uint8 and int8
class QuantizedRelu(QuantizedElementwise):
    """RELU v2-v3, RELU6 v1-v3 (uint8, int8, int16), RELU_N1_TO_1 v1, RELU_0_TO_1 v1 (uint8, int8)."""

    @property
    def TYPES(self):  # noqa: N802 (a class constant elsewhere)
        return tuple(RELU_MIN_VERSION[self.op])

    @property
    def min_version(self) -> dict[int, int]:
        return RELU_MIN_VERSION[self.op]

    def prepare_params(self) -> None:
        # double real_multiplier = input->params.scale / output->params.scale (a float ratio)
        self.multiplier, self.shift = requantization_multiplier(float(f32(self.input_scale) / f32(self.output_scale)), "input scale / output scale")
        info = np.iinfo(self.outputs[0].dtype)
        lower, upper = RELU_BOUNDS[self.op]
        scale = f32(self.output_scale)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            self.low = max(int(info.min), self.output_zero_point + c_int32_of_float(fp.round_half_away_f32(f32(lower) / scale)))
            self.high = int(info.max) if upper is None else min(
                int(info.max), self.output_zero_point + c_int32_of_float(fp.round_half_away_f32(f32(upper) / scale))
            )

    def compute(self, values: np.ndarray) -> np.ndarray:
        out = self.output_zero_point + multiply_by_quantized_multiplier(values - self.input_zero_point, self.multiplier, self.shift)
        return np.minimum(np.maximum(out, self.low), self.high)


# --- LEAKY_RELU -------------------------------------------------------------------------


@register(B.LEAKY_RELU, 1, 2)  # v1: float32 (activations.py), uint8, int8; v2: int16
class QuantizedLeakyRelu(QuantizedElementwise):
    """LEAKY_RELU v1 (uint8, int8) and v2 (int16): two multipliers, identity and alpha."""

    TYPES = (T.UINT8, T.INT8, T.INT16)
    MIN_VERSION = {T.UINT8: 1, T.INT8: 1, T.INT16: 2}

    def prepare_params(self) -> None:
        alpha = f32(self.params.alpha if self.params is not None else 0.0)
        s_in, s_out = f32(self.input_scale), f32(self.output_scale)
        # float32 products and ratios, as in LeakyReluPrepare, then QuantizeMultiplier(double)
        self.alpha_multiplier, self.alpha_shift = requantization_multiplier(float(s_in * alpha / s_out), "input scale x alpha / output scale")
        self.identity_multiplier, self.identity_shift = requantization_multiplier(float(s_in / s_out), "input scale / output scale")

    def compute(self, values: np.ndarray) -> np.ndarray:
        x = values - self.input_zero_point
        identity = multiply_by_quantized_multiplier(x, self.identity_multiplier, self.identity_shift)
        # reference_ops::QuantizeLeakyRelu multiplies by |alpha multiplier| and restores the sign.
        negative_alpha = self.alpha_multiplier < 0
        scaled = multiply_by_quantized_multiplier(x, abs(self.alpha_multiplier), self.alpha_shift)
        alpha_part = -scaled if negative_alpha else scaled
        return self.output_zero_point + np.where(x >= 0, identity, alpha_part)


# --- HARD_SWISH -------------------------------------------------------------------------


def _srdhm16(a, b) -> np.ndarray:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` on int16 (rounding half away)."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    result = (a * b + (1 << 14)) >> 15
    return np.where((a == -32768) & (b == -32768), np.int64(32767), result)


def _sdhm16(a, b) -> np.ndarray:
    """TFLite's ``SaturatingDoublingHighMul`` on int16 (truncating toward zero)."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    product = a * b
    result = np.where(product >= 0, product >> 15, -((-product) >> 15))
    return np.where((a == -32768) & (b == -32768), np.int64(32767), result)


def _rdbpot16(x, exponent: int) -> np.ndarray:
    """gemmlowp's ``RoundingDivideByPOT<int16_t>``, all of it in int16: the mask
    ``(1 << exponent) - 1`` wraps to -1 from exponent 16 on, and then the result is
    1 for x >= 0 and -1 for x < 0 (what the compiled kernel gives; below 16 it is the
    usual rounding division)."""
    x = np.asarray(x, np.int64)
    mask = int(fp.wrap16((1 << exponent) - 1))
    remainder = fp.wrap16(x & mask)
    threshold = fp.wrap16((mask >> 1) + (x < 0))
    return fp.wrap16((x >> exponent) + (remainder > threshold))


def _saturating_left_shift16(value, amount: int) -> np.ndarray:
    return np.clip(np.asarray(value, np.int64) * (1 << amount), -32768, 32767)


def _downscale_int32_to_int16_multiplier(multiplier: int) -> int:
    """TFLite's ``DownScaleInt32ToInt16Multiplier``."""
    if multiplier >= (1 << 31) - 1 - (1 << 15):
        return 32767
    return (multiplier + (1 << 15)) >> 16


@register(B.HARD_SWISH, 1, 1)  # v1: float32 (activations.py), uint8, int8
class QuantizedHardSwish(QuantizedElementwise):
    """HARD_SWISH v1 (uint8, int8): TFLite's 16-bit fixed-point ``x * relu6(x + 3) / 6``."""

    def prepare_params(self) -> None:
        hires_input_scale = f32(1.0 / 128.0) * f32(self.input_scale)
        reluish_scale = f32(3.0 / 32768.0)
        output_multiplier = hires_input_scale / f32(self.output_scale)
        multiplier, self.output_exponent = requantization_multiplier(float(output_multiplier), "input scale / 128 / output scale")
        self.output_multiplier16 = _downscale_int32_to_int16_multiplier(multiplier)
        if self.output_exponent > 0:
            raise self.unsupported(
                f"input scale / output scale / 128 is {float(output_multiplier)!r}; TFLite's kernel needs it below 1"
            )
        reluish_multiplier = hires_input_scale / reluish_scale
        multiplier, self.reluish_exponent = requantization_multiplier(float(reluish_multiplier), "input scale / 128 / (3 / 32768)")
        self.reluish_multiplier16 = _downscale_int32_to_int16_multiplier(multiplier)

    def compute(self, values: np.ndarray) -> np.ndarray:
        input_value = fp.wrap16(values - self.input_zero_point)
        hires = fp.wrap16(input_value * (1 << 7))
        preshift_output_scale = _srdhm16(hires, self.output_multiplier16)
        reluish = hires
        if self.reluish_exponent > 0:
            reluish = _saturating_left_shift16(reluish, self.reluish_exponent - 1)
        reluish = _srdhm16(reluish, self.reluish_multiplier16)
        if self.reluish_exponent > 0:
            reluish = _saturating_left_shift16(reluish, 1)
        if self.reluish_exponent < 0:
            reluish = _rdbpot16(reluish, -self.reluish_exponent)
        reluish = (reluish + (1 << 15)) >> 1
        preshift_output = _sdhm16(reluish, preshift_output_scale)
        output = _rdbpot16(preshift_output, -self.output_exponent)
        return fp.wrap16(output + self.output_zero_point)


# --- LOGISTIC, TANH, ELU ----------------------------------------------------------------


def _logistic_f32(x: np.ndarray) -> np.ndarray:
    # [](float value) { return 1.0f / (1.0f + std::exp(-value)); }
    with np.errstate(over="ignore"):
        return (f32(1) / (f32(1) + fp.c_expf(-x))).astype(np.float32)


def _elu_f32(x: np.ndarray) -> np.ndarray:
    # [](float value) { return value < 0.0f ? std::expm1(value) : value; }
    return np.where(x < 0, fp.c_expm1f(x), x).astype(np.float32)


class _SigmoidFamily(QuantizedElementwise):
    """LOGISTIC and TANH: float tables for 8-bit types, the int16 rescaling into the sigmoid table."""

    TYPES = (T.UINT8, T.INT8, T.INT16)
    MIN_VERSION = {T.UINT8: 1, T.INT8: 2, T.INT16: 3}
    #: the float function of the 8-bit tables
    FUNCTION = None
    #: TanhPrepare accepts an input left shift of 0 or 1 as a power-of-two scale; Sigmoid only 0
    POT_SHIFTS: tuple[int, ...] = (0,)

    def prepare_params(self) -> None:
        if self.inputs[0].type != T.INT16:
            self.table8 = fp.lut_populate_8bit(
                type(self).FUNCTION, self.input_scale, self.input_zero_point,
                self.output_scale, self.output_zero_point, self.inputs[0].dtype,
            )
            return
        # TanhPrepare / SigmoidPrepare for int16 (kInputIntegerBits = 3)
        self.input_multiplier = 0
        is_pot, log2 = fp.checked_log2(self.input_scale)
        self.input_left_shift = (15 - 3) + log2
        if not (is_pot and self.input_left_shift in self.POT_SHIFTS):
            # rescale to 1/(3 * 4096): +-2^17 stands for +-10.7
            multiplier = self.input_scale * 4096.0 * 3.0
            self.input_left_shift = 0
            while multiplier <= 32767.0 / 2.0 and self.input_left_shift <= 30:
                self.input_left_shift += 1
                multiplier = multiplier * 2.0
            self.input_multiplier = int(multiplier)
        is_pot, log2 = fp.checked_log2(self.output_scale)
        if not is_pot or log2 != -15:
            raise self.unsupported(f"the int16 output needs scale 2^-15 (got {self.output_scale!r})")

    def compute(self, values: np.ndarray) -> np.ndarray:
        if self.inputs[0].type != T.INT16:
            info = np.iinfo(self.inputs[0].dtype)
            return self.table8[values - int(info.min)].astype(np.int64)
        multiplier, left_shift = self.input_multiplier, self.input_left_shift
        if multiplier == 0:  # power of two case
            multiplier, left_shift = 3 << left_shift, 0
        rounding = (1 << (left_shift - 1)) if left_shift > 0 else 0
        rescaled = fp.wrap32(values * multiplier + rounding) >> left_shift
        return self.lookup(rescaled)

    def lookup(self, rescaled: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@register(B.LOGISTIC, 1, 3)  # v1: float32 (activations.py) and uint8; v2: int8; v3: int16
class QuantizedLogistic(_SigmoidFamily):
    """LOGISTIC v1 (uint8), v2 (int8): float LUT, output scale 1/256; v3 (int16): sigmoid table."""

    FUNCTION = staticmethod(_logistic_f32)
    POT_SHIFTS = (0,)

    def prepare_params(self) -> None:
        want = 1.0 / 32768 if self.inputs[0].type == T.INT16 else 1.0 / 256
        if self.output_scale != want:
            raise self.unsupported(f"the output needs scale {want!r} (got {self.output_scale!r})")
        super().prepare_params()

    def lookup(self, rescaled: np.ndarray) -> np.ndarray:
        table = fp.sigmoid_table_uint16
        magnitude = np.abs(rescaled)
        high = magnitude >> 9
        clamped = np.minimum(high, 254)
        low_value, high_value = table[clamped], table[clamped + 1]
        fraction = magnitude & 0x1FF
        result = np.where(high >= 255, np.int64(0x7FFF << 10), (low_value << 9) + fraction * (high_value - low_value))
        result = np.where(rescaled >= 0, result + (1 << 9), (1 << (16 + 9)) - result + (1 << 9) - 1)
        return fp.wrap16(result >> 10)


@register(B.TANH, 1, 3)  # v1: float32 (activations.py) and uint8; v2: int8; v3: int16
class QuantizedTanh(_SigmoidFamily):
    """TANH v1 (uint8), v2 (int8): float LUT; v3 (int16): sigmoid table (tanh(x) = 2 sigmoid(2x) - 1)."""

    FUNCTION = staticmethod(fp.c_tanhf)
    POT_SHIFTS = (0, 1)

    def lookup(self, rescaled: np.ndarray) -> np.ndarray:
        table = fp.sigmoid_table_uint16
        magnitude = np.abs(rescaled)
        high = magnitude >> 8
        clamped = np.minimum(high, 254)
        low_value, high_value = table[clamped], table[clamped + 1]
        fraction = magnitude & 0xFF
        result = np.where(high >= 255, np.int64(0xFFFF << 8), (low_value << 8) + fraction * (high_value - low_value))
        result = np.where(rescaled >= 0, result - (1 << (14 + 9)) + (1 << (9 - 2)), -result + (1 << (14 + 9)) + (1 << (9 - 2)) - 1)
        return fp.wrap16(result >> (9 - 1))


@register(B.ELU, 1, 1)  # v1: float32 (activations.py) and int8
class QuantizedElu(QuantizedElementwise):
    """ELU v1 (int8): a float LUT of ``x < 0 ? expm1(x) : x``."""

    TYPES = (T.INT8,)
    MIN_VERSION = {T.INT8: 1}

    def compute(self, values: np.ndarray) -> np.ndarray:
        table = fp.lut_populate_8bit(
            _elu_f32, self.input_scale, self.input_zero_point, self.output_scale, self.output_zero_point, np.int8
        )
        return table[values + 128].astype(np.int64)


# --- PRELU ------------------------------------------------------------------------------


@register(B.PRELU, 1, 1)  # v1: float32 (activations.py), uint8, int8
class QuantizedPrelu(CpuKernel):
    """PRELU v1 (uint8, int8): ``x >= 0 ? x : x * alpha``, alpha broadcast against x.

    The output depends on the (alpha, input) pair of raw values only: a 256 x 256 table
    built at prepare, indexed by ``alpha_code * 256 + input_code``.
    """

    @classmethod
    def accepts(cls, context, node) -> bool:
        return len(node.inputs) > 0 and node.inputs[0] >= 0 and is_quantized(context.tensors[node.inputs[0]])

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, alpha = self.inputs
        y = self.outputs[0]
        for tensor, role in ((x, "input"), (alpha, "alpha"), (y, "output")):
            self.require_types(tensor, T.UINT8, T.INT8, role=role)
            if tensor.type != x.type:
                raise self.unsupported(f"the {role} {tensor.name!r} is {tensor.type_name}; it must have the input's type {x.type_name}")
            if not is_quantized(tensor):
                raise self.unsupported(f"the {role} {tensor.name!r} has no quantization parameters")
            if tensor.quantization.is_per_channel:
                raise self.unsupported(f"the {role} {tensor.name!r} is quantized per channel; TFLite needs one scale")
        if broadcast_shape(x.shape, alpha.shape) != x.shape:
            raise self.unsupported(
                f"alpha {list(alpha.shape)} must broadcast to the input's shape {list(x.shape)} (TFLite requires it)"
            )
        s_in, z_in = scale_zero_point(x)
        s_alpha, z_alpha = scale_zero_point(alpha)
        s_out, z_out = scale_zero_point(y)
        # float32 ratios (PreluPrepare), then QuantizeMultiplier(double)
        multiplier_1, shift_1 = requantization_multiplier(float(f32(s_in) / f32(s_out)), "input scale / output scale")
        multiplier_2, shift_2 = requantization_multiplier(float(f32(s_in) * f32(s_alpha) / f32(s_out)), "input scale x alpha scale / output scale")
        values = all_values(x.dtype)
        input_value = values[None, :] - z_in  # [1, input code]
        alpha_value = values[:, None] - z_alpha  # [alpha code, 1]
        positive = multiply_by_quantized_multiplier(input_value, multiplier_1, shift_1)
        negative = multiply_by_quantized_multiplier(input_value * alpha_value, multiplier_2, shift_2)
        info = np.iinfo(y.dtype)
        out = np.where(input_value >= 0, positive, negative) + z_out
        #: out[alpha_code * 256 + input_code]
        self.table = np.clip(out, info.min, info.max).astype(y.dtype).ravel()
        y.resize(x.shape)
        self.alpha_index = self.alpha_codes(alpha.data) if alpha.is_constant else None
        self.index = np.empty(x.shape, np.uint16)

    @staticmethod
    def alpha_codes(alpha: np.ndarray) -> np.ndarray:
        return np.left_shift(alpha.view(np.uint8).astype(np.uint16), 8)

    def invoke(self) -> None:
        alpha_index = self.alpha_index if self.alpha_index is not None else self.alpha_codes(self.inputs[1].data)
        np.add(alpha_index, self.inputs[0].data.view(np.uint8), out=self.index)
        np.take(self.table, self.index, out=self.outputs[0].data, mode="wrap")  # index < 65536 = table size
