"""Float CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED outputs beyond the float32 range,
bit for bit against LiteRT's reference kernels (the oracle: ai-edge-litert with
``OpResolverType.BUILTIN_REF``).

What the oracle does (``internal/reference/conv.h``, ``depthwiseconv_float.h``,
``fully_connected.h``): each output is ``total += input * filter`` in float32, in filter
order, without FMA, skipping taps outside the input, then ``std::min(std::max(total +
bias, min), max)`` with ``(min, max)`` from ``CalculateActivationRange``, which is
[lowest, FLT_MAX] for NONE, TANH and SIGN_BIT (a fused TANH is not applied) and [0,
FLT_MAX] for RELU. So +-inf comes out as +-FLT_MAX, NaN stays NaN, ``-inf + inf`` is NaN.
The TANH op itself is ``std::tanh`` with no clamp (``reference/tanh.h``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from backends.cpu.kernels._float_reference import SAFE_MAGNITUDE, square_limit
from model_helpers import Const, In, Out, single_op_model
from oracle import run_litert, run_ours
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding
from schema.params import Conv2DParams, DepthwiseConv2DParams, FullyConnectedParams

# Our guard (one BLAS dot of the input's squares) notes the float overflow, as numpy does.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

Act = ActivationFunctionType
B = BuiltinOperator
FLT_MAX = np.float32(np.finfo(np.float32).max)
BIG = np.float32(1e30)  # BIG * BIG overflows float32; BIG * 1 does not

ALL_ACTIVATIONS = [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH, Act.SIGN_BIT]
FC_ACTIVATIONS = [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1]  # FC refuses TANH and SIGN_BIT


def one_node(op, input_shape, weights, bias, params, *, weights_are_input: bool = False) -> bytes:
    """A model of one ``op`` node: input x, weights (a constant, or a second input), bias."""
    inputs = [In(input_shape), In(weights.shape) if weights_are_input else Const(weights)]
    return single_op_model(op, inputs + ([] if bias is None else [Const(bias)]), Out([1]), params)


def assert_bit_equal(model: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    """Our output and the oracle's: equal values (NaN == NaN), then equal bits (the sign of
    zeros, NaN payloads). Returns the oracle's output."""
    (expected,) = run_litert(model, inputs)
    (ours,) = run_ours(model, inputs)
    assert ours.shape == expected.shape and ours.dtype == expected.dtype == np.float32
    np.testing.assert_array_equal(ours, expected)
    np.testing.assert_array_equal(ours.view(np.uint32), expected.view(np.uint32))
    return expected


def overflowing(shape, seed: int) -> np.ndarray:
    """Values in [-1, 1] with about a third replaced by +BIG or -BIG: products of two BIG
    overflow to +-inf (sums of both signs: NaN), products of BIG and a small value do not."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(-1, 1, shape).astype(np.float32)
    big = rng.random(shape) < 0.35
    values[big] = np.where(rng.random(int(big.sum())) < 0.5, BIG, -BIG)
    return values


def check_saturation(expected: np.ndarray, activation: int) -> None:
    """The case does what it claims: the oracle saturated some outputs at the top of the
    activation's range (and at lowest where the range has no floor)."""
    assert not np.isinf(expected).any()
    top = {Act.RELU6: 6.0, Act.RELU_N1_TO_1: 1.0}.get(activation, FLT_MAX)
    assert (expected == top).any()
    if activation in (Act.NONE, Act.TANH, Act.SIGN_BIT):
        assert (expected == -FLT_MAX).any()


# -- CONV_2D -------------------------------------------------------------------------------


@pytest.mark.parametrize("activation", ALL_ACTIVATIONS, ids=lambda a: a.name)
def test_conv_overflow_saturates_at_the_activation_range(activation):
    """CONV_2D 3x3 SAME: +-inf sums come out as the ends of CalculateActivationRange
    ([lowest, FLT_MAX] for NONE/TANH/SIGN_BIT), NaN stays NaN (oracle: BUILTIN_REF)."""
    model = one_node(
        B.CONV_2D, [1, 6, 7, 2], overflowing([3, 3, 3, 2], 1), overflowing([3], 2),
        Conv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1, fused_activation_function=activation),
    )
    expected = assert_bit_equal(model, [overflowing([1, 6, 7, 2], 3)])
    check_saturation(expected, activation)


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU], ids=lambda a: a.name)
def test_pointwise_conv_overflow_saturates_at_flt_max(activation):
    """CONV_2D 1x1 stride 1 (a plain matmul of the input): +inf gives FLT_MAX (oracle:
    BUILTIN_REF)."""
    model = one_node(
        B.CONV_2D, [1, 5, 5, 4], overflowing([6, 1, 1, 4], 4), np.zeros(6, np.float32),
        Conv2DParams(padding=Padding.VALID, stride_h=1, stride_w=1, fused_activation_function=activation),
    )
    expected = assert_bit_equal(model, [overflowing([1, 5, 5, 4], 5)])
    check_saturation(expected, activation)


