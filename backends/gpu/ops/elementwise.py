"""Element-wise arithmetic on the GPU: ADD SUB MUL DIV (float32 and int8/uint8), MAXIMUM
MINIMUM, SQUARED_DIFFERENCE, POW.

Semantics are the CPU kernels' (``backends/cpu/kernels/binary.py``,
``binary_quantized.py``), i.e. TFLite's kernels:

- ADD/SUB/MUL/DIV of float32 end with ``min(max(r, lo), hi)``
  (``CalculateActivationRange``): RELU [0, FLT_MAX], RELU6 [0, 6], RELU_N1_TO_1
  [-1, 1], NONE and TANH [-FLT_MAX, FLT_MAX] (a fused TANH is *not* applied by these
  kernels; +-inf saturates to +-FLT_MAX). SIGN_BIT is rejected. x / 0 gives +-inf (then
  +-FLT_MAX), 0 / 0 NaN.
- ADD, SUB, MUL of int8 / uint8, bit-exact: the GPU op configures the CPU kernel's own
  class for the node (``configure``: TFLite's Prepare-time checks, multipliers, shifts,
  zero points and the fused activation's quantized clamp, with no effect on the
  tensors), and each run is one launch of ``cuda/int8_elementwise.cu``'s
  ``quantized_binary`` (``M`` is MultiplyByQuantizedMultiplier, from
  ``fixed_point.cuh``, tested equal to ``backends.cpu.quantization``):
  ADD / SUB ``clamp(M(M((q1 - z1) << 20, m1) +- M((q2 - z2) << 20, m2), mo) + zo)``;
  MUL ``clamp(M((q1 - z1) * (q2 - z2), m) + zo)``. Numpy broadcasting up to rank 4 in
  the launch; a constant operand is uploaded once, as it is. Host emulation runs the
  kernel's numpy twin (the CPU arithmetic) as that one launch.
- MAXIMUM is ``x > y ? x : y`` and MINIMUM ``x < y ? x : y`` (a NaN x gives y), on raw
  values for every type (TFLite compares int8/uint8 raw, whatever their quantization).
  Pure selection: bit-exact, also in float16 storage.
- SQUARED_DIFFERENCE ``d = x - y; d * d`` and POW ``pow(x, y)`` in float32 (POW uses
  CUDA's ``powf`` on a device, within a few ulp of glibc's).

Broadcasting is numpy's, up to rank 4 (the delegate's rank limit).

How (float): one launch per node, the hand-written kernels of ``cuda/elementwise.cu``
(``cuda/elementwise.py``: ``ElementwiseBinaryCuda`` for ADD SUB MUL DIV, with the clamp
fused, and for MAXIMUM/MINIMUM, SQUARED_DIFFERENCE and POW, no clamp). They load the
storage dtype (float32 or float16), compute in float32 and store the storage dtype; in
host emulation their numpy twins run, one launch each. MAXIMUM/MINIMUM of int8/uint8 is
one launch of ``pair_lookup_b8`` over the 65536 pairs; of int32, CuPy/numpy calls.

Versions claimed (``schema/versioning/op_version.py``):

- ADD, SUB, MUL, DIV 1 (float32): each op's later versions are quantized
  (int8/int16/int64/float16-tensor) versions, or broadcasting above rank 4 (SUB v3,
  DIV v2), which the rank limit of the delegate excludes.
- ADD and SUB v1 (uint8) and v2 (int8); MUL v1 (uint8), v2 (int8) and v3 (uint8/int8
  whose ``s1 * s2 / s_out >= 1``: a left shift in the multiplier, which the kernel
  applies as the compiled TFLite does). Not claimed: int16 (ADD v3, SUB v5, MUL v4),
  int64, float16, and SUB v3 (broadcasting above rank 4). As on the CPU, the arithmetic
  follows the tensor types, not the stamped version.
- MAXIMUM, MINIMUM 1 (float32, int32, uint8) and 2 (int8); not 3 (broadcasting above
  rank 4), 4 (int16). int64 v1 nodes are refused by type.
- SQUARED_DIFFERENCE 1 and POW 1 (float32; int32 v1 nodes are refused by type); not
  SQUARED_DIFFERENCE 2 (int8, requantized).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backends.cpu.kernels.binary_quantized import QuantizedAddSub, QuantizedMul, pair_table
from backends.gpu.cuda.elementwise import ElementwiseBinaryCuda
from backends.gpu.cuda.int8_elementwise import PairLookupCuda, QuantizedBinaryCuda, QuantizedBinaryParams
from backends.gpu.ops.base import (
    FloatOp,
    TypedOp,
    binary_inputs_reason,
    broadcast_reason,
    fused_activation,
    fused_activation_reason,
)
from backends.gpu.ops.quantized_base import (
    QuantizedOp,
    configured_cpu_kernel,
    cpu_kernel_reason,
    node_tensors,
    per_tensor,
)
from schema.enums import BuiltinOperator, TensorType, builtin_operator_name

B = BuiltinOperator
T = TensorType


class Binary(FloatOp):
    """ADD, SUB, MUL, DIV version 1: float32, numpy broadcasting up to rank 4, fused
    activation as a clamp (TANH not applied, as TFLite's float kernels)."""

    ops = {B.ADD: 1, B.SUB: 1, B.MUL: 1, B.DIV: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected 2 inputs, got {len(node.inputs)}"
        x, y = (tensors[i] for i in node.inputs)
        return broadcast_reason(x, y) or fused_activation_reason(node.params)

    def prepare(self) -> None:
        self.kernel = ElementwiseBinaryCuda(
            builtin_operator_name(self.op), fused_activation(self.params), self.storage,
            **self.device.launcher_arguments("elementwise.cu"),
        )

    def run(self, args):
        # One launch: the op, then the fused activation's clamp (cuda/elementwise.cu).
        return [self.kernel(self.store(args[0]), self.store(args[1]))]


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
        return (
            broadcast_reason(x, y)
            or fused_activation_reason(node.params)
            or cpu_kernel_reason(cls.KERNELS[op], node, op, version, tensors)
        )

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


class MaximumMinimum(TypedOp):
    """MAXIMUM, MINIMUM v1 (float32, int32, uint8) and v2 (int8): ``x > y ? x : y``
    (resp. ``<``) on the values as stored, broadcasting up to rank 4."""

    ops = {B.MAXIMUM: 2, B.MINIMUM: 2}
    input_types = output_types = (T.FLOAT32, T.INT32, T.INT8, T.UINT8)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        return binary_inputs_reason(node, tensors)

    def prepare(self) -> None:
        xp = self.xp
        self.out_shape = tuple(self.outputs[0].shape)
        self.kernel = None
        if self.outputs[0].type == T.FLOAT32:
            # Float (float32 or float16 storage): one launch of elementwise_binary.
            self.kernel = ElementwiseBinaryCuda(
                builtin_operator_name(self.op), storage=self.storage, **self.device.launcher_arguments("elementwise.cu")
            )
        self.compare = xp.greater if self.op == B.MAXIMUM else xp.less
        self.table = None
        if self.outputs[0].type in (T.INT8, T.UINT8):
            # 8-bit: one launch of pair_lookup_b8 over the 65536 pairs (issue 23).
            dtype = self.outputs[0].dtype
            select = np.maximum if self.op == B.MAXIMUM else np.minimum
            self.table = self.upload(pair_table(select, dtype, dtype), dtype)
            self.pairs = PairLookupCuda(**self.device.launcher_arguments(PairLookupCuda.source))

    def run(self, args):
        x, y = args[0], args[1]
        # A selection, never arithmetic: exact in any storage dtype; NaN in x gives y.
        if self.kernel is not None:
            x, y = x.astype(self.storage, copy=False), y.astype(self.storage, copy=False)
            return [self.kernel(x, y).reshape(self.out_shape)]
        if self.table is not None:
            return [self.pairs(x, y, self.table).reshape(self.out_shape)]
        return [self.xp.where(self.compare(x, y), x, y).reshape(self.out_shape)]


class FloatBinaryMath(FloatOp):
    """SQUARED_DIFFERENCE v1 and POW v1 on float32, broadcasting up to rank 4."""

    ops = {B.SQUARED_DIFFERENCE: 1, B.POW: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        return binary_inputs_reason(node, tensors)

    def prepare(self) -> None:
        self.out_shape = tuple(self.outputs[0].shape)
        # One launch of elementwise_binary (no clamp: TFLite's kernels have none). POW is
        # CUDA's powf on a device: within a few ulp of the C library's.
        self.kernel = ElementwiseBinaryCuda(
            builtin_operator_name(self.op), storage=self.storage, **self.device.launcher_arguments("elementwise.cu")
        )

    def run(self, args):
        return [self.kernel(self.store(args[0]), self.store(args[1])).reshape(self.out_shape)]
