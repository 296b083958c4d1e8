"""Parity of the elementwise binary kernels (backends/cpu/kernels/binary.py) with LiteRT."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, run_litert, run_ours
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.params import AddParams, DivParams, MulParams, SubParams

PARAMS_WITH_ACTIVATION = {B.ADD: AddParams, B.SUB: SubParams, B.MUL: MulParams, B.DIV: DivParams}


def binary_model(op, inputs, output_dtype=None, params=None, version=None, output_shape=None, quant=None) -> bytes:
    """``inputs``: (shape, dtype) for a graph input, or an array for a constant, all quantized
    ``quant``; the output has their broadcast shape and the first one's type by default."""
    specs = [Const(spec, quant) if isinstance(spec, np.ndarray) else In(*spec, quant) for spec in inputs]
    shapes = [spec.value.shape if isinstance(spec, Const) else tuple(spec.shape) for spec in specs]
    first = specs[0].value.dtype if isinstance(specs[0], Const) else specs[0].dtype
    output = Out(output_shape or np.broadcast_shapes(*shapes), output_dtype if output_dtype is not None else first, quant)
    return single_op_model(op, specs, output, params, version=version)


def name(value) -> str:
    """Test id of an enum member or a numpy type."""
    return getattr(value, "name", None) or np.dtype(value).name



def random_values(shape, dtype, rng, low=-3.0, high=3.0, nonzero=False):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        values = rng.uniform(low, high, size=shape).astype(dtype)
        if nonzero:
            values[np.abs(values) < 0.25] = 0.5
    elif dtype.kind == "c":
        values = (rng.uniform(low, high, size=shape) + 1j * rng.uniform(low, high, size=shape)).astype(dtype)
    else:
        lo = max(int(low), np.iinfo(dtype).min)
        values = rng.integers(lo, int(high) + 1, size=shape).astype(dtype)
        if nonzero:
            values[values == 0] = 1
    return values


# (op, dtype, shape x, shape y, version TFLite stamps, value range, divisor must be nonzero)
VERSION_CASES = [
    (B.ADD, np.float32, [2, 3, 4], [2, 3, 4], 1, 3, False),
    (B.ADD, np.int32, [2, 1, 4], [3, 1], 1, 1000, False),
    (B.ADD, np.int64, [2, 3], [3], 4, 10**12, False),
    (B.ADD, np.int16, [4, 5], [4, 5], 5, 20000, False),  # wraps like TFLite
    (B.ADD, np.float32, [2, 1, 2, 1, 2, 3], [2, 1, 1, 3], 1, 3, False),  # 6-D, still v1 for ADD
    (B.SUB, np.float32, [3, 4], [1, 4], 1, 3, False),
    (B.SUB, np.int32, [3, 4], [3, 4], 1, 1000, False),
    (B.SUB, np.float32, [2, 1, 3, 1, 2], [3, 4, 1], 3, 3, False),
    (B.SUB, np.int64, [2, 3], [2, 1], 4, 10**12, False),
    (B.MUL, np.float32, [2, 3, 4], [4], 1, 3, False),
    (B.MUL, np.int32, [2, 3], [2, 3], 1, 1000, False),
    (B.MUL, np.int64, [2, 3], [3], 5, 10**6, False),
    (B.MUL, np.complex64, [2, 3], [2, 3], 6, 3, False),
    (B.MUL, np.int16, [3, 4], [4], 7, 300, False),
    (B.MUL, np.uint32, [3, 4], [3, 4], 7, 70000, False),
    (B.DIV, np.float32, [2, 3, 4], [2, 3, 4], 1, 3, True),
    (B.DIV, np.int32, [3, 4], [4], 1, 100, True),
    (B.DIV, np.float32, [2, 1, 2, 3, 2], [2, 1, 1, 2], 2, 3, True),
    (B.SQUARED_DIFFERENCE, np.float32, [2, 3], [3], 1, 3, False),
    (B.SQUARED_DIFFERENCE, np.int32, [2, 3], [2, 3], 1, 1000, False),
    (B.MAXIMUM, np.float32, [2, 3], [2, 3], 1, 3, False),
    (B.MAXIMUM, np.int32, [2, 3], [1], 1, 100, False),
    (B.MAXIMUM, np.int64, [2, 3], [2, 1], 1, 10**12, False),
    (B.MAXIMUM, np.float32, [2, 1, 3, 1, 2], [2, 1, 4, 1], 3, 3, False),
    (B.MINIMUM, np.float32, [2, 3], [3], 1, 3, False),
    (B.MINIMUM, np.int64, [2, 3], [2, 3], 1, 10**12, False),
    (B.MINIMUM, np.float32, [1, 2, 1, 3, 2], [2, 1, 3, 1], 3, 3, False),
    (B.POW, np.float32, [2, 3], [2, 3], 1, 3, False),
    (B.FLOOR_DIV, np.int32, [3, 4], [4], 1, 100, True),
    (B.FLOOR_DIV, np.float32, [3, 4], [3, 4], 2, 5, True),
    (B.FLOOR_DIV, np.int16, [3, 4], [3, 4], 3, 1000, True),
    (B.FLOOR_DIV, np.int8, [3, 4], [1, 4], 3, 100, True),
    (B.FLOOR_MOD, np.int32, [3, 4], [4], 1, 100, True),
    (B.FLOOR_MOD, np.int64, [3, 4], [3, 4], 1, 10**12, True),
    (B.FLOOR_MOD, np.float32, [3, 4], [3, 1], 1, 5, True),
    (B.FLOOR_MOD, np.int16, [3, 4], [3, 4], 2, 1000, True),
    (B.FLOOR_MOD, np.int8, [3, 4], [4], 2, 100, True),
]


