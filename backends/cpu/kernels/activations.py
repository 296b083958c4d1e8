"""Float32 activations: LOGISTIC, TANH, LEAKY_RELU, PRELU, ELU, HARD_SWISH, GELU.

The math of TFLite's float kernels (``kernels/activations.cc``, ``gelu.cc``,
``internal/reference/{logistic,leaky_relu,prelu,hard_swish,gelu}.h``):

    LOGISTIC    1 / (1 + exp(-x))
    TANH        tanh(x)
    LEAKY_RELU  x > 0 ? x : alpha * x              (any alpha, also > 1 or < 0)
    PRELU       x >= 0 ? x : alpha * x             (alpha broadcast to x's shape)
    ELU         x < 0 ? expm1(x) : x
    HARD_SWISH  x * min(6, max(0, x + 3)) / 6
    GELU        0.5 * x * erfc(-x / sqrt(2))                                (exact)
                0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))   (approximate)

Version 1 of each op is float32 here (it also covers quantized uint8/int8 in TFLite,
not implemented yet, like the later int8/int16 versions).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.binary import is_quantized
from backends.cpu.kernels.comparison import merge_bits
from schema.enums import BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator

# Numerical Recipes' erfc (Chebyshev fit, fractional error < 1.2e-7 everywhere):
#   erfc(z) = t * exp(-z^2 + P(t)),  t = 1 / (1 + z / 2),  for z >= 0;  erfc(-z) = 2 - erfc(z).
# numpy has no erf; this is far inside float32's 1e-5 tolerance (measured against math.erfc).
ERFC_COEFFICIENTS = (
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
)
INV_SQRT2 = np.float32(1.0 / math.sqrt(2.0))
SQRT_2_OVER_PI = np.float32(math.sqrt(2.0 / math.pi))
GELU_CUBIC = np.float32(0.044715)


def combine_for_slopes(alpha: np.ndarray):
    """For ``x > 0 ? x : alpha * x`` (or ``>=``) with constant slopes: ``np.maximum`` when
    every alpha is in (0, 1], ``np.minimum`` when every alpha is a finite value > 1; then
    the op is combine(alpha * x, x) with no selection (exact, infinities included). None
    otherwise (alpha <= 0, where 0 * inf would be NaN, mixed slopes, non-finite alpha)."""
    if alpha.size == 0:
        return None
    if np.all((alpha > 0) & (alpha <= 1)):
        return np.maximum
    if np.all((alpha > 1) & np.isfinite(alpha)):
        return np.minimum
    return None


class FloatActivation(CpuKernel):
    """Shared prepare: one float32 input (plus PRELU's alpha), float32 output of its shape."""

    def check_float32(self, *tensors) -> None:
        for tensor in tensors:
            if tensor is not None and is_quantized(tensor):
                raise self.unsupported(
                    f"tensor {tensor.name!r} is quantized ({tensor.type_name} with scales); "
                    "quantized kernels are not implemented yet; this kernel supports FLOAT32"
                )
            self.require_types(tensor, T.FLOAT32, role="input" if tensor is not self.outputs[0] else "output")

    def prepare(self) -> None:
        self.require_num_inputs(1)
        self.check_float32(self.inputs[0], self.outputs[0])
        self.outputs[0].resize(self.inputs[0].shape)


@register(B.LOGISTIC, 1, 1)  # v1: float32 (and quantized uint8); v2 int8; v3 int16
class Logistic(FloatActivation):
    """LOGISTIC v1 (float32)."""

    def invoke(self) -> None:
        out = self.outputs[0].data
        np.negative(self.inputs[0].data, out=out)
        with np.errstate(over="ignore"):  # exp(-x) = inf for x < -88 gives 0, as in TFLite
            np.exp(out, out=out)
        out += 1
        np.reciprocal(out, out=out)


@register(B.TANH, 1, 1)  # v1: float32 (and quantized uint8); v2 int8; v3 int16
class Tanh(FloatActivation):
    """TANH v1 (float32)."""

    def invoke(self) -> None:
        np.tanh(self.inputs[0].data, out=self.outputs[0].data)


@register(B.LEAKY_RELU, 1, 1)  # v1: float32 (and quantized uint8/int8); v2 int16
class LeakyRelu(FloatActivation):
    """LEAKY_RELU v1 (float32): x > 0 ? x : alpha * x."""

    def prepare(self) -> None:
        super().prepare()
        self.alpha = np.float32(self.params.alpha if self.params is not None else 0.0)
        self.combine = combine_for_slopes(np.asarray(self.alpha))
        self.mask = np.empty(self.outputs[0].shape, dtype=np.uint32) if self.combine is None else None

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        np.multiply(x, self.alpha, out=out)
        if self.combine is not None:
            self.combine(out, x, out=out)
        else:
            merge_bits(out, np.greater(x, 0), x, self.mask)


@register(B.PRELU, 1, 1)  # v1: float32 (and quantized uint8/int8)
class Prelu(FloatActivation):
    """PRELU v1 (float32): x >= 0 ? x : alpha * x, alpha broadcast against x."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, alpha = self.inputs
        self.check_float32(x, alpha, self.outputs[0])
        if broadcast_shape(x.shape, alpha.shape) != x.shape:
            raise self.unsupported(
                f"alpha {list(alpha.shape)} must broadcast to the input's shape {list(x.shape)} (TFLite requires it)"
            )
        self.outputs[0].resize(x.shape)
        self.combine = combine_for_slopes(alpha.data) if alpha.is_constant else None
        self.mask = np.empty(x.shape, dtype=np.uint32) if self.combine is None else None

    def invoke(self) -> None:
        x, alpha, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        np.multiply(x, alpha, out=out)
        if self.combine is not None:
            self.combine(out, x, out=out)
        else:
            merge_bits(out, np.greater_equal(x, 0), x, self.mask)

    #: The slopes are tiled to rows of at least this many values (``slope_row``).
    ROW = 8192

    def bind(self) -> Callable[[], None]:
        """Constant, finite, nonzero slopes: passes over ``[rows, L]`` views, the slopes
        tiled once to a row of L values (a row of the input's trailing axes), so that
        numpy's inner loop runs over L values rather than alpha's few channels.

        With ``c = -1`` where alpha > 1 and ``+1`` elsewhere, ``x >= 0 ? x : alpha * x``
        is ``c * max(c * alpha * x, c * x)`` exactly: for x > 0 the second is larger (alpha
        < 1) or the first is smaller once negated (alpha > 1), for x < 0 the reverse; at
        x = +-0 both are equal and ``np.maximum`` returns its second operand, x (the zero
        TFLite keeps, as ``-0 >= 0``); infinities and NaN propagate as in the product (a
        zero slope is left to ``invoke``: 0 * inf). Multiplying by c only flips signs. All
        c = 1: two passes (``maximum(alpha * x, x)``); all c = -1: ``minimum``; mixed:
        four, with a scratch row block. [1, 96, 96, 32] with mixed slopes: 197 -> 100 us."""
        x, alpha, out = self.inputs[0], self.inputs[1], self.outputs[0]
        if not alpha.is_constant or not self.buffers_are_fixed() or x.data.size == 0 or alpha.data.size == 0:
            return self.invoke
        values = np.asarray(alpha.data, np.float32)
        if not (np.all(np.isfinite(values)) and np.all(values != 0)):
            return self.invoke
        if not (x.data.flags.c_contiguous and out.data.flags.c_contiguous):
            return self.invoke
        row = self.slope_row(values, x.shape)
        length = row.size
        rows_x, rows_out = x.data.reshape(-1, length), out.data.reshape(-1, length)
        multiply, maximum, minimum = np.multiply, np.maximum, np.minimum
        if np.all(row <= 1):

            def prelu_max() -> None:
                multiply(rows_x, row, out=rows_out)
                maximum(rows_out, rows_x, out=rows_out)

            return prelu_max
        if np.all(row > 1):

            def prelu_min() -> None:
                multiply(rows_x, row, out=rows_out)
                minimum(rows_out, rows_x, out=rows_out)

            return prelu_min
        signs = np.where(row > 1, np.float32(-1), np.float32(1))
        signed_slopes = signs * row  # exact: a sign flip
        scratch = np.empty_like(rows_x)

        def prelu_mixed() -> None:
            multiply(rows_x, signed_slopes, out=rows_out)
            multiply(rows_x, signs, out=scratch)
            maximum(rows_out, scratch, out=rows_out)
            multiply(rows_out, signs, out=rows_out)

        return prelu_mixed


    @classmethod
    def slope_row(cls, values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """The slopes of ``length`` consecutive values of the flat input, the input being a
        whole number of such rows: alpha broadcast to ``shape`` repeats with the period
        ``P`` of the axes from the first one along which it varies, and the row is ``k``
        periods, ``k`` the least divisor of the other axes' product that makes it at least
        ``ROW`` values long (the whole input when none does within 8 times that). numpy's
        loop then runs over long rows, as fast as over a full-size operand (rows of 2048 to
        4096 values ran several times slower, measured), with no full-size copy of the
        slopes ([1, 96, 96, 32]: 8,192 values instead of 294,912)."""
        slopes = np.broadcast_to(values.reshape((1,) * (len(shape) - values.ndim) + values.shape), shape)
        varying = next((axis for axis in range(len(shape)) if slopes.strides[axis] != 0 and shape[axis] > 1), len(shape))
        period, outer = math.prod(shape[varying:]), math.prod(shape[:varying])
        pattern = np.ascontiguousarray(slopes[(0,) * varying]).reshape(period)
        least = -(-cls.ROW // period)  # periods for a row of ROW values
        if least <= 1:
            return pattern
        if outer <= least:
            return np.tile(pattern, outer)
        repeat = next((k for k in range(least, min(outer, 8 * least) + 1) if outer % k == 0), outer)
        return np.tile(pattern, repeat)


@register(B.ELU, 1, 1)  # v1: float32 (and quantized int8)
class Elu(FloatActivation):
    """ELU v1 (float32): x < 0 ? expm1(x) : x."""

    def prepare(self) -> None:
        super().prepare()
        self.mask = np.empty(self.outputs[0].shape, dtype=np.uint32)

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        with np.errstate(over="ignore"):
            np.expm1(x, out=out)
        merge_bits(out, np.greater_equal(x, 0), x, self.mask)  # NaN: expm1(NaN) is NaN too


@register(B.HARD_SWISH, 1, 1)  # v1: float32 (and quantized uint8/int8)
class HardSwish(FloatActivation):
    """HARD_SWISH v1 (float32): x * relu6(x + 3) / 6."""

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        np.add(x, 3, out=out)
        np.clip(out, 0, 6, out=out)
        np.multiply(out, x, out=out)
        np.divide(out, 6, out=out)


@register(B.GELU, 1, 3)  # v1: float32 (exact or approximate); v2 int8/uint8, v3 int16 (quantized: unary_quantized.py)
class Gelu(FloatActivation):
    """GELU v1 (float32), exact (erfc) or ``approximate`` (tanh)."""

    #: The exact form makes ~30 passes; running them block by block keeps the data in
    #: cache (about twice as fast on large tensors) and bounds the scratch memory.
    BLOCK = 65536

    def prepare(self) -> None:
        super().prepare()
        self.approximate = bool(self.params.approximate) if self.params is not None else False
        if not self.approximate:
            size = min(self.BLOCK, self.outputs[0].num_elements)
            self.t = np.empty(size, dtype=np.float32)
            self.p = np.empty(size, dtype=np.float32)

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        if self.approximate:
            self.gelu_tanh(x, out)
            return
        x, out = x.reshape(-1), out.reshape(-1)
        with np.errstate(over="ignore", invalid="ignore"):
            for start in range(0, x.size, self.BLOCK):
                stop = min(start + self.BLOCK, x.size)
                self.gelu_erfc(x[start:stop], out[start:stop], self.t[: stop - start], self.p[: stop - start])

    @staticmethod
    def gelu_tanh(x: np.ndarray, out: np.ndarray) -> None:
        # 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), the inner factor as
        # x * (sqrt(2 / pi) + sqrt(2 / pi) * 0.044715 * x^2)
        np.multiply(x, x, out=out)
        out *= SQRT_2_OVER_PI * GELU_CUBIC
        out += SQRT_2_OVER_PI
        out *= x
        np.tanh(out, out=out)
        out += 1
        out *= x
        out *= 0.5

    @staticmethod
    def gelu_erfc(x: np.ndarray, out: np.ndarray, t: np.ndarray, p: np.ndarray) -> None:
        # r = erfc(z) with z = |x| / sqrt(2); erfc(-x / sqrt(2)) is r for x <= 0, 2 - r for x > 0.
        np.multiply(x, x, out=out)
        out *= -0.5  # out = -z^2
        np.absolute(x, out=t)
        t *= INV_SQRT2 / 2
        t += 1
        np.reciprocal(t, out=t)  # t = 1 / (1 + z / 2)
        np.multiply(t, ERFC_COEFFICIENTS[-1], out=p)
        p += ERFC_COEFFICIENTS[-2]
        for coefficient in ERFC_COEFFICIENTS[-3::-1]:
            p *= t
            p += coefficient
        out += p
        np.exp(out, out=out)
        out *= t  # out = r = erfc(z)
        # 0.5 * x * erfc(-x / sqrt(2)) = x * h with h = r / 2 (x <= 0), 1 - r / 2 (x > 0),
        # written h = q + [x > 0] * (1 - 2q), q = r / 2, without a masked (slow) operation.
        # The x > 0 form keeps GELU(+inf) = +inf.
        out *= 0.5
        np.multiply(out, -2, out=p)
        p += 1
        p *= np.greater(x, 0)
        out += p
        out *= x
