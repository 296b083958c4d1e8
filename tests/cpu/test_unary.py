"""Parity of the elementwise unary kernels (backends/cpu/kernels/unary.py) with LiteRT."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, assert_outputs_equal, run_interpreter, run_ours
from schema.builder import quantization
from schema.enums import BuiltinOperator as B

#: Float inputs with the edge cases of each op: signed zeros, infinities, NaN, halves.
SPECIAL_VALUES = np.array(
    [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 1e-30, -1e-30, 88.5, -104.0, 1e30, -1e30],
    np.float32,
)


def name(value) -> str:
    return getattr(value, "name", None) or np.dtype(value).name


def unary_model(op, shape, dtype, version=None, quant=None) -> bytes:
    return single_op_model(op, [In(shape, dtype, quant)], Out(shape, dtype, quant), version=version)



def assert_matches_litert_builtin(model: bytes, inputs) -> list[np.ndarray]:
    """Compare with LiteRT's default (optimized) kernels, for ops or versions that its
    reference resolver lacks (CEIL, ROUND, ABS v4-v5 in ai-edge-litert 2.3)."""
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
    from ai_edge_litert.interpreter import OpResolverType

    expected = run_interpreter(
        LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN), inputs
    )
    ours = run_ours(model, inputs)
    assert_outputs_equal(ours, expected)
    return ours


def float_inputs(seed: int, low: float = -6.0, high: float = 6.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([SPECIAL_VALUES, rng.uniform(low, high, size=46).astype(np.float32)]).reshape(4, 16)


FLOAT_V1_OPS = [B.EXP, B.LOG, B.SQRT, B.RSQRT, B.SQUARE, B.ABS, B.NEG, B.SIN, B.COS, B.FLOOR, B.SIGN]


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # SQUARE(1e30) is inf, as in TFLite
@pytest.mark.parametrize("op", FLOAT_V1_OPS, ids=name)
def test_float32_unary_v1_matches_litert(op):
    model = unary_model(op, [4, 16], np.float32)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [float_inputs(int(op))])


@pytest.mark.parametrize("op", [B.CEIL, B.ROUND], ids=name)
def test_float32_ceil_round_v1_match_litert_builtin_kernels(op):
    model = unary_model(op, [4, 16], np.float32)
    assert stamped_version(model) == 1
    assert_matches_litert_builtin(model, [float_inputs(int(op), -1e3, 1e3)])


def test_round_is_half_to_even_like_litert():
    model = unary_model(B.ROUND, [10], np.float32)
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 2.4999998, 8388609.0, -0.49999997], np.float32)
    ours = assert_matches_litert_builtin(model, [x])
    np.testing.assert_array_equal(ours[0][:7], [-2, -2, -0, 0, 2, 2, 4])


@pytest.mark.parametrize("op, dtype", [(B.NEG, np.int32), (B.NEG, np.int64)], ids=["int32", "int64"])
def test_integer_neg_v1_matches_litert(op, dtype):
    model = unary_model(op, [6], dtype)
    assert stamped_version(model) == 1
    info = np.iinfo(dtype)
    assert_matches_litert(model, [np.array([0, 1, -1, 12345, info.max, info.min], dtype)])


def test_float64_sign_v1_matches_litert():
    model = unary_model(B.SIGN, [4, 16], np.float64)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [float_inputs(5).astype(np.float64)])


def test_int32_sign_v2_matches_litert():
    model = unary_model(B.SIGN, [5], np.int32)
    assert stamped_version(model) == 2
    assert_matches_litert(model, [np.array([0, 7, -7, 2**31 - 1, -(2**31)], np.int32)])


@pytest.mark.parametrize("dtype, version", [(np.int16, 4), (np.int32, 5)], ids=["int16-v4", "int32-v5"])
def test_integer_abs_matches_litert_builtin_kernels(dtype, version):
    # LiteRT's reference resolver stops at ABS v3; its default kernels run v4 and v5.
    model = unary_model(B.ABS, [6], dtype)
    assert stamped_version(model) == version
    info = np.iinfo(dtype)
    assert_matches_litert_builtin(model, [np.array([0, 3, -3, info.max, info.min, -1], dtype)])


def test_an_under_stamped_quantized_exp_runs_as_litert_runs_it():
    # TFLite's kernels look at the types, not at the version: int8 EXP stamped v1 runs the
    # quantized kernel (tests/cpu/test_unary_quantized.py covers the quantized ops).
    model = unary_model(B.EXP, [3], np.int8, version=1, quant=quantization(0.1))
    assert_matches_litert(model, [np.array([-100, 0, 27], np.int8)], rtol=0, atol=0)


def test_a_quantized_int16_abs_stamped_v4_runs_the_quantized_kernel_as_litert_does():
    model = unary_model(B.ABS, [3], np.int16, version=4, quant=quantization(0.1))
    assert_matches_litert_builtin(model, [np.array([-300, 0, 7], np.int16)])


# -- nodes outside what the kernels implement fail clearly ---------------------------------


def test_int32_log_fails_naming_the_op():
    model = unary_model(B.LOG, [3], np.int32)
    with pytest.raises(KernelError, match="LOG v1.*INT32.*FLOAT32"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("op", [B.SIN, B.COS], ids=lambda op: op.name)
def test_float16_sin_and_cos_stamped_v2_are_float32_results_rounded_once_like_litert(op):
    # No rule gives v2 (LiteRT 2.3 registers it in its default resolver): float16 is what its
    # kernel adds. numpy's half loops compute in float32 and round once, as LiteRT does.
    from oracle import assert_invokes_match_litert

    model = unary_model(op, [4096], np.float16, version=2)
    values = np.random.default_rng(3).uniform(-100, 100, 4096).astype(np.float16)
    assert_invokes_match_litert(model, [[values]], rtol=0, atol=0, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
