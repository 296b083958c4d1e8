"""Each hand-written kernel's numpy twin computes what the kernel computes, in as many
launches (``tests/kernel_twin.py``): host emulation runs the twins, a device the kernels.

The float sums may be rounded differently (numpy's pairwise / BLAS order against the kernels'
sequential one; on a device, fused multiply-adds and flush-to-zero): kernel_twin.TWIN_TOLERANCE.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu.cuda.depthwise import DepthwiseConv2DCuda
from backends.gpu.cuda.sources import BiasActivationCuda
from kernel_twin import assert_twin_matches, run_both_ways
from schema.enums import ActivationFunctionType as Act

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize(
    "shape, filter_hw, multiplier, stride, dilation, padding, activation",
    [
        ((1, 9, 9, 4), (3, 3), 1, 1, 1, "SAME", Act.NONE),
        ((2, 8, 7, 3), (3, 2), 2, (2, 1), 1, "VALID", Act.RELU6),
        ((1, 10, 10, 2), (3, 3), 1, 1, 2, "SAME", Act.RELU),
        ((1, 5, 5, 8), (5, 5), 1, 2, 1, "SAME", Act.RELU_N1_TO_1),
    ],
)
def test_depthwise_twin_matches_the_kernel(storage, shape, filter_hw, multiplier, stride, dilation, padding, activation):
    channels = shape[3] * multiplier
    x = RNG.standard_normal(shape).astype(storage)
    w = RNG.standard_normal((1, *filter_hw, channels)).astype(storage)
    b = RNG.standard_normal(channels).astype(storage)
    both = run_both_ways(
        lambda **where: DepthwiseConv2DCuda(stride, dilation, padding, activation, storage, **where),
        "depthwise_conv2d.cu", [x, w, b],
    )
    assert both.kernel_launches == 1
    assert_twin_matches(both)


def test_depthwise_twin_without_bias_matches_the_kernel():
    x = RNG.standard_normal((1, 6, 6, 3)).astype(np.float32)
    w = RNG.standard_normal((1, 3, 3, 3)).astype(np.float32)
    both = run_both_ways(
        lambda **where: DepthwiseConv2DCuda(1, 1, "SAME", Act.NONE, np.float32, **where),
        "depthwise_conv2d.cu", [x, w],
    )
    assert_twin_matches(both)


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6])
@pytest.mark.parametrize("with_bias", [True, False])
def test_bias_activation_twin_matches_the_kernel(storage, activation, with_bias):
    values = (RNG.standard_normal((3, 5, 7)) * 4).astype(storage)
    values[0, 0, 0] = np.nan  # NaN propagates through the clamp in both
    bias = RNG.standard_normal(7).astype(storage) if with_bias else None
    both = run_both_ways(
        lambda **where: BiasActivationCuda(activation, storage, **where),
        "bias_activation.cu", [values, bias],
    )
    assert both.kernel_launches == 1
    assert_twin_matches(both)


def test_bias_activation_twin_saturates_at_flt_max_as_the_kernel():
    values = np.array([[3e38, -3e38]], np.float32)
    both = run_both_ways(
        lambda **where: BiasActivationCuda(Act.NONE, np.float32, **where),
        "bias_activation.cu", [values, np.array([3e38, -3e38], np.float32)],
    )
    assert_twin_matches(both)
    assert np.array_equal(both.twin[0], np.array([[np.finfo(np.float32).max, -np.finfo(np.float32).max]], np.float32))

