"""SOFTMAX and LOG_SOFTMAX against ai-edge-litert."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import MODELS_DIR, assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import quantization
from schema.enums import BuiltinOperator
from schema.params import LogSoftmaxParams, SoftmaxParams

B = BuiltinOperator


def softmax_model(op, shape, beta=1.0, dtype=np.float32, version=None, **tensor_kwargs):
    q = tensor_kwargs.get("quantization")
    params = SoftmaxParams(beta=beta) if op == B.SOFTMAX else LogSoftmaxParams()
    return single_op_model(op, [In(shape, dtype, q)], Out(shape, dtype, q), params, version=version)



def uniform(shape, seed=0, low=-4.0, high=4.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


# The exponential (and LOG_SOFTMAX's log) are computed by numpy's float32 SIMD routines
# and by libm in LiteRT; both are within ~1 ulp, well inside the default 1e-5 tolerance.


@pytest.mark.parametrize("shape", [[10], [3, 7], [2, 3, 5], [2, 2, 3, 4], [1, 2, 1, 2, 6]], ids=str)
def test_softmax_over_the_last_axis_matches_litert(shape):
    model = softmax_model(B.SOFTMAX, shape)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [uniform(shape)])


@pytest.mark.parametrize("beta", [0.0, 0.5, 2.0, 25.0, -1.0])
def test_softmax_scales_the_logits_by_beta(beta):
    assert_matches_litert(softmax_model(B.SOFTMAX, [4, 9], beta=beta), [uniform([4, 9], seed=1)])


def test_softmax_subtracts_the_row_max_so_large_logits_do_not_overflow():
    x = uniform([3, 8], seed=2) + np.array([[0.0], [80.0], [1e4]], np.float32)
    assert_matches_litert(softmax_model(B.SOFTMAX, [3, 8]), [x])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf: NaN rows, on purpose
@pytest.mark.parametrize("op", [B.SOFTMAX, B.LOG_SOFTMAX], ids=lambda op: op.name)
def test_non_finite_rows_match_litert(op):
    inf = np.inf
    x = np.array(
        [[1.0, np.nan, 2.0, 0.0], [-inf, -inf, -inf, -inf], [inf, 1.0, 2.0, 3.0], [-inf, 1.0, -inf, 0.5]],
        np.float32,
    )
    assert_matches_litert(softmax_model(op, [4, 4]), [x])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf: NaN rows, on purpose
@pytest.mark.parametrize("op", [B.SOFTMAX, B.LOG_SOFTMAX], ids=lambda op: op.name)
@pytest.mark.parametrize("shape", [[4], [1, 4]], ids=str)
def test_non_finite_single_rows_match_litert(op, shape):
    # A single row takes its max at argmax() and its sum by a dot product.
    inf = np.inf
    for row in ([1.0, np.nan, 2.0, 0.0], [-inf, -inf, -inf, -inf], [inf, 1.0, 2.0, 3.0], [-inf, 1.0, -inf, 0.5]):
        x = np.array(row, np.float32).reshape(shape)
        assert_matches_litert(softmax_model(op, shape), [x])


@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_softmax_of_a_single_row_scales_the_logits_by_beta(beta):
    assert_matches_litert(softmax_model(B.SOFTMAX, [1, 12], beta=beta), [uniform([1, 12], seed=5)])


@pytest.mark.parametrize("op", [B.SOFTMAX, B.LOG_SOFTMAX], ids=lambda op: op.name)
def test_a_single_class_gives_one_or_zero(op):
    assert_matches_litert(softmax_model(op, [5, 1]), [uniform([5, 1], seed=3)])


@pytest.mark.parametrize("shape", [[10], [3, 7], [2, 3, 5], [2, 2, 3, 4]], ids=str)
def test_log_softmax_over_the_last_axis_matches_litert(shape):
    model = softmax_model(B.LOG_SOFTMAX, shape)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [uniform(shape, seed=4)])


def test_log_softmax_of_spread_logits_matches_litert():
    x = uniform([3, 8], seed=5) * np.array([[1.0], [30.0], [1e3]], np.float32)
    assert_matches_litert(softmax_model(B.LOG_SOFTMAX, [3, 8]), [x])


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=4),
    op=st.sampled_from([B.SOFTMAX, B.LOG_SOFTMAX]),
    beta=st.sampled_from([1.0, 0.3, 3.0]),
    seed=st.integers(0, 2**16),
)
def test_softmax_property_matches_litert(shape, op, beta, seed):
    assert_matches_litert(softmax_model(op, shape, beta=beta), [uniform(shape, seed)])


def test_softmax_converter_model_matches_litert():
    from backends.cpu.kernel import KERNELS, builtin_op_resolver

    builtin_op_resolver()  # imports every kernel module
    if not any(entry.op == B.FULLY_CONNECTED for entry in KERNELS):
        pytest.skip("softmax_float32.tflite starts with FULLY_CONNECTED, whose CPU kernel is not registered yet")
    assert_matches_litert(MODELS_DIR / "converter" / "softmax_float32.tflite")


# -- bad nodes ---------------------------------------------------------------------------------


def test_scalar_softmax_input_is_refused_with_the_op_name():
    with pytest.raises(KernelError, match="SOFTMAX.*at least one dimension"):
        Interpreter(model_content=softmax_model(B.SOFTMAX, [])).allocate_tensors()


# -- float16 (v4: LiteRT 2.3's default resolver) ---------------------------------------------------


@pytest.mark.parametrize("beta", [1.0, 0.7])
@pytest.mark.parametrize("shape", [(8, 1000), (40, 33), (7,)], ids=lambda s: "x".join(map(str, s)))
def test_float16_softmax_stamped_v4_matches_litert_bit_for_bit(shape, beta):
    # No rule gives v4: float16 is what LiteRT 2.3's kernel adds. Its exponentials are
    # rounded to half before the division by their float32 sum (HalfSoftmax's docstring).
    # Within one float16 step (2**-10 relative), not bit for bit: numpy's float32 exp differs
    # from the C library's expf by an ulp now and then, which can move a half rounding (1 of
    # 8000 elements in the 8x1000 case; with the C library's expf every element is equal).
    from oracle import assert_invokes_match_litert

    model = softmax_model(BuiltinOperator.SOFTMAX, shape, beta, dtype=np.float16, version=4)
    values = np.random.default_rng(len(shape)).uniform(-8, 8, shape).astype(np.float16)
    assert_invokes_match_litert(model, [[values]], rtol=2**-10, atol=0, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
