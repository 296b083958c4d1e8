"""BITWISE_XOR and RIGHT_SHIFT: integer bit operations with numpy broadcasting.

TFLite (``kernels/bitwise_xor.cc``, ``kernels/right_shift.cc``): two inputs of one type,
the output of that type and the broadcast shape. Version 1 (the only one of each) takes
int8, uint8, int16, uint16, int32 and uint32 (int64 and bool are refused).

- BITWISE_XOR: ``x ^ y`` on the bits (signed and unsigned alike).
- RIGHT_SHIFT: ``x >> clamp(y, 0, bits - 1)``: the shift count is clamped to the type's
  width (a negative count shifts by 0); signed values shift arithmetically (the sign
  bit is copied), as TFLite's ``>>`` does on every compiler it supports, and numpy's.

Quantization parameters on the tensors are ignored (the op works on the stored bits).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator

BIT_TYPES = (T.INT8, T.UINT8, T.INT16, T.UINT16, T.INT32, T.UINT32)


class BitwiseKernel(CpuKernel):
    """Two same-typed integer inputs, broadcast; the output of their type."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, y = self.inputs
        self.require_types(x, *BIT_TYPES, role="input 1")
        self.require_types(y, x.type, role="input 2")
        self.require_types(self.outputs[0], x.type, role="output")
        try:
            shape = broadcast_shape(x.shape, y.shape)
        except ValueError as error:
            raise self.unsupported(str(error)) from None
        self.outputs[0].resize(shape)


@register(B.BITWISE_XOR, 1, 1)  # v1 (the only version): 8-, 16- and 32-bit integers
class BitwiseXor(BitwiseKernel):
    """BITWISE_XOR v1."""

    def invoke(self) -> None:
        np.bitwise_xor(self.inputs[0].data, self.inputs[1].data, out=self.outputs[0].data)


@register(B.RIGHT_SHIFT, 1, 1)  # v1 (the only version): 8-, 16- and 32-bit integers
class RightShift(BitwiseKernel):
    """RIGHT_SHIFT v1."""

    def prepare(self) -> None:
        super().prepare()
        self.widest_shift = self.inputs[0].dtype.itemsize * 8 - 1

    def invoke(self) -> None:
        counts = np.clip(self.inputs[1].data, 0, self.widest_shift)
        np.right_shift(self.inputs[0].data, counts, out=self.outputs[0].data)
