"""Elementwise ops on the GPU: ADD SUB MUL DIV (broadcasting, fused activation) and the
activations LOGISTIC TANH RELU RELU6 LEAKY_RELU PRELU HARD_SWISH.

Also the pieces every GPU op module shares: :class:`FloatOp` (the float32 tensor check
with readable reasons, and the per-op hook ``node_reason``) and the fused activations.

Semantics are the CPU kernels' (``backends/cpu/kernels/binary.py``, ``activations.py``,
``relu.py``), i.e. TFLite's float kernels:

- ADD/SUB/MUL/DIV end with ``min(max(r, lo), hi)`` (``CalculateActivationRange``): RELU
  [0, FLT_MAX], RELU6 [0, 6], RELU_N1_TO_1 [-1, 1], NONE and TANH [-FLT_MAX, FLT_MAX]
  (a fused TANH is *not* applied by these kernels; +-inf saturates to +-FLT_MAX).
  SIGN_BIT is rejected. x / 0 gives +-inf (then +-FLT_MAX), 0 / 0 NaN.
- LEAKY_RELU ``x > 0 ? x : alpha * x``; PRELU ``x >= 0 ? x : alpha * x`` with alpha
  broadcast to x's shape (TFLite requires that it broadcasts *to* x); HARD_SWISH
  ``x * min(6, max(0, x + 3)) / 6``; LOGISTIC ``1 / (1 + exp(-x))``.

How: one launch per node, the hand-written kernels of ``cuda/elementwise.cu``
(``cuda/elementwise.py``: ``ElementwiseBinaryCuda`` for ADD SUB MUL DIV, with the clamp
fused, and PRELU; ``ElementwiseUnaryCuda`` for the activations, the RELUs as a clamp). They
load the storage dtype (float32 or float16), compute in float32 and store the storage
dtype; in host emulation their numpy twins run, one launch each. A constant PRELU alpha is
uploaded once at prepare, in the storage dtype. LOGISTIC and TANH use CUDA's expf/tanhf on
a device (within a few ulp of the CPU's); everything else is exact IEEE arithmetic.

Every version claimed here is version 1: each of these ops' later versions is a
quantized (int8/int16/int64/float16-tensor) version, or broadcasting above rank 4
(SUB v3, DIV v2), which the rank limit of the delegate excludes.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from backends.cpu.common import broadcast_shape, calculate_activation_range
from backends.gpu.cuda.elementwise import ElementwiseBinaryCuda, ElementwiseUnaryCuda
from backends.gpu.ops.base import MAX_RANK, GpuOp, TypeReason
from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType, builtin_operator_name

Act = ActivationFunctionType
B = BuiltinOperator


#: Fused activations the GPU ops take (SIGN_BIT is rejected).
FUSED_ACTIVATIONS = (Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH)


def activation_name(activation: int) -> str:
    try:
        return Act(activation).name
    except ValueError:
        return f"unknown ({activation})"


def fused_activation(params: Any) -> int:
    return int(getattr(params, "fused_activation_function", Act.NONE) or Act.NONE) if params is not None else int(Act.NONE)


def fused_activation_reason(params: Any, allowed: Sequence[int] = FUSED_ACTIVATIONS) -> str | None:
    """A reason when the node's fused activation is not one of ``allowed``."""
    activation = fused_activation(params)
    if activation not in allowed:
        names = ", ".join(Act(a).name for a in allowed)
        return f"fused activation {activation_name(activation)} is not supported (supported: {names})"
    return None


def clamp_bounds(activation: int) -> tuple[float, float] | None:
    """The clamp of a fused activation as the float conv/pool/FC/concat kernels apply it
    (TFLite's ``CalculateActivationRange``; NONE and TANH: no clamp at all, RELU: no
    upper bound). A fused TANH is never applied by TFLite's float kernels."""
    if activation == Act.RELU:
        return (0.0, float("inf"))
    if activation == Act.RELU6:
        return (0.0, 6.0)
    if activation == Act.RELU_N1_TO_1:
        return (-1.0, 1.0)
    return None


