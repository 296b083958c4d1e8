"""ARG_MAX and ARG_MIN against ai-edge-litert (index outputs: exact)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_helpers import stamped_version
from oracle import assert_matches_litert, assert_outputs_equal, run_interpreter, run_ours

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator, TensorType
from schema.params import ArgMaxParams, ArgMinParams

B = BuiltinOperator
OPS = [B.ARG_MAX, B.ARG_MIN]


def arg_model(op, shape, axis, dtype=np.float32, output_type=np.int32, axis_dtype=np.int32, axis_is_input=False, version=None):
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape, dtype)
    if axis_is_input:
        a = graph.add_input("axis", [1], axis_dtype)
    else:
        a = graph.add_constant("axis", np.array([axis], axis_dtype))
    rank = len(shape)
    resolved = axis + rank if axis < 0 else axis
    y = graph.add_tensor("y", [d for i, d in enumerate(shape) if i != resolved], output_type)
    out_type = TensorType.INT32 if np.dtype(output_type) == np.int32 else TensorType.INT64
    params = (ArgMaxParams if op == B.ARG_MAX else ArgMinParams)(output_type=out_type)
    graph.add_operator(op, [x, a], [y], params, version=version)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def assert_matches_litert_builtin(model: bytes, inputs) -> None:
    """Like ``assert_matches_litert``, on LiteRT's default (BUILTIN) resolver.

    LiteRT's BUILTIN_REF resolver registers ARG_MAX/ARG_MIN only up to version 2; its
    default resolver has version 3 (bool). Both use the one ``arg_min_max.cc`` kernel
    (there is no separate reference variant), so the numbers are the same kernel's.
    """
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
    from ai_edge_litert.interpreter import OpResolverType

    litert = LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN)
    assert_outputs_equal(run_ours(model, inputs), run_interpreter(litert, inputs))



def with_ties(shape, seed=0, dtype=np.float32):
    """Small integers, so that ties are frequent."""
    return np.random.default_rng(seed).integers(-3, 4, size=shape).astype(dtype)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("output_type", [np.int32, np.int64])
def test_float_arg_with_ties_gives_the_first_index(op, axis, output_type):
    model = arg_model(op, [4, 5, 6], axis, output_type=output_type)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [with_ties([4, 5, 6])])


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_integer_arg_matches_litert(op, dtype):
    model = arg_model(op, [3, 7], 1, dtype=dtype)
    assert stamped_version(model) == 1
    x = np.random.default_rng(1).integers(0, 5, size=[3, 7]).astype(dtype)
    assert_matches_litert(model, [x])


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("axis", [0, -1])
def test_bool_arg_is_version_3_and_matches_litert(op, axis):
    model = arg_model(op, [4, 6], axis, dtype=np.bool_)
    assert stamped_version(model) == 3
    x = np.random.default_rng(2).random([4, 6]) < 0.4
    x[:, 0] = False
    x[0] = True
    x[1] = False
    assert_matches_litert_builtin(model, [x])


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("axis_dtype", [np.int32, np.int64])
def test_arg_over_a_non_constant_axis_has_a_dynamic_output(op, axis_dtype):
    model = arg_model(op, [3, 4, 5], 1, axis_dtype=axis_dtype, axis_is_input=True)
    for axis in (0, 1, -1):
        assert_matches_litert(model, [with_ties([3, 4, 5], seed=3), np.array([axis], axis_dtype)])


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_int64_constant_axis_matches_litert(op):
    assert_matches_litert(arg_model(op, [3, 4], -2, axis_dtype=np.int64), [with_ties([3, 4], seed=4)])


NAN_ROWS = np.array(
    [
        [1.0, np.nan, 3.0, -2.0],
        [np.nan, 5.0, -5.0, 0.0],
        [np.nan, np.nan, np.nan, np.nan],
        [-np.inf, np.nan, -np.inf, np.nan],
        [np.nan, -np.inf, -np.inf, np.nan],
        [np.inf, np.nan, np.inf, 2.0],
        [0.0, 0.0, np.nan, 0.0],
        [2.0, 2.0, np.nan, 3.0],
    ],
    np.float32,
)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("shape, axis", [([4, 8], 0), ([4, 2, 4], 0), ([2, 4, 4], 1)], ids=str)
def test_nan_ranks_below_every_number_for_max_and_above_for_min(op, shape, axis):
    # The NaN rows run along a non-last axis: LiteRT's reference loop decides.
    x = np.moveaxis(NAN_ROWS.T.reshape([4] + [d for i, d in enumerate(shape) if i != axis]), 0, axis)
    assert_matches_litert(arg_model(op, shape, axis), [np.ascontiguousarray(x)])


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_nan_along_a_short_last_axis_matches_litert(op):
    # LiteRT routes float rows of 4 or more along the last axis to a SIMD loop whose NaN
    # handling differs from its reference kernel (e.g. ARG_MAX of [0, -3, nan, 2] is 0
    # there); rows of 3 take its scalar loop, which follows the reference rule.
    assert_matches_litert(arg_model(op, [8, 3], -1), [np.ascontiguousarray(NAN_ROWS[:, 1:])])
    assert_matches_litert(arg_model(op, [8, 3], -1), [np.ascontiguousarray(NAN_ROWS[:, :3])])


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_nan_along_a_long_last_axis_follows_the_reference_rule(op):
    got = run_ours(arg_model(op, [8, 4], -1), [NAN_ROWS])[0]
    # first best number; NaN below (ARG_MAX) / above (ARG_MIN) every number; all NaN -> 0
    want = [2, 1, 0, 0, 1, 0, 0, 3] if op == B.ARG_MAX else [3, 2, 0, 0, 1, 3, 0, 0]
    np.testing.assert_array_equal(got, np.array(want, np.int32))


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_empty_outer_dimension_gives_an_empty_output(op):
    assert_matches_litert(arg_model(op, [0, 4], 1), [np.zeros([0, 4], np.float32)])


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    axis_choice=st.integers(0, 7),
    op=st.sampled_from(OPS),
    seed=st.integers(0, 2**16),
)
def test_arg_property_matches_litert(shape, axis_choice, op, seed):
    rank = len(shape)
    axis = axis_choice % (2 * rank) - rank  # covers negative and positive axes
    assert_matches_litert(arg_model(op, shape, axis), [with_ties(shape, seed)])


# -- bad nodes ---------------------------------------------------------------------------------


def test_int8_arg_max_at_version_1_is_refused_with_the_op_name():
    model = arg_model(B.ARG_MAX, [2, 3], 1, dtype=np.int8, version=1)
    with pytest.raises(KernelError, match="ARG_MAX v1.*INT8"):
        Interpreter(model_content=model).allocate_tensors()


def test_bool_input_on_a_version_1_node_is_refused_with_the_op_name():
    model = arg_model(B.ARG_MIN, [2, 3], 1, dtype=np.bool_, version=1)
    with pytest.raises(KernelError, match="ARG_MIN v1.*BOOL"):
        Interpreter(model_content=model).allocate_tensors()


def test_float_output_type_is_refused_with_the_op_name():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3])
    a = graph.add_constant("axis", np.array([1], np.int32))
    y = graph.add_tensor("y", [2], np.float32)
    graph.add_operator(B.ARG_MAX, [x, a], [y], ArgMaxParams())  # schema default: FLOAT32
    graph.add_output(y)
    with pytest.raises(KernelError, match="ARG_MAX.*output_type FLOAT32"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_out_of_range_axis_is_refused_with_the_op_name():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3])
    a = graph.add_constant("axis", np.array([2], np.int32))
    y = graph.add_tensor("y", [2], np.int32)
    graph.add_operator(B.ARG_MIN, [x, a], [y], ArgMinParams(output_type=TensorType.INT32))
    graph.add_output(y)
    with pytest.raises(KernelError, match="ARG_MIN.*axis 2 is out of range"):
        Interpreter(model_content=builder.build()).allocate_tensors()
