"""What the GPU delegate's quantized (int8 / uint8) ops share: :class:`QuantizedOp`, and
:func:`configured_cpu_kernel` / :func:`cpu_kernel_reason`, through which an op uses the
CPU kernel's own class for its Prepare-time parameters and refusals.

They are bit-exact with TFLite's reference kernels, and they get there the way the CPU
kernels do: the Prepare-time parameters (multipliers and shifts, zero points, the fused
activation's quantized clamp, lookup tables) come from the CPU kernels' own helpers. At
run time each node is one hand-written CUDA kernel (``cuda/int8_*.cu``, ``conv*_int8.cu``...)
whose integer arithmetic is ``cuda/fixed_point.cuh``, tested equal bit for bit to
``backends.cpu.quantization`` (the array-namespace version the CPU uses; host emulation
runs the kernels' numpy twins, written with it). Integer tensors are stored as they are;
the ``float16`` precision option changes float activations only, never a quantized
model's float inputs and outputs (``GpuOp.exact_float32_inputs``).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from backends.cpu.kernel import CpuKernel
from backends.cpu.quantization import QuantizationParameterError, Requantizer, is_quantized
from backends.gpu.ops.base import GpuOp, TypeReason, shape_reason
from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import TensorType, builtin_operator_name

T = TensorType


INT8_TYPES = (T.INT8, T.UINT8)


def per_tensor(tensor: RuntimeTensor) -> bool:
    """One scale and one zero point (TFLite's ``tensor->params``)."""
    q = tensor.quantization
    return q is not None and q.scale.size == 1 and np.asarray(q.zero_point).size == 1


class QuantizedOp(GpuOp):
    """A GPU op on int8/uint8 tensors that carry their quantization.

    ``data_inputs`` are the positions checked as quantized int8/uint8 tensors of one type
    with the outputs (default: every input); subclasses add their own conditions in
    :meth:`node_reason`.
    """

    ops: ClassVar[dict[int, int]] = {}
    data_inputs: ClassVar[tuple[int, ...] | None] = None

    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        name = builtin_operator_name(op)
        positions = range(len(node.inputs)) if cls.data_inputs is None else cls.data_inputs
        checked = [(f"input {p}", node.inputs[p]) for p in positions if p < len(node.inputs)]
        checked += [(f"output {p}", t) for p, t in enumerate(node.outputs)]
        kinds = set()
        for role, index in checked:
            if index < 0:
                continue
            tensor = tensors[index]
            if tensor.type not in INT8_TYPES or not is_quantized(tensor):
                return TypeReason(f"{role} {tensor.name!r} is {tensor.type_name}; the GPU delegate's quantized {name} takes int8/uint8 tensors with a scale")
            reason = shape_reason(role, tensor)
            if reason:
                return reason
            kinds.add(tensor.type)
        if len(kinds) > 1:
            return TypeReason(f"{name} mixes int8 and uint8 tensors")
        return cls.node_reason(node, op, version, tensors)

    @classmethod
    def node_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        """Per-op conditions (after the type checks). Default: none."""
        return None

    # -- helpers for prepare and run ------------------------------------------------------------
    def requantizer(self, multipliers: Any, shifts: Any) -> Requantizer:
        """``MultiplyByQuantizedMultiplier`` with these (per-tensor or per-channel)
        parameters, its per-channel arrays on the device."""
        return Requantizer(multipliers, shifts, to_device=lambda a: self.upload(a, np.int64))

    def to_output(self, values: Any, low: int, high: int) -> Any:
        """``clamp(values, low, high)`` stored in the output's integer type."""
        return self.xp.clip(values, low, high).astype(self.outputs[0].dtype)


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


def parameter_reason(derive: Callable[[], Any]) -> str | None:
    """Why the node's quantization parameters are refused, or None: ``derive`` runs a
    Prepare-time derivation that the CPU kernels share (multipliers and shifts through
    ``quantization.requantization_multiplier``, the fused activation's clamp through
    ``activation_range_quantized``), and its :class:`QuantizationParameterError` (which
    names the parameter) becomes the GPU's refusal, so that the node is left to the CPU
    at delegation rather than failing in the partition."""
    try:
        derive()
    except QuantizationParameterError as error:
        return str(error)
    return None
