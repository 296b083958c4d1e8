"""Quantized AVERAGE_POOL_2D on images too large for the window-sum matrix: the step
bound at allocation adds the taps onto per-position bases and looks the averages up in
a table of every (count, sum). Against LiteRT's reference kernels (``BUILTIN_REF``), bit
for bit: full windows and clipped ones at the borders (several counts), a fused
activation, uint8 / int8; an int16 table too large falls back to ``invoke``."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_matches_litert
from test_pool2d_quantized import ZERO_POINT, full_range, pool_model

from interpreter import Interpreter
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.enums import Padding

CASES = {
    "2x2-valid": ([1, 88, 88, 8], (2, 2), (2, 2), Padding.VALID, Act.NONE),
    "3x3-same-stride-2": ([1, 70, 91, 3], (3, 3), (2, 2), Padding.SAME, Act.NONE),
    "3x2-same-relu6": ([2, 65, 64, 2], (3, 2), (1, 2), Padding.SAME, Act.RELU6),
}


def bound_step(model: bytes):
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    return dict(interpreter._main._steps)[0]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=lambda d: d.__name__)
@pytest.mark.parametrize("shape, filter_hw, strides, padding, activation", CASES.values(), ids=CASES.keys())
def test_large_average_pool_by_taps_and_table_is_bit_exact(shape, filter_hw, strides, padding, activation, dtype):
    model = pool_model(B.AVERAGE_POOL_2D, shape, dtype, filter_hw, strides, padding, 0.05, ZERO_POINT[dtype], activation)
    assert "average_pool_taps" in bound_step(model).__qualname__
    for seed in (0, 1):
        assert_matches_litert(model, [full_range(shape, dtype, seed)])


def test_an_int16_table_too_large_stays_on_invoke():
    shape = [1, 70, 91, 2]
    model = pool_model(B.AVERAGE_POOL_2D, shape, np.int16, (3, 3), (2, 2), Padding.SAME, 0.05, 0)
    assert "invoke" in bound_step(model).__qualname__
    assert_matches_litert(model, [full_range(shape, np.int16)])
