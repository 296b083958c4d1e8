"""ADD, SUB, MUL on int8 / uint8 tensors on the GPU, bit-exact with TFLite's reference kernels.

Semantics and parameters are the CPU kernel's (``backends/cpu/kernels/binary_quantized.py``):
the GPU op configures that kernel's own class for the node (``configure``: TFLite's
Prepare-time checks, multipliers, shifts, zero points and the fused activation's quantized
clamp, with no effect on the tensors), and each run is one launch of
``cuda/int8_elementwise.cu``'s ``quantized_binary`` (``M`` is MultiplyByQuantizedMultiplier,
from ``fixed_point.cuh``, tested equal to ``backends.cpu.quantization``):

- ADD / SUB: ``clamp(M(M((q1 - z1) << 20, m1) +- M((q2 - z2) << 20, m2), mo) + zo)``;
- MUL: ``clamp(M((q1 - z1) * (q2 - z2), m) + zo)``.

Numpy broadcasting up to rank 4 in the launch; a constant operand is uploaded once, as it
is. Host emulation runs the kernel's numpy twin (the CPU arithmetic) as that one launch.
Versions claimed: ADD and SUB v1 (uint8) and v2 (int8); MUL v1 (uint8), v2 (int8) and
v3 (uint8/int8 whose ``s1 * s2 / s_out >= 1``: a left shift in the multiplier, which the
kernel applies as the compiled TFLite does). Not claimed: int16 (ADD v3, SUB v5, MUL v4),
int64, float16, and SUB v3 (broadcasting above rank 4). As on the CPU, the arithmetic
follows the tensor types, not the stamped version.

:func:`configured_cpu_kernel` is shared with the other quantized GPU ops of this family
(quantize.py, activations_quantized.py, softmax_quantized.py).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Sequence

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernel import CpuKernel
from backends.cpu.kernels.binary_quantized import QuantizedAddSub, QuantizedMul
from backends.gpu.cuda.int8_elementwise import QuantizedBinaryCuda, QuantizedBinaryParams
from backends.gpu.ops.base import MAX_RANK, GpuOp
from backends.gpu.ops.elementwise import fused_activation_reason
from backends.gpu.ops.quantized_base import QuantizedOp, per_tensor
from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import BuiltinOperator, builtin_operator_name

B = BuiltinOperator


def configured_cpu_kernel(kernel_class: type[CpuKernel], node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor] | dict) -> CpuKernel:
    """The CPU kernel ``kernel_class`` for this node, its ``configure`` run: TFLite's
    Prepare-time checks and parameters (and tables), computed by the CPU kernel's own
    code, with no effect on the tensors. Raises the kernel's ``UnsupportedKernelError``
    (a ``ValueError``) for a node it refuses."""
    kernel = kernel_class(SimpleNamespace(tensors=tensors), node, op, version)
    kernel.configure()
    return kernel


def node_tensors(op: GpuOp) -> dict[int, RuntimeTensor]:
    """The GPU op's tensors by their index in the subgraph (what a CPU kernel's
    constructor reads from ``context.tensors``)."""
    found = {index: tensor for index, tensor in zip(op.node.inputs, op.inputs) if index >= 0}
    found.update(zip(op.node.outputs, op.outputs))
    return found


def cpu_kernel_reason(kernel_class: type[CpuKernel], node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
    """Why the CPU kernel's Prepare refuses the node (its message), or None."""
    try:
        configured_cpu_kernel(kernel_class, node, op, version, tensors)
    except ValueError as error:
        return str(error)
    return None


class QuantizedBinary(QuantizedOp):
    """ADD v1-v2, SUB v1-v2, MUL v1-v3 on per-tensor int8/uint8: broadcasting up to rank
    4, the fused activation as the quantized clamp."""

    ops = {B.ADD: 2, B.SUB: 2, B.MUL: 3}
    KERNELS = {B.ADD: QuantizedAddSub, B.SUB: QuantizedAddSub, B.MUL: QuantizedMul}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected 2 inputs, got {len(node.inputs)}"
        x, y = (tensors[i] for i in node.inputs)
        for tensor in (x, y, tensors[node.outputs[0]]):
            if not per_tensor(tensor):
                return f"tensor {tensor.name!r} is quantized per channel; only per-tensor is supported"
        try:
            shape = broadcast_shape(x.shape, y.shape)
        except ValueError as error:
            return str(error)
        if len(shape) > MAX_RANK:
            return f"broadcasting {list(x.shape)} with {list(y.shape)} has rank {len(shape)}; at most {MAX_RANK} is supported"
        return fused_activation_reason(node.params) or cpu_kernel_reason(cls.KERNELS[op], node, op, version, tensors)

    def prepare(self) -> None:
        kernel = configured_cpu_kernel(self.KERNELS[self.op], self.node, self.op, self.version, node_tensors(self))
        dtype = self.outputs[0].dtype
        params = QuantizedBinaryParams.of(builtin_operator_name(self.op), kernel)
        self.launcher = QuantizedBinaryCuda(params, dtype, **self.device.launcher_arguments(QuantizedBinaryCuda.source))
        #: constant operands, uploaded once (None: read from ``args``)
        self.constants: list[Any] = [None, None]
        for position, tensor in enumerate(self.inputs):
            if tensor.is_constant:
                self.constants[position] = self.upload(np.asarray(tensor.data, dtype), dtype)
                self.prepared_inputs.add(position)

    def run(self, args):
        a, b = (constant if constant is not None else args[position] for position, constant in enumerate(self.constants))
        return [self.launcher(a, b)]
