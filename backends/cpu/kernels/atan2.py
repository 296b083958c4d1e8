"""ATAN2: the angle of the point (x, y), elementwise: ``out = atan2(y, x)``.

TFLite (``kernels/atan2.cc``): inputs (y, x) of one float type, the output of that type
and y's shape; each element is ``std::atan2`` of the C library in the tensor's type
(float16 through Eigen's half: computed in float32, rounded to half). numpy's ``arctan2``
calls the same C function per type, so float32 and float64 results are the same bits.
Version 1 (the only one): float32, float64, float16 (bfloat16, which TFLite also takes,
has no numpy type here).

TFLite checks only that y and x have the same rank, then reads both flat over y's
element count; here they must hold the same number of elements (else TFLite would read
past x).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

T = TensorType


@register(BuiltinOperator.ATAN2, 1, 1)  # v1: float32, float64, float16 (the only version)
class Atan2(CpuKernel):
    """ATAN2 v1."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        y, x = self.inputs
        self.require_types(y, T.FLOAT32, T.FLOAT64, T.FLOAT16, role="input y")
        self.require_types(x, y.type, role="input x")
        self.require_types(self.outputs[0], y.type, role="output")
        if len(x.shape) != len(y.shape) or x.num_elements != y.num_elements:
            raise self.unsupported(
                f"y {list(y.shape)} and x {list(x.shape)} must have the same rank and number of elements "
                "(ATAN2 does not broadcast)"
            )
        # float16: atan2 in float32, rounded once to half (Eigen::half's std::atan2)
        self.compute_type = np.float32 if y.type == T.FLOAT16 else y.dtype
        self.outputs[0].resize(y.shape)

    def invoke(self) -> None:
        y, x, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        angles = np.arctan2(y.astype(self.compute_type, copy=False), x.reshape(y.shape).astype(self.compute_type, copy=False))
        np.copyto(out, angles, casting="unsafe")
