"""Quantized ABS (v2 int8, v3 int16), EXP, LOG, SQRT (v2 int8/int16), RSQRT (v2 int8, v3
int16) and GELU (v2 int8/uint8, v3 int16) (backends/cpu/kernels/unary_quantized.py) against
LiteRT, bit for bit: every input value of each type goes through the node at once, so the
whole table the kernel builds is compared."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_invokes_match_litert, assert_matches_litert, run_ours
from schema.builder import quantization
from schema.enums import BuiltinOperator as B
from schema.params import GeluParams

EXACT = {"rtol": 0, "atol": 0}
INT8 = (np.int8, quantization(0.05, 3), quantization(0.07, -5))
INT8_SAME_SCALE = (np.int8, quantization(0.05, 3), quantization(0.05, -2))
INT16 = (np.int16, quantization(7e-4, 0), quantization(1.1e-3, 0))
UINT8 = (np.uint8, quantization(0.05, 128), quantization(0.06, 120))
#: non-negative inputs for SQRT and RSQRT (they fail below the zero point)
INT8_FROM_MIN = (np.int8, quantization(0.05, -128), quantization(0.03, -100))


def every_value(dtype, low=None) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(info.min if low is None else low, int(info.max) + 1).astype(dtype)


def model(op, case, params=None, version=None) -> bytes:
    dtype, q_in, q_out = case
    count = every_value(dtype).size
    return single_op_model(op, [In([count], dtype, q_in)], Out([count], dtype, q_out), params, version=version)


def assert_every_value_matches_litert(op, case, params=None, low=None, version=None, resolver=None) -> bytes:
    """``resolver``: LiteRT's default kernels (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``) for the
    versions its reference resolver does not register."""
    dtype, q_in, q_out = case
    values = every_value(dtype, low)
    built = single_op_model(op, [In([values.size], dtype, q_in)], Out([values.size], dtype, q_out), params,
                            version=version)
    if resolver is None:
        assert_matches_litert(built, [values], **EXACT)
    else:
        assert_invokes_match_litert(built, [[values]], resolver=resolver, **EXACT)
    return built


@pytest.mark.parametrize("case, version", [(INT8, 2), (INT8_SAME_SCALE, 2), (INT16, 3)],
                         ids=["int8", "int8-same-scale", "int16"])
def test_quantized_abs_is_stamped_by_type_and_matches_litert_on_every_value(case, version):
    assert stamped_version(assert_every_value_matches_litert(B.ABS, case)) == version


@pytest.mark.parametrize("op", [B.EXP, B.LOG], ids=["exp", "log"])
@pytest.mark.parametrize("case", [INT8, INT16], ids=["int8", "int16"])
def test_quantized_exp_and_log_are_v2_and_match_litert_on_every_value(op, case):
    assert stamped_version(assert_every_value_matches_litert(op, case)) == 2


def test_quantized_sqrt_int8_is_v2_and_matches_litert_on_every_value():
    assert stamped_version(assert_every_value_matches_litert(B.SQRT, INT8_FROM_MIN)) == 2


def test_quantized_sqrt_int16_matches_litert_on_every_non_negative_value():
    assert_every_value_matches_litert(B.SQRT, INT16, low=0)


def test_quantized_rsqrt_int8_is_v2_and_matches_litert_on_every_value():
    assert stamped_version(assert_every_value_matches_litert(B.RSQRT, INT8_FROM_MIN)) == 2


def test_quantized_rsqrt_int16_is_v3_and_matches_litert_on_every_non_negative_value():
    assert stamped_version(assert_every_value_matches_litert(B.RSQRT, INT16, low=0)) == 3


@pytest.mark.parametrize("approximate", [False, True], ids=["erfc", "tanh"])
@pytest.mark.parametrize("case", [INT8, UINT8], ids=["int8", "uint8"])
def test_quantized_gelu_8_bit_is_v2_and_matches_litert_on_every_value(case, approximate):
    built = assert_every_value_matches_litert(B.GELU, case, GeluParams(approximate=approximate))
    assert stamped_version(built) == 2


@pytest.mark.parametrize("approximate", [False, True], ids=["erfc", "tanh"])
def test_quantized_gelu_int16_stamped_v3_matches_litert_on_every_value(approximate):
    # No rule gives v3 (LiteRT 2.3 registers it, in its default resolver only): int16 is what
    # its kernel adds to v2's types.
    assert_every_value_matches_litert(B.GELU, INT16, GeluParams(approximate=approximate), version=3,
                                      resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")


# -- errors, as TFLite's --------------------------------------------------------------------------


@pytest.mark.parametrize("op", [B.SQRT, B.RSQRT], ids=["sqrt", "rsqrt"])
def test_quantized_sqrt_and_rsqrt_fail_at_invoke_below_the_zero_point(op):
    built = model(op, INT8)
    with pytest.raises(KernelError, match=f"{op.name} v2: input 'x0' holds a value below its zero point 3"):
        run_ours(built, [every_value(np.int8)])


def test_quantized_exp_int16_with_a_zero_point_fails_naming_the_op():
    built = model(B.EXP, (np.int16, quantization(7e-4, 2), quantization(1e-3, 0)))
    with pytest.raises(KernelError, match="EXP v2: int16 tensors need zero point 0"):
        Interpreter(model_content=built).allocate_tensors()


def test_quantized_abs_of_uint8_fails_naming_the_types_litert_takes():
    built = model(B.ABS, UINT8, version=2)
    with pytest.raises(KernelError, match="ABS v2: .*UINT8; this kernel supports INT8, INT16"):
        Interpreter(model_content=built).allocate_tensors()