def test_grouped_conv_overflow_saturates_at_flt_max():
    """CONV_2D with 2 groups, stride 2: +-inf gives +-FLT_MAX (oracle: BUILTIN_REF)."""
    model = one_node(
        B.CONV_2D, [1, 7, 7, 4], overflowing([4, 3, 3, 2], 6), overflowing([4], 7),
        Conv2DParams(padding=Padding.SAME, stride_h=2, stride_w=2),
    )
    expected = assert_bit_equal(model, [overflowing([1, 7, 7, 4], 8)])
    check_saturation(expected, Act.NONE)


def test_conv_with_filter_as_input_overflow_saturates_at_flt_max():
    """CONV_2D whose filter is a model input (bound computed at invoke): +-inf gives
    +-FLT_MAX (oracle: BUILTIN_REF)."""
    model = one_node(
        B.CONV_2D, [1, 5, 5, 2], np.zeros([3, 3, 3, 2], np.float32), overflowing([3], 9),
        Conv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1), weights_are_input=True,
    )
    expected = assert_bit_equal(model, [overflowing([1, 5, 5, 2], 10), overflowing([3, 3, 3, 2], 11)])
    check_saturation(expected, Act.NONE)


def test_conv_with_infinite_filter_skips_the_padding_like_litert():
    """CONV_2D SAME with an infinite filter: TFLite skips the taps outside the input (no
    0 * inf = NaN at the border): every output is FLT_MAX (oracle: BUILTIN_REF)."""
    model = one_node(
        B.CONV_2D, [1, 4, 4, 1], np.full([1, 3, 3, 1], np.inf, np.float32), np.zeros(1, np.float32),
        Conv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1),
    )
    expected = assert_bit_equal(model, [np.ones([1, 4, 4, 1], np.float32)])
    assert (expected == FLT_MAX).all()


# -- DEPTHWISE_CONV_2D ---------------------------------------------------------------------


@pytest.mark.parametrize("activation", ALL_ACTIVATIONS, ids=lambda a: a.name)
def test_depthwise_overflow_saturates_at_the_activation_range(activation):
    """DEPTHWISE_CONV_2D 3x3 SAME: +-inf sums come out as the ends of
    CalculateActivationRange, NaN stays NaN (oracle: BUILTIN_REF)."""
    model = one_node(
        B.DEPTHWISE_CONV_2D, [1, 6, 6, 3], overflowing([1, 3, 3, 3], 12), overflowing([3], 13),
        DepthwiseConv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1, depth_multiplier=1,
                              fused_activation_function=activation),
    )
    expected = assert_bit_equal(model, [overflowing([1, 6, 6, 3], 14)])
    check_saturation(expected, activation)


@pytest.mark.parametrize(
    "input_shape, multiplier, stride",
    [([1, 9, 9, 2], 2, 2), ([1, 6, 6, 1], 1, 1), ([1, 12, 12, 16], 1, 1)],
    ids=["multiplier2-stride2", "one-channel", "long-rows"],
)
def test_depthwise_layouts_overflow_saturates_at_flt_max(input_shape, multiplier, stride):
    """DEPTHWISE_CONV_2D on each of its layouts (row columns, one channel, long rows):
    +-inf gives +-FLT_MAX (oracle: BUILTIN_REF)."""
    channels = input_shape[3] * multiplier
    model = one_node(
        B.DEPTHWISE_CONV_2D, input_shape, overflowing([1, 3, 3, channels], 15), overflowing([channels], 16),
        DepthwiseConv2DParams(padding=Padding.SAME, stride_h=stride, stride_w=stride, depth_multiplier=multiplier),
    )
    expected = assert_bit_equal(model, [overflowing(input_shape, 17)])
    check_saturation(expected, Act.NONE)


def test_depthwise_with_infinite_filter_skips_the_padding_like_litert():
    """DEPTHWISE_CONV_2D SAME with an infinite filter: the taps outside the input are
    skipped, every output is FLT_MAX (oracle: BUILTIN_REF)."""
    model = one_node(
        B.DEPTHWISE_CONV_2D, [1, 4, 4, 2], np.full([1, 3, 3, 2], np.inf, np.float32), np.zeros(2, np.float32),
        DepthwiseConv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1, depth_multiplier=1),
    )
    expected = assert_bit_equal(model, [np.ones([1, 4, 4, 2], np.float32)])
    assert (expected == FLT_MAX).all()


