"""LiteRT's default custom ops ``AudioSpectrogram`` and ``Mfcc`` against ai-edge-litert
(BUILTIN_REF, which registers both, as its default resolver does)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_matches_litert, run_litert, run_ours

from backends.cpu import builtin_op_resolver
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.custom_options import flexbuffer_bytes

SPEECH_OPTIONS = dict(upper_frequency_limit=4000, lower_frequency_limit=20, filterbank_channel_count=40, dct_coefficient_count=13)


def spectrogram_model(samples, channels, window_size, stride, magnitude_squared=True, options=None) -> bytes:
    """main(x [samples, channels]) = AudioSpectrogram(x)."""
    if options is None:
        options = dict(window_size=window_size, stride=stride, magnitude_squared=magnitude_squared)
    fft_length = 1 << (max(int(window_size), 2) - 1).bit_length()
    frames = 0 if samples < window_size else 1 + (samples - int(window_size)) // max(int(stride), 1)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [samples, channels])
    y = graph.add_tensor("spectrogram", [channels, frames, fft_length // 2 + 1])
    graph.add_operator("AudioSpectrogram", [x], [y], custom_options=flexbuffer_bytes(options))
    graph.add_output(y)
    return builder.build()


def mfcc_model(shape, options=SPEECH_OPTIONS, sample_rate=16000, rate_is_input=False) -> bytes:
    """main(spectrogram [channels, frames, bins]) = Mfcc(spectrogram, sample_rate)."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    spectrogram = graph.add_input("spectrogram", list(shape))
    if rate_is_input:
        rate = graph.add_input("sample_rate", [1], np.int32)
    else:
        rate = graph.add_constant("sample_rate", np.array([sample_rate], np.int32))
    y = graph.add_tensor("mfcc", [*shape[:2], int(options.get("dct_coefficient_count", 0))])
    graph.add_operator("Mfcc", [spectrogram, rate], [y], custom_options=flexbuffer_bytes(options))
    graph.add_output(y)
    return builder.build()


def speech_frontend_model(samples, window_size=480, stride=160, options=SPEECH_OPTIONS) -> bytes:
    """AudioSpectrogram then Mfcc, as TensorFlow's speech-commands models run them."""
    fft_length = 1 << (window_size - 1).bit_length()
    frames = 1 + (samples - window_size) // stride
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("audio", [samples, 1])
    spectrogram = graph.add_tensor("spectrogram", [1, frames, fft_length // 2 + 1])
    graph.add_operator(
        "AudioSpectrogram", [x], [spectrogram],
        custom_options=flexbuffer_bytes(dict(window_size=window_size, stride=stride, magnitude_squared=True)),
    )
    rate = graph.add_constant("sample_rate", np.array(16000, np.int32))
    y = graph.add_tensor("mfcc", [1, frames, options["dct_coefficient_count"]])
    graph.add_operator("Mfcc", [spectrogram, rate], [y], custom_options=flexbuffer_bytes(options))
    graph.add_output(y)
    return builder.build()


def audio(samples, channels=1, seed=0):
    t = np.arange(samples)[:, None] / 16000.0
    tones = 0.5 * np.sin(2 * np.pi * 440 * t * np.arange(1, channels + 1)) + 0.3 * np.sin(2 * np.pi * 2500 * t)
    return (tones + 0.05 * np.random.default_rng(seed).standard_normal((samples, channels))).astype(np.float32)


def power_spectrogram(shape, seed=0):
    return np.random.default_rng(seed).uniform(0, 50, size=shape).astype(np.float32) ** 2


def test_audio_custom_ops_are_in_the_cpu_resolver_by_default():
    resolver = builtin_op_resolver()
    assert resolver.find_custom("AudioSpectrogram", 1) is not None
    assert resolver.find_custom("Mfcc", 1) is not None


# -- AudioSpectrogram ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "samples, channels, window_size, stride",
    [
        (1000, 2, 256, 128),  # power-of-two window, two channels
        (1600, 1, 480, 160),  # 30 ms windows, 10 ms hops at 16 kHz: FFT of 512
        (1000, 1, 100, 300),  # hops longer than the window skip samples
        (256, 3, 256, 64),  # exactly one frame
    ],
)
@pytest.mark.parametrize("magnitude_squared", [True, False], ids=["power", "magnitude"])
def test_audio_spectrogram_matches_litert(samples, channels, window_size, stride, magnitude_squared):
    model = spectrogram_model(samples, channels, window_size, stride, magnitude_squared)
    assert_matches_litert(model, [audio(samples, channels)])


def test_audio_spectrogram_gives_litert_bits():
    """TFLite transforms in double and rounds the power once to float32, as the kernel does."""
    model = spectrogram_model(4000, 1, 400, 160)
    x = audio(4000, seed=3)
    np.testing.assert_array_equal(run_ours(model, [x])[0], run_litert(model, [x])[0])


def test_audio_spectrogram_of_fewer_samples_than_a_window_is_empty_as_in_litert():
    outputs = assert_matches_litert(spectrogram_model(100, 2, 256, 128), [audio(100, 2)])
    assert outputs[0].shape == (2, 0, 129)


def test_audio_spectrogram_truncates_float_options_as_litert():
    """TFLite reads window_size and stride with AsInt64 (toward zero) and the flag with AsBool."""
    options = dict(window_size=256.9, stride=100.5, magnitude_squared=2)
    assert_matches_litert(spectrogram_model(900, 1, 256, 100, options=options), [audio(900)])


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(window_size=1, stride=1), "window_size 1 is below 2"),
        (dict(window_size=64, stride=0), "stride 0 is not positive"),
        (dict(window_size=64), "stride 0 is not positive"),  # a missing key reads as 0
    ],
)
def test_audio_spectrogram_refuses_options_litert_refuses(options, message):
    model = spectrogram_model(256, 1, options["window_size"], options.get("stride", 1), options=options)
    with pytest.raises(RuntimeError):
        run_litert(model, [audio(256)])
    with pytest.raises(KernelError, match=f"AudioSpectrogram v1: {message}"):
        run_ours(model, [audio(256)])


