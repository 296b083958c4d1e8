"""DILATE: spread a tensor's elements apart, filling the gaps with a padding value.

TFLite (``kernels/dilate.cc``): inputs (x, dilations, padding_value); ``dilations`` is
int32 with one factor >= 1 per axis of x, ``padding_value`` has x's type (its first
element is used). Each axis of size s becomes ``(s - 1) * d + 1``:

    out[i0 * d0, ..., iN * dN] = x[i0, ..., iN], every other element = padding_value

(interior padding of ``d - 1``). Non-constant dilations make the output dynamic (its
shape is known at invoke). Version 1 (the only one): every fixed-size type (TFLite moves
bytes). An axis of size 0 is refused here when its factor is above 1 (TFLite's formula
would give a negative size).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.bitcast import FIXED_SIZE_TYPES
from backends.cpu.kernels.reshape import inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

T = TensorType


@register(BuiltinOperator.DILATE, 1, 1)  # v1: every fixed-size type (the only version)
class Dilate(CpuKernel):
    """DILATE v1."""

    def prepare(self) -> None:
        self.require_num_inputs(3)
        if inputs_pending(self):
            return
        x, dilations, padding = self.inputs
        self.require_types(x, *FIXED_SIZE_TYPES)
        self.require_types(dilations, T.INT32, role="dilations")
        self.require_types(padding, x.type, role="padding_value")
        self.require_types(self.outputs[0], x.type, role="output")
        if len(x.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        if dilations.shape != (len(x.shape),):
            raise self.unsupported(
                f"dilations {dilations.name!r} has shape {list(dilations.shape)}; it must be 1-D with one "
                f"factor per input axis ({len(x.shape)})"
            )
        if padding.num_elements < 1:
            raise self.unsupported(f"padding_value {padding.name!r} is empty")
        self.from_values = not dilations.is_constant
        if self.from_values:
            self.outputs[0].set_dynamic()
            return
        self.outputs[0].resize(self.output_shape(int_values(dilations)))

    def output_shape(self, factors: list[int]) -> list[int]:
        shape = self.inputs[0].shape
        if any(d < 1 for d in factors):
            raise self.unsupported(f"dilations {factors} must all be at least 1")
        if any(s == 0 and d > 1 for s, d in zip(shape, factors)):
            raise self.unsupported(f"an axis of size 0 cannot be dilated (input {list(shape)}, dilations {factors})")
        return [(s - 1) * d + 1 if s else 0 for s, d in zip(shape, factors)]

    def invoke(self) -> None:
        x, dilations, padding = self.inputs
        factors = int_values(dilations)
        out = self.outputs[0]
        if self.from_values:
            out.set_data(np.empty(self.output_shape(factors), out.dtype))
        out.data[...] = padding.data.reshape(-1)[0]
        out.data[tuple(slice(None, None, d) for d in factors)] = x.data