# -- FULLY_CONNECTED -----------------------------------------------------------------------


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("activation", FC_ACTIVATIONS, ids=lambda a: a.name)
def test_fully_connected_overflow_saturates_at_the_activation_range(activation, bias):
    """FULLY_CONNECTED: +-inf sums come out as the ends of CalculateActivationRange, NaN
    stays NaN (oracle: BUILTIN_REF)."""
    model = one_node(
        B.FULLY_CONNECTED, [4, 6], overflowing([5, 6], 18), overflowing([5], 19) if bias else None,
        FullyConnectedParams(fused_activation_function=activation),
    )
    expected = assert_bit_equal(model, [overflowing([4, 6], 20)])
    check_saturation(expected, activation)


def test_fully_connected_inf_plus_minus_inf_is_nan_as_without_fma():
    """FULLY_CONNECTED: (-BIG * BIG) + (BIG * BIG) is -inf + inf = NaN in TFLite's plain
    float32 loop (an FMA would give -inf, as BLAS may), and RELU6 keeps the NaN (oracle:
    BUILTIN_REF)."""
    model = one_node(
        B.FULLY_CONNECTED, [1, 2], np.array([[BIG, BIG]], np.float32), None,
        FullyConnectedParams(fused_activation_function=Act.RELU6),
    )
    expected = assert_bit_equal(model, [np.array([[-BIG, BIG]], np.float32)])
    assert np.isnan(expected).all()


@pytest.mark.parametrize("order", [[3e38, 3e38, -3e38], [3e38, -3e38, 3e38]], ids=["overflows", "cancels"])
def test_fully_connected_partial_sums_overflow_in_litert_order(order):
    """FULLY_CONNECTED of finite products: 3e38 + 3e38 overflows before -3e38 comes (then
    FLT_MAX), 3e38 - 3e38 + 3e38 does not (oracle: BUILTIN_REF, depth order)."""
    model = one_node(B.FULLY_CONNECTED, [1, 3], np.ones([1, 3], np.float32), None, FullyConnectedParams())
    expected = assert_bit_equal(model, [np.array([order], np.float32)])
    assert expected[0, 0] == (FLT_MAX if order[1] > 0 else np.float32(3e38))


def test_fully_connected_with_weights_as_input_overflow_saturates_at_flt_max():
    """FULLY_CONNECTED whose weights are a model input (bound computed at invoke): +-inf
    gives +-FLT_MAX (oracle: BUILTIN_REF)."""
    model = one_node(
        B.FULLY_CONNECTED, [4, 6], np.zeros([5, 6], np.float32), None, FullyConnectedParams(), weights_are_input=True
    )
    expected = assert_bit_equal(model, [overflowing([4, 6], 21), overflowing([5, 6], 22)])
    check_saturation(expected, Act.NONE)


# -- NaN inputs ----------------------------------------------------------------------------


@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1], ids=lambda a: a.name)
@pytest.mark.parametrize("op", [B.CONV_2D, B.DEPTHWISE_CONV_2D, B.FULLY_CONNECTED], ids=lambda o: o.name)
def test_nan_input_stays_nan_through_the_clamp(op, activation):
    """A NaN input gives NaN where it is read, whatever the clamp: std::max(NaN, min) and
    std::min(NaN, max) return their first operand (oracle: BUILTIN_REF). (Such an input
    runs TFLite's own loop here, so the finite outputs are its bits too.)"""
    rng = np.random.default_rng(23)
    if op == B.FULLY_CONNECTED:
        shape, weights = [2, 4], rng.uniform(-1, 1, [3, 4])
        params = FullyConnectedParams(fused_activation_function=activation)
    elif op == B.CONV_2D:
        shape, weights = [1, 4, 4, 2], rng.uniform(-1, 1, [3, 3, 3, 2])
        params = Conv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1, fused_activation_function=activation)
    else:
        shape, weights = [1, 4, 4, 2], rng.uniform(-1, 1, [1, 3, 3, 2])
        params = DepthwiseConv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1, depth_multiplier=1,
                                       fused_activation_function=activation)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    x.flat[1] = np.nan
    channels = weights.shape[3] if op == B.DEPTHWISE_CONV_2D else weights.shape[0]
    model = one_node(op, shape, weights.astype(np.float32), np.zeros(channels, np.float32), params)
    expected = assert_bit_equal(model, [x])
    assert np.isnan(expected).any() and not np.isnan(expected).all()


