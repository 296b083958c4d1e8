"""Comparisons of quantized tensors (LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, EQUAL,
NOT_EQUAL on uint8, int8, int16) and ARG_MAX / ARG_MIN on int8, bit-exact with TFLite's
reference kernels (``kernels/comparisons.cc``, ``reference/comparisons.h``,
``kernels/arg_min_max.cc``).

Two inputs with different scales or zero points are compared on a common scale, as
TFLite's ``ComparisonWithScaling`` does::

    (m_i, n_i) = QuantizeMultiplierSmallerThanOneExp(s_i)        (each input's own scale)
    v_i = M((q_i - z_i) << 8, m_i, n_i)
    out = v_1 OP v_2                                             (int32 comparison)

(``M`` is ``MultiplyByQuantizedMultiplier``.) Input scales of 1 or more are refused:
TFLite's result is undefined behaviour there (see ``scale_multiplier``). TFLite
broadcasts quantized comparisons up to 4-D.

A quirk reproduced: for int16, only EQUAL and NOT_EQUAL rescale; LESS, LESS_EQUAL,
GREATER and GREATER_EQUAL compare the raw int16 values whatever the scales and zero
points (TFLite's kernels send int16 to the plain comparison; checked with LiteRT 2.3).

ARG_MAX / ARG_MIN compare raw values: the index of the largest raw value is that of the
largest real value whatever the scale (v1 uint8 and v3 bool are in arg_min_max.py).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import register
from backends.cpu.kernels.arg_min_max import ArgMinMax
from backends.cpu.kernels.binary_quantized import (
    QuantizedPairwise,
    quantize_multiplier_smaller_than_one,
    tensor_params,
)
from backends.cpu.quantization import multiply_by_quantized_multiplier
from schema.enums import BuiltinOperator, TensorType, tensor_type_name

B = BuiltinOperator
T = TensorType

COMPARISON_UFUNC = {
    B.LESS: np.less,
    B.LESS_EQUAL: np.less_equal,
    B.GREATER: np.greater,
    B.GREATER_EQUAL: np.greater_equal,
    B.EQUAL: np.equal,
    B.NOT_EQUAL: np.not_equal,
}

#: Rescaling left shift of TFLite's quantized comparisons.
LEFT_SHIFT = 8


# v1: uint8 (float32, int32, int64 v1 are in comparison.py); v2: int8; int16 is v3 for
# LESS / GREATER_EQUAL, v5 for EQUAL, v4 for NOT_EQUAL, and stays v1 for GREATER /
# LESS_EQUAL.
@register(B.LESS, 1, 3)
@register(B.GREATER_EQUAL, 1, 3)
@register(B.LESS_EQUAL, 1, 2)
@register(B.GREATER, 1, 2)
@register(B.EQUAL, 1, 2)
@register(B.EQUAL, 5, 5)
@register(B.NOT_EQUAL, 1, 2)
@register(B.NOT_EQUAL, 4, 4)
class QuantizedComparison(QuantizedPairwise):
    """LESS, GREATER_EQUAL v1-v3; LESS_EQUAL, GREATER v1-v2; EQUAL v1, v2, v5; NOT_EQUAL
    v1, v2, v4, on quantized uint8, int8, int16 (both sides rescaled to a common scale)."""

    same_output_type = False

    def setup(self) -> None:
        x, y = self.inputs
        self.require_types(self.outputs[0], T.BOOL, role="output")
        if x.shape != y.shape and len(self.out_shape) > 4:
            raise self.unsupported(f"TFLite broadcasts quantized comparisons up to 4-D, not {len(self.out_shape)}-D")
        self.ufunc = COMPARISON_UFUNC[self.op]
        self.raw = x.type == T.INT16 and self.op not in (B.EQUAL, B.NOT_EQUAL)
        if self.raw:
            return
        s1, z1 = tensor_params(x)
        s2, z2 = tensor_params(y)
        self.offsets = (-z1, -z2)
        self.m1 = self.scale_multiplier(s1, "input 1")
        self.m2 = self.scale_multiplier(s2, "input 2")

    def scale_multiplier(self, scale: float, what: str) -> tuple[int, int]:
        """comparisons.cc's ``QuantizeMultiplier`` of an input scale, for scales below 1.

        From 1 up TFLite takes ``QuantizeMultiplierGreaterThanOne`` (aborting on exactly
        1) and applies the positive shift through ``RoundingDivideByPOT`` with a negative
        exponent: undefined behaviour in C++, whose x86 result (shift counts taken modulo
        32) makes LiteRT 2.3's answers meaningless there. Such nodes are refused.
        """
        if scale >= 1.0:
            raise self.unsupported(
                f"{what} has scale {scale!r} >= 1: TFLite's quantized comparison is undefined there "
                "(a negative shift count; LiteRT's x86 answers are not a comparison of the real values)"
            )
        return quantize_multiplier_smaller_than_one(self, scale, f"{what} scale as a")

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.raw:
            return self.ufunc(a, b)
        off1, off2 = self.offsets
        scaled1 = multiply_by_quantized_multiplier((a + off1) << LEFT_SHIFT, *self.m1)
        scaled2 = multiply_by_quantized_multiplier((b + off2) << LEFT_SHIFT, *self.m2)
        return self.ufunc(scaled1, scaled2)


@register(BuiltinOperator.ARG_MAX, 2, 2)  # v2: int8 (v1 float32/int32/uint8, v3 bool: arg_min_max.py)
@register(BuiltinOperator.ARG_MIN, 2, 2)
class QuantizedArgMinMax(ArgMinMax):
    """ARG_MAX and ARG_MIN version 2: int8 input, raw values compared (first index on ties)."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        data, axis = self.inputs
        self.require_types(data, T.INT8)
        self.require_types(axis, T.INT32, T.INT64, role="axis")
        if axis.num_elements != 1:
            raise self.unsupported(f"the axis tensor must hold one value, it has shape {list(axis.shape)}")
        if len(data.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        output_type = self.params.output_type if self.params is not None else T.FLOAT32
        if output_type not in (T.INT32, T.INT64):
            raise self.unsupported(f"output_type {tensor_type_name(output_type)}: only INT32 and INT64 are supported")
        self.require_types(self.outputs[0], output_type, role="output")
        self.is_max = self.op == BuiltinOperator.ARG_MAX
        self.is_float = False
        if axis.is_constant:
            self.axis = self._checked_axis(axis.data, data.shape)
            self.outputs[0].resize(data.shape[: self.axis] + data.shape[self.axis + 1 :])
        else:
            self.axis = None
            self.outputs[0].set_dynamic()
