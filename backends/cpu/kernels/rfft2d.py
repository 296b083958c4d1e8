"""RFFT2D: the 2-D discrete Fourier transform of real input, non-negative frequencies only.

TFLite (``kernels/rfft2d.cc``, version 1, as ``tf.signal.rfft2d``): input ``x`` float32 of
rank >= 2, ``fft_length = [h, w]`` int32 (each a power of two); for every slice over the last
two axes, ``x`` is cropped or zero-padded to ``h x w`` and

    y[u, v] = sum_{m<h, n<w} x[m, n] * exp(-2 pi i (u m / h + v n / w)),  v = 0 .. w/2

so the output is complex64 of shape ``[..., h, w/2 + 1]``. TFLite computes in double
(Ooura's fft2d) and rounds to complex64; so does this kernel (numpy's ``rfft2`` on float64).

Width 1 is refused: TFLite's fft2d library does not compute a transform of width 1 (its
result for ``w = 1`` is not the DFT), so no faithful answer exists.
``fft_length`` may be a runtime tensor: the output shape is then set at invoke.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

T = TensorType


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


@register(BuiltinOperator.RFFT2D, 1, 1)  # v1: float32 in, complex64 out (the only version)
class Rfft2d(CpuKernel):
    """RFFT2D v1."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        if inputs_pending(self):
            return
        x, fft_length = self.inputs
        self.require_types(x, T.FLOAT32)
        self.require_types(fft_length, T.INT32, role="fft_length")
        self.require_types(self.outputs[0], T.COMPLEX64, role="output")
        if len(x.shape) < 2:
            raise self.unsupported(f"the input must have rank 2 or more, it has shape {list(x.shape)}")
        if list(fft_length.shape) != [2]:
            raise self.unsupported(f"fft_length must have shape [2] (height, width), it has shape {list(fft_length.shape)}")
        self.lengths_from_values = not fft_length.is_constant
        if self.lengths_from_values:
            self.outputs[0].set_dynamic()
            return
        self.outputs[0].resize(self._output_shape(int_values(fft_length)))

    def _output_shape(self, lengths: list[int]) -> tuple[int, ...]:
        height, width = lengths
        for name, value in (("height", height), ("width", width)):
            if not is_power_of_two(value):
                raise self.unsupported(f"fft_length {name} {value} is not a power of two (TFLite's fft2d needs one)")
        if width == 1:
            raise self.unsupported(
                "fft_length width 1 is not supported: TFLite's fft2d library does not compute a width-1 "
                "transform, so there is no result to match (use a width of 2 or more)"
            )
        return (*self.inputs[0].shape[:-2], height, width // 2 + 1)

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0]
        lengths = int_values(self.inputs[1])
        if self.lengths_from_values:
            out.set_data(np.empty(self._output_shape(lengths), np.complex64))
        # rfft2 with s= crops or zero-pads the last two axes to (height, width), as TFLite does.
        out.data[...] = np.fft.rfft2(x.astype(np.float64), s=lengths, axes=(-2, -1))
