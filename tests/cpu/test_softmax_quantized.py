"""Parity of the quantized SOFTMAX / LOG_SOFTMAX kernels (backends/cpu/kernels/softmax_quantized.py)
with LiteRT's reference kernels: integer outputs bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import MODELS_DIR, assert_matches_litert, random_inputs
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.params import SoftmaxParams

SOFTMAX_INT8_OUTPUT = (1 / 256, -128)  # what the converter (and TFLite's kernel) uses
SOFTMAX_INT16_OUTPUT = (1 / 32768, 0)
LOG_SOFTMAX_OUTPUT = {np.uint8: (16 / 256, 255), np.int8: (16 / 256, 127)}


def softmax_model(op, shape, in_dtype, out_dtype, input_q, output_q, beta=1.0) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape, in_dtype, quantization=quantization(*input_q))
    y = graph.add_tensor("y", shape, out_dtype, quantization=quantization(*output_q))
    graph.add_operator(op, [x], [y], SoftmaxParams(beta=beta) if op == B.SOFTMAX else None)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()



def every_value_rows(dtype, rows: int, rng) -> np.ndarray:
    """``rows`` rows, each holding every value of ``dtype`` once (shuffled); later rows
    compressed toward the top so that the row maxima and the spreads differ."""
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1)
    out = np.stack([rng.permutation(values) for _ in range(rows)])
    for r in range(1, rows):
        out[r] = info.max - (info.max - out[r]) // (2 * r)
    return out.astype(dtype)


def random_ints(dtype, shape, rng) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


# (input scale, input zero point, beta): the converter's typical logits scales, scales
# that exercise rounding, large scales (differences cut at diff_min), betas != 1.
SCALES_8BIT = [
    (0.1, -3, 1.0),
    (0.0371, 12, 1.0),
    (0.0078125, 0, 1.0),
    (0.0023, -128, 1.0),
    (0.25, 40, 1.0),
    (0.9, 0, 1.0),
    (0.05, 7, 0.5),
    (0.011, -60, 2.7),
]


@pytest.mark.parametrize("input_scale, input_zero_point, beta", SCALES_8BIT)
def test_softmax_int8_every_input_value_matches_litert(input_scale, input_zero_point, beta):
    model = softmax_model(B.SOFTMAX, [4, 256], np.int8, np.int8, (input_scale, input_zero_point), SOFTMAX_INT8_OUTPUT, beta)
    assert stamped_version(model) == 2
    assert_matches_litert(model, [every_value_rows(np.int8, 4, np.random.default_rng(0))])


@pytest.mark.parametrize("output_q", [(1 / 256, 0), (0.02, 17)], ids=["scale_1_256", "other_params_ignored"])
@pytest.mark.parametrize("input_scale, input_zero_point, beta", SCALES_8BIT[::2])
def test_softmax_uint8_every_input_value_matches_litert(input_scale, input_zero_point, beta, output_q):
    model = softmax_model(B.SOFTMAX, [3, 256], np.uint8, np.uint8, (input_scale, input_zero_point + 128), output_q, beta)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [every_value_rows(np.uint8, 3, np.random.default_rng(1))])


@pytest.mark.parametrize("in_dtype, version", [(np.int8, 2), (np.uint8, 1)], ids=["int8", "uint8"])
def test_softmax_8bit_input_int16_output_matches_litert(in_dtype, version):
    model = softmax_model(B.SOFTMAX, [5, 256], in_dtype, np.int16, (0.043, 3), SOFTMAX_INT16_OUTPUT)
    assert stamped_version(model) == version
    assert_matches_litert(model, [every_value_rows(in_dtype, 5, np.random.default_rng(2))])


@pytest.mark.parametrize("input_scale, beta, divisor", [(1 / 4096, 1.0, 1), (0.00037, 1.0, 16), (0.0002, 0.7, 256), (0.003, 1.3, 64)])
def test_softmax_int16_matches_litert(input_scale, beta, divisor):
    rng = np.random.default_rng(3)
    model = softmax_model(B.SOFTMAX, [6, 300], np.int16, np.int16, (input_scale, 0), SOFTMAX_INT16_OUTPUT, beta)
    assert stamped_version(model) == 3
    assert_matches_litert(model, [(random_ints(np.int16, [6, 300], rng) // divisor).astype(np.int16)])


@pytest.mark.parametrize(
    "shape", [[7], [1, 1], [2, 3, 1], [2, 3, 5, 17], [1, 2, 1, 3, 129]], ids=lambda s: "x".join(map(str, s))
)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_softmax_8bit_odd_shapes_match_litert(shape, dtype):
    model = softmax_model(B.SOFTMAX, shape, dtype, dtype, (0.06, 5), (1 / 256, -128 if dtype == np.int8 else 0))
    assert_matches_litert(model, [random_ints(dtype, shape, np.random.default_rng(4))])


def test_softmax_int16_4d_matches_litert():
    shape = [2, 3, 4, 33]
    model = softmax_model(B.SOFTMAX, shape, np.int16, np.int16, (0.0005, 0), SOFTMAX_INT16_OUTPUT)
    assert_matches_litert(model, [random_ints(np.int16, shape, np.random.default_rng(5))])


def test_softmax_long_rows_match_litert():
    """Rows of 4096 with up to 511 maxima: the sum of exps (Q12.19) just below 2^28,
    the most TFLite's int8 kernel takes (see the next test)."""
    x = np.full([3, 4096], -128, np.int8)
    x[0, :511] = 127
    x[1, ::9] = 127
    x[2] = np.random.default_rng(8).integers(-128, 128, size=4096)
    model = softmax_model(B.SOFTMAX, [3, 4096], np.int8, np.int8, (0.1, 0), SOFTMAX_INT8_OUTPUT)
    assert_matches_litert(model, [x])