def test_audio_spectrogram_refuses_custom_options_that_are_not_a_flexbuffer_map():
    """(LiteRT's Init crashes on such bytes: not run there.)"""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [64, 1])
    y = graph.add_tensor("y", [1, 1, 33])
    graph.add_operator("AudioSpectrogram", [x], [y], custom_options=b"")
    graph.add_output(y)
    with pytest.raises(KernelError, match="AudioSpectrogram v1: custom options are empty; a FlexBuffer map is required"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_audio_spectrogram_refuses_a_one_dimensional_input():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [64])
    y = graph.add_tensor("y", [1, 1, 33])
    graph.add_operator("AudioSpectrogram", [x], [y], custom_options=flexbuffer_bytes(dict(window_size=64, stride=32)))
    graph.add_output(y)
    with pytest.raises(KernelError, match=r"AudioSpectrogram v1: the input must be 2-D \[samples, channels\]"):
        Interpreter(model_content=builder.build()).allocate_tensors()


# -- Mfcc ----------------------------------------------------------------------------------------


def test_audio_spectrogram_then_mfcc_gives_litert_bits():
    """The speech-commands front end: 1 s at 16 kHz, 30 ms windows, 10 ms hops, 13 MFCCs.
    TFLite computes the filterbank, log and DCT in double and rounds once, as the kernel does."""
    assert_matches_litert(speech_frontend_model(16000), [audio(16000)], rtol=0, atol=0)


@pytest.mark.parametrize(
    "shape, options, sample_rate",
    [
        ((2, 5, 257), SPEECH_OPTIONS, 16000),
        ((1, 4, 129), dict(upper_frequency_limit=7600, lower_frequency_limit=125, filterbank_channel_count=32, dct_coefficient_count=32), 16000),
        ((1, 3, 513), dict(upper_frequency_limit=11000, lower_frequency_limit=0, filterbank_channel_count=64, dct_coefficient_count=20), 44100),
        # more bands than bins can feed: some bands stay empty and take log(1e-12)
        ((1, 3, 33), dict(upper_frequency_limit=4000, lower_frequency_limit=20, filterbank_channel_count=40, dct_coefficient_count=13), 16000),
    ],
)
def test_mfcc_matches_litert(shape, options, sample_rate):
    assert_matches_litert(mfcc_model(shape, options, sample_rate), [power_spectrogram(shape)])


def test_mfcc_of_silence_matches_litert():
    assert_matches_litert(mfcc_model((1, 3, 257)), [np.zeros((1, 3, 257), np.float32)])


def test_mfcc_with_a_runtime_sample_rate_matches_litert():
    model = mfcc_model((1, 4, 257), rate_is_input=True)
    for rate in (8000, 16000, 22050):
        assert_matches_litert(model, [power_spectrogram((1, 4, 257), seed=rate), np.array([rate], np.int32)])


def test_mfcc_truncates_fractional_frequency_limits_as_litert():
    """TFLite reads the limits with AsInt64: 4000.9 Hz is 4000 Hz, 20.7 Hz is 20 Hz."""
    options = dict(SPEECH_OPTIONS, upper_frequency_limit=4000.9, lower_frequency_limit=20.7)
    assert_matches_litert(mfcc_model((1, 3, 257), options), [power_spectrogram((1, 3, 257))])


def test_mfcc_with_an_upper_limit_past_the_spectrum_is_zero_as_in_litert():
    """TFLite's filterbank gives nothing when its top bin is past the spectrum: all zeros."""
    options = dict(SPEECH_OPTIONS, upper_frequency_limit=9000)
    outputs = assert_matches_litert(mfcc_model((1, 3, 257), options), [power_spectrogram((1, 3, 257))])
    assert not outputs[0].any()


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(SPEECH_OPTIONS, dct_coefficient_count=41), r"dct_coefficient_count 41 is not in 1..filterbank_channel_count \(40\)"),
        (dict(SPEECH_OPTIONS, lower_frequency_limit=4000), "upper_frequency_limit 4000 is not above lower_frequency_limit 4000"),
        (dict(SPEECH_OPTIONS, filterbank_channel_count=0), "filterbank_channel_count 0 is not positive"),
    ],
)
def test_mfcc_refuses_options_litert_refuses(options, message):
    model = mfcc_model((1, 2, 257), options)
    with pytest.raises(RuntimeError):
        run_litert(model, [power_spectrogram((1, 2, 257))])
    with pytest.raises(KernelError, match=f"Mfcc v1: {message}"):
        run_ours(model, [power_spectrogram((1, 2, 257))])


def test_mfcc_refuses_a_sample_rate_litert_refuses():
    model = mfcc_model((1, 2, 257), rate_is_input=True)
    inputs = [power_spectrogram((1, 2, 257)), np.array([0], np.int32)]
    with pytest.raises(RuntimeError):
        run_litert(model, inputs)
    with pytest.raises(KernelError, match="Mfcc v1: sample rate 0 is not positive"):
        run_ours(model, inputs)
