"""L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION against ai-edge-litert."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, run_ours

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import quantization
from schema.enums import ActivationFunctionType, BuiltinOperator
from schema.params import L2NormParams, LocalResponseNormalizationParams

B = BuiltinOperator


def normalization_model(op, shape, params, dtype=np.float32, q=None):
    return single_op_model(op, [In(shape, dtype, q)], Out(shape, dtype, q), params)


def l2_model(shape, **kwargs):
    return normalization_model(B.L2_NORMALIZATION, shape, L2NormParams(), **kwargs)


def lrn_model(shape, radius=2, bias=1.0, alpha=0.5, beta=0.75):
    params = LocalResponseNormalizationParams(radius=radius, bias=bias, alpha=alpha, beta=beta)
    return normalization_model(B.LOCAL_RESPONSE_NORMALIZATION, shape, params)



def uniform(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


# -- L2_NORMALIZATION --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [[7], [3, 5], [2, 3, 8], [1, 2, 3, 16], [1, 1, 2, 2, 4]], ids=str)
def test_l2_normalization_over_the_last_axis_matches_litert(shape):
    model = l2_model(shape)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [uniform(shape)])


def test_l2_normalization_of_tiny_rows_divides_by_epsilon():
    x = uniform([4, 6], seed=1)
    x[1] = 0.0
    x[2] *= 1e-8  # norm below 1e-6: divided by 1e-6 instead
    assert_matches_litert(l2_model([4, 6]), [x])


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=4), seed=st.integers(0, 2**16))
def test_l2_normalization_property_matches_litert(shape, seed):
    assert_matches_litert(l2_model(shape), [uniform(shape, seed)])


def test_l2_normalization_with_a_fused_activation_is_refused_with_the_op_name():
    model = normalization_model(B.L2_NORMALIZATION, [2, 3], L2NormParams(fused_activation_function=ActivationFunctionType.RELU))
    with pytest.raises(KernelError, match="L2_NORMALIZATION.*RELU"):
        Interpreter(model_content=model).allocate_tensors()


def test_quantized_uint8_l2_normalization_is_refused_with_the_op_name():
    model = l2_model([2, 4], dtype=np.uint8, q=quantization(1 / 128, 128))
    assert stamped_version(model) == 1
    with pytest.raises(KernelError, match="L2_NORMALIZATION v1.*quantized"):
        Interpreter(model_content=model).allocate_tensors()


# -- LOCAL_RESPONSE_NORMALIZATION --------------------------------------------------------------

# pow() with a fractional exponent is computed by numpy's float32 power and by libm's
# powf in LiteRT; both are within ~1 ulp, inside the default 1e-5 tolerance.


@pytest.mark.parametrize("radius", [0, 1, 2, 5, 20])
def test_lrn_window_of_each_radius_matches_litert(radius):
    model = lrn_model([1, 3, 4, 12], radius=radius)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [uniform([1, 3, 4, 12])])


def test_lrn_window_stops_one_channel_short_like_the_reference_kernel():
    # TFLite's reference kernel sums channels [c - r, c + r), not TensorFlow's [c - r, c + r];
    # LiteRT's optimized kernel uses the symmetric window. We follow the reference (the oracle).
    x = uniform([1, 1, 2, 6], seed=3)
    (got,) = run_ours(lrn_model([1, 1, 2, 6], radius=1, bias=1.0, alpha=1.0, beta=1.0), [x])
    squares = x[0, 0] ** 2
    window = np.stack([squares[:, max(0, c - 1) : c + 1].sum(axis=1) for c in range(6)], axis=1)
    np.testing.assert_allclose(got[0, 0], x[0, 0] / (1.0 + window), rtol=1e-6)


@pytest.mark.parametrize(
    "bias, alpha, beta", [(1.0, 1.0, 0.5), (2.0, 1e-4, 0.75), (0.5, 0.2, 1.0), (1.0, 0.3, 0.0)]
)
def test_lrn_bias_alpha_beta_match_litert(bias, alpha, beta):
    model = lrn_model([2, 2, 3, 7], radius=2, bias=bias, alpha=alpha, beta=beta)
    assert_matches_litert(model, [uniform([2, 2, 3, 7], seed=2)])


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=4, max_size=4),
    radius=st.integers(0, 6),
    seed=st.integers(0, 2**16),
)
def test_lrn_property_matches_litert(shape, radius, seed):
    assert_matches_litert(lrn_model(shape, radius=radius), [uniform(shape, seed)])


def test_lrn_of_a_3d_input_is_refused_with_the_op_name():
    with pytest.raises(KernelError, match="LOCAL_RESPONSE_NORMALIZATION.*4-D"):
        Interpreter(model_content=lrn_model([2, 3, 4])).allocate_tensors()


def test_lrn_of_an_int32_input_is_refused_with_the_op_name():
    model = normalization_model(B.LOCAL_RESPONSE_NORMALIZATION, [1, 2, 2, 3], LocalResponseNormalizationParams(), dtype=np.int32)
    with pytest.raises(KernelError, match="LOCAL_RESPONSE_NORMALIZATION v1.*INT32"):
        Interpreter(model_content=model).allocate_tensors()


# -- L2_NORMALIZATION v2: int8 ---------------------------------------------------------------------


@pytest.mark.parametrize("zero_point", [0, 5, -7])
@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 17), (1, 1)], ids=lambda s: "x".join(map(str, s)))
def test_l2_normalization_int8_is_v2_and_matches_litert_bit_for_bit(shape, zero_point):
    model = single_op_model(B.L2_NORMALIZATION, [In(shape, np.int8, quantization(0.05, zero_point))],
                            Out(shape, np.int8, quantization(1 / 128, 0)), L2NormParams())
    assert stamped_version(model) == 2
    values = np.random.default_rng(zero_point + 10).integers(-128, 128, shape).astype(np.int8)
    values.reshape(-1)[: shape[-1]] = zero_point  # a row of zeros (after the zero point) included
    assert_matches_litert(model, [values], rtol=0, atol=0)


def test_l2_normalization_int8_with_another_output_scale_fails_naming_the_op():
    model = single_op_model(B.L2_NORMALIZATION, [In((2, 3), np.int8, quantization(0.05, 0))],
                            Out((2, 3), np.int8, quantization(1 / 64, 0)), L2NormParams())
    with pytest.raises(KernelError, match="L2_NORMALIZATION v2: the output needs scale 1/128 and zero point 0"):
        Interpreter(model_content=model).allocate_tensors()
