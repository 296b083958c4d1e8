"""STABLEHLO_RNG_BIT_GENERATOR (v1) against ai-edge-litert (BUILTIN_REF): the same state gives
LiteRT's bits and next state exactly, for Philox (states of two and three words, and
DEFAULT) and Threefry, every output type, output sizes that end inside a block, and
counters that carry into their high word and wrap around; and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator as B
from schema.enums import RngAlgorithm
from schema.params import StablehloRngBitGeneratorParams

OUTPUT_TYPES = [np.int32, np.int64, np.uint32, np.uint64]


def rng_model(algorithm, state_words=2, shape=(3, 5), dtype=np.uint32):
    params = StablehloRngBitGeneratorParams(algorithm=algorithm)
    return single_op_model(B.STABLEHLO_RNG_BIT_GENERATOR, [In([state_words], np.uint64)],
                           [Out([state_words], np.uint64), Out(list(shape), dtype)], params)


def state(*words) -> np.ndarray:
    return np.array(words, np.uint64)


@pytest.mark.parametrize("algorithm, words", [
    (RngAlgorithm.PHILOX, 2), (RngAlgorithm.PHILOX, 3), (RngAlgorithm.DEFAULT, 3), (RngAlgorithm.THREEFRY, 2),
], ids=["philox-2", "philox-3", "default-3", "threefry-2"])
@pytest.mark.parametrize("dtype", OUTPUT_TYPES, ids=lambda d: np.dtype(d).name)
def test_bits_and_next_state_equal_litert_s(algorithm, words, dtype):
    model = rng_model(algorithm, words, dtype=dtype)
    assert stamped_version(model) == 1
    initial = state(0x0123456789ABCDEF, 0xFEDCBA9876543210, 42)[:words]
    outputs = assert_matches_litert(model, [initial])
    assert len(np.unique(outputs[1])) > 10  # (bits, not a constant)


@pytest.mark.parametrize("algorithm", [RngAlgorithm.PHILOX, RngAlgorithm.THREEFRY], ids=lambda a: a.name)
@pytest.mark.parametrize("shape", [(1,), (3,), (5,), (2, 7)], ids=str)
def test_outputs_that_end_inside_a_block_equal_litert_s(algorithm, shape):
    assert_matches_litert(rng_model(algorithm, shape=shape), [state(7, 9)])


@pytest.mark.parametrize("algorithm", [RngAlgorithm.PHILOX, RngAlgorithm.THREEFRY], ids=lambda a: a.name)
@pytest.mark.parametrize("counter", [0xFFFFFFFE, 0xFFFFFFFFFFFFFFFD], ids=["carry", "wrap"])
def test_a_counter_that_carries_into_its_high_word_or_wraps_around_equals_litert_s(algorithm, counter):
    outputs = assert_matches_litert(rng_model(algorithm, shape=(4, 3)), [state(5, counter)])
    assert int(outputs[0][1]) != counter


def test_the_next_state_fed_back_continues_the_sequence():
    model = rng_model(RngAlgorithm.PHILOX, shape=(8,))
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    state_in, (state_out, bits_out) = interpreter.get_input_details()[0]["index"], interpreter.get_output_details()
    current, seen = state(1, 2), []
    for _ in range(3):
        interpreter.set_tensor(state_in, current)
        interpreter.invoke()
        seen.append(interpreter.get_tensor(bits_out["index"]))
        current = interpreter.get_tensor(state_out["index"])
    longer = assert_matches_litert(rng_model(RngAlgorithm.PHILOX, shape=(24,)), [state(1, 2)])
    np.testing.assert_array_equal(np.concatenate(seen), longer[1])  # (8 words: two whole blocks each time)


def refused(model, pattern: str) -> None:
    with pytest.raises(KernelError, match=pattern):
        Interpreter(model_content=model).allocate_tensors()


def test_threefry_with_a_state_of_three_words_is_refused_as_litert_does():
    refused(rng_model(RngAlgorithm.THREEFRY, 3), r"node 0 \(STABLEHLO_RNG_BIT_GENERATOR v1\).*the initial state has 3 "
                                                 r"words; THREEFRY takes 2")


def test_philox_with_a_state_of_four_words_is_refused_as_litert_does():
    refused(rng_model(RngAlgorithm.PHILOX, 4), r"STABLEHLO_RNG_BIT_GENERATOR v1: the initial state has 4 words; PHILOX takes 2 or 3")


def test_float_bits_are_refused_as_litert_does():
    refused(rng_model(RngAlgorithm.PHILOX, dtype=np.float32), r"STABLEHLO_RNG_BIT_GENERATOR v1: output 'y1' has type FLOAT32")


def test_a_state_of_another_type_is_refused():
    model = single_op_model(B.STABLEHLO_RNG_BIT_GENERATOR, [In([2], np.int64)], [Out([2], np.uint64), Out([4], np.uint32)],
                            StablehloRngBitGeneratorParams())
    refused(model, r"STABLEHLO_RNG_BIT_GENERATOR v1: initial state 'x0' has type INT64; this kernel supports UINT64")
