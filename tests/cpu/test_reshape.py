"""RESHAPE, SQUEEZE, EXPAND_DIMS against LiteRT's reference kernels.

The helpers at the top (``single_op``, ``values``, ...; ``In`` is model_helpers') are shared by the other
layout-op test files (``from test_reshape import ...``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import Const, In, Out, single_op_model
from oracle import (
    FLOAT_ATOL,
    FLOAT_RTOL,
    MODELS_DIR,
    assert_matches_litert,
    assert_outputs_equal,
    run_interpreter,
    run_ours,
)
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.model import Model
from schema.params import ExpandDimsParams, PackParams, ReshapeParams, ShapeParams, SqueezeParams, StridedSliceParams
from schema.enums import TensorType


def single_op(op, inputs, outputs, params=None, version=None):
    """A one-node model: ``inputs`` are ``In`` or constant values; ``outputs`` is a list of
    (shape, dtype[, quantization]), a -1 in a shape making that dimension unknown."""
    specs = [spec if isinstance(spec, In) else Const(np.asarray(spec)) for spec in inputs]
    outs = [Out(shape, np.dtype(dtype), *q) for shape, dtype, *q in outputs]
    return single_op_model(op, specs, outs, params, version=version)


def version_of(model: bytes, node: int = 0) -> int:
    return Model.from_bytes(model).subgraphs[0].operators[node].version


def values(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "f":
        return rng.uniform(-3, 3, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100), size=shape).astype(dtype)


def assert_matches_litert_builtin(model, inputs, rtol=FLOAT_RTOL, atol=FLOAT_ATOL):
    """``assert_matches_litert`` with LiteRT on its default (BUILTIN) resolver.

    Only for (op, version) pairs that LiteRT's BUILTIN_REF resolver does not register
    although the default registration *is* the reference kernel (e.g. STRIDED_SLICE
    v5-v8: ``Register_STRIDED_SLICE()`` returns ``Register_STRIDED_SLICE_REF()``).
    """
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    litert = LiteRT(model_content=bytes(model), experimental_op_resolver_type=OpResolverType.BUILTIN)
    expected = run_interpreter(litert, inputs)
    ours = run_ours(model, inputs)
    assert_outputs_equal(ours, expected, rtol, atol)
    return ours


def skip_unless_runnable(model_path) -> None:
    """Skip (checked at run time) when a model needs kernels outside this family that
    are not written yet (e.g. CONV_2D, MUL)."""
    from backends.cpu import builtin_op_resolver
    from delegate_sdk.op_resolver import find_unresolved_operators

    missing = find_unresolved_operators(Model.from_path(model_path), builtin_op_resolver())
    if missing:
        names = sorted({f"{m.op_name} v{m.version}" for m in missing})
        pytest.skip(f"{model_path.name} needs kernels not written yet: {', '.join(names)}")


def assert_fails_clearly(model: bytes, op_name: str, inputs=None, match: str | None = None):
    interpreter = Interpreter(model_content=model)
    with pytest.raises(KernelError, match=op_name) as info:
        interpreter.allocate_tensors()
        for detail, value in zip(interpreter.get_input_details(), inputs or []):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
    if match:
        assert match in str(info.value), str(info.value)


# -- RESHAPE ------------------------------------------------------------------------------

DTYPES = [np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_with_constant_shape_tensor_matches_litert(dtype):
    m = single_op(B.RESHAPE, [In([2, 3, 4], dtype), np.array([4, -1], np.int32)], [([4, 6], dtype)])
    assert version_of(m) == 1
    assert_matches_litert(m, [values([2, 3, 4], dtype)])


def test_reshape_from_params_new_shape_matches_litert():
    m = single_op(B.RESHAPE, [In([2, 3, 4])], [([3, 8], np.float32)], ReshapeParams(new_shape=(3, -1)))
    ours = assert_matches_litert(m, [values([2, 3, 4])])
    assert ours[0].shape == (3, 8)


def test_reshape_to_scalar_from_legacy_zero_params_matches_litert():
    m = single_op(B.RESHAPE, [In([1, 1])], [([], np.float32)], ReshapeParams(new_shape=(0,)))
    assert assert_matches_litert(m, [values([1, 1])])[0].shape == ()


def test_reshape_with_shape_tensor_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.RESHAPE, [In([2, 6]), In([3], np.int32)], [([1], np.float32)])
    for shape in ([3, 2, 2], [-1, 4, 1], [12, 1, 1]):
        ours = assert_matches_litert(m, [values([2, 6]), np.array(shape, np.int32)])
        assert ours[0].size == 12


def test_reshape_shape_from_shape_strided_slice_pack_chain_matches_litert():
    """Flatten keeping the batch: RESHAPE(x, PACK(STRIDED_SLICE(SHAPE(x), 0:1), -1))."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 3, 4])
    shape = g.add_tensor("shape", [3], np.int32)
    batch = g.add_tensor("batch", [], np.int32)
    new_shape = g.add_tensor("new_shape", [2], np.int32)
    y = g.add_tensor("y", [2, 12])
    g.add_operator(B.SHAPE, [x], [shape], ShapeParams(out_type=TensorType.INT32))
    g.add_operator(
        B.STRIDED_SLICE,
        [shape, g.add_constant("b", np.array([0], np.int32)), g.add_constant("e", np.array([1], np.int32)),
         g.add_constant("s", np.array([1], np.int32))],
        [batch],
        StridedSliceParams(shrink_axis_mask=1),
    )
    g.add_operator(B.PACK, [batch, g.add_constant("minus_one", np.array(-1, np.int32))], [new_shape],
                   PackParams(values_count=2, axis=0))
    g.add_operator(B.RESHAPE, [x, new_shape], [y])
    g.add_output(y)
    builder.add_signature("serving_default", g)
    m = builder.build()
    # SHAPE is known at prepare, so the whole chain folds to a constant [2, -1] (as in TFLite).
    interpreter = Interpreter(model_content=m)
    interpreter.allocate_tensors()
    assert interpreter.get_tensor(new_shape).tolist() == [2, -1]
    assert assert_matches_litert(m, [values([2, 3, 4])])[0].shape == (2, 12)
    # The input is resized: the chain is re-evaluated for the new batch.
    assert assert_matches_litert(m, [values([5, 3, 4])])[0].shape == (5, 12)


