"""``Mfcc``: the custom op LiteRT's default resolver runs (version 1), as TFLite defines it
(``kernels/mfcc.cc``, ``kernels/internal/mfcc.cc``, ``mfcc_mel_filterbank.cc``, ``mfcc_dct.cc``).

Inputs: ``spectrogram [channels, frames, bins]`` float32 (AudioSpectrogram's squared
magnitudes) and ``sample_rate`` (one int32). Custom options (FlexBuffer map, each read as an
integer, as TFLite reads them): ``upper_frequency_limit``, ``lower_frequency_limit``,
``filterbank_channel_count`` (M), ``dct_coefficient_count`` (K). Output
``[channels, frames, K]`` float32. Per frame, in double:

- mel filterbank: ``mel(f) = 1127 ln(1 + f / 700)``; M + 1 centers evenly spaced in mel above
  the lower limit; bin ``i`` has frequency ``i * rate / (2 (bins - 1))``; the bins from
  ``int(1.5 + lower / hz_per_bin)`` to ``int(upper / hz_per_bin)`` each add
  ``sqrt(power) * w_i`` to the band whose center is the last one below the bin and
  ``sqrt(power) - sqrt(power) * w_i`` to the next band (a triangle per band);
- ``log(max(band, 1e-12))``;
- DCT-II: ``c_k = sum_j sqrt(2 / M) cos(k pi (j + 0.5) / M) * log_band_j`` for k < K;

rounded to float32 once. When the top bin index reaches ``bins`` (an upper limit at or above
the spectrum's top frequency) TFLite's filterbank returns nothing and the frame's
coefficients are all 0: so here. The filterbank is built once per sample rate (the rate may
be a runtime tensor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backends.cpu.kernel import CpuKernel, register_custom
from backends.cpu.kernels.reshape import inputs_pending
from schema.custom_options import CustomOptionsError, FlexbufferMap
from schema.enums import TensorType

MFCC = "Mfcc"
FILTERBANK_FLOOR = 1e-12


def freq_to_mel(freq):
    return 1127.0 * np.log1p(np.asarray(freq, np.float64) / 700.0)


@dataclass(frozen=True)
class MfccOptions:
    upper_frequency_limit: float
    lower_frequency_limit: float
    filterbank_channel_count: int
    dct_coefficient_count: int

    @classmethod
    def parse(cls, custom_options: bytes | None) -> "MfccOptions":
        options = FlexbufferMap(custom_options)
        return cls(
            # TFLite stores AsInt64() of each limit in a float: fractions are dropped.
            upper_frequency_limit=float(options.as_int64("upper_frequency_limit")),
            lower_frequency_limit=float(options.as_int64("lower_frequency_limit")),
            filterbank_channel_count=options.as_int64("filterbank_channel_count"),
            dct_coefficient_count=options.as_int64("dct_coefficient_count"),
        )

    def problem(self, bins: int) -> str | None:
        """Why TFLite's Mfcc cannot initialise with these options on ``bins`` bins, or None."""
        if self.filterbank_channel_count < 1:
            return f"filterbank_channel_count {self.filterbank_channel_count} is not positive"
        if bins < 2:
            return f"the spectrogram has {bins} bins; at least 2 are needed"
        if self.lower_frequency_limit < 0:
            return f"lower_frequency_limit {self.lower_frequency_limit:g} is negative"
        if self.upper_frequency_limit <= self.lower_frequency_limit:
            return (
                f"upper_frequency_limit {self.upper_frequency_limit:g} is not above "
                f"lower_frequency_limit {self.lower_frequency_limit:g}"
            )
        if not 1 <= self.dct_coefficient_count <= self.filterbank_channel_count:
            return (
                f"dct_coefficient_count {self.dct_coefficient_count} is not in 1..filterbank_channel_count "
                f"({self.filterbank_channel_count})"
            )
        return None


