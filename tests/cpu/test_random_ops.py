"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL against ai-edge-litert's
reference kernels (BUILTIN_REF), invoke after invoke.

Seeded, RANDOM_UNIFORM and MULTINOMIAL give LiteRT's numbers bit for bit (Philox4x32-10 as
TensorFlow runs it; seeds as TFLite's ``int`` fields hold them). RANDOM_STANDARD_NORMAL
gives them within 2 float32 ulps (about 1.5% of values differ: LiteRT's glibc ``logf`` and
``sincosf`` are not correctly rounded, ours are; see ``random_ops.py``), inside the oracle's
float tolerance. Unseeded (both seeds 0) nodes draw new numbers: their distributions are
tested instead."""

from __future__ import annotations

import math

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_outputs_equal, litert_interpreter

from backends.cpu.kernels._counter_rng import Philox
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator
from schema.params import RandomParams

B = BuiltinOperator
LOGITS = np.array([[0.5, -1.0, 2.0, 0.0, 1.25], [3.0, 3.0, -2.0, 0.1, -0.4], [-5.0, 1.0, 1.0, 1.0, 0.0]], np.float32)


def random_model(op, shape, seed=7, seed2=13, shape_is_input=False):
    spec = In([len(shape)], np.int32) if shape_is_input else Const(np.array(shape, np.int32))
    out = Out([-1] * len(shape) if shape_is_input else list(shape), np.float32)
    return single_op_model(op, [spec], out, RandomParams(seed=seed, seed2=seed2))


def multinomial_model(logits_shape, num_samples, out_dtype=np.int64, seed=3, seed2=4, samples_is_input=False):
    samples = In([], np.int32) if samples_is_input else Const(np.array(num_samples, np.int32))
    out = Out([logits_shape[0], -1 if samples_is_input else num_samples], out_dtype)
    return single_op_model(B.MULTINOMIAL, [In(list(logits_shape), np.float32), samples], out,
                           RandomParams(seed=seed, seed2=seed2))


def draws(interpreter, inputs=(), times=3) -> list[np.ndarray]:
    """Output 0 after each of ``times`` invokes."""
    interpreter.allocate_tensors()
    results = []
    for _ in range(times):
        for detail, value in zip(interpreter.get_input_details(), inputs):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        results.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).copy())
    return results


def ours_and_litert(model, inputs=(), times=3):
    return draws(Interpreter(model_content=model), inputs, times), draws(litert_interpreter(model), inputs, times)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


# -- RANDOM_UNIFORM -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [[3, 5], [7], [1], [2, 2, 3], [0]])
def test_uniform_numbers_are_litert_s_bit_for_bit_invoke_after_invoke(shape):
    model = random_model(B.RANDOM_UNIFORM, shape)
    assert stamped_version(model) == 1
    ours, theirs = ours_and_litert(model)
    for got, want in zip(ours, theirs):
        assert_outputs_equal([got], [want], rtol=0, atol=0)
    if np.prod(shape):
        assert not np.array_equal(ours[0], ours[1])  # a new draw at every invoke


@pytest.mark.parametrize("seed, seed2", [(-5, 0), (0, 1), (5, 2**40), (5, 2**31), (2**33, 1), (-(2**40), -3)],
                         ids=["negative", "seed2-only", "seed2-above-32-bits", "seed2-2**31", "seed-2**33", "both-wide"])
def test_seeds_keep_their_low_32_bits_sign_extended_as_in_litert(seed, seed2):
    ours, theirs = ours_and_litert(random_model(B.RANDOM_UNIFORM, [9], seed, seed2), times=1)
    assert_outputs_equal(ours, theirs, rtol=0, atol=0)


def test_a_shape_given_at_run_time_makes_a_dynamic_output_like_litert():
    ours, theirs = ours_and_litert(random_model(B.RANDOM_UNIFORM, [2, 3], shape_is_input=True), [np.array([2, 3], np.int32)])
    assert ours[0].shape == (2, 3)
    for got, want in zip(ours, theirs):
        assert_outputs_equal([got], [want], rtol=0, atol=0)


def test_a_new_allocation_restarts_the_sequence_like_litert():
    """TFLite seeds the generator in prepare: a resize, then allocate, prepares it again."""
    model = random_model(B.RANDOM_UNIFORM, [4], shape_is_input=True)
    sequences = []
    for interpreter in (Interpreter(model_content=model), litert_interpreter(model)):
        first = draws(interpreter, [np.array([4], np.int32)], times=2)
        interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], [2])
        second = draws(interpreter, [np.array([2, 2], np.int32)], times=1)
        sequences.append(first + second)
        np.testing.assert_array_equal(second[0].reshape(-1), first[0])
    for got, want in zip(*sequences):
        assert_outputs_equal([got], [want], rtol=0, atol=0)


def test_uniform_numbers_are_the_philox_bits_under_exponent_zero():
    ours = draws(Interpreter(model_content=random_model(B.RANDOM_UNIFORM, [8])), times=1)[0]
    bits = Philox(7, 13).blocks(2).reshape(-1)
    expected = ((bits & 0x7FFFFF) | (127 << 23)).astype(np.uint32).view(np.float32) - np.float32(1)
    np.testing.assert_array_equal(ours, expected)


# -- RANDOM_STANDARD_NORMAL -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [[3, 5], [7], [1], [2, 2, 3]])
def test_normal_numbers_are_litert_s_within_the_float_tolerance(shape):
    ours, theirs = ours_and_litert(random_model(B.RANDOM_STANDARD_NORMAL, shape))
    for got, want in zip(ours, theirs):
        assert_outputs_equal([got], [want])


def test_normal_numbers_differ_from_litert_s_by_at_most_2_ulps_on_few_values():
    model = random_model(B.RANDOM_STANDARD_NORMAL, [20000], seed=5, seed2=6)
    ours, theirs = ours_and_litert(model, times=1)
    distance = ulps(ours[0], theirs[0])
    assert distance.max() <= 2
    assert np.mean(distance == 0) > 0.97


def test_normal_numbers_have_a_standard_normal_distribution():
    values = draws(Interpreter(model_content=random_model(B.RANDOM_STANDARD_NORMAL, [100000], 11, 12)), times=1)[0]
    assert abs(values.mean()) < 0.01 and abs(values.std() - 1) < 0.01
    ordered = np.sort(values.astype(np.float64))
    normal_cdf = 0.5 * (1 + np.vectorize(math.erf)(ordered / math.sqrt(2)))
    assert np.abs(normal_cdf - np.arange(1, ordered.size + 1) / ordered.size).max() < 0.006  # Kolmogorov-Smirnov


# -- unseeded -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [B.RANDOM_UNIFORM, B.RANDOM_STANDARD_NORMAL])
def test_unseeded_nodes_draw_different_numbers_in_each_interpreter(op):
    model = random_model(op, [64], 0, 0)
    first = draws(Interpreter(model_content=model), times=1)[0]
    second = draws(Interpreter(model_content=model), times=1)[0]
    assert not np.array_equal(first, second)


def test_unseeded_uniform_numbers_are_uniform_in_0_1():
    values = draws(Interpreter(model_content=random_model(B.RANDOM_UNIFORM, [100000], 0, 0)), times=1)[0]
    assert values.min() >= 0 and values.max() < 1
    counts = np.histogram(values, bins=10, range=(0, 1))[0]
    assert np.all(np.abs(counts - 10000) < 500)


# -- MULTINOMIAL ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("out_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("num_samples", [1, 4, 9])
def test_multinomial_draws_are_litert_s_bit_for_bit(out_dtype, num_samples):
    model = multinomial_model(LOGITS.shape, num_samples, out_dtype)
    assert stamped_version(model) == 1
    ours, theirs = ours_and_litert(model, [LOGITS])
    for got, want in zip(ours, theirs):
        assert_outputs_equal([got], [want])


def test_zero_samples_give_an_empty_output():
    """(LiteRT computes it too, but its Python binding cannot read a [3, 0] tensor: 'Invalid tensor size'.)"""
    ours = draws(Interpreter(model_content=multinomial_model(LOGITS.shape, 0)), [LOGITS], times=1)[0]
    assert ours.shape == (3, 0) and ours.dtype == np.int64


def test_multinomial_with_num_samples_given_at_run_time_matches_litert():
    model = multinomial_model(LOGITS.shape, 0, samples_is_input=True)
    ours, theirs = ours_and_litert(model, [LOGITS, np.array(6, np.int32)])
    assert ours[0].shape == (3, 6)
    for got, want in zip(ours, theirs):
        assert_outputs_equal([got], [want])


def test_non_finite_logits_are_never_drawn_like_litert():
    logits = np.array([[-np.inf, 0.0, np.nan, 1.0, np.inf], [np.nan, np.nan, -np.inf, np.inf, np.nan]], np.float32)
    ours, theirs = ours_and_litert(multinomial_model(logits.shape, 40), [logits])
    for got, want in zip(ours, theirs):
        assert_outputs_equal([got], [want])
    assert set(ours[0][0]) <= {1, 3}
    assert set(ours[0][1]) == {5}  # no finite logit: past the last class, as in LiteRT


def test_multinomial_frequencies_follow_the_softmax_of_the_logits():
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4]], np.float32))
    samples = draws(Interpreter(model_content=multinomial_model(logits.shape, 40000)), [logits], times=1)[0]
    frequencies = np.bincount(samples[0], minlength=4) / samples.size
    np.testing.assert_allclose(frequencies, [0.1, 0.2, 0.3, 0.4], atol=0.01)


# -- refused ---------------------------------------------------------------------------------------------


def refused(model) -> str:
    with pytest.raises(KernelError) as error:
        Interpreter(model_content=model).allocate_tensors()
    return str(error.value)


def test_an_integer_output_is_refused_as_in_litert():
    model = single_op_model(B.RANDOM_UNIFORM, [Const(np.array([3], np.int32))], Out([3], np.int32), RandomParams(seed=1))
    assert "RANDOM_UNIFORM v1: output 'y0' has type INT32" in refused(model)


def test_a_matrix_of_logits_is_required_as_in_litert():
    model = single_op_model(B.MULTINOMIAL, [In([5], np.float32), Const(np.array(2, np.int32))], Out([1, 2], np.int64))
    assert "MULTINOMIAL v1" in refused(model) and "input 0 (tensor 0) is 1-D, the op takes a 2-D tensor there" in refused(model)


def test_logits_without_classes_are_refused_as_in_litert():
    model = single_op_model(B.MULTINOMIAL, [In([2, 0], np.float32), Const(np.array(2, np.int32))], Out([2, 2], np.int64))
    assert "must be [batch, classes] with classes > 0" in refused(model)


def test_a_negative_sample_count_is_refused_as_in_litert():
    model = single_op_model(B.MULTINOMIAL, [In([3, 5], np.float32), Const(np.array(-2, np.int32))], Out([3, 1], np.int64),
                            RandomParams(seed=1))
    assert "num_samples is -2" in refused(model)
