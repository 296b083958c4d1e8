"""Float CONV_2D with a bias on outputs above ``FULL_SIZE_LIMIT`` values: the bound step
adds the bias over long rows (``_window.long_rows``, the bias tiled B times) rather than
one row of N channels. Against LiteRT's reference kernels: within 1e-5 of the output's
scale (the BLAS sums run in another order than the reference loops, so a sum that
cancels to near zero has no meaningful per-element relative error; the bias add itself
is the same elementwise add either way)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import FLOAT_RTOL, run_litert, run_ours
from test_conv2d import conv_model, conv_params

from backends.cpu.kernels._window import FULL_SIZE_LIMIT, long_rows
from schema.enums import ActivationFunctionType as Act

CASES = {
    "pointwise": ([1, 96, 96, 8], [16, 1, 1, 8], Act.NONE),
    "3x3-relu6": ([1, 97, 95, 3], [16, 3, 3, 3], Act.RELU6),
    "rows-with-few-divisors": ([1, 131, 67, 4], [16, 1, 1, 4], Act.RELU),  # 8777 rows: 67 * 131
}


@pytest.mark.parametrize("input_shape, filter_shape, activation", CASES.values(), ids=CASES.keys())
def test_a_large_float_conv_with_bias_matches_litert(input_shape, filter_shape, activation):
    assert input_shape[1] * input_shape[2] * filter_shape[0] > FULL_SIZE_LIMIT
    model = conv_model(input_shape, filter_shape, conv_params(activation=activation), seed=2)
    x = np.random.default_rng(3).uniform(-2, 2, input_shape).astype(np.float32)
    (want,), (got,) = run_litert(model, [x]), run_ours(model, [x])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=FLOAT_RTOL, atol=FLOAT_RTOL * float(np.abs(want).max()))


def test_long_rows_views_the_target_as_rows_of_several_channel_rows():
    target = np.zeros((9216, 16), np.float32)
    row = np.arange(16, dtype=np.float32)
    view, operand = long_rows(target, np.broadcast_to(row, target.shape))
    assert view.shape == (36, 4096) and operand.shape == (4096,) and np.shares_memory(view, target)
    np.add(view, operand, out=view)
    np.testing.assert_array_equal(target, np.broadcast_to(row, target.shape))
    full = np.ones((8, 16), np.float32)  # a full-size operand (small outputs): unchanged
    assert long_rows(target[:8], full)[1] is full