def test_softmax_row_whose_sum_of_exps_is_too_large_fails_clearly():
    """512 equal maxima make the sum of exps 2^28 in Q12.19: TFLite's output exponent
    exceeds 31 and it aborts the process (TFLITE_CHECK); we raise instead (not compared
    with LiteRT, which would kill the test run)."""
    model = softmax_model(B.SOFTMAX, [1, 512], np.int8, np.int8, (0.1, 0), SOFTMAX_INT8_OUTPUT)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.full([1, 512], 5, np.int8))
    with pytest.raises(Exception, match="SOFTMAX.*sum of exps of a row is too large"):
        interpreter.invoke()


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 4),
    depth=st.integers(1, 70),
    input_scale=st.floats(0.001, 0.5),
    input_zero_point=st.integers(-128, 127),
    beta=st.sampled_from([1.0, 0.25, 0.9, 1.7]),
    seed=st.integers(0, 2**16),
)
def test_softmax_int8_hypothesis_matches_litert(rows, depth, input_scale, input_zero_point, beta, seed):
    model = softmax_model(B.SOFTMAX, [rows, depth], np.int8, np.int8, (input_scale, input_zero_point), SOFTMAX_INT8_OUTPUT, beta)
    assert_matches_litert(model, [random_ints(np.int8, [rows, depth], np.random.default_rng(seed))])


def bound_softmax(model: bytes, x: np.ndarray):
    """Our interpreter on ``model`` with input ``x`` set, and its SOFTMAX kernel."""
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    return interpreter, interpreter._main.nodes[0].user_data