@dataclass(frozen=True)
class MelFilterbank:
    """TFLite's ``MfccMelFilterbank`` for one (bins, sample rate): the bins it reads, the band
    each feeds on its right side (-1: none) and the weight it gives that band."""

    channels: int
    start: int
    end: int
    band: np.ndarray  # [end - start + 1] int: right-side band of each bin used
    weight: np.ndarray  # [end - start + 1] double
    bins: int

    @classmethod
    def build(cls, bins: int, sample_rate: int, channels: int, lower: float, upper: float) -> "MelFilterbank":
        mel_low, mel_high = freq_to_mel(lower), freq_to_mel(upper)
        spacing = (mel_high - mel_low) / float(channels + 1)
        centers = mel_low + spacing * np.arange(1, channels + 2)  # M + 1 centers
        hz_per_bin = 0.5 * sample_rate / float(bins - 1)
        start = int(1.5 + lower / hz_per_bin)
        end = int(upper / hz_per_bin)
        used = np.arange(start, end + 1)
        mels = freq_to_mel(used * hz_per_bin)
        # The first of the first M centers at or above the bin's mel (M if none), minus one.
        band = np.searchsorted(centers[:channels], mels, side="left") - 1
        right_center = centers[band + 1]
        left_center = np.where(band >= 0, centers[np.maximum(band, 0)], mel_low)
        weight = (right_center - mels) / (right_center - left_center)
        return cls(channels, start, end, band, weight, bins)

    def compute(self, power: np.ndarray) -> np.ndarray:
        """Bands ``[rows, M]`` of power spectra ``[rows, bins]`` (double)."""
        magnitude = np.sqrt(power[:, self.start : self.end + 1].astype(np.float64))
        weighted = magnitude * self.weight
        out = np.zeros((len(power), self.channels + 1))  # a last column for band M: dropped
        for position, band in enumerate(self.band):  # bin by bin, in TFLite's order of sums
            if band >= 0:
                out[:, band] += weighted[:, position]
            out[:, band + 1] += magnitude[:, position] - weighted[:, position]
        return out[:, : self.channels]


def dct_matrix(inputs: int, coefficients: int) -> np.ndarray:
    """TFLite's ``MfccDct`` cosines ``[coefficients, inputs]``."""
    arg = np.pi / inputs
    i = np.arange(coefficients, dtype=np.float64)[:, None]
    j = np.arange(inputs, dtype=np.float64)[None, :]
    return np.sqrt(2.0 / inputs) * np.cos((i * arg) * (j + 0.5))


# v1: float32 spectrogram, int32 sample rate (the only version LiteRT registers).
@register_custom(MFCC, 1, 1)
class Mfcc(CpuKernel):
    """``Mfcc`` version 1."""

    @property
    def op_name(self) -> str:
        return MFCC

    def prepare(self) -> None:
        self.require_num_inputs(2)
        if len(self.outputs) != 1:
            raise self.unsupported(f"expected 1 output, got {len(self.outputs)}")
        if inputs_pending(self):
            return
        spectrogram, rate = self.inputs
        self.require_types(spectrogram, TensorType.FLOAT32, role="spectrogram")
        self.require_types(rate, TensorType.INT32, role="sample rate")
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        if len(spectrogram.shape) != 3:
            raise self.unsupported(f"the spectrogram must be 3-D [channels, frames, bins], it has shape {list(spectrogram.shape)}")
        if rate.num_elements != 1:
            raise self.unsupported(f"the sample rate must hold one value, it has shape {list(rate.shape)}")
        try:
            self.options = MfccOptions.parse(self.node.custom_options)
        except CustomOptionsError as error:
            raise self.unsupported(str(error)) from None
        self.bins = spectrogram.shape[2]
        problem = self.options.problem(self.bins)
        if problem is not None:
            raise self.unsupported(problem)
        o = self.options
        self.dct = dct_matrix(o.filterbank_channel_count, o.dct_coefficient_count)
        self.filterbanks: dict[int, MelFilterbank] = {}
        if rate.is_constant:
            self.filterbank(int(rate.data.reshape(-1)[0]))
        self.outputs[0].resize([*spectrogram.shape[:2], o.dct_coefficient_count])

    def filterbank(self, sample_rate: int) -> MelFilterbank:
        """The filterbank for this rate (built once per rate)."""
        if sample_rate not in self.filterbanks:
            if sample_rate <= 0:
                raise self.unsupported(f"sample rate {sample_rate} is not positive")
            o = self.options
            self.filterbanks[sample_rate] = MelFilterbank.build(
                self.bins, sample_rate, o.filterbank_channel_count, o.lower_frequency_limit, o.upper_frequency_limit
            )
        return self.filterbanks[sample_rate]

    def invoke(self) -> None:
        spectrogram, out = self.inputs[0].data, self.outputs[0].data
        filterbank = self.filterbank(int(self.inputs[1].data.reshape(-1)[0]))
        if filterbank.end >= filterbank.bins:  # TFLite's filterbank gives nothing: the DCT of nothing
            out.fill(0.0)
            return
        bands = filterbank.compute(spectrogram.reshape(-1, self.bins))
        log_bands = np.log(np.maximum(bands, FILTERBANK_FLOOR))
        out[...] = (log_bands @ self.dct.T).reshape(out.shape)