@pytest.mark.parametrize(
    "op, dtype, shape_x, shape_y, version, limit, nonzero",
    VERSION_CASES,
    ids=[f"{c[0].name}-v{c[4]}-{np.dtype(c[1]).name}-{len(c[2])}d" for c in VERSION_CASES],
)
def test_binary_op_version_matches_litert(op, dtype, shape_x, shape_y, version, limit, nonzero):
    model = binary_model(op, [(shape_x, dtype), (shape_y, dtype)])
    assert stamped_version(model) == version
    rng = np.random.default_rng(version)
    low = 0 if np.dtype(dtype).kind == "u" else -limit
    x = random_values(shape_x, dtype, rng, low, limit)
    y = random_values(shape_y, dtype, rng, low, limit, nonzero=nonzero)
    if op == B.POW:
        x = np.abs(x) + 0.5  # a negative base with a fractional exponent is NaN in both
    assert_matches_litert(model, [x, y])


def test_int32_pow_with_small_exponents_matches_litert():
    model = binary_model(B.POW, [([3, 4], np.int32), ([3, 4], np.int32)])
    assert stamped_version(model) == 1
    rng = np.random.default_rng(1)
    x = rng.integers(-6, 7, size=(3, 4)).astype(np.int32)
    y = rng.integers(0, 6, size=(3, 4)).astype(np.int32)
    assert_matches_litert(model, [x, y])


@pytest.mark.parametrize("op", [B.ADD, B.SUB, B.MUL, B.DIV], ids=name)
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH, Act.SIGN_BIT], ids=name)
def test_fused_activation_clamps_like_litert_and_tanh_is_not_applied(op, activation):
    model = binary_model(op, [([4, 6], np.float32), ([6], np.float32)], params=PARAMS_WITH_ACTIVATION[op](activation))
    rng = np.random.default_rng(int(activation))
    x = random_values([4, 6], np.float32, rng, -8, 8)
    y = random_values([6], np.float32, rng, -2, 2, nonzero=True)
    assert_matches_litert(model, [x, y])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int16], ids=name)
@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1], ids=name)
def test_integer_add_fused_activation_clamps_like_litert(dtype, activation):
    model = binary_model(B.ADD, [([3, 5], dtype), ([3, 5], dtype)], params=AddParams(activation))
    rng = np.random.default_rng(3)
    assert_matches_litert(model, [random_values([3, 5], dtype, rng, -9, 9), random_values([3, 5], dtype, rng, -9, 9)])


def test_uint32_mul_with_relu_n1_to_1_clamps_to_one_like_litert():
    # CalculateActivationRange<uint32_t> turns the -1 bound into 0xFFFFFFFF.
    model = binary_model(B.MUL, [([6], np.uint32), ([6], np.uint32)], params=MulParams(Act.RELU_N1_TO_1))
    x = np.array([0, 1, 2, 5, 100, 7], np.uint32)
    assert_matches_litert(model, [x, x])


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy notes the float overflow
@pytest.mark.parametrize("op", [B.ADD, B.SUB, B.MUL], ids=name)
def test_float_infinities_saturate_to_float_max_like_litert(op):
    model = binary_model(op, [([6], np.float32), ([6], np.float32)])
    x = np.array([np.inf, -np.inf, np.nan, 3e38, 1.0, -2.0], np.float32)
    y = np.array([1.0, 1.0, 1.0, 3e38, np.nan, 0.5], np.float32)
    ours = assert_matches_litert(model, [x, y])
    assert np.isfinite(ours[0][[0, 1]]).all()


