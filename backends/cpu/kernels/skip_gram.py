"""SKIP_GRAM: the n-grams of a sentence, words skipped up to a limit.

TFLite (``kernels/skip_gram.cc``): the input's first string is split into words at C
``isspace`` bytes, as TFLite splits: from position 1 on, so that after a single leading
space the first word is dropped, or kept with its space when it is the only word (this
kernel does the same),
then every gram of ``ngram_size`` words (every size from 1 up with ``include_all_ngrams``)
whose consecutive words are at most ``max_skip_size`` words apart is joined with single
spaces. The order is TFLite's depth-first walk. Output: a STRING vector (dynamic, its
length known at invoke; empty when the sentence has fewer words than ``ngram_size``).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

T = TensorType

#: The bytes C's ``isspace`` is true for in the "C" locale.
SPACES = frozenset(b" \t\n\v\f\r")


def split_words(sentence: bytes) -> list[bytes]:
    """TFLite's split: a word ends at a space byte found from position 1 on."""
    words, start = [], 0
    for i in range(1, len(sentence)):
        if sentence[i] in SPACES:
            if i > start and sentence[start] not in SPACES:
                words.append(sentence[start:i])
            start = i + 1
    if len(sentence) > start:
        words.append(sentence[start:])
    return words


def skip_grams(words: list[bytes], ngram_size: int, max_skip_size: int, include_all_ngrams: bool) -> list[bytes]:
    """The grams in TFLite's order: its stack of word indices, walked as it does."""
    if len(words) < ngram_size:
        return []

    def include(size: int) -> bool:
        if size <= 0:
            return False
        return size <= ngram_size if include_all_ngrams else size == ngram_size

    def step_in(stack: list[int], depth: int) -> bool:
        if depth < ngram_size and stack[depth] + 1 < len(words):
            return depth == 0 or stack[depth] - stack[depth - 1] <= max_skip_size
        return False

    grams: list[bytes] = []
    stack, depth = [0] * ngram_size, 1
    while depth >= 0:
        if step_in(stack, depth):
            stack[depth] += 1
            depth += 1
            if depth < ngram_size:
                stack[depth] = stack[depth - 1]
        else:
            if include(depth):
                grams.append(b" ".join(words[stack[i]] for i in range(depth)))
            depth -= 1
    return grams


@register(BuiltinOperator.SKIP_GRAM, 1, 1)  # v1: the only version
class SkipGram(CpuKernel):
    """SKIP_GRAM v1: the skip-grams of the input's first string."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        self.require_types(self.inputs[0], T.STRING)
        self.require_types(self.outputs[0], T.STRING, role="output")
        if self.params.ngram_size < 0:
            raise self.unsupported(f"ngram_size is {self.params.ngram_size}; it must be 0 or more")
        self.outputs[0].set_dynamic()

    def invoke(self) -> None:
        data = self.inputs[0].data
        if data.size == 0:
            raise ValueError(f"{self.op_name}: the input {self.inputs[0].name!r} holds no string")
        p = self.params
        words = split_words(bytes(data.reshape(-1)[0]))
        grams = skip_grams(words, int(p.ngram_size), int(p.max_skip_size), bool(p.include_all_ngrams))
        out = np.empty(len(grams), dtype=object)
        out[:] = grams
        self.outputs[0].set_data(out)
