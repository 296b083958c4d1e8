"""``AudioSpectrogram``: the custom op LiteRT's default resolver runs (version 1), as TFLite
defines it (``kernels/audio_spectrogram.cc``, ``kernels/internal/spectrogram.cc``).

Input ``x [samples, channels]`` float32; custom options (FlexBuffer map) ``window_size``,
``stride`` (integers) and ``magnitude_squared`` (bool). With ``n = window_size``, the FFT
length ``L`` (the next power of two >= n) and the periodic Hann window
``w[i] = 0.5 - 0.5 cos(2 pi i / n)``, frame ``t`` of channel ``c`` is

    X_t[k] = sum_{i<n} x[t * stride + i, c] * w[i] * exp(-2 pi i k i / L),  k = 0 .. L/2
    y[c, t, k] = |X_t[k]|^2         (magnitude_squared)
    y[c, t, k] = sqrtf(|X_t[k]|^2)  (otherwise: the float32 square root of the float32 power)

for ``t`` in ``0 .. (samples - n) // stride`` (no frame when ``samples < n``). Output
``[channels, frames, L/2 + 1]`` float32. TFLite computes the window, the FFT and the power in
double and rounds the power to float32 once: so does this kernel (numpy's ``rfft`` on float64).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from backends.cpu.kernel import CpuKernel, register_custom
from schema.custom_options import CustomOptionsError, FlexbufferMap
from schema.enums import TensorType

AUDIO_SPECTROGRAM = "AudioSpectrogram"


def periodic_hann(length: int) -> np.ndarray:
    """TFLite's ``GetPeriodicHann`` in double."""
    return 0.5 - 0.5 * np.cos((2.0 * np.pi * np.arange(length)) / length)


def fft_length_for(window_size: int) -> int:
    """The next power of two >= ``window_size``."""
    return 1 << (window_size - 1).bit_length()


def frame_count(samples: int, window_size: int, stride: int) -> int:
    return 0 if samples < window_size else 1 + (samples - window_size) // stride


# v1: float32 (the only version LiteRT registers).
@register_custom(AUDIO_SPECTROGRAM, 1, 1)
class AudioSpectrogram(CpuKernel):
    """``AudioSpectrogram`` version 1."""

    @property
    def op_name(self) -> str:
        return AUDIO_SPECTROGRAM

    def prepare(self) -> None:
        self.require_num_inputs(1)
        if len(self.outputs) != 1:
            raise self.unsupported(f"expected 1 output, got {len(self.outputs)}")
        x = self.inputs[0]
        self.require_types(x, TensorType.FLOAT32)
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        if len(x.shape) != 2:
            raise self.unsupported(f"the input must be 2-D [samples, channels], it has shape {list(x.shape)}")
        try:
            options = FlexbufferMap(self.node.custom_options)
        except CustomOptionsError as error:
            raise self.unsupported(str(error)) from None
        self.window_size = options.as_int64("window_size")
        self.stride = options.as_int64("stride")
        self.magnitude_squared = options.as_bool("magnitude_squared")
        if self.window_size < 2:
            raise self.unsupported(f"window_size {self.window_size} is below 2 (TFLite's spectrogram needs 2 or more)")
        if self.stride < 1:
            raise self.unsupported(f"stride {self.stride} is not positive")
        self.fft_length = fft_length_for(self.window_size)
        self.window = periodic_hann(self.window_size)
        samples, channels = x.shape
        self.frames = frame_count(samples, self.window_size, self.stride)
        self.outputs[0].resize([channels, self.frames, self.fft_length // 2 + 1])

    def invoke(self) -> None:
        out = self.outputs[0].data
        if self.frames == 0:
            return
        x = self.inputs[0].data.astype(np.float64)
        # [samples, channels] -> [channels, frames, window_size]
        frames = sliding_window_view(x, self.window_size, axis=0)[:: self.stride][: self.frames].transpose(1, 0, 2)
        spectrum = np.fft.rfft(frames * self.window, n=self.fft_length, axis=-1)
        power = spectrum.real * spectrum.real + spectrum.imag * spectrum.imag
        out[...] = power  # rounded once to float32, as TFLite's double -> float
        if not self.magnitude_squared:
            np.sqrt(out, out=out)
