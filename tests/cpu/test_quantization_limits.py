"""Quantization parameters that TFLite's integer arithmetic cannot take (issue 35), refused at
Prepare by one derivation that the CPU kernels and the GPU ops share
(``backends.cpu.quantization``: ``requantization_multiplier(s)``, ``activation_range_quantized``),
with a message that names the parameter. The oracle is LiteRT's BUILTIN_REF where it defines
a result; where its result is undefined behaviour in C (an int32 shifted left by 32 bits or
more, which x86 and CUDA compute differently), the node is refused.

tests/gpu/test_extreme_quantization.py checks the GPU delegate against these, op by op.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu.quantization import (
    MAX_LEFT_SHIFT,
    QuantizationParameterError,
    activation_range_quantized,
    quantize_multiplier,
    requantization_multiplier,
    requantization_multipliers,
)
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import random_quantized_input
from oracle import litert_interpreter, run_litert, run_ours
from schema.enums import ActivationFunctionType as Act
from test_conv2d_quantized import conv_model, conv_params

RATIO = "input scale x filter scale / output scale"


def test_a_ratio_just_below_2_31_is_a_left_shift_of_31_as_quantize_multiplier_gives():
    real = 2.0**31 * (1 - 2.0**-20)
    assert requantization_multiplier(real, RATIO) == quantize_multiplier(real)
    assert requantization_multiplier(real, RATIO)[1] == MAX_LEFT_SHIFT == 31


@pytest.mark.parametrize("real,shift", [(2.0**31, 32), (4.25e40, 135)])
def test_a_ratio_of_2_31_or_more_is_refused_naming_the_ratio_and_the_shift(real, shift):
    with pytest.raises(QuantizationParameterError, match=rf"{RATIO} is .*, not below 2\*\*31: .* left by {shift} bits"):
        requantization_multiplier(real, RATIO)


@pytest.mark.parametrize("real", [float("inf"), float("nan")])
def test_a_ratio_that_is_not_finite_is_refused(real):
    with pytest.raises(QuantizationParameterError, match=rf"{RATIO} is {real!r}"):
        requantization_multiplier(real, RATIO)


def test_a_tiny_ratio_flushes_to_zero_as_in_tflite():
    assert requantization_multiplier(1e-20, RATIO) == (0, 0)


def test_per_channel_ratios_name_the_channel_refused():
    multipliers, shifts = requantization_multipliers([0.5, 3.0], RATIO)
    assert shifts.tolist() == [0, 2]
    with pytest.raises(QuantizationParameterError, match=rf"{RATIO} of channel 1 is 1.09951e\+12"):
        requantization_multipliers([0.5, 2.0**40], RATIO)


@pytest.mark.parametrize("activation,bound", [(Act.RELU6, 6.0), (Act.RELU_N1_TO_1, -1.0)])
def test_a_fused_activation_bound_outside_int32_is_refused_naming_the_output_scale(activation, bound):
    with pytest.raises(QuantizationParameterError, match=rf"output scale 1e-10 .* bound {bound} .* outside int32"):
        activation_range_quantized(activation, 1e-10, -128, np.int8)


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU])
def test_an_activation_with_no_bound_away_from_zero_takes_any_scale(activation):
    # LiteRT's Quantize(0.0) is 0 at any scale; NONE quantizes nothing.
    assert activation_range_quantized(activation, 1e-45, -128, np.int8) == (-128, 127)


def test_the_zero_point_s_addition_wraps_in_int32_as_the_compiled_c():
    # -1 / 2**-31 = -2**31 is inside LiteRT's check; -128 + INT32_MIN wraps to 2**31 - 128.
    low, high = activation_range_quantized(Act.RELU_N1_TO_1, 2.0**-31, -128, np.int8)
    assert (low, high) == (2**31 - 128, 127)


def model(activation, output_scale, zero_points=(5, -128)):
    return conv_model(
        "int8", [1, 5, 5, 3], [4, 3, 3, 3], conv_params(activation=activation), filter_scales=[0.01, 0.02, 0.03, 0.04],
        io_scales=(0.02, output_scale), zero_points=zero_points,
    )


def test_a_relu6_conv_with_a_tiny_output_scale_is_refused_at_prepare_as_litert_refuses_it():
    bad = model(Act.RELU6, 1e-10)
    with pytest.raises(RuntimeError, match="no_integer_overflow_from_quantization"):
        litert_interpreter(bad).allocate_tensors()
    with pytest.raises(KernelError, match=r"node 0 \(CONV_2D v3\) failed in prepare: QuantizationParameterError: the output scale"):
        Interpreter(model_content=bad).allocate_tensors()


def test_a_conv_whose_bounds_wrap_equals_litert():
    # RELU_N1_TO_1 at the output scale 2**-31: the lower bound wraps past the upper one, and
    # LiteRT's clamp gives the upper bound everywhere; so do we.
    wrapping = model(Act.RELU_N1_TO_1, 2.0**-31)
    inputs = [random_quantized_input("int8", [1, 5, 5, 3])]
    (want,), (got,) = run_litert(wrapping, inputs), run_ours(wrapping, inputs)
    np.testing.assert_array_equal(got, want)
    assert (want == 127).all()


def test_a_conv_whose_rescale_needs_a_left_shift_of_32_bits_is_refused_naming_the_channel():
    # 0.02 x 0.01 / 1e-14 = 2e10: LiteRT's x * (1 << 35) is undefined (x86 shifts by 3).
    with pytest.raises(KernelError, match=rf"QuantizationParameterError: {RATIO} of channel 0 is 2e\+10"):
        Interpreter(model_content=model(Act.NONE, 1e-14)).allocate_tensors()
