"""Parity of the quantized elementwise binary kernels (backends/cpu/kernels/binary_quantized.py)
with LiteRT's reference kernels, bit for bit: ADD, SUB, MUL, SQUARED_DIFFERENCE, MAXIMUM,
MINIMUM on uint8, int8 and int16; also the shared converter models of this family."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import MODELS_DIR, assert_matches_litert, run_ours
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.params import AddParams, MulParams, SubParams

PARAMS = {B.ADD: AddParams, B.SUB: SubParams, B.MUL: MulParams}
ACTIVATIONS = [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH]


def quantized_model(op, inputs, output, params=None, version=None) -> bytes:
    """One node. ``inputs``: (shape, dtype, scale, zero_point) graph inputs, or
    (array, scale, zero_point) constants; ``output``: (shape, dtype, scale, zero_point).
    ``version`` overrides the stamped (minimum) version."""
    specs = [Const(spec[0], quantization(*spec[1:])) if isinstance(spec[0], np.ndarray) else In(spec[0], spec[1], quantization(*spec[2:]))
             for spec in inputs]
    shape, dtype, scale, zero_point = output
    return single_op_model(op, specs, Out(shape, dtype, quantization(scale, zero_point)), params, version=version)



def full_range(shape, dtype, rng) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)


def binary_case(op, dtype, shapes, scales, zero_points, activation=Act.NONE, seed=0, **param_fields):
    """Build a two-input node of ``op`` and compare it with LiteRT on full-range inputs."""
    (s1, s2, so), (z1, z2, zo) = scales, zero_points
    params = PARAMS[op](fused_activation_function=activation, **param_fields) if op in PARAMS else None
    out_shape = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    model = quantized_model(op, [(shapes[0], dtype, s1, z1), (shapes[1], dtype, s2, z2)], (out_shape, dtype, so, zo), params)
    rng = np.random.default_rng(seed)
    assert_matches_litert(model, [full_range(shapes[0], dtype, rng), full_range(shapes[1], dtype, rng)])
    return model


# -- ADD -------------------------------------------------------------------------------


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: a.name)
def test_add_int8_with_broadcasting_and_fused_activation_matches_litert_as_version_2(activation):
    model = binary_case(B.ADD, np.int8, ([2, 3, 5], [3, 1]), (0.031, 0.057, 0.049), (-7, 20, 3), activation)
    assert stamped_version(model) == 2


def test_add_int8_relu6_bound_is_quantized_in_float32_like_tflite():
    # 6 / 0.07947020 is 75.4999965 in double but 75.5 in float32: TFLite's bound is 76.
    x = np.arange(-128, 128).astype(np.int8)
    model = quantized_model(
        B.ADD,
        [([256], np.int8, 0.05, 0), ([256], np.int8, 0.05, 0)],
        ([256], np.int8, 0.0794702023267746, 0),
        AddParams(fused_activation_function=Act.RELU6),
    )
    assert assert_matches_litert(model, [x, x])[0].max() == 76


def test_add_int8_with_a_constant_operand_matches_litert():
    rng = np.random.default_rng(1)
    constant = full_range([4], np.int8, rng)
    model = quantized_model(B.ADD, [([3, 4], np.int8, 0.02, 5), (constant, 0.07, -11)], ([3, 4], np.int8, 0.05, 0), AddParams())
    assert_matches_litert(model, [full_range([3, 4], np.int8, rng)])


@pytest.mark.parametrize("op", [B.ADD, B.SUB, B.MUL])
@pytest.mark.parametrize("constant_first", [False, True], ids=["constant_second", "constant_first"])
@pytest.mark.parametrize("constant_shape", [[], [1, 1], [5]], ids=["scalar", "one_value", "row"])
def test_int8_with_a_constant_operand_on_either_side_matches_litert(op, constant_first, constant_shape):
    # A single constant value folds into a 256-entry row of the table; a constant row is
    # stored once in the lookup's index (both against full-range variable inputs).
    rng = np.random.default_rng(2)
    constant = (full_range(constant_shape, np.int8, rng), 0.07, -11)
    variable = ([3, 5], np.int8, 0.02, 5)
    inputs = [constant, variable] if constant_first else [variable, constant]
    model = quantized_model(op, inputs, ([3, 5], np.int8, 0.05, 3), PARAMS[op]())
    for seed in range(3):
        assert_matches_litert(model, [full_range([3, 5], np.int8, np.random.default_rng(seed))])


@pytest.mark.parametrize("op", [B.ADD, B.MUL])
def test_int8_of_two_constants_is_folded_and_matches_litert(op):
    rng = np.random.default_rng(3)
    inputs = [(full_range([3, 5], np.int8, rng), 0.02, 5), (full_range([5], np.int8, rng), 0.07, -11)]
    model = quantized_model(op, inputs, ([3, 5], np.int8, 0.05, 3), PARAMS[op]())
    assert_matches_litert(model, [])


def test_int8_add_gives_the_new_result_at_each_invoke():
    # The lookup keeps views of the input buffers: new inputs in the same buffers count.
    model = quantized_model(B.ADD, [([4, 3], np.int8, 0.02, 5), ([3], np.int8, 0.03, -2)], ([4, 3], np.int8, 0.05, 0), AddParams())
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    details = interpreter.get_input_details()
    results = []
    for seed in range(2):
        rng = np.random.default_rng(seed)
        inputs = [full_range([4, 3], np.int8, rng), full_range([3], np.int8, rng)]
        for detail, value in zip(details, inputs):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        results.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).copy())
        assert_matches_litert(model, inputs)
        np.testing.assert_array_equal(results[-1], run_ours(model, inputs)[0])
    assert not np.array_equal(results[0], results[1])


def test_add_uint8_matches_litert_as_version_1():
    model = binary_case(B.ADD, np.uint8, ([4, 1, 3], [5, 3]), (0.02, 0.07, 0.05), (128, 3, 200), Act.RELU6)
    assert stamped_version(model) == 1


def test_add_int16_with_general_scales_matches_litert_as_version_3():
    model = binary_case(B.ADD, np.int16, ([2, 7], [7]), (0.0013, 0.0007, 0.002), (0, 0, 0), Act.RELU, pot_scale_int16=False)
    assert stamped_version(model) == 3


def test_add_int16_flagged_power_of_two_but_with_general_scales_takes_the_general_path_at_version_1():
    model = binary_case(B.ADD, np.int16, ([3, 4], [3, 4]), (0.0013, 0.0007, 0.002), (0, 0, 0), pot_scale_int16=True)
    assert stamped_version(model) == 1


@pytest.mark.parametrize("shifted_input", [0, 1])
def test_add_int16_with_power_of_two_scales_takes_the_lstm_path_and_matches_litert(shifted_input):
    scales = [2.0**-10, 2.0**-10, 2.0**-10]
    scales[shifted_input] = 2.0**-13
    model = binary_case(B.ADD, np.int16, ([4, 6], [4, 6]), scales, (0, 0, 0), Act.RELU_N1_TO_1)
    assert stamped_version(model) == 1


def test_add_int16_with_a_nonzero_zero_point_fails_clearly():
    model = quantized_model(B.ADD, [([3], np.int16, 0.01, 4), ([3], np.int16, 0.01, 0)], ([3], np.int16, 0.01, 0), AddParams())
    with pytest.raises(KernelError, match="ADD.*zero point 0"):
        Interpreter(model_content=model).allocate_tensors()


def test_add_whose_output_scale_is_too_small_for_tflite_fails_clearly():
    # TFLite aborts the process here (QuantizeMultiplierSmallerThanOneExp's CHECK): not run there.
    model = quantized_model(B.ADD, [([3], np.int8, 0.5, 0), ([3], np.int8, 0.5, 0)], ([3], np.int8, 1e-7, 0), AddParams())
    with pytest.raises(KernelError, match="ADD.*rescale factor"):
        Interpreter(model_content=model).allocate_tensors()


# -- SUB -------------------------------------------------------------------------------


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: a.name)
def test_sub_int8_matches_litert_as_version_2(activation):
    model = binary_case(B.SUB, np.int8, ([3, 1, 4], [5, 1]), (0.09, 0.011, 0.06), (100, -128, -5), activation)
    assert stamped_version(model) == 2


def test_sub_uint8_matches_litert_as_version_1():
    model = binary_case(B.SUB, np.uint8, ([6], [6]), (0.02, 0.03, 0.04), (0, 255, 128), Act.RELU)
    assert stamped_version(model) == 1


@pytest.mark.parametrize("dtype, zero_points", [(np.int8, (3, -9, 1)), (np.uint8, (3, 250, 128))], ids=["int8", "uint8"])
def test_sub_broadcasting_5d_matches_litert_as_version_3(dtype, zero_points):
    model = binary_case(B.SUB, dtype, ([2, 1, 3, 1, 2], [3, 4, 1]), (0.05, 0.04, 0.07), zero_points)
    assert stamped_version(model) == 3


def test_sub_int16_with_general_scales_matches_litert_as_version_5():
    model = binary_case(B.SUB, np.int16, ([2, 3, 4], [4]), (0.0021, 0.0009, 0.0013), (0, 0, 0), Act.RELU6, pot_scale_int16=False)
    assert stamped_version(model) == 5


def test_sub_int16_with_power_of_two_scales_broadcasts_and_matches_litert_as_version_1():
    model = binary_case(B.SUB, np.int16, ([3, 5], [5]), (2.0**-12, 2.0**-9, 2.0**-9), (0, 0, 0))
    assert stamped_version(model) == 1


# -- MUL -------------------------------------------------------------------------------


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: a.name)
def test_mul_int8_matches_litert_as_version_2(activation):
    model = binary_case(B.MUL, np.int8, ([2, 3, 4], [1, 4]), (0.05, 0.03, 0.2), (-3, 17, 9), activation)
    assert stamped_version(model) == 2


def test_mul_int8_whose_rescale_is_at_least_one_matches_litert_as_version_3():
    model = binary_case(B.MUL, np.int8, ([5, 4], [4]), (0.3, 0.2, 0.02), (1, -2, 0))
    assert stamped_version(model) == 3


def test_mul_uint8_matches_litert_as_version_1():
    model = binary_case(B.MUL, np.uint8, ([4, 4], [4, 1]), (0.02, 0.03, 0.01), (128, 100, 20), Act.RELU)
    assert stamped_version(model) == 1


def test_mul_int16_matches_litert_as_version_4():
    model = binary_case(B.MUL, np.int16, ([3, 4], [3, 1]), (0.001, 0.002, 0.01), (0, 0, 0), Act.RELU6)
    assert stamped_version(model) == 4


@pytest.mark.parametrize("out_dtype, zero_point", [(np.int8, -5), (np.uint8, 130)], ids=["int8", "uint8"])
def test_mul_of_int16_inputs_into_an_8bit_output_matches_litert_as_version_4(out_dtype, zero_point):
    model = quantized_model(
        B.MUL, [([4, 6], np.int16, 2.0**-15, 0), ([4, 6], np.int16, 2.0**-15, 0)], ([4, 6], out_dtype, 2.0**-7, zero_point), MulParams()
    )
    assert stamped_version(model) == 4
    rng = np.random.default_rng(3)
    assert_matches_litert(model, [full_range([4, 6], np.int16, rng), full_range([4, 6], np.int16, rng)])


def test_mul_int8_without_quantization_fails_clearly():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [3], np.int8)
    y = graph.add_tensor("y", [3], np.int8)
    graph.add_operator(B.MUL, [x, x], [y], MulParams())
    graph.add_output(y)
    with pytest.raises(KernelError, match="MUL"):
        Interpreter(model_content=builder.build()).allocate_tensors()


# -- SQUARED_DIFFERENCE, MAXIMUM, MINIMUM --------------------------------------------------


@pytest.mark.parametrize("shapes", [([2, 3, 4], [2, 3, 4]), ([2, 3, 4], [3, 1]), ([7], [])], ids=["same", "broadcast", "scalar"])
def test_squared_difference_int8_matches_litert_as_version_2(shapes):
    model = binary_case(B.SQUARED_DIFFERENCE, np.int8, shapes, (0.02, 0.05, 0.1), (4, -30, -128))
    assert stamped_version(model) == 2


MAX_MIN_CASES = [
    (np.uint8, ([2, 3, 4], [3, 1]), 1),
    (np.int8, ([2, 3, 4], [3, 1]), 2),
    (np.int8, ([2, 1, 3, 1, 2], [3, 4, 2]), 3),
    (np.int16, ([5, 3], [3]), 4),
]


@pytest.mark.parametrize("op", [B.MAXIMUM, B.MINIMUM], ids=lambda o: o.name)
@pytest.mark.parametrize("dtype, shapes, version", MAX_MIN_CASES, ids=["uint8", "int8", "int8-5d", "int16"])
def test_maximum_minimum_compare_raw_values_and_match_litert(op, dtype, shapes, version):
    model = binary_case(op, dtype, shapes, (0.1, 0.1, 0.1), (0, 0, 0))
    assert stamped_version(model) == version


@pytest.mark.parametrize("op", [B.MAXIMUM, B.MINIMUM], ids=lambda o: o.name)
def test_maximum_minimum_with_differing_quantization_compare_raw_values_as_tflite_does(op):
    binary_case(op, np.int8, ([4, 5], [5]), (0.1, 0.3, 0.2), (0, 9, -4))


@pytest.mark.parametrize("op", [B.ADD, B.SUB])
@pytest.mark.parametrize(
    "dtype, scales, zero_points",
    [
        (np.int8, (0.031, 0.057, 0.049), (-7, 20, 3)),
        (np.int8, (0.02, 0.02, 0.001), (0, 0, -128)),  # a large output rescale: most pairs clamp
        (np.uint8, (0.1, 0.3, 0.2), (128, 9, 100)),
        (np.int8, (0.5, 0.001, 0.3), (127, -128, 0)),
    ],
)
def test_add_sub_table_equals_the_arithmetic_on_every_pair(op, dtype, scales, zero_points):
    """The 8-bit ADD/SUB table (inputs rescaled per value, the output stage on their outer
    sum: ``requantize_outer_sum``) is ``compute`` on each of the 65,536 pairs."""
    from interpreter import Interpreter

    from backends.cpu.kernels.binary_quantized import pair_table

    (s1, s2, so), (z1, z2, zo) = scales, zero_points
    params = PARAMS[op](fused_activation_function=Act.RELU6)
    model = quantized_model(op, [([4], dtype, s1, z1), ([4], dtype, s2, z2)], ([4], dtype, so, zo), params)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    kernel = interpreter._main.nodes[0].user_data
    np.testing.assert_array_equal(kernel.lookup.table, pair_table(kernel.compute, np.dtype(dtype), np.dtype(dtype)))


# -- property tests: ADD / SUB / MUL int8, bit-exact ---------------------------------------

scales = st.floats(0.001, 0.1)
zero_points = st.integers(-128, 127)


@settings(max_examples=25, deadline=None)
@given(
    op=st.sampled_from([B.ADD, B.SUB, B.MUL]),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=1, max_side=4),
    input_scales=st.tuples(scales, scales),
    output_scale=st.floats(0.0001, 0.2),
    zps=st.tuples(zero_points, zero_points, zero_points),
    activation=st.sampled_from(ACTIVATIONS),
    seed=st.integers(0, 2**16),
)
def test_add_sub_mul_int8_property_matches_litert_bit_for_bit(op, shapes, input_scales, output_scale, zps, activation, seed):
    s1, s2 = input_scales
    model = binary_case(op, np.int8, shapes.input_shapes, (s1, s2, output_scale), zps, activation, seed)
    expected = 2
    if op == B.MUL and np.float32(s1) * np.float32(s2) / np.float32(output_scale) >= np.float32(1.0):
        expected = 3
    assert stamped_version(model) == expected


# -- the converter models of this family ------------------------------------------------------


def converter_model(name: str):
    return MODELS_DIR / "converter" / f"{name}.tflite"


def full_range_inputs(path, seed: int):
    from oracle import litert_interpreter

    rng = np.random.default_rng(seed)
    details = litert_interpreter(path).get_input_details()
    return [full_range(tuple(d["shape"]), np.dtype(d["dtype"]), rng) for d in details]


@pytest.mark.parametrize("name", ["add_mul_broadcast_int8", "reshape_int8", "pad_int8"])
@pytest.mark.parametrize("seed", [0, 1])
def test_converter_int8_model_matches_litert_bit_for_bit(name, seed):
    path = converter_model(name)
    assert_matches_litert(path, full_range_inputs(path, seed))


def test_converter_space_to_batch_int8_model_matches_litert_bit_for_bit():
    path = converter_model("space_to_batch_int8")
    try:
        Interpreter(model_path=str(path)).allocate_tensors()
    except Exception as error:  # int8 CONV_2D is another family's kernel
        pytest.skip(f"this runtime cannot run the model's nodes yet: {error}")
    assert_matches_litert(path, full_range_inputs(path, 0))


# -- DIV -------------------------------------------------------------------------------------


def div_final_shift(a, b, scales) -> np.ndarray:
    """The right shift TFLite's DivElementwise applies last, per element (see binary_quantized.py)."""
    from backends.cpu.quantization import quantize_multiplier

    s1, s2, so = (np.float32(s) for s in scales)
    shift = quantize_multiplier(float(s1 / (s2 * so)))[1]
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    a = np.where(b < 0, -a, a)
    b = np.abs(b)
    bit_length = np.vectorize(lambda v: int(v).bit_length())
    headroom = 31 - bit_length(np.where(a >= 0, a, -a - 1))
    reciprocal_bits = bit_length(b) - 1
    return headroom + reciprocal_bits - shift