def saturating_bounds(activation: int) -> tuple[float, float]:
    """The clamp of the binary ops, convolutions, fully-connected layers and pools:
    ``ActivationFunctionWithMinMax`` over TFLite's ``CalculateActivationRange<float>``, so
    NONE/TANH clamp to +-FLT_MAX and RELU to [0, FLT_MAX] (+-inf saturates)."""
    return calculate_activation_range(activation, np.float32)


def clamp(xp: Any, values: Any, bounds: tuple[float, float] | None) -> Any:
    """``min(max(values, low), high)`` (a new array), or ``values`` for no bounds."""
    if bounds is None:
        return values
    low, high = bounds
    if high == float("inf"):
        return xp.maximum(values, low)
    return xp.clip(values, low, high)


def input_tensor(node: Node, tensors: Sequence[RuntimeTensor], position: int) -> RuntimeTensor | None:
    """Input ``position`` of the node (None when absent or omitted)."""
    if position >= len(node.inputs) or node.inputs[position] < 0:
        return None
    return tensors[node.inputs[position]]


class FloatOp(GpuOp):
    """A GPU op on float32 tensors. Subclasses list in ``index_inputs`` the input positions
    that hold integers (paddings, axes, shapes, sizes: read on the host at prepare), and
    add their own conditions in :meth:`node_reason`."""

    ops: ClassVar[dict[int, int]] = {}
    #: The type of the data tensors (DEQUANTIZE overrides this for its input).
    data_type: ClassVar[int] = TensorType.FLOAT32

    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        checked = [(f"input {p}", i, cls.input_type(p)) for p, i in enumerate(node.inputs) if p not in cls.index_inputs]
        checked += [(f"output {p}", i, TensorType.FLOAT32) for p, i in enumerate(node.outputs)]
        for role, index, expected in checked:
            if index < 0:
                continue
            tensor = tensors[index]
            if tensor.type != expected:
                expected_name = TensorType(expected).name
                return TypeReason(
                    f"{role} {tensor.name!r} is {tensor.type_name}; the GPU delegate runs "
                    f"{builtin_operator_name(op)} on {expected_name} tensors only"
                )
            if len(tensor.shape) > MAX_RANK:
                return f"{role} {tensor.name!r} has rank {len(tensor.shape)}; at most {MAX_RANK} is supported"
            if tensor.is_dynamic:
                return f"{role} {tensor.name!r} has a shape known only at run time (dynamic tensor)"
        return cls.node_reason(node, op, version, tensors)

    @classmethod
    def input_type(cls, position: int) -> int:
        return cls.data_type

    @classmethod
    def node_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        """Per-op conditions (after the type and rank checks). Default: none."""
        return None

    # -- helpers for run ------------------------------------------------------------------
    def compute(self, array: Any) -> Any:
        """``array`` in the compute dtype (no copy when it already is)."""
        return array.astype(self.compute_dtype, copy=False)

    def store(self, array: Any) -> Any:
        """``array`` in the storage dtype (no copy when it already is)."""
        return array.astype(self.storage, copy=False)


# --------------------------------------------------------------------------------------
# ADD SUB MUL DIV
# --------------------------------------------------------------------------------------


class Binary(FloatOp):
    """ADD, SUB, MUL, DIV version 1: float32, numpy broadcasting up to rank 4, fused
    activation as a clamp (TANH not applied, as TFLite's float kernels)."""

    ops = {B.ADD: 1, B.SUB: 1, B.MUL: 1, B.DIV: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected 2 inputs, got {len(node.inputs)}"
        x, y = (tensors[i] for i in node.inputs)
        try:
            shape = broadcast_shape(x.shape, y.shape)
        except ValueError as error:
            return str(error)
        if len(shape) > MAX_RANK:
            return f"broadcasting {list(x.shape)} with {list(y.shape)} has rank {len(shape)}; at most {MAX_RANK} is supported"
        return fused_activation_reason(node.params)

    def prepare(self) -> None:
        self.kernel = ElementwiseBinaryCuda(
            builtin_operator_name(self.op), fused_activation(self.params), self.storage,
            **self.device.launcher_arguments("elementwise.cu"),
        )

    def run(self, args):
        # One launch: the op, then the fused activation's clamp (cuda/elementwise.cu).
        return [self.kernel(self.store(args[0]), self.store(args[1]))]


# --------------------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------------------


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