def test_float_div_by_zero_saturates_to_float_max_like_litert():
    model = binary_model(B.DIV, [([5], np.float32), ([5], np.float32)])
    x = np.array([1.0, -1.0, 0.0, 2.0, np.nan], np.float32)
    y = np.array([0.0, 0.0, 0.0, -0.0, 1.0], np.float32)
    assert_matches_litert(model, [x, y])


def test_int32_div_truncates_toward_zero_like_litert():
    model = binary_model(B.DIV, [([8], np.int32), ([8], np.int32)])
    x = np.array([7, -7, 7, -7, 1, -1, 2**31 - 1, -(2**31)], np.int32)
    y = np.array([2, 2, -2, -2, 3, 3, 7, 3], np.int32)
    ours = assert_matches_litert(model, [x, y])
    np.testing.assert_array_equal(ours[0][:4], [3, -3, -3, 3])


@pytest.mark.parametrize(
    "op, dtype", [(B.DIV, np.int32), (B.FLOOR_DIV, np.int32), (B.FLOOR_DIV, np.float32), (B.FLOOR_MOD, np.int64)], ids=name
)
def test_zero_divisor_fails_naming_the_op(op, dtype):
    model = binary_model(op, [([3], dtype), ([3], dtype)])
    x = np.array([1, 2, 3], dtype)
    y = np.array([1, 0, 2], dtype)
    with pytest.raises(Exception):
        run_litert(model, [x, y])
    with pytest.raises(KernelError, match=op.name):
        run_ours(model, [x, y])


def test_constant_zero_divisor_fails_at_allocate():
    model = binary_model(B.FLOOR_DIV, [([3], np.int32), np.array([1, 0, 2], np.int32)])
    interpreter = Interpreter(model_content=model)
    with pytest.raises(KernelError, match="FLOOR_DIV.*division by zero"):
        interpreter.allocate_tensors()


def test_float_floor_mod_zero_divisor_gives_nan_like_litert():
    model = binary_model(B.FLOOR_MOD, [([3], np.float32), ([3], np.float32)])
    assert_matches_litert(model, [np.array([1, -2, 3], np.float32), np.array([0, 0, 2], np.float32)])


def test_float_floor_mod_keeps_the_sign_of_zero_results_like_litert():
    model = binary_model(B.FLOOR_MOD, [([8], np.float32), ([8], np.float32)])
    x = np.array([4, -4, 4, -4, 5.5, -5.5, 0.0, -0.0], np.float32)
    y = np.array([2, 2, -2, -2, 2, -2, -3, 3], np.float32)
    ours = assert_matches_litert(model, [x, y])
    np.testing.assert_array_equal(np.signbit(ours[0]), np.signbit(run_litert(model, [x, y])[0]))


def test_float_floor_div_divides_in_double_like_litert():
    # float32(1) / float32(1.0000001) rounds to 1 in float32 but is just below 1 in double.
    model = binary_model(B.FLOOR_DIV, [([4], np.float32), ([4], np.float32)])
    x = np.array([1.0, -1.0, 3.0, 0.3], np.float32)
    y = np.array([1.0000001, 1.0000001, 3.0000002, 0.1], np.float32)
    assert_matches_litert(model, [x, y])


@pytest.mark.parametrize("op", [B.MAXIMUM, B.MINIMUM], ids=name)
def test_maximum_minimum_return_y_when_either_side_is_nan_like_litert(op):
    model = binary_model(op, [([2, 4], np.float32), ([4], np.float32)])
    x = np.array([[np.nan, 1.0, np.nan, -np.inf], [2.0, np.nan, 0.0, 5.0]], np.float32)
    y = np.array([1.0, np.nan, np.nan, 3.0], np.float32)
    assert_matches_litert(model, [x, y])


