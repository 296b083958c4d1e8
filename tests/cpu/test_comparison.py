"""Parity of comparisons, logical ops and SELECT (backends/cpu/kernels/comparison.py) with LiteRT."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from delegate_sdk.context import KernelError
from delegate_sdk.op_resolver import UnsupportedOperatorError
from interpreter import Interpreter
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, run_ours
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType as T
from schema.enums import numpy_dtype

ORDERING = [B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL]


def name(value) -> str:
    """Test id of an enum member or a numpy type."""
    return getattr(value, "name", None) or np.dtype(value).name


def as_dtype(dtype) -> np.dtype:
    return numpy_dtype(dtype) if isinstance(dtype, int) and not isinstance(dtype, bool) else np.dtype(dtype)


def comparison_model(op, inputs, output_dtype, version=None, output_shape=None, quant=None) -> bytes:
    """``inputs``: (shape, dtype) for a graph input (quantized ``quant``), or an array for a
    constant; the output has their broadcast shape by default."""
    specs = [Const(spec) if isinstance(spec, np.ndarray) else In(*spec, quant) for spec in inputs]
    shapes = [spec.value.shape if isinstance(spec, Const) else tuple(spec.shape) for spec in specs]
    return single_op_model(op, specs, Out(output_shape or np.broadcast_shapes(*shapes), output_dtype), version=version)



def tie_prone_values(shape, dtype, rng):
    """Values from a small set, so that equal pairs are common; floats include NaN and inf."""
    dtype = as_dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.kind == "f":
        pool = np.array([-1.5, 0.0, -0.0, 1.5, 2.0, np.nan, np.inf, -np.inf], dtype)
        return rng.choice(pool, size=shape)
    return rng.integers(-3, 4, size=shape).astype(dtype)


# (op, dtype, version TFLite stamps)
COMPARISON_CASES = [
    *[(op, dtype, 1) for op in ORDERING for dtype in (np.float32, np.int32, np.int64)],
    (B.LESS, np.int16, 3),
    (B.GREATER_EQUAL, np.int16, 3),
    (B.LESS_EQUAL, np.int16, 1),
    (B.GREATER, np.int16, 1),
    *[(op, dtype, 1) for op in (B.EQUAL, B.NOT_EQUAL) for dtype in (np.bool_, np.float32, np.int32, np.int64)],
    (B.EQUAL, np.int16, 5),
]


@pytest.mark.parametrize(
    "op, dtype, version", COMPARISON_CASES, ids=[f"{c[0].name}-v{c[2]}-{name(c[1])}" for c in COMPARISON_CASES]
)
def test_comparison_version_matches_litert(op, dtype, version):
    model = comparison_model(op, [([3, 1, 4], dtype), ([2, 4], dtype)], T.BOOL)
    assert stamped_version(model) == version
    rng = np.random.default_rng(version)
    assert_matches_litert(model, [tie_prone_values([3, 1, 4], dtype, rng), tie_prone_values([2, 4], dtype, rng)])


@pytest.mark.parametrize("op", [B.EQUAL, B.NOT_EQUAL], ids=name)
def test_string_equality_v3_matches_litert(op):
    # Strings are constants here: the interpreter's arena cannot hold STRING activations.
    x = np.array([b"a", b"bc", b"", b"zz", b"\xff\x00"], dtype=object)
    y = np.array([b"a", b"b", b"", b"zz ", b"\xff\x00"], dtype=object)
    builder = ModelBuilder()
    graph = builder.subgraph()
    mask = graph.add_input("mask", [5], np.bool_)
    compared = graph.add_tensor("compared", [5], T.BOOL)
    graph.add_operator(op, [graph.add_constant("x", x), graph.add_constant("y", y)], [compared])
    out = graph.add_tensor("out", [5], T.BOOL)
    graph.add_operator(B.LOGICAL_AND, [compared, mask], [out])
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    model = builder.build()
    assert stamped_version(model) == 3
    assert_matches_litert(model, [np.ones(5, np.bool_)])


#: The versions LiteRT 2.3 registers (BUILTIN_REF and BUILTIN alike); its kernel runs every
#: plain type, strings included, at each of them.
LITERT_VERSIONS = {B.EQUAL: range(1, 6), B.NOT_EQUAL: range(1, 5)}
EQUALITY_VERSION_CASES = [(op, version) for op, versions in LITERT_VERSIONS.items() for version in versions]


def string_values(shape, seed: int) -> np.ndarray:
    """Strings from a small pool (so that equal pairs are common): empty, UTF-8, NUL bytes."""
    pool = [b"", b"a", b"ab", b"a\x00", "\u00e9".encode(), b"\xff\x00", b"zz ", b"zz"]
    rng = np.random.default_rng(seed)
    values = np.empty(int(np.prod(shape)), dtype=object)
    values[:] = [pool[i] for i in rng.integers(0, len(pool), size=values.size)]
    return values.reshape(shape)


@pytest.mark.parametrize("op, version", EQUALITY_VERSION_CASES, ids=[f"{o.name}-v{v}" for o, v in EQUALITY_VERSION_CASES])
def test_string_equality_at_every_version_litert_registers_matches_litert(op, version):
    """Strings as graph inputs, broadcast, at a version forced into the model."""
    model = comparison_model(op, [([3, 1, 4], T.STRING), ([2, 4], T.STRING)], T.BOOL, version=version)
    assert stamped_version(model) == version
    assert_matches_litert(model, [string_values([3, 1, 4], version), string_values([2, 4], version + 10)])


@pytest.mark.parametrize("op", [B.EQUAL, B.NOT_EQUAL], ids=name)
def test_the_writer_stamps_string_equality_v3(op):
    model = comparison_model(op, [([2], T.STRING), ([2], T.STRING)], T.BOOL)
    assert stamped_version(model) == 3


PLAIN_AT_OTHER_VERSIONS = [
    (op, dtype, version) for op, version in EQUALITY_VERSION_CASES for dtype in (np.float32, np.int32, np.bool_)
    if version != 1
]


@pytest.mark.parametrize(
    "op, dtype, version", PLAIN_AT_OTHER_VERSIONS, ids=[f"{c[0].name}-v{c[2]}-{name(c[1])}" for c in PLAIN_AT_OTHER_VERSIONS]
)
def test_plain_equality_at_a_version_the_writer_does_not_stamp_for_its_type_matches_litert(op, dtype, version):
    model = comparison_model(op, [([3, 1, 4], dtype), ([2, 4], dtype)], T.BOOL, version=version)
    rng = np.random.default_rng(version)
    assert_matches_litert(model, [tie_prone_values([3, 1, 4], dtype, rng), tie_prone_values([2, 4], dtype, rng)])


@pytest.mark.parametrize("op, version", [(B.EQUAL, 6), (B.NOT_EQUAL, 5)], ids=lambda v: getattr(v, "name", str(v)))
def test_string_equality_past_litert_s_versions_is_refused_naming_op_and_version(op, version):
    model = comparison_model(op, [([2], T.STRING), ([2], T.STRING)], T.BOOL, version=version)
    with pytest.raises(UnsupportedOperatorError, match=rf"{op.name}.*\b{version}\b"):
        Interpreter(model_content=model)


@pytest.mark.parametrize("version", [1, 3, 4])
def test_not_equal_on_plain_int16_is_refused_where_litert_leaves_the_output_unwritten(version):
    model = comparison_model(B.NOT_EQUAL, [([2, 3], T.INT16), ([2, 3], T.INT16)], T.BOOL, version=version)
    interpreter = Interpreter(model_content=model)
    with pytest.raises(KernelError, match="NOT_EQUAL on plain .*int16 is not supported"):
        interpreter.allocate_tensors()


@pytest.mark.parametrize("op", [B.LOGICAL_AND, B.LOGICAL_OR], ids=name)
def test_logical_binary_with_broadcasting_matches_litert(op):
    model = comparison_model(op, [([2, 3, 4], T.BOOL), ([3, 1], T.BOOL)], T.BOOL)
    assert stamped_version(model) == 1
    assert_matches_litert(model)


def test_logical_not_matches_litert():
    model = comparison_model(B.LOGICAL_NOT, [([2, 5], T.BOOL)], T.BOOL)
    assert stamped_version(model) == 1
    assert_matches_litert(model)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.bool_, np.int16], ids=name)
def test_select_v1_elementwise_matches_litert(dtype):
    model = comparison_model(B.SELECT, [([2, 3], T.BOOL), ([2, 3], dtype), ([2, 3], dtype)], as_dtype(dtype))
    assert stamped_version(model) == 1
    assert_matches_litert(model)


@pytest.mark.parametrize("condition_shape", [[], [3]], ids=["scalar", "one-per-row"])
def test_select_v1_low_rank_condition_matches_litert(condition_shape):
    model = comparison_model(
        B.SELECT, [(condition_shape, T.BOOL), ([3, 2, 4], T.FLOAT32), ([3, 2, 4], T.FLOAT32)], T.FLOAT32, output_shape=[3, 2, 4]
    )
    assert stamped_version(model) == 1
    for seed in range(3):
        assert_matches_litert(model, seed=seed)


def test_select_v1_single_elements_keep_the_declared_output_shape_like_litert():
    model = comparison_model(
        B.SELECT, [([1], T.BOOL), ([1, 1], T.FLOAT32), ([], T.FLOAT32)], T.FLOAT32, output_shape=[1]
    )
    for flag in (True, False):
        ours = assert_matches_litert(model, [np.array([flag]), np.array([[2.5]], np.float32), np.array(-1.0, np.float32)])
        assert ours[0].shape == (1,)


def test_select_v3_five_dimensional_matches_litert():
    shape = [2, 1, 3, 2, 2]
    model = comparison_model(B.SELECT, [(shape, T.BOOL), (shape, T.FLOAT32), (shape, T.FLOAT32)], T.FLOAT32)
    assert stamped_version(model) == 3
    assert_matches_litert(model)


@pytest.mark.parametrize("op", [B.SELECT, B.SELECT_V2], ids=name)
def test_select_uint32_values_match_litert(op):
    # TFLite's rule tests the condition (input 0, always BOOL) for UINT32, so it never
    # stamps these versions by itself: SELECT v4 / SELECT_V2 v2 are given explicitly.
    version = 4 if op == B.SELECT else 2
    model = comparison_model(op, [([4], T.BOOL), ([4], T.UINT32), ([4], T.UINT32)], T.UINT32, version=version)
    assert_matches_litert(model)


def test_select_v2_broadcasts_all_three_inputs_like_litert():
    model = comparison_model(B.SELECT_V2, [([2, 1, 4], T.BOOL), ([3, 1], T.FLOAT32), ([1, 4], T.FLOAT32)], T.FLOAT32)
    assert stamped_version(model) == 1
    for seed in range(3):
        assert_matches_litert(model, seed=seed)


# -- nodes outside what the kernels implement fail clearly ---------------------------------


def test_bool_ordering_comparison_fails_naming_the_op():
    model = comparison_model(B.GREATER, [([3], T.BOOL), ([3], T.BOOL)], T.BOOL)
    with pytest.raises(KernelError, match="GREATER v1.*BOOL"):
        Interpreter(model_content=model).allocate_tensors()


def test_select_v1_condition_that_does_not_fit_fails_naming_the_op():
    model = comparison_model(B.SELECT, [([3], T.BOOL), ([2, 3], T.FLOAT32), ([2, 3], T.FLOAT32)], T.FLOAT32, output_shape=[2, 3])
    with pytest.raises(KernelError, match="SELECT v1.*condition shape"):
        Interpreter(model_content=model).allocate_tensors()


def test_select_v2_with_non_bool_condition_fails_naming_the_op():
    model = comparison_model(B.SELECT_V2, [([3], T.INT32), ([3], T.FLOAT32), ([3], T.FLOAT32)], T.FLOAT32)
    with pytest.raises(KernelError, match="SELECT_V2 v1.*condition"):
        Interpreter(model_content=model).allocate_tensors()


# -- property tests against LiteRT -------------------------------------------------------


@pytest.mark.parametrize("op", [*ORDERING, B.EQUAL, B.NOT_EQUAL], ids=name)
@settings(max_examples=15, deadline=None)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, min_side=1, max_side=4),
    dtype=st.sampled_from([np.float32, np.int32, np.int64]),
    seed=st.integers(0, 2**16),
)
def test_comparisons_on_random_broadcast_shapes_match_litert(op, shapes, dtype, seed):
    shape_x, shape_y = shapes.input_shapes
    model = comparison_model(op, [(shape_x, dtype), (shape_y, dtype)], T.BOOL)
    rng = np.random.default_rng(seed)
    assert_matches_litert(model, [tie_prone_values(shape_x, dtype, rng), tie_prone_values(shape_y, dtype, rng)])


@settings(max_examples=30, deadline=None)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=4, min_side=1, max_side=4),
    dtype=st.sampled_from([np.float32, np.int32, np.int64, np.bool_]),
    seed=st.integers(0, 2**16),
)
def test_select_v2_on_random_broadcast_shapes_matches_litert(shapes, dtype, seed):
    shape_c, shape_x, shape_y = shapes.input_shapes
    # TFLite keeps the declared output shape when every tensor has one element.
    output_shape = shapes.result_shape
    model = comparison_model(B.SELECT_V2, [(shape_c, T.BOOL), (shape_x, dtype), (shape_y, dtype)], as_dtype(dtype), output_shape=output_shape)
    rng = np.random.default_rng(seed)
    inputs = [tie_prone_values(shape_c, np.bool_, rng), tie_prone_values(shape_x, dtype, rng), tie_prone_values(shape_y, dtype, rng)]
    ours = run_ours(model, inputs)
    assert_matches_litert(model, inputs)
    assert ours[0].shape == tuple(output_shape)



def test_select_v2_copies_int8_quantized_values_as_they_are_like_litert():
    # TFLite's rule tests the condition (input 0, BOOL) for int8, so v2 is given explicitly;
    # its kernel copies raw values and never reads their scales (not even when they differ).
    from schema.builder import quantization

    values = [In([2, 5], np.int8, quantization(0.5, 1)), In([2, 5], np.int8, quantization(0.25, -3))]
    model = single_op_model(B.SELECT, [In([2, 5], np.bool_), *values], Out([2, 5], np.int8, quantization(0.1, 2)),
                            version=2)
    assert_matches_litert(model)
