"""More float32 activations on the GPU: GELU (exact and approximate), ELU, RELU_N1_TO_1,
RELU_0_TO_1.

Semantics are the CPU kernels' (``backends/cpu/kernels/activations.py``, ``relu.py``),
i.e. TFLite's float kernels, computed in the same order of float32 operations:

    GELU          0.5 * x * erfc(-x / sqrt(2))                               (exact)
                  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))  (approximate)
    ELU           x < 0 ? expm1(x) : x
    RELU_N1_TO_1  min(max(x, -1), 1)
    RELU_0_TO_1   min(max(x, 0), 1)                (NaN passes through the clamps)

How: one launch per node, ``elementwise_unary`` of ``cuda/elementwise.cu``
(``cuda/elementwise.py``'s ``ElementwiseUnaryCuda``; its numpy twin in host emulation):
load the storage dtype (float32 or float16), compute in float32, store. The exact GELU's
erfc is the CPU kernel's Chebyshev fit (``ERFC_COEFFICIENTS``, fractional error < 1.2e-7),
evaluated with the same steps, each rounded (no fused multiply-add). Where the GPU may
differ in the last bits: ``expf``, ``expm1f`` and ``tanhf`` are CUDA's (within 1-2 ulp of
glibc's), far inside the 1e-5 relative tolerance; the clamps are exact.

Versions claimed: 1 for each. GELU v2 is int8/uint8 (quantized); ELU, RELU_N1_TO_1 and
RELU_0_TO_1 v1 also cover quantized int8/uint8 tensors in TFLite, which these float
classes refuse by type.
"""

from __future__ import annotations

from backends.gpu.cuda.elementwise import ElementwiseUnaryCuda
from backends.gpu.ops.elementwise import FloatOp
from schema.enums import BuiltinOperator

B = BuiltinOperator

#: The clamp of each RELU-like op (low, high).
RELU_RANGES = {B.RELU_N1_TO_1: (-1.0, 1.0), B.RELU_0_TO_1: (0.0, 1.0)}


class _UnaryFloat(FloatOp):
    """One float32 input, one float32 output of its shape, computed by one launch of
    ``elementwise_unary`` (``cuda/elementwise.cu``): the op and clamp that
    :meth:`kernel_op` names."""

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        return None

    def kernel_op(self) -> tuple[str, tuple[float, float] | None]:
        """The kernel's op (``cuda.elementwise.UNARY_OPS``) and its clamp (None: none)."""
        raise NotImplementedError

    def prepare(self) -> None:
        op, bounds = self.kernel_op()
        self.kernel = ElementwiseUnaryCuda(
            op, bounds=bounds, storage=self.storage, **self.device.launcher_arguments("elementwise.cu")
        )

    def run(self, args):
        return [self.kernel(self.store(args[0]))]


class Gelu(_UnaryFloat):
    """GELU v1 (float32), exact (erfc) or ``approximate`` (tanh)."""

    ops = {B.GELU: 1}

    def kernel_op(self):
        approximate = bool(getattr(self.params, "approximate", False)) if self.params is not None else False
        return ("GELU_TANH" if approximate else "GELU"), None


class Elu(_UnaryFloat):
    """ELU v1 (float32): ``x < 0 ? expm1(x) : x`` (NaN stays NaN)."""

    ops = {B.ELU: 1}

    def kernel_op(self):
        return "ELU", None


class ReluRange(_UnaryFloat):
    """RELU_N1_TO_1 and RELU_0_TO_1 v1 (float32): a clamp to [-1, 1] / [0, 1]."""

    ops = {B.RELU_N1_TO_1: 1, B.RELU_0_TO_1: 1}

    def kernel_op(self):
        # A clamp: exact in any storage dtype (the bounds are exact in float16).
        return "CLAMP", RELU_RANGES[self.op]