def test_negative_int32_pow_exponent_fails_naming_the_op():
    model = binary_model(B.POW, [([2], np.int32), ([2], np.int32)])
    with pytest.raises(KernelError, match="POW.*negative"):
        run_ours(model, [np.array([2, 3], np.int32), np.array([1, -1], np.int32)])


def test_add_with_a_constant_operand_matches_litert():
    bias = np.linspace(-1, 1, 8).astype(np.float32)
    model = binary_model(B.ADD, [([2, 3, 8], np.float32), bias], params=AddParams(Act.RELU))
    assert_matches_litert(model)


@pytest.mark.parametrize("op", [B.ADD, B.SUB, B.MUL], ids=name)
@pytest.mark.parametrize(
    "shape_x, shape_y, tiled",
    [
        ([1, 8, 8, 8], [1, 1, 8, 1], [False, True]),  # runs of 1 along C: y copied to full shape
        ([1, 8, 8, 8], [8], [False, True]),  # runs of 8 (lower rank)
        ([1, 1, 8, 1], [1, 8, 1, 8], [True, True]),  # both broadcast in short runs
        ([1, 8, 8, 8], [1, 8, 1, 1], [False, False]),  # a run of 64: numpy's broadcasting loop
        ([1, 8, 8, 8], [1, 1, 1, 1], [False, False]),  # one value: the scalar loop
        ([2, 100, 100], [1, 100, 1], [False, False]),  # a large output
    ],
    ids=str,
)
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU6], ids=name)
def test_non_constant_broadcast_operands_match_litert(op, shape_x, shape_y, tiled, activation):
    from backends.cpu.kernels.binary import tiled_operand

    out = np.empty(np.broadcast_shapes(shape_x, shape_y), np.float32)
    assert [tiled_operand(np.empty(s, np.float32), out) is not None for s in (shape_x, shape_y)] == tiled
    params = PARAMS_WITH_ACTIVATION[op](activation)
    model = binary_model(op, [(shape_x, np.float32), (shape_y, np.float32)], params=params)
    rng = np.random.default_rng(9)
    inputs = [random_values(shape, np.float32, rng) for shape in (shape_x, shape_y)]
    assert_matches_litert(model, inputs)
    # The bound step again on new values: the copy is refreshed at every invoke.
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    for _ in range(2):
        inputs = [values * -2 for values in inputs]
        for detail, values in zip(interpreter.get_input_details(), inputs):
            interpreter.set_tensor(detail["index"], values)
        interpreter.invoke()
        got = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        np.testing.assert_allclose(got, run_litert(model, inputs)[0], rtol=1e-5, atol=1e-6)


def test_mul_of_two_constants_is_folded_and_matches_litert():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3])
    product = graph.add_tensor("product", [2, 3])
    y = graph.add_tensor("y", [2, 3])
    graph.add_operator(B.MUL, [graph.add_constant("a", a), graph.add_constant("b", a)], [product])
    graph.add_operator(B.ADD, [x, product], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    assert_matches_litert(builder.build())


# -- nodes outside what the kernels implement fail clearly ---------------------------------


def test_int8_add_on_version_1_fails_naming_the_op():
    model = binary_model(B.ADD, [([2], np.int8), ([2], np.int8)], version=1)
    with pytest.raises(KernelError, match="ADD v1.*INT8"):
        Interpreter(model_content=model).allocate_tensors()


def test_quantized_int16_add_fails_naming_the_op():
    model = binary_model(B.ADD, [([2], np.int16), ([2], np.int16)], version=5, quant=quantization(0.5))
    with pytest.raises(KernelError, match="ADD v5.*quantized"):
        Interpreter(model_content=model).allocate_tensors()


def test_mixed_input_types_fail_naming_the_op():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2], np.float32)
    y = graph.add_input("y", [2], np.int32)
    out = graph.add_tensor("out", [2], np.float32)
    graph.add_operator(B.SUB, [x, y], [out], version=1)
    graph.add_output(out)
    with pytest.raises(KernelError, match="SUB v1.*same type"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_complex_mul_with_fused_activation_fails_naming_the_op():
    model = binary_model(B.MUL, [([2], np.complex64), ([2], np.complex64)], params=MulParams(Act.RELU))
    with pytest.raises(KernelError, match="MUL v6.*COMPLEX64"):
        Interpreter(model_content=model).allocate_tensors()


def test_shapes_that_do_not_broadcast_fail_naming_the_op():
    model = binary_model(B.ADD, [([2, 3], np.float32), ([4], np.float32)], output_shape=[2, 3])
    with pytest.raises(KernelError, match="ADD v1.*broadcast"):
        Interpreter(model_content=model).allocate_tensors()


# -- property tests against LiteRT -------------------------------------------------------

# Ops and the highest broadcast rank TFLite's reference kernel takes for them.
PROPERTY_OPS = {
    B.ADD: 5, B.SUB: 5, B.MUL: 5, B.DIV: 5, B.MAXIMUM: 5, B.MINIMUM: 5,
    B.SQUARED_DIFFERENCE: 4, B.POW: 4, B.FLOOR_DIV: 4, B.FLOOR_MOD: 4,
}
PROPERTY_DTYPES = {
    B.ADD: [np.float32, np.int32, np.int64], B.SUB: [np.float32, np.int32, np.int64],
    B.MUL: [np.float32, np.int32, np.int64], B.DIV: [np.float32, np.int32],
    B.MAXIMUM: [np.float32, np.int32, np.int64], B.MINIMUM: [np.float32, np.int32, np.int64],
    B.SQUARED_DIFFERENCE: [np.float32, np.int32], B.POW: [np.float32],
    B.FLOOR_DIV: [np.float32, np.int32, np.int16, np.int8], B.FLOOR_MOD: [np.float32, np.int32, np.int64, np.int8],
}
ACTIVATIONS = [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH]


@st.composite
def binary_cases(draw, op):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=PROPERTY_OPS[op], min_side=1, max_side=4))
    dtype = draw(st.sampled_from(PROPERTY_DTYPES[op]))
    activation = draw(st.sampled_from(ACTIVATIONS)) if op in PARAMS_WITH_ACTIVATION else None
    seed = draw(st.integers(0, 2**16))
    return shapes.input_shapes, np.dtype(dtype), activation, seed