# -- TANH ----------------------------------------------------------------------------------


def test_tanh_op_of_infinite_and_nan_inputs_matches_litert():
    """The TANH op is std::tanh with no clamp: +-inf and +-FLT_MAX give +-1, NaN stays
    NaN (oracle: BUILTIN_REF; a fused TANH on a convolution is the NONE clamp above)."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [8])
    y = graph.add_tensor("y", [1])
    graph.add_operator(B.TANH, [x], [y], None)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    values = np.array([np.inf, -np.inf, FLT_MAX, -FLT_MAX, np.nan, BIG, -BIG, -0.0], np.float32)
    expected = assert_bit_equal(builder.build(), [values])
    np.testing.assert_array_equal(expected[:4], [1, -1, 1, -1])
    assert np.isnan(expected[4])


# -- the guard -----------------------------------------------------------------------------


def test_square_limit_keeps_every_partial_sum_below_the_safe_magnitude():
    """``square_limit``: an input whose sum of squares is below it keeps sqrt(s) * |w| +
    |b| below SAFE_MAGNITUDE; non-finite weights or bias make every input unsafe; zero
    weights make only a NaN or infinite input unsafe."""
    limit = square_limit(1e30, 8.0)
    assert 0 < limit < FLT_MAX and math.sqrt(limit) * 1e30 + 8.0 <= SAFE_MAGNITUDE * (1 + 1e-12)
    assert square_limit(1e-10, 8.0) == math.inf  # above float32's range: every finite sum is safe
    assert square_limit(math.inf, 0.0) == -1.0 and square_limit(1.0, math.nan) == -1.0
    zero = np.float32(square_limit(0.0, 1.0))
    assert np.float32(1e38) < zero and not np.float32(np.inf) < zero and not np.float32(np.nan) < zero


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_max_row_norm_of_float32_weights_bounds_the_exact_norm_from_just_above():
    """Summed in float32 (no float64 copy), the bound is at or above the exact largest row
    norm and within a few float32 ulps of it; a weight whose square overflows float32, a
    subnormal weight and a NaN weight give the float64 answer."""
    from backends.cpu.kernels._float_reference import max_row_norm

    rng = np.random.default_rng(3)
    for taps in (1, 9, 288, 4096):
        weights = (rng.standard_normal((16, taps)) * rng.uniform(1e-3, 1e3, (16, 1))).astype(np.float32)
        exact = math.sqrt(float(np.max(np.sum(weights.astype(np.float64) ** 2, axis=1))))
        assert exact <= max_row_norm(weights) <= exact * (1 + (taps + 2) * 2.0**-23)
    huge = np.array([[3e19, 1.0], [0.0, 2.0]], np.float32)
    assert max_row_norm(huge) == pytest.approx(float(np.float32(3e19)), rel=1e-12)
    tiny = np.array([[1e-40, 1e-40]], np.float32)  # squares below float32's range
    assert max_row_norm(tiny) >= math.sqrt(2) * float(np.float32(1e-40))
    assert math.isnan(max_row_norm(np.array([[np.nan, 1.0]], np.float32)))


def signalling_nan_float32() -> np.float32:
    """A float32 signalling NaN (quiet bit clear): converting it raises FE_INVALID, which
    numpy reports as a RuntimeWarning unless told otherwise."""
    return np.array([0x7FA00000], np.uint32).view(np.float32)[0]


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("where", ["filter", "bias"])
def test_conv_with_a_signalling_nan_weight_prepares_without_a_warning_and_matches_litert(where):
    """A model file may hold any bit pattern (a fuzzed or damaged one, say): the guard's
    prepare-time norms read a signalling NaN as NaN, silently, and the output is LiteRT's."""
    weights = np.ones((2, 3, 3, 2), np.float32)
    bias = np.zeros(2, np.float32)
    if where == "filter":
        weights[1, 0, 0, 0] = signalling_nan_float32()
    else:
        bias[1] = signalling_nan_float32()
    model = one_node(B.CONV_2D, [1, 4, 4, 2], weights, bias, Conv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1))
    x = np.random.default_rng(0).uniform(-1, 1, (1, 4, 4, 2)).astype(np.float32)
    (expected,) = run_litert(model, [x])
    (ours,) = run_ours(model, [x])
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(expected))
    np.testing.assert_array_equal(ours[~np.isnan(ours)], expected[~np.isnan(expected)])
