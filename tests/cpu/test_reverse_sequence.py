"""REVERSE_SEQUENCE against ai-edge-litert (BUILTIN_REF): each type and lengths type,
seq_dim before and after batch_dim, lengths 0 and full, lengths given at run time."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator
from schema.params import ReverseSequenceParams

B = BuiltinOperator


def reverse_sequence_model(shape, seq_dim, batch_dim, lengths, dtype=np.float32, length_type=np.int32, constant=True):
    lengths_spec = Const(np.array(lengths, length_type)) if constant else In([len(lengths)], length_type)
    params = ReverseSequenceParams(seq_dim=seq_dim, batch_dim=batch_dim)
    return single_op_model(B.REVERSE_SEQUENCE, [In(shape, dtype), lengths_spec], Out(shape, dtype), params)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("length_type", [np.int32, np.int64])
def test_reverse_sequence_of_each_type_matches_litert(dtype, length_type):
    model = reverse_sequence_model([4, 5], 1, 0, [0, 5, 2, 1], dtype, length_type)
    assert stamped_version(model) == 1
    assert_matches_litert(model)


@pytest.mark.parametrize("shape, seq_dim, batch_dim, lengths", [
    ([3, 4, 2], 1, 0, [4, 2, 3]),
    ([4, 3, 2], 0, 1, [1, 4, 3]),
    ([2, 3, 5, 2], 2, 3, [5, 3]),
    ([2, 3, 5, 2], 3, 1, [2, 0, 1]),
])
def test_reverse_sequence_along_each_axis_pair_matches_litert(shape, seq_dim, batch_dim, lengths):
    assert_matches_litert(reverse_sequence_model(shape, seq_dim, batch_dim, lengths))


def test_reverse_sequence_with_lengths_at_run_time_matches_litert():
    model = reverse_sequence_model([3, 6], 1, 0, [0, 0, 0], constant=False)
    x = np.arange(18, dtype=np.float32).reshape(3, 6)
    for lengths in ([6, 3, 0], [1, 2, 5]):
        assert_matches_litert(model, [x, np.array(lengths, np.int32)])


def test_a_length_beyond_the_sequence_is_a_clear_error_at_invoke():
    model = reverse_sequence_model([2, 3], 1, 0, [1, 4])
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    with pytest.raises(Exception, match=r"REVERSE_SEQUENCE: seq_lengths \[1, 4\] must each be in \[0, 3\]"):
        interpreter.invoke()


def test_equal_seq_and_batch_axes_are_refused():
    with pytest.raises(KernelError, match="REVERSE_SEQUENCE v1: seq_dim 1 and batch_dim 1 must be two different axes"):
        Interpreter(model_content=reverse_sequence_model([2, 3], 1, 1, [1, 1, 1])).allocate_tensors()


def test_reverse_sequence_refuses_int8_as_litert_does():
    with pytest.raises(KernelError, match="REVERSE_SEQUENCE v1: input 'x0' has type INT8"):
        Interpreter(model_content=reverse_sequence_model([2, 3], 1, 0, [1, 1], np.int8)).allocate_tensors()
