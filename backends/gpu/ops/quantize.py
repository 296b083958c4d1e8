"""TODO quantize
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from backends.cpu.kernels.dequantize import Dequantize as CpuDequantize
from backends.cpu.kernels.quantize import Quantize as CpuQuantize
from backends.cpu.quantization import is_quantized
from backends.gpu.cuda.int8_elementwise import DequantizeCuda, LookupCuda, QuantizeCuda, channel_parameters
from backends.gpu.ops.base import GpuOp, MAX_RANK, TypeReason
from backends.gpu.ops.elementwise import FloatOp
from backends.gpu.ops.quantized_base import configured_cpu_kernel, cpu_kernel_reason, node_tensors
from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import BuiltinOperator, TensorType, builtin_operator_name

B = BuiltinOperator
T = TensorType


INT8_TYPES = (T.INT8, T.UINT8)


def _tensor_reason(role: str, tensor: RuntimeTensor, allowed: Sequence[int], op: int, quantized: bool) -> str | None:
    """A reason when the tensor's type is not one of ``allowed`` (and, for ``quantized``,
    carries no scale), its rank is above 4 or its shape is dynamic."""
    if tensor.type not in allowed or (quantized and not is_quantized(tensor)):
        names = "/".join(TensorType(t).name.lower() for t in allowed)
        what = f"{names} tensors with a scale" if quantized else f"{names} tensors"
        return TypeReason(f"{role} {tensor.name!r} is {tensor.type_name}; the GPU delegate's {builtin_operator_name(op)} takes {what}")
    if len(tensor.shape) > MAX_RANK:
        return f"{role} {tensor.name!r} has rank {len(tensor.shape)}; at most {MAX_RANK} is supported"
    if tensor.is_dynamic:
        return f"{role} {tensor.name!r} has a shape known only at run time (dynamic tensor)"
    return None


def _one_input(node: Node) -> str | None:
    if len(node.inputs) != 1 or node.inputs[0] < 0 or len(node.outputs) != 1:
        return f"expected 1 input and 1 output, got {len(node.inputs)} and {len(node.outputs)}"
    return None


class Quantize(GpuOp):
    """QUANTIZE v1 and v3: float32 -> int8/uint8 (per tensor; per channel at v3), and
    int8/uint8 -> int8/uint8 requantization (per tensor)."""

    ops = {B.QUANTIZE: frozenset({1, 3})}
    exact_float32_inputs = (0,)  # the kernel reads float32 or float16 as it comes

    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        reason = _one_input(node)
        if reason:
            return reason
        x, out = tensors[node.inputs[0]], tensors[node.outputs[0]]
        reason = _tensor_reason("input", x, (T.FLOAT32, *INT8_TYPES), op, quantized=False)
        reason = reason or _tensor_reason("output", out, INT8_TYPES, op, quantized=True)
        if reason:
            return reason
        if x.type in INT8_TYPES and not is_quantized(x):
            return f"input {x.name!r} is {x.type_name} without a scale; requantization needs one"
        return cpu_kernel_reason(CpuQuantize, node, op, version, tensors)

    def prepare(self) -> None:
        kernel = configured_cpu_kernel(CpuQuantize, self.node, self.op, self.version, node_tensors(self))
        out = self.outputs[0]
        self.table = None
        if kernel.mode == "requantize":
            # Indexed by the input's code (its bits read as uint8).
            self.table = self.upload(kernel.table, out.dtype)
            self.launcher = LookupCuda(**self.device.launcher_arguments(LookupCuda.source))
            return
        layout, scales, zero_points = channel_parameters(kernel.scale, kernel.zero_point, self.inputs[0].shape)
        self.scales, self.zero_points = self.upload(scales, np.float32), self.upload(zero_points, np.int32)
        self.launcher = QuantizeCuda(out.dtype, layout, (kernel.low, kernel.high), **self.device.launcher_arguments(QuantizeCuda.source))

    def run(self, args):
        if self.table is not None:
            return [self.launcher(args[0], self.table)]
        return [self.launcher(args[0], self.scales, self.zero_points)]


class Dequantize(FloatOp):
    """DEQUANTIZE versions 1-3 for a constant FLOAT16 input (other input types rejected)."""

    ops = {BuiltinOperator.DEQUANTIZE: 3}

    @classmethod
    def input_type(cls, position: int) -> int:
        return TensorType.FLOAT16

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        if not tensors[node.inputs[0]].is_constant:
            return "the input must be a constant float16 tensor (the GPU dequantizes weights once, at prepare)"
        return None

    def prepare(self) -> None:
        self.value = self.upload(np.asarray(self.inputs[0].data, dtype=np.float16).astype(np.float32))
        self.prepared_inputs.add(0)

    def run(self, args):
        return [self.value]


class QuantizedDequantize(GpuOp):
    """DEQUANTIZE v1 (uint8, per tensor or per channel) and v2 (int8) of runtime tensors,
    to float32 (stored in the delegate's storage dtype)."""

    ops = {B.DEQUANTIZE: 2}
    exact_float32_outputs = (0,)  # float32 where the partition keeps the output in float32

    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        reason = _one_input(node)
        if reason:
            return reason
        x, out = tensors[node.inputs[0]], tensors[node.outputs[0]]
        reason = _tensor_reason("input", x, INT8_TYPES, op, quantized=True)
        reason = reason or _tensor_reason("output", out, (T.FLOAT32,), op, quantized=False)
        if not reason and x.is_constant:
            reason = f"input {x.name!r} is a constant {x.type_name} tensor: the CPU folds it at prepare (the GPU dequantizes runtime tensors)"
        return reason or cpu_kernel_reason(CpuDequantize, node, op, version, tensors)

    def prepare(self) -> None:
        kernel = configured_cpu_kernel(CpuDequantize, self.node, self.op, self.version, node_tensors(self))
        layout, scales, zero_points = channel_parameters(kernel.scale, kernel.zero_point, self.inputs[0].shape)
        self.scales, self.zero_points = self.upload(scales, np.float32), self.upload(zero_points, np.int32)
        out_dtype = np.float32 if self.node.outputs[0] in self.float32_tensors else self.storage
        self.launcher = DequantizeCuda(
            self.inputs[0].dtype, out_dtype, layout, **self.device.launcher_arguments(DequantizeCuda.source)
        )

    def run(self, args):
        return [self.launcher(args[0], self.scales, self.zero_points)]
