"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D (float32, version 1) against LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from oracle import MODELS_DIR, assert_matches_litert, run_ours
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding
from schema.model import Model
from schema.params import Pool2DParams

Act = ActivationFunctionType
POOLS = [BuiltinOperator.AVERAGE_POOL_2D, BuiltinOperator.MAX_POOL_2D, BuiltinOperator.L2_POOL_2D]
POOL_IDS = [op.name for op in POOLS]


def pool_model(op, input_shape, params: Pool2DParams, *, version=None, dtype=np.float32, q=None) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", input_shape, dtype, quantization=q)
    y = graph.add_tensor("y", [1], dtype, quantization=q)
    graph.add_operator(op, [x], [y], params, version=version)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def pool_params(filter_hw, stride=(1, 1), padding=Padding.VALID, activation=Act.NONE) -> Pool2DParams:
    return Pool2DParams(
        padding=padding,
        stride_h=stride[0],
        stride_w=stride[1],
        filter_height=filter_hw[0],
        filter_width=filter_hw[1],
        fused_activation_function=activation,
    )


@pytest.mark.parametrize("op", POOLS, ids=POOL_IDS)
@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize(
    "filter_hw, stride", [((2, 2), (2, 2)), ((3, 3), (2, 2)), ((3, 2), (1, 2)), ((1, 1), (2, 2))], ids=str
)
def test_pool_v1_matches_litert(op, padding, filter_hw, stride):
    model = pool_model(op, [2, 9, 8, 3], pool_params(filter_hw, stride, padding))
    assert Model.from_bytes(model).subgraphs[0].operators[0].version == 1
    assert_matches_litert(model)


@pytest.mark.parametrize("op", [BuiltinOperator.AVERAGE_POOL_2D, BuiltinOperator.L2_POOL_2D], ids=lambda op: op.name)
def test_padded_windows_count_only_the_elements_inside_the_input(op):
    # All ones: an average (or L2) over only the inside elements is exactly 1 everywhere,
    # where dividing by the filter size would give less at the border.
    model = pool_model(op, [1, 5, 5, 1], pool_params((3, 3), (1, 1), Padding.SAME))
    outputs = assert_matches_litert(model, [np.ones([1, 5, 5, 1], np.float32)])
    np.testing.assert_array_equal(outputs[0], np.ones([1, 5, 5, 1], np.float32))


def test_max_pool_with_negative_inputs_ignores_the_padding():
    model = pool_model(BuiltinOperator.MAX_POOL_2D, [1, 4, 4, 2], pool_params((3, 3), (2, 2), Padding.SAME))
    outputs = assert_matches_litert(model, [np.full([1, 4, 4, 2], -5.0, np.float32)])
    assert (outputs[0] == -5.0).all()


@pytest.mark.parametrize("op", POOLS, ids=POOL_IDS)
def test_global_pool_matches_litert(op):
    # Filter as large as the input: the path that reduces all windows at once.
    model = pool_model(op, [2, 7, 7, 16], pool_params((7, 7)))
    assert_matches_litert(model)


@pytest.mark.parametrize("op", POOLS, ids=POOL_IDS)
def test_filter_larger_than_the_output_with_same_padding_matches_litert(op):
    model = pool_model(op, [1, 3, 4, 2], pool_params((5, 5), (2, 2), Padding.SAME))
    assert_matches_litert(model)


@pytest.mark.parametrize("op", POOLS, ids=POOL_IDS)
@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH], ids=lambda a: a.name)
def test_pool_with_fused_activation_matches_litert(op, activation):
    # TANH: TFLite's float kernels treat it as no clamp (CalculateActivationRange).
    model = pool_model(op, [1, 6, 6, 2], pool_params((2, 2), (2, 2), Padding.VALID, activation))
    x = np.random.default_rng(1).uniform(-8, 8, [1, 6, 6, 2]).astype(np.float32)
    assert_matches_litert(model, [x])


def test_converter_model_pool_matches_litert():
    assert_matches_litert(MODELS_DIR / "converter" / "pool_float32.tflite")


@settings(max_examples=30, deadline=None)
@given(
    op=st.sampled_from(POOLS),
    batch=st.integers(1, 2),
    height=st.integers(1, 12),
    width=st.integers(1, 12),
    channels=st.integers(1, 4),
    filter_hw=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from([Padding.SAME, Padding.VALID]),
    activation=st.sampled_from([Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1]),
    seed=st.integers(0, 2**16),
)
def test_pool_property_matches_litert(op, batch, height, width, channels, filter_hw, stride, padding, activation, seed):
    if padding == Padding.VALID and (filter_hw[0] > height or filter_hw[1] > width):
        return  # no output: not a valid node
    model = pool_model(op, [batch, height, width, channels], pool_params(filter_hw, stride, padding, activation))
    assert_matches_litert(model, seed=seed)


