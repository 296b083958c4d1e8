"""PRELU with constant slopes, run by the step bound at allocation (the slopes tiled to
rows of the input's trailing axes), against LiteRT's reference kernels (float within
1e-5): inputs large enough that the rows start at different axes."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_matches_litert, run_litert
from test_activations import prelu_model

from interpreter import Interpreter

CASES = {
    "channels-rows-span-two-axes": ([2, 40, 33, 8], np.linspace(0.1, 1.0, 8, dtype=np.float32).reshape(1, 1, 8)),
    "per-row-and-channel": ([2, 40, 33, 8], np.linspace(0.05, 0.9, 40 * 8, dtype=np.float32).reshape(40, 1, 8)),
    "per-column": ([3, 6, 700, 2], np.linspace(1.5, 3.0, 700, dtype=np.float32).reshape(700, 1)),
    "one-slope-for-all": ([1, 96, 96, 16], np.array([0.25], np.float32)),
    "negative-slopes": ([2, 40, 33, 8], np.linspace(-2.0, -0.1, 8, dtype=np.float32)),
    "slopes-below-and-above-1": ([1, 48, 48, 32], np.linspace(-1.5, 3.5, 32, dtype=np.float32).reshape(1, 1, 32)),
    "all-above-1": ([3, 20, 70, 4], np.array([1.5, 2.0, 9.0, 1.01], np.float32)),
}


@pytest.mark.parametrize("x_shape, alpha", CASES.values(), ids=CASES.keys())
def test_bound_prelu_matches_litert(x_shape, alpha):
    model = prelu_model(x_shape, alpha)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    step = dict(interpreter._main._steps)[0]
    assert "prelu" in step.__qualname__  # the bound step, not invoke
    rng = np.random.default_rng(4)
    x = rng.uniform(-4, 4, size=x_shape).astype(np.float32)
    x.reshape(-1)[: 8 * 6] = np.repeat([np.inf, -np.inf, -0.0, 0.0, np.nan, 1e-45], 8)  # every channel of 8
    (expected,) = run_litert(model, [x])
    (got,) = assert_matches_litert(model, [x])
    numbers = ~np.isnan(expected)  # and the zeros keep LiteRT's sign (-0 >= 0 keeps -0): beyond the tolerance
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(expected[numbers]))


def test_a_zero_or_infinite_slope_stays_on_invoke():
    for alpha in (np.array([0.5, 0.0], np.float32), np.array([np.inf, 0.5], np.float32)):
        interpreter = Interpreter(model_content=prelu_model([2, 3, 2], alpha))
        interpreter.allocate_tensors()
        step = dict(interpreter._main._steps)[0]
        assert "invoke" in step.__qualname__


@pytest.mark.parametrize("x_shape, alpha", CASES.values(), ids=CASES.keys())
def test_slope_row_repeated_is_alpha_broadcast_to_the_input(x_shape, alpha):
    """The bound step's row of slopes (``Prelu.slope_row``), repeated over the flat input,
    is alpha broadcast to the input's shape; it is a whole number of rows, and no longer
    than needed (at most 8 x ROW values, or the input itself)."""
    from backends.cpu.kernels.activations import Prelu

    row = Prelu.slope_row(alpha, tuple(x_shape))
    total = int(np.prod(x_shape))
    assert total % row.size == 0 and (row.size <= 8 * Prelu.ROW or row.size == total)
    expected = np.broadcast_to(alpha.reshape((1,) * (len(x_shape) - alpha.ndim) + alpha.shape), x_shape)
    np.testing.assert_array_equal(np.tile(row, total // row.size), expected.reshape(-1))