@pytest.mark.parametrize("op", list(PROPERTY_OPS), ids=name)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_binary_ops_on_random_broadcast_shapes_match_litert(op, data):
    (shape_x, shape_y), dtype, activation, seed = data.draw(binary_cases(op))
    params = PARAMS_WITH_ACTIVATION[op](activation) if activation is not None else None
    model = binary_model(op, [(shape_x, dtype), (shape_y, dtype)], params=params)
    rng = np.random.default_rng(seed)
    divides = op in (B.DIV, B.FLOOR_DIV, B.FLOOR_MOD)
    limit = 100 if dtype.kind in "iu" else 4
    x = random_values(shape_x, dtype, rng, -limit, limit)
    y = random_values(shape_y, dtype, rng, -limit, limit, nonzero=divides)
    if op == B.POW:
        x = np.abs(x) + np.float32(0.25)
    assert_matches_litert(model, [x, y])


# -- float16 (ADD v6, MUL v8: LiteRT's default resolver only) ---------------------------------------


def assert_matches_litert_default_kernels(model, inputs):
    from oracle import assert_invokes_match_litert

    # float16 results are each rounded once from float32, as LiteRT rounds them: bit for bit.
    return assert_invokes_match_litert(model, [inputs], rtol=0, atol=0, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")


@pytest.mark.parametrize("op, version", [(B.ADD, 6), (B.MUL, 8)], ids=["add-v6", "mul-v8"])
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1], ids=name)
def test_float16_add_and_mul_round_once_and_clamp_at_half_range_like_litert(op, version, activation):
    model = binary_model(op, [([8], np.float16), ([8], np.float16)], params=PARAMS_WITH_ACTIVATION[op](
        fused_activation_function=activation))
    assert stamped_version(model) == version
    x = np.array([60000, -60000, np.inf, np.nan, 1.5, -7, 3, 0.25], np.float16)  # overflows saturate at 65504
    y = np.array([60000, -60000, 1, 1, 2, 2, 10, -1], np.float16)
    assert_matches_litert_default_kernels(model, [x, y])


@pytest.mark.parametrize("op", [B.ADD, B.MUL], ids=name)
def test_float16_add_and_mul_broadcast_like_litert(op):
    model = binary_model(op, [([2, 1, 3], np.float16), ([4, 1], np.float16)])
    rng = np.random.default_rng(5)
    assert_matches_litert_default_kernels(model, [random_values((2, 1, 3), np.float16, rng, -300, 300),
                                                  random_values((4, 1), np.float16, rng, -300, 300)])
