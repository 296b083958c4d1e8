"""QUANTIZE (float32 -> int8/uint8, and int8/uint8 -> int8/uint8 requantization) and
DEQUANTIZE (runtime int8/uint8 -> float, and constant float16 -> float32) on the GPU,
bit-exact with TFLite's reference kernels.

Semantics, parameters and arithmetic are the CPU kernels' (``backends/cpu/kernels/
quantize.py`` and ``dequantize.py``), configured for the node by their own ``configure``:

- QUANTIZE of a float32 input: ``q = clamp(int32(roundf(x / scale)) + zero_point)`` with
  ``x / scale`` in float32, per tensor or per channel (``quantize_quotient``: halves away
  from zero, a quotient outside int32 or NaN becomes INT32_MIN, the zero point wraps in
  int32, as LiteRT's x86 build);
- QUANTIZE of an int8/uint8 input (``reference_ops::Requantize``): the CPU kernel's
  256-entry table of ``clamp(M(x - z_in, m) + z_out)``, uploaded once and read with
  ``take`` at the input's code (its bits as uint8);
- DEQUANTIZE of a runtime int8/uint8 tensor: ``scale * (q - zero_point)`` in float32,
  rounded once (``dequantize_affine``), per tensor or per channel, stored in float32
  where the partition keeps the output in float32 (every use takes it exactly: a
  download, a QUANTIZE) and otherwise in the delegate's storage dtype (float16 with
  ``precision="float16"``);
- DEQUANTIZE of a constant float16 tensor (models stored with float16 weights carry
  ``DEQUANTIZE(constant float16) -> float32`` nodes): widening float16 to float32 is
  exact; done once at prepare, the result uploaded once (in the storage dtype: with
  float16 storage that is the float16 value itself, still exact) and ``run`` hands out
  that array.

How: one launch each of ``cuda/int8_elementwise.cu`` (``quantize_*``, ``dequantize_*``, and
``lookup_b8`` for the 8-bit requantization's table). QUANTIZE reads a float32 or float16
input as it comes, so ``precision="float16"`` never rounds the float32 input of a quantized
model to half first: the partition keeps it in float32 (``exact_float32_inputs``).

Versions claimed:

- QUANTIZE 1 (float32 -> int8/uint8 per tensor; int8/uint8 -> int8/uint8) and 3 (a
  per-channel int8/uint8 output). v2 (int16 output) and the int16/int32 requantizations
  (also v1) are not claimed: their nodes are refused naming the type. v4/v5 are int4/uint4.
- DEQUANTIZE 1 (uint8, per tensor or per channel) and 2 (int8) of runtime tensors; a
  constant int8/uint8 input is left to the CPU, which folds the node at prepare (its
  output is then a constant like any other). Not claimed: int16 (v3), v4 (never
  stamped), int8 per channel (v5: converted models have no runtime per-channel tensors;
  the per-channel uint8 path above is the same arithmetic), and the packed types (v6+).
- DEQUANTIZE of constant float16: v1-v3 (``Dequantize``), the one exception to "every
  version up to the claim is implemented". For DEQUANTIZE the version says only which
  input type the node has (v1 uint8, v2 int8, v3 int16/float16), and TFLite runs all of
  them with one kernel that looks at the type; real float16 models are stamped v2 by
  older converters (MediaPipe's face detector: 74 float16 DEQUANTIZE nodes at v2) and v3
  by current ones (``op_version.py``). So this class takes v1-v3 and decides by type:
  uint8/int8/int16 inputs are rejected per node with a reason naming the type; v4+
  (per-channel int8, int4, int2, uint4) are not claimed.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from backends.cpu.kernels.dequantize import Dequantize as CpuDequantize
from backends.cpu.kernels.quantize import Quantize as CpuQuantize
from backends.cpu.quantization import is_quantized
from backends.gpu.cuda.int8_elementwise import DequantizeCuda, LookupCuda, QuantizeCuda, channel_parameters
from backends.gpu.ops.base import MAX_RANK, FloatOp, GpuOp, TypeReason
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