@settings(max_examples=40, deadline=None)
@given(
    shape=st.sampled_from([[1], [5], [1, 10], [1, 12], [3, 7], [2, 2, 8], [32], [4, 1]]),
    dtype=st.sampled_from([np.int8, np.uint8]),
    input_scale=st.floats(0.002, 0.9),
    input_zero_point=st.integers(-128, 127),
    beta=st.sampled_from([1.0, 0.25, 0.9, 1.7]),
    fill=st.sampled_from(["random", "extremes", "equal"]),
    seed=st.integers(0, 2**16),
)
def test_softmax_8bit_small_bytes_path_matches_the_rows_path_and_litert(
    shape, dtype, input_scale, input_zero_point, beta, fill, seed
):
    """Up to 32 values with an 8-bit output: the step bound at allocation computes on
    bytes and Python ints; it agrees with the vectorized rows path and with LiteRT."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = random_ints(dtype, shape, rng)
    if fill == "extremes":  # differences of the full range, below diff_min
        x = rng.choice(np.array([info.min, info.max, info.max - 1], dtype), size=shape)
    elif fill == "equal":  # every value a maximum
        x = np.full(shape, rng.integers(info.min, info.max + 1), dtype)
    output_q = (1 / 256, -128) if dtype == np.int8 else (1 / 256, 0)
    zero_point = input_zero_point if dtype == np.int8 else input_zero_point + 128
    model = softmax_model(B.SOFTMAX, shape, dtype, dtype, (input_scale, zero_point), output_q, beta)
    interpreter, kernel = bound_softmax(model, x)
    step = kernel.bind()
    assert step.__qualname__.startswith("QuantizedSoftmax._bind_bytes")
    interpreter.invoke()
    ours = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    kernel._invoke_rows()  # the vectorized path on the same arena arrays
    assert np.array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), ours)
    assert_matches_litert(model, [x])


@pytest.mark.parametrize(
    "shape, out_dtype, bound",
    [([1, 33], np.int8, "_invoke_rows"), ([2, 5], np.int16, "_invoke_small")],
    ids=["33_values", "int16_output"],
)
def test_softmax_8bit_other_sizes_bind_the_general_paths_and_match_litert(shape, out_dtype, bound):
    output_q = SOFTMAX_INT8_OUTPUT if out_dtype == np.int8 else SOFTMAX_INT16_OUTPUT
    model = softmax_model(B.SOFTMAX, shape, np.int8, out_dtype, (0.07, 3), output_q)
    x = random_ints(np.int8, shape, np.random.default_rng(9))
    _, kernel = bound_softmax(model, x)
    assert kernel.bind() == getattr(kernel, bound)
    assert_matches_litert(model, [x])


# --- LOG_SOFTMAX --------------------------------------------------------------------------


@pytest.mark.parametrize("input_scale, input_zero_point", [(0.1, -3), (0.0371, 12), (0.0078125, 0), (0.25, 40), (0.6, -100)])
@pytest.mark.parametrize("dtype, version", [(np.int8, 2), (np.uint8, 1)], ids=["int8", "uint8"])
def test_log_softmax_every_input_value_matches_litert(dtype, version, input_scale, input_zero_point):
    zero_point = input_zero_point + (128 if dtype == np.uint8 else 0)
    model = softmax_model(B.LOG_SOFTMAX, [4, 256], dtype, dtype, (input_scale, zero_point), LOG_SOFTMAX_OUTPUT[dtype])
    assert stamped_version(model) == version
    assert_matches_litert(model, [every_value_rows(dtype, 4, np.random.default_rng(6))])


@pytest.mark.parametrize("shape", [[9], [3, 1], [2, 2, 5, 31]], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_log_softmax_odd_shapes_match_litert(shape, dtype):
    model = softmax_model(B.LOG_SOFTMAX, shape, dtype, dtype, (0.03, 9), LOG_SOFTMAX_OUTPUT[dtype])
    assert_matches_litert(model, [random_ints(dtype, shape, np.random.default_rng(7))])


# --- a converter model (FULLY_CONNECTED int8 -> SOFTMAX int8) ----------------------------

CONVERTER_MODEL = MODELS_DIR / "converter" / "softmax_int8.tflite"


def test_converter_softmax_int8_model_matches_litert():
    if not CONVERTER_MODEL.exists():
        pytest.skip(f"{CONVERTER_MODEL} is missing")
    try:
        Interpreter(model_path=str(CONVERTER_MODEL)).allocate_tensors()
    except Exception as error:  # the model's other op may not be implemented yet
        if "FULLY_CONNECTED" in str(error):
            pytest.skip(f"the model's FULLY_CONNECTED int8 node does not run here yet: {error}")
        raise
    for seed in range(4):
        assert_matches_litert(CONVERTER_MODEL, random_inputs(CONVERTER_MODEL, seed))


# --- nodes TFLite refuses -----------------------------------------------------------------


@pytest.mark.parametrize(
    "op, in_dtype, out_dtype, output_q, message",
    [
        (B.SOFTMAX, np.int8, np.int8, (1 / 256, 0), "SOFTMAX v2.*zero point -128"),
        (B.SOFTMAX, np.int8, np.int8, (1 / 128, -128), "SOFTMAX v2.*scale"),
        (B.SOFTMAX, np.int16, np.int16, (1 / 256, 0), "SOFTMAX v3.*scale"),
        (B.SOFTMAX, np.int8, np.uint8, (1 / 256, 0), "SOFTMAX v2.*output"),
        (B.LOG_SOFTMAX, np.int8, np.int8, (1 / 256, 127), "LOG_SOFTMAX v2.*0.0625"),
        (B.LOG_SOFTMAX, np.uint8, np.uint8, (16 / 256, 0), "LOG_SOFTMAX v1.*zero point 255"),
    ],
)
def test_quantized_softmax_with_output_params_tflite_refuses_fails_clearly(op, in_dtype, out_dtype, output_q, message):
    model = softmax_model(op, [2, 8], in_dtype, out_dtype, (0.05, 0), output_q)
    with pytest.raises(KernelError, match=message):
        Interpreter(model_content=model).allocate_tensors()


def test_softmax_int8_with_tiny_input_scale_fails_clearly():
    """beta * scale * 2^26 <= 1: TFLite aborts (QuantizeMultiplierGreaterThanOne); we refuse."""
    model = softmax_model(B.SOFTMAX, [2, 8], np.int8, np.int8, (1e-9, 0), SOFTMAX_INT8_OUTPUT)
    with pytest.raises(KernelError, match="SOFTMAX v2.*above 1"):
        Interpreter(model_content=model).allocate_tensors()
