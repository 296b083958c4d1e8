"""SOFTMAX on the GPU, along the last axis, with beta: float32, and int8 / uint8 inputs
(bit-exact with TFLite's reference kernel).

Float32, as the CPU kernel (``backends/cpu/kernels/softmax.py``, TFLite's reference), per
row: ``e = exp((x - max(x)) * beta); y = e / sum(e)``, in float32.

int8 / uint8: semantics, tables and arithmetic are the CPU kernel's
(``backends/cpu/kernels/softmax_quantized.py``, gemmlowp fixed point). Per row of the
last axis, with ``d = q - max(row)`` in [-255, 0]:

    e(d)   = exp(beta * s_in * d) in Q0.31    (the CPU kernel's table, 0 below diff_min)
    sum    = sum over the row of e(d) in Q12.19 (its second table)
    (r, n) = GetReciprocal(sum)                (``row_reciprocals``)
    out    = min(RDBPOT(SRDHM(r, e(d)), n + 31 - bits(out)) + min(out), max(out))

The GPU op configures the CPU kernel's own class for the node (``configure``: TFLite's
Prepare checks, the multiplier, diff_min, both tables), uploads the tables once (int32),
and each run is one launch of ``cuda/int8_windows.cu``'s softmax (a thread per row: the
maximum, the sum, ``GetReciprocal`` in gemmlowp's fixed point, the outputs); host
emulation runs its numpy twin (the CPU kernel's ``row_reciprocals`` and
``backends.cpu.quantization``) as that one launch.

Where TFLite aborts (a row whose sum of exps reaches 2^28 in Q12.19, i.e. 512 values
or more near the row's maximum: the output exponent leaves [0, 31]), the CPU kernel
raises; the GPU cannot stop on a value without reading it back, so there the shift is
held at 31 + 31 and the row's outputs are defined but meaningless. Rows shorter than 512
never get there.

Versions claimed: v1 (float32; uint8 input, uint8 or int16 output) and v2 (int8 input,
int8 or int16 output), the output types TFLite's ``SoftmaxPrepare`` accepts. Not
claimed: v3 (int16 input).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels.softmax_quantized import QuantizedSoftmax as CpuQuantizedSoftmax
from backends.cpu.quantization import is_quantized
from backends.gpu.cuda.int8_windows import QuantizedSoftmaxCuda, QuantizedSoftmaxParams
from backends.gpu.ops.base import MAX_RANK, FloatOp, TypeReason
from backends.gpu.ops.quantized_base import (
    QuantizedOp,
    configured_cpu_kernel,
    cpu_kernel_reason,
    node_tensors,
    per_tensor,
)
from schema.enums import BuiltinOperator, TensorType

T = TensorType


class Softmax(FloatOp):
    """SOFTMAX version 1 (float32, any beta, rank 1-4)."""

    ops = {BuiltinOperator.SOFTMAX: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        if len(tensors[node.inputs[0]].shape) < 1:
            return "the input must have at least one dimension"
        return None

    def prepare(self) -> None:
        self.beta = np.float32(getattr(self.params, "beta", 0.0) if self.params is not None else 0.0)

    def run(self, args):
        xp = self.xp
        x = self.compute(args[0])
        if x.size == 0:
            return [self.store(x.copy())]
        y = x - xp.max(x, axis=-1, keepdims=True)
        if self.beta != 1:
            y = y * self.beta
        y = xp.exp(y)
        y = y / xp.sum(y, axis=-1, keepdims=True)
        return [self.store(y)]


#: input type -> the output types TFLite's SoftmaxPrepare accepts for it
OUTPUT_TYPES = {T.INT8: (T.INT8, T.INT16), T.UINT8: (T.UINT8, T.INT16)}


class QuantizedSoftmax(QuantizedOp):
    """SOFTMAX v1 (uint8 -> uint8/int16) and v2 (int8 -> int8/int16), any beta, along the
    last axis of a rank 1-4 tensor."""

    ops = {BuiltinOperator.SOFTMAX: 2}

    @classmethod
    def rejection_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        x, y = tensors[node.inputs[0]], tensors[node.outputs[0]]
        if x.type not in OUTPUT_TYPES or not is_quantized(x):
            return TypeReason(f"input {x.name!r} is {x.type_name}; the GPU delegate's quantized SOFTMAX takes int8/uint8 tensors with a scale")
        if y.type not in OUTPUT_TYPES[x.type] or not is_quantized(y):
            names = "/".join(TensorType(t).name for t in OUTPUT_TYPES[x.type])
            return f"output {y.name!r} is {y.type_name}; a quantized {x.type_name} SOFTMAX outputs {names} with a scale"
        for role, tensor in (("input", x), ("output", y)):
            if not 1 <= len(tensor.shape) <= MAX_RANK:
                return f"{role} {tensor.name!r} has rank {len(tensor.shape)}; 1 to {MAX_RANK} is supported"
            if tensor.is_dynamic:
                return f"{role} {tensor.name!r} has a shape known only at run time (dynamic tensor)"
            if not per_tensor(tensor):
                return f"{role} {tensor.name!r} is quantized per channel; TFLite needs one scale"
        return cpu_kernel_reason(CpuQuantizedSoftmax, node, op, version, tensors)

    def prepare(self) -> None:
        kernel = configured_cpu_kernel(CpuQuantizedSoftmax, self.node, self.op, self.version, node_tensors(self))
        x, y = self.inputs[0], self.outputs[0]
        self.exp = self.upload(kernel.exp_table, np.int32)  # Q0.31
        self.accumulated = self.upload(kernel.exp_accumulated, np.int32)  # Q12.19
        params = QuantizedSoftmaxParams(kernel.in_range, kernel.exponent_offset, int(kernel.out_info.min), int(kernel.out_info.max))
        self.launcher = QuantizedSoftmaxCuda(params, x.dtype, y.dtype, **self.device.launcher_arguments(QuantizedSoftmaxCuda.source))

    def run(self, args):
        return [self.launcher(args[0], self.exp, self.accumulated)]