@pytest.mark.parametrize("op", [BuiltinOperator.AVERAGE_POOL_2D, BuiltinOperator.L2_POOL_2D], ids=lambda op: op.name)
@pytest.mark.parametrize("special", [np.inf, np.nan], ids=["inf", "nan"])
def test_small_pools_with_infinite_or_nan_inputs_touch_only_their_windows(op, special):
    # Small average and L2 pools are one matrix product, where 0 * inf would spread NaN to
    # every window; such an invoke falls back to the exact tap paths.
    model = pool_model(op, [1, 6, 6, 2], pool_params((3, 3), (2, 2), Padding.SAME))
    x = np.random.default_rng(2).standard_normal([1, 6, 6, 2]).astype(np.float32)
    x[0, 1, 1, 0] = special
    (got,) = run_ours(model, [x])
    # Only the window of the special value changes: NaN there, or FLT_MAX for inf (TFLite's
    # activation range is [lowest, max] even with no fused activation).
    assert np.isnan(got[0, 0, 0, 0]) if np.isnan(special) else got[0, 0, 0, 0] == np.finfo(np.float32).max
    assert_matches_litert(model, [x])
    x[0, 1, 1, 0] = 1.0  # finite values again: the matrix path
    assert_matches_litert(model, [x])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf: NaN, on purpose
@pytest.mark.parametrize("op", POOLS, ids=POOL_IDS)
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU], ids=["none", "relu"])
@pytest.mark.parametrize(
    "shape, filter_hw, stride, padding",
    [
        ([1, 4, 4, 1], (2, 2), (2, 2), Padding.VALID),  # small: matrix (average, L2) or gather (max)
        ([1, 4, 4, 1], (4, 4), (1, 1), Padding.VALID),  # a global pool: one reduction
        ([1, 40, 40, 4], (2, 2), (2, 2), Padding.VALID),  # separable max / taps
        ([1, 40, 40, 4], (3, 3), (2, 2), Padding.SAME),  # the tap loop
    ],
    ids=["small", "global", "large", "padded"],
)
def test_pools_saturate_infinities_at_flt_max_like_litert(op, activation, shape, filter_hw, stride, padding):
    # TFLite clamps every float pool to its activation range, [lowest, max] of float32 with
    # no activation: inf gives FLT_MAX, and a max pool starts from lowest (a window of only
    # NaN and -inf gives lowest).
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    x[0, 0, 0, 0] = np.inf
    x[0, 0:2, 2:4, 0] = -np.inf
    x[0, 2:4, 0:2, 0] = np.nan
    x[0, 2, 2, 0] = np.nan
    x[0, -1, -1, -1] = -np.inf
    model = pool_model(op, shape, pool_params(filter_hw, stride, padding, activation))
    assert_matches_litert(model, [x])


@pytest.mark.parametrize("op", POOLS, ids=POOL_IDS)
@pytest.mark.parametrize("stride", [(1, 1), (2, 3)], ids=str)
def test_a_filter_far_larger_than_the_input_matches_litert(op, stride):
    # Only the taps that can touch the input run (issue 16: a pool's work is bounded by
    # its tensors, not by its filter size). 65,536 rows is the largest LiteRT prepares.
    x = np.random.default_rng(3).standard_normal((1, 9, 8, 2)).astype(np.float32)
    litert_sized = assert_matches_litert(pool_model(op, [1, 9, 8, 2], pool_params((1 << 16, 5), stride, Padding.SAME)), [x])
    # With SAME padding every window of a filter this large covers the whole input: a
    # 16,777,216-row filter (which LiteRT refuses to prepare) gives the same outputs.
    huge = run_ours(pool_model(op, [1, 9, 8, 2], pool_params((1 << 24, 5), stride, Padding.SAME)), [x])
    np.testing.assert_array_equal(huge[0], litert_sized[0])


def test_the_cropped_window_of_a_huge_filter_spans_the_input_and_the_output_strides():
    from backends.cpu.kernels._window import WindowGeometry

    g = WindowGeometry.of((1, 9, 8, 2), (1 << 24, 1 << 16), Padding.SAME, (2, 3)).cropped_to_input()
    assert (g.out_h, g.out_w) == (5, 3)
    assert g.filter_h <= 9 + (5 - 1) * 2 and g.filter_w <= 8 + (3 - 1) * 3
    assert g.pad_top <= (5 - 1) * 2 and g.pad_left <= (3 - 1) * 3
