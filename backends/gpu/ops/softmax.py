"""SOFTMAX on the GPU, along the last axis, with beta.

As the CPU kernel (``backends/cpu/kernels/softmax.py``, TFLite's reference), per row:
``e = exp((x - max(x)) * beta); y = e / sum(e)``, in float32.

Version claimed: 1 (v2 int8, v3 int16 are quantized versions).
"""

from __future__ import annotations

import numpy as np

from backends.gpu.ops.elementwise import FloatOp
from schema.enums import BuiltinOperator


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
