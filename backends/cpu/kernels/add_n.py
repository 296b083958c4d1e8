"""ADD_N: the elementwise sum of two or more tensors of one shape and type.

TFLite (``kernels/add_n.cc``): at least two inputs, all of the first one's shape and type;
the output takes that shape. Version 1 (the only one) computes float32 and int32 (its Eval
refuses every other type). The reference sum runs over the inputs in order,
``y = x0 + x1 + ... + xn``; int32 sums wrap, as numpy's do. (LiteRT's optimized kernel
may split the inputs between threads, which changes float rounding by an ulp at most.)
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

T = TensorType


@register(BuiltinOperator.ADD_N, 1, 1)  # v1: float32, int32 (the only version)
class AddN(CpuKernel):
    """ADD_N v1."""

    def prepare(self) -> None:
        if len(self.inputs) < 2:
            raise self.unsupported(f"takes at least 2 inputs, the node has {len(self.inputs)}")
        first = self.inputs[0]
        self.require_types(first, T.FLOAT32, T.INT32, role="input 0")
        for position, tensor in enumerate(self.inputs[1:], start=1):
            self.require_types(tensor, first.type, role=f"input {position}")
            if tuple(tensor.shape) != tuple(first.shape):
                raise self.unsupported(
                    f"input {position} {tensor.name!r} has shape {list(tensor.shape)}, input 0 has "
                    f"{list(first.shape)}; every input must have the same shape (no broadcasting)"
                )
        self.require_types(self.outputs[0], first.type, role="output")
        self.outputs[0].resize(first.shape)

    def invoke(self) -> None:
        out = self.outputs[0].data
        np.add(self.inputs[0].data, self.inputs[1].data, out=out)
        for tensor in self.inputs[2:]:
            np.add(out, tensor.data, out=out)