def div_inputs(dtype, shapes, scales, zero_points, seed):
    """Full-range inputs, the divisor never at its zero point, and every element in
    TFLite's defined range (final shift <= 31): a numerator too small for its divisor is
    replaced by the value farthest from its zero point. (Input 1 has the output's shape.)"""
    rng = np.random.default_rng(seed)
    x, y = full_range(shapes[0], dtype, rng), full_range(shapes[1], dtype, rng)
    y[y == zero_points[1]] = zero_points[1] + 1
    info = np.iinfo(dtype)
    farthest = info.min if zero_points[0] - int(info.min) > int(info.max) - zero_points[0] else info.max
    a, b = x.astype(np.int64) - zero_points[0], y.astype(np.int64) - zero_points[1]
    x[div_final_shift(a, b, scales) > 31] = farthest
    assert not np.any(div_final_shift(x.astype(np.int64) - zero_points[0], b, scales) > 31)
    return [x, y]


DIV_CASES = [
    (np.uint8, ([4, 6], [4, 6]), (0.05, 0.02, 0.1), (128, 100, 3), Act.NONE, 1),
    (np.int8, ([3, 5], [5]), (0.02, 0.03, 0.01), (-4, 10, 0), Act.RELU, 1),
    (np.int8, ([2, 8], [2, 8]), (0.3, 0.01, 0.9), (0, 0, -20), Act.RELU6, 1),
    (np.int8, ([2, 1, 2, 1, 3], [2, 1, 3]), (0.05, 0.02, 0.08), (1, -30, 2), Act.NONE, 2),
]


