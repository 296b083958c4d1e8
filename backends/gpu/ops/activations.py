"""Activations on the GPU: LOGISTIC TANH RELU RELU6 LEAKY_RELU HARD_SWISH PRELU GELU ELU
RELU_N1_TO_1 RELU_0_TO_1 on float32, and LOGISTIC TANH HARD_SWISH LEAKY_RELU on int8 /
uint8 (bit-exact with TFLite's reference kernels).

Float semantics are the CPU kernels' (``backends/cpu/kernels/activations.py``,
``relu.py``), i.e. TFLite's float kernels, computed in the same order of float32
operations:

    LOGISTIC      1 / (1 + exp(-x))
    LEAKY_RELU    x > 0 ? x : alpha * x
    PRELU         x >= 0 ? x : alpha * x    (alpha broadcast to x's shape: TFLite
                                            requires that it broadcasts *to* x)
    HARD_SWISH    x * min(6, max(0, x + 3)) / 6
    GELU          0.5 * x * erfc(-x / sqrt(2))                               (exact)
                  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))  (approximate)
    ELU           x < 0 ? expm1(x) : x
    RELU_N1_TO_1  min(max(x, -1), 1)
    RELU_0_TO_1   min(max(x, 0), 1)                (NaN passes through the clamps)

How (float): one launch per node, the hand-written kernels of ``cuda/elementwise.cu``
(``cuda/elementwise.py``: ``ElementwiseUnaryCuda``, the RELUs as a clamp;
``ElementwiseBinaryCuda`` for PRELU), their numpy twins in host emulation: load the
storage dtype (float32 or float16), compute in float32, store. A constant PRELU alpha is
uploaded once at prepare, in the storage dtype. The exact GELU's erfc is the CPU
kernel's Chebyshev fit (``ERFC_COEFFICIENTS``, fractional error < 1.2e-7), evaluated
with the same steps, each rounded (no fused multiply-add). Where the GPU may differ in
the last bits: ``expf``, ``expm1f`` and ``tanhf`` are CUDA's (within 1-2 ulp of
glibc's), far inside the 1e-5 relative tolerance; the clamps are exact.

Quantized (``backends/cpu/kernels/activations_quantized.py``): each of LOGISTIC, TANH,
HARD_SWISH, LEAKY_RELU maps one raw input value to one raw output value, so the CPU
kernel tabulates the whole function at prepare over the 256 input values, with TFLite's
own arithmetic: ``LUTPopulate`` of the C library's ``expf``/``tanhf`` for LOGISTIC and
TANH, the 16-bit fixed point of ``reference_ops::HardSwish``, the two
``MultiplyByQuantizedMultiplier`` of LEAKY_RELU. The GPU op configures that kernel's own
class for the node (``configure``: the checks, the multipliers and the table, no effect
on the tensors), uploads the table once, and each run is one launch of
``cuda/int8_elementwise.cu``'s ``lookup_b8`` at the input's bits.

Versions claimed:

- LOGISTIC, TANH, RELU, RELU6, LEAKY_RELU, HARD_SWISH, PRELU 1 (float32); GELU, ELU,
  RELU_N1_TO_1, RELU_0_TO_1 1 (float32). GELU v2 is int8/uint8 (quantized); ELU,
  RELU_N1_TO_1 and RELU_0_TO_1 v1 also cover quantized int8/uint8 tensors in TFLite,
  which these float classes refuse by type.
- Quantized: LOGISTIC and TANH v1 (uint8) and v2 (int8); HARD_SWISH v1 and LEAKY_RELU
  v1 (uint8 and int8). Not claimed: int16 (LOGISTIC/TANH v3, LEAKY_RELU v2). As on the
  CPU, the arithmetic follows the tensor types, not the stamped version.
"""

from __future__ import annotations

from backends.cpu.common import broadcast_shape
from backends.cpu.kernels.activations_quantized import (
    QuantizedHardSwish,
    QuantizedLeakyRelu,
    QuantizedLogistic,
    QuantizedTanh,
)
from backends.gpu.cuda.elementwise import ElementwiseBinaryCuda, ElementwiseUnaryCuda
from backends.gpu.cuda.int8_elementwise import LookupCuda
from backends.gpu.ops.base import FloatOp
from backends.gpu.ops.quantized_base import (
    QuantizedOp,
    configured_cpu_kernel,
    cpu_kernel_reason,
    node_tensors,
    per_tensor,
)
from schema.enums import BuiltinOperator

