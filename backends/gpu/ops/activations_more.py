"""More float32 activations on the GPU: GELU (exact and approximate), ELU, RELU_N1_TO_1,
RELU_0_TO_1.

Semantics are the CPU kernels' (``backends/cpu/kernels/activations.py``, ``relu.py``),
i.e. TFLite's float kernels, computed in the same order of float32 operations:

    GELU          0.5 * x * erfc(-x / sqrt(2))                               (exact)
                  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))  (approximate)
    ELU           x < 0 ? expm1(x) : x
    RELU_N1_TO_1  min(max(x, -1), 1)
    RELU_0_TO_1   min(max(x, 0), 1)                (NaN passes through the clamps)

The exact GELU's erfc is the CPU kernel's Chebyshev fit (``ERFC_COEFFICIENTS``, fractional
error < 1.2e-7; CuPy has no ``erf`` in its main namespace either), evaluated with the
same steps. Where the GPU may differ in the last bits: ``expf``, ``expm1f`` and ``tanhf``
are CUDA's (within 1-2 ulp of glibc's), far inside the 1e-5 relative tolerance; the
clamps are exact.

Versions claimed: 1 for each. GELU v2 is int8/uint8 (quantized); ELU, RELU_N1_TO_1 and
RELU_0_TO_1 v1 also cover quantized int8/uint8 tensors in TFLite, which these float
classes refuse by type.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels.activations import ERFC_COEFFICIENTS, GELU_CUBIC, INV_SQRT2, SQRT_2_OVER_PI
from backends.gpu.ops.elementwise import FloatOp
from schema.enums import BuiltinOperator

B = BuiltinOperator

#: The clamp of each RELU-like op (low, high).
RELU_RANGES = {B.RELU_N1_TO_1: (-1.0, 1.0), B.RELU_0_TO_1: (0.0, 1.0)}


class _UnaryFloat(FloatOp):
    """One float32 input, one float32 output of its shape."""

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        return None


class Gelu(_UnaryFloat):
    """GELU v1 (float32), exact (erfc) or ``approximate`` (tanh)."""

    ops = {B.GELU: 1}

    def prepare(self) -> None:
        self.approximate = bool(getattr(self.params, "approximate", False)) if self.params is not None else False
        f32 = np.float32
        self.cubic = f32(SQRT_2_OVER_PI * GELU_CUBIC)
        self.coefficients = [f32(c) for c in ERFC_COEFFICIENTS]

    def run(self, args):
        x = self.compute(args[0])
        out = self.gelu_tanh(x) if self.approximate else self.gelu_erfc(x)
        return [self.store(out)]

    def gelu_tanh(self, x):
        # x * (sqrt(2 / pi) + sqrt(2 / pi) * 0.044715 * x^2), then tanh, in the CPU kernel's order
        inner = (x * x * self.cubic + SQRT_2_OVER_PI) * x
        return (self.xp.tanh(inner) + np.float32(1)) * x * np.float32(0.5)

    def gelu_erfc(self, x):
        xp, c = self.xp, self.coefficients
        f32 = np.float32
        # r = erfc(z), z = |x| / sqrt(2): t * exp(-z^2 + P(t)), t = 1 / (1 + z / 2)
        minus_z2 = x * x * f32(-0.5)
        t = xp.reciprocal(xp.absolute(x) * (INV_SQRT2 / f32(2)) + f32(1))
        p = t * c[-1] + c[-2]
        for coefficient in c[-3::-1]:
            p = p * t + coefficient
        half_r = xp.exp(minus_z2 + p) * t * f32(0.5)  # q = r / 2
        # 0.5 * x * erfc(-x / sqrt(2)) = x * (q + [x > 0] * (1 - 2q)); keeps GELU(+inf) = +inf
        step = (half_r * f32(-2) + f32(1)) * (x > 0)
        return (half_r + step) * x


class Elu(_UnaryFloat):
    """ELU v1 (float32): ``x < 0 ? expm1(x) : x`` (NaN stays NaN)."""

    ops = {B.ELU: 1}

    def run(self, args):
        xp = self.xp
        x = self.compute(args[0])
        return [self.store(xp.where(x >= 0, x, xp.expm1(x)))]


class ReluRange(_UnaryFloat):
    """RELU_N1_TO_1 and RELU_0_TO_1 v1 (float32): a clamp to [-1, 1] / [0, 1]."""

    ops = {B.RELU_N1_TO_1: 1, B.RELU_0_TO_1: 1}

    def prepare(self) -> None:
        self.low, self.high = RELU_RANGES[self.op]

    def run(self, args):
        # A clamp: exact in any storage dtype (the bounds are exact in float16), a new array.
        return [self.xp.clip(args[0], self.low, self.high)]
