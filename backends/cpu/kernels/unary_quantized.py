"""Quantized elementwise math on int8 and int16 tensors: ABS, EXP, LOG, SQRT, RSQRT, GELU,
bit-exact with TFLite's kernels (``kernels/elementwise.cc``, ``exp.cc``, ``gelu.cc``,
``internal/common.h``'s ``LUTPopulate`` / ``LUTLookup``).

Per element, with ``q`` the raw input, ``z``/``s`` zero points and scales (per tensor; int16
tensors symmetric, zero points 0), ``M(x, m, n)`` TFLite's ``MultiplyByQuantizedMultiplier``:

- ABS (v2 int8, v3 int16): ``|q - z_in|``, plus ``z_out`` when the scales are equal, else
  ``M(|q - z_in|, s_in / s_out) + z_out``; clamped.
- EXP (v2), LOG (v2), RSQRT on int16 (v3), GELU (v2 int8/uint8, v3 int16): a table built
  from the float function (``LUTPopulate``): 256 entries ``roundf(f(s_in * (q - z_in)) /
  s_out) + z_out`` for 8-bit types; for int16, 513 samples of f, biased to halve the
  interpolation error at the midpoints, looked up with 7 bits of linear interpolation. LOG
  maps inputs <= 0 to the output's minimum, RSQRT to 32767 * s_out.
- SQRT (v2): ``int(sqrtf(s_in * (q - z_in)) / s_out) + z_out`` in float32, truncated.
- RSQRT on int8 (v2): 1 / sqrt(q - z_in) in TFLite's fixed point
  (``GetInvSqrtQuantizedMultiplierExp``), rescaled by ``1 / (sqrt(s_in) * s_out)``; 0
  gives 127.

SQRT and RSQRT fail at invoke on an input below the zero point, as TFLite's do. Every one
of these maps an input value to an output value, so the whole function is tabulated at
prepare (``QuantizedElementwise``) and invoke is one ``take``. Float inputs stay with the
float kernels (``unary.py``, ``activations.py``), for every version: TFLite's kernels look at
the types, not at the version.
"""

from __future__ import annotations

import math

import numpy as np

from backends.cpu.kernel import register
from backends.cpu.kernels import _fixed_point as fp
from backends.cpu.kernels.activations_quantized import QuantizedElementwise
from backends.cpu.quantization import multiply_by_quantized_multiplier, requantization_multiplier
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType
f32 = np.float32


