"""RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1 on float32: clamp to a range.

Version 1 of each op is float32; quantized versions are registered by the int8 kernels.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

CLAMP_RANGE = {
    BuiltinOperator.RELU: (0.0, None),
    BuiltinOperator.RELU6: (0.0, 6.0),
    BuiltinOperator.RELU_N1_TO_1: (-1.0, 1.0),
    BuiltinOperator.RELU_0_TO_1: (0.0, 1.0),
}


@register(BuiltinOperator.RELU, 1, 1)
@register(BuiltinOperator.RELU6, 1, 1)
@register(BuiltinOperator.RELU_N1_TO_1, 1, 1)
@register(BuiltinOperator.RELU_0_TO_1, 1, 1)
class Relu(CpuKernel):
    def prepare(self) -> None:
        self.require_types(self.inputs[0], TensorType.FLOAT32)
        self.low, self.high = CLAMP_RANGE[self.op]
        self.outputs[0].resize(self.inputs[0].shape)

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        if self.high is None:
            np.maximum(x, self.low, out=out)
        else:
            np.clip(x, self.low, self.high, out=out)
