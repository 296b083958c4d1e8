"""RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1 on float32: clamp to a range.

Version 1 of each op is float32; quantized versions are registered by the int8 kernels.
The clamp is bound to the input and output buffers on the first invoke after an
allocation (``_window.make_clamp``: prepared bounds keep numpy on its fast paths).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import check_shapes, make_clamp, remember_shapes
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
        # TFLite's ReluPrepare: the output has the input's type (TF_LITE_ENSURE_TYPES_EQ).
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        self.low, self.high = CLAMP_RANGE[self.op]
        self.outputs[0].resize(self.inputs[0].shape)
        self.bounds = (self.low, np.inf if self.high is None else self.high)
        self._bound = (None, None)
        remember_shapes(self)

    def bind(self):
        """``invoke``, once the node's tensors still have the shapes it was prepared for
        (``_window.check_shapes``: the clamp is bound to buffers of those shapes)."""
        check_shapes(self)
        return super().bind()

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        if self._bound[0] is not x or self._bound[1] is not out:
            self.clamp = make_clamp(self.bounds, out, x)
            self._bound = (x, out)
        self.clamp()