class _LutElementwise(QuantizedElementwise):
    """An op whose int8/uint8 form is a 256-entry float table and whose int16 form is
    TFLite's interpolated 513-entry table, both from :meth:`transform` (float32 -> float32)."""

    TYPES = (T.INT8, T.INT16)

    def transform(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def compute(self, values: np.ndarray) -> np.ndarray:
        scales = (self.input_scale, self.input_zero_point, self.output_scale, self.output_zero_point)
        if self.inputs[0].type == T.INT16:
            return fp.lut_lookup_int16(values, fp.lut_populate_int16_f32(self.transform, *scales))
        dtype = self.inputs[0].dtype
        table = fp.lut_populate_8bit(self.transform, *scales, dtype)
        return table[values - int(np.iinfo(dtype).min)].astype(np.int64)


@register(B.ABS, 1, 5)  # v2: int8, v3: int16 (quantized); float32 and plain int16/int32: unary.py
class QuantizedAbs(QuantizedElementwise):
    """ABS v2 (int8) and v3 (int16), quantized."""

    TYPES = (T.INT8, T.INT16)

    def prepare_params(self) -> None:
        self.rescale = self.input_scale != self.output_scale
        if self.rescale:  # QuantizeMultiplier(input_scale / output_scale), the ratio in float32
            self.multiplier, self.shift = requantization_multiplier(
                float(f32(self.input_scale) / f32(self.output_scale)), "input scale / output scale"
            )

    def compute(self, values: np.ndarray) -> np.ndarray:
        magnitude = np.abs(values - self.input_zero_point)
        if self.rescale:
            magnitude = multiply_by_quantized_multiplier(magnitude, self.multiplier, self.shift)
        return magnitude + self.output_zero_point


@register(B.EXP, 1, 2)  # v2: int8 / int16 (quantized); float32: unary.py
class QuantizedExp(_LutElementwise):
    """EXP v2: int8 and int16, tables of ``expf``."""

    def transform(self, x: np.ndarray) -> np.ndarray:
        return fp.c_expf(x)


@register(B.LOG, 1, 2)  # v2: int8 / int16 (quantized); float32: unary.py
class QuantizedLog(_LutElementwise):
    """LOG v2: int8 and int16, tables of ``logf``, inputs <= 0 mapped to the output's minimum."""

    def prepare_params(self) -> None:
        lowest = int(np.iinfo(self.inputs[0].dtype).min)
        self.output_min = f32(lowest - self.output_zero_point) * f32(self.output_scale)

    def transform(self, x: np.ndarray) -> np.ndarray:
        positive = x > 0
        logs = fp.c_logf(np.where(positive, x, f32(1)))
        return np.where(positive, logs, self.output_min).astype(np.float32)


class _DefinedFromTheZeroPoint(QuantizedElementwise):
    """SQRT and RSQRT: TFLite fails at invoke on an input below the zero point."""

    def bind(self):
        """The checked ``invoke`` (the table lookup bound by the base class skips the check)."""
        return self.invoke

    def invoke(self) -> None:
        x = self.inputs[0].data
        if x.size and int(x.min()) < self.input_zero_point:
            raise ValueError(
                f"{self.op_name} v{self.version}: input {self.inputs[0].name!r} holds a value below its zero point "
                f"{self.input_zero_point}; {self.op_name} is only defined for non-negative values (as in TFLite)"
            )
        super().invoke()


@register(B.SQRT, 1, 2)  # v2: int8 / int16 (quantized); float32: unary.py
class QuantizedSqrt(_DefinedFromTheZeroPoint):
    """SQRT v2: int8 and int16, through float32 (``sqrtf``), truncated to the output."""

    TYPES = (T.INT8, T.INT16)

    def compute(self, values: np.ndarray) -> np.ndarray:
        dequantized = f32(self.input_scale) * (values - self.input_zero_point).astype(np.float32)
        with np.errstate(invalid="ignore"):
            roots = np.sqrt(np.maximum(dequantized, f32(0))) / f32(self.output_scale)
        return np.trunc(roots).astype(np.int64) + self.output_zero_point


@register(B.RSQRT, 1, 3)  # v2: int8, v3: int16 (quantized); float32: unary.py
class QuantizedRsqrt(_DefinedFromTheZeroPoint):
    """RSQRT v2 (int8: TFLite's fixed-point inverse square root) and v3 (int16: a table)."""

    TYPES = (T.INT8, T.INT16)
    SHIFT = 20  # TFLite's kShift: keeps the intermediate an integer

    def prepare_params(self) -> None:
        if self.inputs[0].type == T.INT8:
            # 1. / (std::sqrt(input_scale) * output_scale): the product in float32, the quotient in double
            self.multiplier, self.shift = requantization_multiplier(
                1.0 / float(np.sqrt(f32(self.input_scale)) * f32(self.output_scale)), "1 / (sqrt(input scale) x output scale)"
            )

    def transform(self, x: np.ndarray) -> np.ndarray:
        positive = x > 0
        roots = f32(1) / np.sqrt(np.where(positive, x, f32(1)))
        return np.where(positive, roots, f32(32767) * f32(self.output_scale)).astype(np.float32)

    def compute(self, values: np.ndarray) -> np.ndarray:
        scales = (self.input_scale, self.input_zero_point, self.output_scale, self.output_zero_point)
        if self.inputs[0].type == T.INT16:
            return fp.lut_lookup_int16(values, fp.lut_populate_int16_f32(self.transform, *scales))
        results = []
        for value in (values - self.input_zero_point).tolist():
            if value <= 0:  # 0 gives the maximum; below 0 the node fails at invoke
                results.append(127)
                continue
            inv_multiplier, inv_shift = fp.inv_sqrt_quantized_multiplier(value, -1)
            data = multiply_by_quantized_multiplier(1, inv_multiplier, inv_shift + self.SHIFT)
            output = multiply_by_quantized_multiplier(data, self.multiplier, self.shift - self.SHIFT)
            results.append(int(output) + self.output_zero_point)
        return np.array(results, np.int64)


SQRT_2_OVER_PI = f32(2 / math.sqrt(math.pi) * math.sqrt(0.5))  # M_2_SQRTPI * M_SQRT1_2, as a float
MINUS_SQRT_HALF = f32(-math.sqrt(0.5))


@register(B.GELU, 1, 3)  # v2: int8 / uint8, v3: int16 (quantized); float32: activations.py
class QuantizedGelu(_LutElementwise):
    """GELU v2 (int8, uint8) and v3 (int16): tables of TFLite's float GELU (exact: erfc;
    ``approximate``: tanh)."""

    TYPES = (T.INT8, T.UINT8, T.INT16)

    def transform(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float32)
        half_x = f32(0.5) * x
        if self.params is not None and self.params.approximate:
            cubic = f32(0.044715) * x * x * x
            return (half_x * (f32(1) + fp.c_tanhf(SQRT_2_OVER_PI * (x + cubic)))).astype(np.float32)
        return (half_x * fp.c_erfcf(x * MINUS_SQRT_HALF)).astype(np.float32)
