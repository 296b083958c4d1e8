"""SKIP_GRAM against ai-edge-litert's reference kernels (BUILTIN_REF): n-gram sizes, skips,
``include_all_ngrams``, TFLite's split at C whitespace (tabs, runs of spaces, its quirks
after a leading space), sentences shorter than a gram, and the strings compared
byte for byte."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import In, Out, single_op_model, stamped_version
from test_strings import assert_matches_litert

from backends.cpu.kernels.skip_gram import skip_grams, split_words
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator
from schema.enums import TensorType as T
from schema.params import SkipGramParams

B = BuiltinOperator
SENTENCE = b"the quick brown fox jumps over"


def skip_gram_model(ngram_size, max_skip_size, include_all_ngrams=False, input_shape=(1,)):
    return single_op_model(B.SKIP_GRAM, [In(list(input_shape), T.STRING)], Out([-1], T.STRING),
                           SkipGramParams(ngram_size=ngram_size, max_skip_size=max_skip_size,
                                          include_all_ngrams=include_all_ngrams))


def sentence(text: bytes, shape=(1,)) -> np.ndarray:
    value = np.empty(shape, dtype=object)
    value.reshape(-1)[:] = [text] + [b"ignored"] * (value.size - 1)
    return value


@pytest.mark.parametrize("ngram_size", [1, 2, 3, 4])
@pytest.mark.parametrize("max_skip_size", [0, 1, 2])
@pytest.mark.parametrize("include_all_ngrams", [False, True])
def test_grams_of_each_size_skip_and_mode_match_litert(ngram_size, max_skip_size, include_all_ngrams):
    model = skip_gram_model(ngram_size, max_skip_size, include_all_ngrams)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [sentence(SENTENCE)])


def test_bigrams_with_one_skip_are_listed_in_tflite_s_order():
    ours = assert_matches_litert(skip_gram_model(2, 1), [sentence(b"a b c d")])
    assert ours[0].tolist() == [b"a b", b"a c", b"b c", b"b d", b"c d"]


@pytest.mark.parametrize("text", [
    b"  two  spaces\tand\ttabs\nand\r\nlines ", b" leading space", b" single", b"\tleading tab", b"trailing  ", b"one",
    b"", b" ", "caf\u00e9 d\u00e9j\u00e0 vu".encode(), b"x\x0by\x0cz",
], ids=["runs", "leading-space", "leading-space-one-word", "leading-tab", "trailing", "one-word", "empty", "space", "utf8", "vt-ff"])
def test_tflite_s_split_at_whitespace_matches_litert(text):
    assert_matches_litert(skip_gram_model(2, 1, True), [sentence(text)])


def test_a_sentence_shorter_than_a_gram_gives_nothing_like_litert():
    ours = assert_matches_litert(skip_gram_model(4, 0), [sentence(b"only three words")])
    assert ours[0].shape == (0,)


def test_only_the_first_string_of_the_input_is_read_like_litert():
    assert_matches_litert(skip_gram_model(2, 0, input_shape=(3,)), [sentence(SENTENCE, (3,))])


def test_tflite_s_split_drops_a_first_word_behind_a_single_space_unless_it_is_the_last():
    assert split_words(b" ab cd") == [b"cd"]
    assert split_words(b"  ab cd") == [b"ab", b"cd"]
    assert split_words(b" ab") == [b" ab"]


@pytest.mark.parametrize("ngram_size, max_skip_size, include_all_ngrams", [(0, 1, True), (0, 0, False), (2, -1, False),
                                                                          (3, -1, True), (1, 5, False)])
def test_edge_options_match_litert(ngram_size, max_skip_size, include_all_ngrams):
    """ngram_size 0 gives nothing; a negative skip leaves only the single words (include_all_ngrams)."""
    assert_matches_litert(skip_gram_model(ngram_size, max_skip_size, include_all_ngrams), [sentence(b"a b c d e")])
    assert skip_grams([b"a", b"b"], 0, 1, True) == []


def test_a_negative_ngram_size_is_refused():
    with pytest.raises(KernelError, match="SKIP_GRAM v1: ngram_size is -1"):
        Interpreter(model_content=skip_gram_model(-1, 0)).allocate_tensors()


def test_a_non_string_input_is_refused():
    model = single_op_model(B.SKIP_GRAM, [In([1], np.int32)], Out([-1], T.STRING), SkipGramParams(ngram_size=2))
    with pytest.raises(KernelError, match="SKIP_GRAM v1: input 'x0' has type INT32"):
        Interpreter(model_content=model).allocate_tensors()