B = BuiltinOperator


#: The ``elementwise.cu`` unary op of each activation, and its clamp (the RELU family).
ACTIVATION_KERNEL_OPS: dict[int, tuple[str, tuple[float, float] | None]] = {
    B.LOGISTIC: ("LOGISTIC", None),
    B.TANH: ("TANH", None),
    B.RELU: ("CLAMP", (0.0, float("inf"))),
    B.RELU6: ("CLAMP", (0.0, 6.0)),
    B.LEAKY_RELU: ("LEAKY_RELU", None),
    B.HARD_SWISH: ("HARD_SWISH", None),
}


class Activation(FloatOp):
    """LOGISTIC, TANH, RELU, RELU6, LEAKY_RELU, HARD_SWISH version 1 (float32)."""

    ops = {B.LOGISTIC: 1, B.TANH: 1, B.RELU: 1, B.RELU6: 1, B.LEAKY_RELU: 1, B.HARD_SWISH: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        return None

    def prepare(self) -> None:
        alpha = float(getattr(self.params, "alpha", 0.0) or 0.0) if self.op == B.LEAKY_RELU else 0.0
        op, bounds = ACTIVATION_KERNEL_OPS[self.op]
        self.kernel = ElementwiseUnaryCuda(
            op, alpha=alpha, bounds=bounds, storage=self.storage, **self.device.launcher_arguments("elementwise.cu")
        )

    def run(self, args):
        return [self.kernel(self.store(args[0]))]


class Prelu(FloatOp):
    """PRELU version 1 (float32): ``x >= 0 ? x : alpha * x``, alpha (constant or not)
    broadcast to x's shape."""

    ops = {B.PRELU: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected 2 inputs (x, alpha), got {len(node.inputs)}"
        x, alpha = (tensors[i] for i in node.inputs)
        try:
            shape = broadcast_shape(x.shape, alpha.shape)
        except ValueError as error:
            return str(error)
        if shape != tuple(x.shape):
            return f"alpha {list(alpha.shape)} must broadcast to the input's shape {list(x.shape)} (TFLite requires it)"
        return None

    def prepare(self) -> None:
        alpha = self.inputs[1]
        self.alpha = None
        if alpha.is_constant:
            self.alpha = self.upload(alpha.data)  # in the storage dtype, as every constant
            self.prepared_inputs.add(1)
        self.kernel = ElementwiseBinaryCuda("PRELU", storage=self.storage, **self.device.launcher_arguments("elementwise.cu"))

    def run(self, args):
        alpha = self.alpha if self.alpha is not None else self.store(args[1])
        return [self.kernel(self.store(args[0]), alpha)]


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


class QuantizedActivation(QuantizedOp):
    """LOGISTIC v1-v2, TANH v1-v2, HARD_SWISH v1, LEAKY_RELU v1 on per-tensor int8/uint8:
    the CPU kernel's 256-entry table, looked up on the device."""

    ops = {B.LOGISTIC: 2, B.TANH: 2, B.HARD_SWISH: 1, B.LEAKY_RELU: 1}
    KERNELS = {
        B.LOGISTIC: QuantizedLogistic,
        B.TANH: QuantizedTanh,
        B.HARD_SWISH: QuantizedHardSwish,
        B.LEAKY_RELU: QuantizedLeakyRelu,
    }

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        for index in (node.inputs[0], node.outputs[0]):
            if not per_tensor(tensors[index]):
                return f"tensor {tensors[index].name!r} is quantized per channel; TFLite needs one scale"
        return cpu_kernel_reason(cls.KERNELS[op], node, op, version, tensors)

    def prepare(self) -> None:
        kernel = configured_cpu_kernel(self.KERNELS[self.op], self.node, self.op, self.version, node_tensors(self))
        #: the output of every input value, indexed by the value's code (bits as uint8)
        self.table = self.upload(kernel.table, self.outputs[0].dtype)
        self.launcher = LookupCuda(**self.device.launcher_arguments(LookupCuda.source))

    def run(self, args):
        return [self.launcher(args[0], self.table)]
