"""BROADCAST_ARGS against ai-edge-litert (BUILTIN_REF): int32 and int64 shapes of
different lengths, ones and zeros, constant shapes folded at prepare. An incompatible
pair (on which LiteRT aborts the process) is a clear error here."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from interpreter import Interpreter
from schema.enums import BuiltinOperator

B = BuiltinOperator


def broadcast_args_model(first_length, second_length, dtype=np.int32):
    out = Out([max(first_length, second_length)], dtype)
    return single_op_model(B.BROADCAST_ARGS, [In([first_length], dtype), In([second_length], dtype)], out)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("first, second", [
    ([2, 3, 4], [2, 3, 4]), ([1, 3, 1], [5, 1, 7]), ([4], [2, 1, 1]), ([6, 1, 5], [1]), ([], [3, 2]),
    ([0, 3], [1, 3]), ([2, 1, 0], [7, 1]), ([-4, 3], [1, 1, 3]),
])
def test_broadcast_args_matches_litert(dtype, first, second):
    model = broadcast_args_model(len(first), len(second), dtype)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [np.array(first, dtype), np.array(second, dtype)])


def test_broadcast_args_of_constant_shapes_matches_litert():
    model = single_op_model(
        B.BROADCAST_ARGS, [Const(np.array([3, 1], np.int32)), Const(np.array([2, 1, 4], np.int32))], Out([3], np.int32)
    )
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), [2, 3, 4])


def test_incompatible_shapes_are_a_clear_error():
    interpreter = Interpreter(model_content=broadcast_args_model(2, 2))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.array([2, 3], np.int32))
    interpreter.set_tensor(interpreter.get_input_details()[1]["index"], np.array([2, 4], np.int32))
    with pytest.raises(Exception, match=r"BROADCAST_ARGS.*shapes \[2, 3\] and \[2, 4\] are not broadcast-compatible"):
        interpreter.invoke()


def test_broadcast_args_refuses_mixed_types():
    model = single_op_model(B.BROADCAST_ARGS, [In([2], np.int32), In([2], np.int64)], Out([2], np.int32))
    with pytest.raises(Exception, match="BROADCAST_ARGS v1: shape 2 'x1' has type INT64"):
        Interpreter(model_content=model).allocate_tensors()
