"""COMPLEX_ABS, REAL, IMAG: a real number from each complex element.

TFLite (``kernels/complex_support.cc``), one version each:

    COMPLEX_ABS:  y = |x| = hypot(re x, im x)
    REAL:         y = re x
    IMAG:         y = im x

complex64 in gives float32 out, complex128 gives float64; the output has the input's shape.
TFLite computes ``std::abs`` of the C++ complex type, which is the C library's ``hypotf`` /
``hypot``: so does this kernel (``np.hypot`` of the parts: equal bits, where numpy's complex
``absolute``, its own hypot, differs in the last bit for about a third of the values).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator

#: The real type of each complex type's parts.
PART_TYPE = {T.COMPLEX64: T.FLOAT32, T.COMPLEX128: T.FLOAT64}


def _absolute(x: np.ndarray, out: np.ndarray) -> None:
    with np.errstate(over="ignore"):  # |x| above the type's maximum is inf, as in TFLite
        np.hypot(x.real, x.imag, out=out)


def _real(x: np.ndarray, out: np.ndarray) -> None:
    out[...] = x.real


def _imag(x: np.ndarray, out: np.ndarray) -> None:
    out[...] = x.imag


PART_OF = {B.COMPLEX_ABS: _absolute, B.REAL: _real, B.IMAG: _imag}


@register(B.COMPLEX_ABS, 1, 1)  # v1: complex64 -> float32, complex128 -> float64 (the only version)
@register(B.REAL, 1, 1)  # v1: as COMPLEX_ABS
@register(B.IMAG, 1, 1)  # v1: as COMPLEX_ABS
class ComplexPart(CpuKernel):
    """COMPLEX_ABS, REAL, IMAG v1."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(x, T.COMPLEX64, T.COMPLEX128)
        self.require_types(out, PART_TYPE[x.type], role="output")
        self.part = PART_OF[self.op]
        out.resize(x.shape)

    def invoke(self) -> None:
        self.part(self.inputs[0].data, self.outputs[0].data)
