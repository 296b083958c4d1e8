"""REDUCE_WINDOW (deprecated) and STABLEHLO_REDUCE_WINDOW (v1) against ai-edge-litert
(BUILTIN_REF): every reduce function and body op on every type LiteRT takes, windows with
strides and dilations, base dilation and padding (negative: cropping), windows that do not
fit, NaN in MAXIMUM and MINIMUM, bool sums, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_invokes_match_litert, assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.enums import ReduceWindowFunction as F
from schema.params import ReduceWindowParams, StablehloReduceWindowParams

TYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.float32, np.float64]
FUNCTIONS = [F.ADD, F.MUL, F.MINIMUM, F.MAXIMUM, F.ALL, F.ANY]
INIT = {F.ADD: 0, F.MUL: 1, F.MINIMUM: 100, F.MAXIMUM: -100, F.ALL: 1, F.ANY: 0}


def values(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind == "f":
        found = rng.uniform(-3, 3, shape).astype(dtype)
        found.reshape(-1)[::7] = 0  # (ALL and ANY see zeros)
        return found
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -9), min(info.max, 9), shape, endpoint=True).astype(dtype)


def init_value(function, dtype) -> np.ndarray:
    value = INIT[function]
    if np.dtype(dtype) == np.bool_:
        return np.array(bool(value))
    if np.dtype(dtype) == np.uint8 and value < 0:
        value = 0
    return np.array(value, dtype)


def reduce_window_model(shape, function, window, strides, dilations, dtype=np.float32, out_shape=None):
    """(``out_shape`` None: the shape our kernel gives; models it refuses need one.)"""
    inputs = [In(shape, dtype), Const(init_value(function, dtype))] + [
        Const(np.array(v, np.int64)) for v in (window, strides, dilations)
    ]
    return single_op_model(B.REDUCE_WINDOW, inputs, Out(out_shape, dtype), ReduceWindowParams(reduce_function=function))


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.name)
@pytest.mark.parametrize("dtype", TYPES, ids=lambda d: np.dtype(d).name)
def test_reduce_window_of_each_function_and_type_matches_litert(function, dtype):
    model = reduce_window_model([2, 5, 6], function, [1, 2, 3], [1, 2, 1], [1, 1, 2], dtype)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [values([2, 5, 6], dtype)])


@pytest.mark.parametrize("shape, window, strides, dilations", [
    ([7], [3], [1], [1]),
    ([7], [3], [2], [2]),
    ([4, 4], [2, 2], [2, 2], [1, 1]),  # a 2x2 pooling
    ([3, 4], [4, 1], [1, 1], [1, 1]),  # the window does not fit axis 0: an empty output
    ([1, 6, 5, 2], [1, 3, 2, 1], [1, 3, 1, 1], [1, 1, 3, 1]),
    ([2, 2, 3, 2, 2], [1, 2, 2, 1, 2], [1, 1, 1, 2, 1], [1, 1, 1, 1, 1]),
])
def test_reduce_window_geometries_match_litert(shape, window, strides, dilations):
    model = reduce_window_model(shape, F.ADD, window, strides, dilations)
    assert_matches_litert(model, [values(shape, np.float32)])


@pytest.mark.parametrize("function", [F.MAXIMUM, F.MINIMUM], ids=lambda f: f.name)
def test_reduce_window_maximum_and_minimum_with_nan_match_litert(function):
    # a >= b ? a : b: a NaN accumulated is replaced by the next element; a NaN element stays.
    model = reduce_window_model([6], function, [2], [1], [1])
    x = np.array([np.nan, 1.0, 2.0, np.nan, -0.0, 0.0], np.float32)
    outputs = assert_matches_litert(model, [x])
    assert np.isnan(outputs[0][2]) and outputs[0][0] == 1.0


def test_reduce_window_sum_of_bools_stores_the_count_as_litert_does():
    model = reduce_window_model([4], F.ADD, [3], [1], [1], np.bool_)
    outputs = assert_matches_litert(model, [np.array([True, True, True, False])])
    assert outputs[0].view(np.int8).tolist() == [3, 2]


def refused(model, pattern: str) -> None:
    with pytest.raises(KernelError, match=pattern):
        Interpreter(model_content=model).allocate_tensors()


def test_reduce_window_with_the_default_reduce_function_is_refused():
    inputs = [In([4]), Const(np.array(0, np.float32))] + [Const(np.array([1], np.int64))] * 3
    model = single_op_model(B.REDUCE_WINDOW, inputs, Out([4]), ReduceWindowParams())
    refused(model, r"node 0 \(REDUCE_WINDOW v1\).*reduce_function is UNSUPPORTED")


def test_reduce_window_with_a_window_given_at_run_time_is_refused_as_litert_does():
    inputs = [In([4]), Const(np.array(0, np.float32)), In([1], np.int64)] + [Const(np.array([1], np.int64))] * 2
    model = single_op_model(B.REDUCE_WINDOW, inputs, Out([4]), ReduceWindowParams(reduce_function=F.ADD))
    refused(model, r"REDUCE_WINDOW v1: window_dimensions 'x2' must be a constant")


def test_reduce_window_with_int32_window_vectors_is_refused_as_litert_does():
    inputs = [In([4]), Const(np.array(0, np.float32))] + [Const(np.array([1], np.int32))] * 3
    model = single_op_model(B.REDUCE_WINDOW, inputs, Out([4]), ReduceWindowParams(reduce_function=F.ADD))
    refused(model, r"REDUCE_WINDOW v1: window_dimensions 'c2' has type INT32; this kernel supports INT64")


def test_reduce_window_with_a_window_of_another_rank_is_refused():
    inputs = [In([4, 2]), Const(np.array(0, np.float32))] + [Const(np.array([1], np.int64))] * 3
    model = single_op_model(B.REDUCE_WINDOW, inputs, Out([4, 2]), ReduceWindowParams(reduce_function=F.ADD))
    refused(model, r"REDUCE_WINDOW v1: window_dimensions \[1\] must hold one value of at least 1 per input axis \(2\)")


def test_reduce_window_of_float16_is_refused_as_litert_does():
    model = reduce_window_model([4], F.ADD, [2], [1], [1], np.float16, out_shape=[3])
    refused(model, r"REDUCE_WINDOW v1: input 'x0' has type FLOAT16")


# -- STABLEHLO_REDUCE_WINDOW -----------------------------------------------------------------------


def stablehlo_model(shape, body_op, dtype=np.float32, init=0, **window):
    """main(x) = STABLEHLO_REDUCE_WINDOW(x, init); subgraph 1 is the body: one ``body_op`` node."""
    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", list(shape), dtype)
    init_tensor = main.add_constant("init", np.array(init, dtype))
    params = StablehloReduceWindowParams(body_subgraph_index=1, **{k: tuple(v) for k, v in window.items()})
    probe = main.add_tensor("y", [1] * len(shape), dtype)
    main.add_operator(B.STABLEHLO_REDUCE_WINDOW, [x, init_tensor], [probe], params)
    main.add_output(probe)
    builder.add_signature("serving_default", main)
    body = builder.subgraph("body")
    a, b = body.add_input("a", [], dtype), body.add_input("b", [], dtype)
    result = body.add_tensor("result", [], dtype)
    body.add_operator(body_op, [a, b], [result])
    body.add_output(result)
    return builder.build()


BODIES = [(B.STABLEHLO_ADD, 0), (B.ADD, 0), (B.STABLEHLO_MULTIPLY, 1), (B.MUL, 1), (B.STABLEHLO_MAXIMUM, -100),
          (B.MAXIMUM, -100), (B.STABLEHLO_MINIMUM, 100), (B.MINIMUM, 100)]


@pytest.mark.parametrize("body_op, init", BODIES, ids=[op.name for op, _ in BODIES])
def test_stablehlo_reduce_window_of_each_body_matches_litert(body_op, init):
    model = stablehlo_model([2, 5, 6], body_op, init=init, window_dimensions=[1, 2, 3], window_strides=[1, 2, 1],
                            window_dilations=[1, 1, 2])
    assert stamped_version(model) == 1
    assert_matches_litert(model, [values([2, 5, 6], np.float32)])


@pytest.mark.parametrize("body_op", [B.LOGICAL_AND, B.LOGICAL_OR, B.STABLEHLO_AND], ids=lambda op: op.name)
def test_stablehlo_reduce_window_with_a_logical_body_on_bool_matches_litert(body_op):
    model = stablehlo_model([3, 4], body_op, np.bool_, init=body_op != B.LOGICAL_OR, window_dimensions=[2, 2])
    # (LiteRT's reference resolver lacks STABLEHLO_AND, which its default kernels have.)
    resolver = "BUILTIN_WITHOUT_DEFAULT_DELEGATES" if body_op == B.STABLEHLO_AND else "BUILTIN_REF"
    assert_invokes_match_litert(model, [[values([3, 4], np.bool_)]], resolver=resolver)


@pytest.mark.parametrize("window", [
    dict(window_dimensions=[2, 2], padding=[1, 1, 0, 1]),
    dict(window_dimensions=[2, 3], base_dilations=[2, 1]),
    dict(window_dimensions=[2, 2], base_dilations=[2, 3], padding=[-1, 2, 1, -2], window_strides=[2, 1]),
    dict(window_dimensions=[3, 1], padding=[-2, 0, 0, 0], window_dilations=[2, 1]),
    dict(window_dimensions=[3, 3], window_strides=[3, 3]),  # absent dilations and padding: 1 and 0
], ids=["padding", "base-dilation", "dilated-padded-cropped", "cropped", "strided"])
def test_stablehlo_reduce_window_base_dilation_and_padding_match_litert(window):
    model = stablehlo_model([4, 5], B.STABLEHLO_ADD, init=-0.5, **window)
    assert_matches_litert(model, [values([4, 5], np.float32)])


@pytest.mark.parametrize("dtype", TYPES[1:], ids=lambda d: np.dtype(d).name)
def test_stablehlo_reduce_window_of_each_type_matches_litert(dtype):
    model = stablehlo_model([3, 4], B.STABLEHLO_MAXIMUM, dtype, init=1, window_dimensions=[2, 2], padding=[1, 0, 0, 1])
    assert_matches_litert(model, [values([3, 4], dtype)])


def test_stablehlo_reduce_window_whose_body_is_another_op_is_refused_naming_what_litert_runs():
    model = stablehlo_model([4], B.SUB, window_dimensions=[2])
    refused(model, r"node 0 \(STABLEHLO_REDUCE_WINDOW v1\).*body subgraph 1 holds \['SUB'\]; LiteRT runs body "
                   r"subgraphs of one node, of \['ADD'")


def test_stablehlo_reduce_window_without_window_dimensions_is_refused():
    model = stablehlo_model([4], B.STABLEHLO_ADD)
    refused(model, r"STABLEHLO_REDUCE_WINDOW v1: window_dimensions is absent or empty")


def test_stablehlo_reduce_window_with_a_zero_stride_is_refused_as_litert_does():
    model = stablehlo_model([4], B.STABLEHLO_ADD, window_dimensions=[2], window_strides=[0])
    refused(model, r"STABLEHLO_REDUCE_WINDOW v1: window_strides \[0\] must hold one value of at least 1 per input axis")


def test_stablehlo_reduce_window_cropping_everything_is_refused():
    model = stablehlo_model([4], B.STABLEHLO_ADD, window_dimensions=[1], padding=[-2, -2])
    refused(model, r"STABLEHLO_REDUCE_WINDOW v1: the padding \[-2, -2\] leaves no element")


def test_stablehlo_reduce_window_whose_body_a_delegate_took_reads_the_body_s_op_as_before():
    # (LiteRT reads the body's plan before delegation: the GPU delegate takes an ADD body.)
    from backends.gpu import GpuDelegate

    model = stablehlo_model([4, 5], B.ADD, window_dimensions=[2, 2])
    x = values([4, 5], np.float32)
    expected = assert_matches_litert(model, [x])
    interpreter = Interpreter(model_content=model, experimental_delegates=[GpuDelegate(device="host")])
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), expected[0])