@pytest.mark.parametrize(
    "dtype, shapes, scales, zero_points, activation, version", DIV_CASES, ids=["uint8", "int8-broadcast", "int8-relu6", "int8-5d"]
)
def test_quantized_div_matches_litert(dtype, shapes, scales, zero_points, activation, version):
    from schema.params import DivParams

    (s1, s2, so), (z1, z2, zo) = scales, zero_points
    out_shape = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    model = quantized_model(
        B.DIV,
        [(shapes[0], dtype, s1, z1), (shapes[1], dtype, s2, z2)],
        (out_shape, dtype, so, zo),
        DivParams(fused_activation_function=activation),
    )
    assert stamped_version(model) == version
    assert_matches_litert(model, div_inputs(dtype, shapes, scales, zero_points, seed=0))


def test_quantized_div_where_tflite_shifts_by_32_or_more_gives_the_zero_point():
    """Documents the one divergence from LiteRT (undefined behaviour in TFLite's kernel):
    a numerator far smaller than the divisor rounds to the zero point here."""
    from oracle import run_litert, run_ours
    from schema.params import DivParams

    scales = (0.01, 0.1, 0.5)
    a = np.array([0, 1, -1, 2, 0], np.int8)
    b = np.array([100, 127, -128, 120, 1], np.int8)
    assert np.all(div_final_shift(a, b, scales) > 31)
    model = quantized_model(B.DIV, [([5], np.int8, 0.01, 0), ([5], np.int8, 0.1, 0)], ([5], np.int8, 0.5, 7), DivParams())
    ours = run_ours(model, [a, b])[0]
    np.testing.assert_array_equal(ours, [7, 7, 7, 7, 7])  # every real quotient is below 0.002 steps
    assert not np.array_equal(run_litert(model, [a, b])[0], ours)  # LiteRT's x86 build: 0 / 1 -> 8


def test_quantized_div_by_the_zero_point_fails_at_invoke():
    from schema.params import DivParams

    model = quantized_model(B.DIV, [([2], np.int8, 0.1, 0), ([2], np.int8, 0.1, 3)], ([2], np.int8, 0.1, 0), DivParams())
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.array([1, 2], np.int8))
    interpreter.set_tensor(interpreter.get_input_details()[1]["index"], np.array([5, 3], np.int8))
    with pytest.raises(Exception, match="DIV.*zero"):
        interpreter.invoke()