def test_reshape_after_a_dynamic_reshape_matches_litert():
    """A static RESHAPE fed by a dynamic one is re-prepared at every invoke."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [24])
    s = g.add_input("s", [2], np.int32)
    mid = g.add_tensor("mid", [1])
    y = g.add_tensor("y", [1])
    g.add_operator(B.RESHAPE, [x, s], [mid])
    g.add_operator(B.RESHAPE, [mid, g.add_constant("flat", np.array([-1, 2], np.int32))], [y])
    g.add_output(y)
    builder.add_signature("serving_default", g)
    m = builder.build()
    assert assert_matches_litert(m, [values([24]), np.array([4, 6], np.int32)])[0].shape == (12, 2)


def test_reshape_with_two_stretch_dimensions_fails_clearly():
    m = single_op(B.RESHAPE, [In([2, 6]), np.array([-1, -1], np.int32)], [([1], np.float32)])
    assert_fails_clearly(m, "RESHAPE", match="more than one -1")


def test_reshape_with_wrong_element_count_fails_clearly():
    m = single_op(B.RESHAPE, [In([2, 6]), np.array([5, 2], np.int32)], [([5, 2], np.float32)])
    assert_fails_clearly(m, "RESHAPE", match="cannot reshape 12 elements")


def test_reshape_of_constant_input_is_folded_at_prepare():
    m = single_op(B.RESHAPE, [np.arange(6, dtype=np.float32), np.array([3, 2], np.int32)], [([3, 2], np.float32)])
    assert_matches_litert(m, [])


def test_reshape_converter_model_matches_litert():
    path = MODELS_DIR / "converter" / "reshape_float32.tflite"
    skip_unless_runnable(path)
    assert_matches_litert(path)


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    data=st.data(),
)
def test_reshape_property_matches_litert(shape, data):
    n = int(np.prod(shape))
    # Split n into a random new shape with one stretch dimension.
    factors = [d for d in range(1, n + 1) if n % d == 0]
    first = data.draw(st.sampled_from(factors))
    new = [first, -1] if data.draw(st.booleans()) else [-1, first]
    m = single_op(B.RESHAPE, [In(shape), np.array(new, np.int32)], [([1], np.float32)])
    assert_matches_litert(m, [values(shape)])


# -- SQUEEZE ------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [(), (0,), (-1,), (0, 2, -1)])
def test_squeeze_with_listed_or_all_dims_matches_litert(dims):
    m = single_op(B.SQUEEZE, [In([1, 3, 1, 2, 1])], [([3, 2], np.float32)], SqueezeParams(squeeze_dims=dims))
    assert version_of(m) == 1
    assert_matches_litert(m, [values([1, 3, 1, 2, 1])])


@pytest.mark.parametrize("dtype", DTYPES)
def test_squeeze_moves_every_type_matches_litert(dtype):
    m = single_op(B.SQUEEZE, [In([1, 4, 1], dtype)], [([4], dtype)])
    assert_matches_litert(m, [values([1, 4, 1], dtype)])


def test_squeeze_of_a_dimension_larger_than_one_fails_clearly():
    m = single_op(B.SQUEEZE, [In([1, 3])], [([3], np.float32)], SqueezeParams(squeeze_dims=(1,)))
    assert_fails_clearly(m, "SQUEEZE", match="cannot squeeze axis 1")


# -- EXPAND_DIMS --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("axis_dtype", [np.int32, np.int64])
def test_expand_dims_with_constant_axis_matches_litert(axis, axis_dtype):
    m = single_op(B.EXPAND_DIMS, [In([2, 3]), np.array(axis, axis_dtype)], [([1], np.float32)])
    assert version_of(m) == 1
    assert_matches_litert(m, [values([2, 3])])


def test_expand_dims_with_axis_as_model_input_is_dynamic_and_matches_litert():
    m = single_op(B.EXPAND_DIMS, [In([2, 3]), In([1], np.int32)], [([1], np.float32)])
    for axis in (0, 2, -2):
        assert_matches_litert(m, [values([2, 3]), np.array([axis], np.int32)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_expand_dims_moves_every_type_matches_litert(dtype):
    m = single_op(B.EXPAND_DIMS, [In([3], dtype), np.array(0, np.int32)], [([1, 3], dtype)])
    assert_matches_litert(m, [values([3], dtype)])


def test_expand_dims_of_int8_with_different_output_quantization_fails_clearly():
    m = single_op(
        B.EXPAND_DIMS,
        [In([3], np.int8, quantization(0.5, 1)), np.array(0, np.int32)],
        [([1, 3], np.int8, quantization(0.25, 1))],
    )
    assert_fails_clearly(m, "EXPAND_DIMS", match="requires them equal")


def test_expand_dims_out_of_range_axis_fails_clearly():
    m = single_op(B.EXPAND_DIMS, [In([2, 3]), np.array(4, np.int32)], [([1], np.float32)])
    assert_fails_clearly(m, "EXPAND_DIMS", match="out of range")


def test_expand_dims_of_quantized_int8_keeps_values_and_matches_litert():
    q = quantization(0.5, -3)
    m = single_op(B.EXPAND_DIMS, [In([4], np.int8, q), np.array(1, np.int32)], [([4, 1], np.int8, q)])
    ours = assert_matches_litert(m, [values([4], np.int8)])
    assert ours[0].dtype == np.int8
