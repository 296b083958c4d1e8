"""SOFTMAX and LOG_SOFTMAX on float32, along the last axis.

TFLite's reference kernels (``reference/softmax.h``, ``reference/log_softmax.h``), per row:

    softmax:      e = exp((x - max(x)) * beta);   y = e / sum(e)
    log_softmax:  y = (x - max(x)) - log(sum(exp(x - max(x))))

all in float32 and in that order (LOG_SOFTMAX has no beta). Version 1 of each op is
float32 (and quantized uint8, not here); the later versions are int8/int16 only.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType


class _LastAxisKernel(CpuKernel):
    """Shared prepare: float32 in and out, rank >= 1, row buffers for max and sum."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x = self.inputs[0]
        if x is not None and x.type in (TensorType.UINT8, TensorType.INT8, TensorType.INT16):
            raise self.unsupported(f"input {x.name!r} has type {x.type_name}: quantized inputs are not implemented yet; this kernel supports FLOAT32")
        self.require_types(x, TensorType.FLOAT32)
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        if len(x.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        self.outputs[0].resize(x.shape)
        row_shape = (*x.shape[:-1], 1)
        self.row_max = np.empty(row_shape, dtype=np.float32)
        self.row_sum = np.empty(row_shape, dtype=np.float32)


@register(BuiltinOperator.SOFTMAX, 1, 1)  # v1: float32 (and quantized uint8, not here); v2 int8; v3 int16
class Softmax(_LastAxisKernel):
    """SOFTMAX v1 (float32, with beta)."""

    def prepare(self) -> None:
        super().prepare()
        self.beta = np.float32(self.params.beta if self.params is not None else 0.0)

    def invoke(self) -> None:
        x, y = self.inputs[0].data, self.outputs[0].data
        if y.size == 0:
            return
        np.max(x, axis=-1, keepdims=True, out=self.row_max)
        np.subtract(x, self.row_max, out=y)
        if self.beta != 1:
            np.multiply(y, self.beta, out=y)
        np.exp(y, out=y)
        np.add.reduce(y, axis=-1, keepdims=True, out=self.row_sum)
        np.divide(y, self.row_sum, out=y)


@register(BuiltinOperator.LOG_SOFTMAX, 1, 1)  # v1: float32 (and quantized uint8, not here); v2 int8
class LogSoftmax(_LastAxisKernel):
    """LOG_SOFTMAX v1 (float32)."""

    def invoke(self) -> None:
        x, y = self.inputs[0].data, self.outputs[0].data
        if y.size == 0:
            return
        np.max(x, axis=-1, keepdims=True, out=self.row_max)
        np.subtract(x, self.row_max, out=y)
        np.exp(y, out=y)
        np.add.reduce(y, axis=-1, keepdims=True, out=self.row_sum)
        np.log(self.row_sum, out=self.row_sum)
        np.subtract(x, self.row_max, out=y)
        np.subtract(y, self.row_sum, out=y)
