"""MATRIX_DIAG and MATRIX_SET_DIAG against ai-edge-litert (BUILTIN_REF): every type,
batches, square and rectangular matrices."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import quantization
from schema.enums import BuiltinOperator

B = BuiltinOperator
TYPES = [np.float32, np.int64, np.int32, np.int16, np.int8, np.uint8]


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("shape", [[1], [4], [2, 3], [2, 1, 5]])
def test_matrix_diag_matches_litert(dtype, shape):
    model = single_op_model(B.MATRIX_DIAG, [In(shape, dtype)], Out([*shape, shape[-1]], dtype))
    assert stamped_version(model) == 1
    assert_matches_litert(model)


def test_quantized_matrix_diag_fills_with_stored_zeros_like_litert():
    q = quantization(0.5, 7)
    model = single_op_model(B.MATRIX_DIAG, [In([3], np.int8, q)], Out([3, 3], np.int8, q))
    assert_matches_litert(model, [np.array([-5, 0, 9], np.int8)])


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("shape", [[3, 3], [2, 5], [5, 2], [2, 3, 4], [2, 1, 4, 3]])
def test_matrix_set_diag_matches_litert(dtype, shape):
    diagonal = [*shape[:-2], min(shape[-2:])]
    model = single_op_model(B.MATRIX_SET_DIAG, [In(shape, dtype), In(diagonal, dtype)], Out(shape, dtype))
    assert stamped_version(model) == 1
    assert_matches_litert(model)


def test_matrix_diag_refuses_bool_which_litert_writes_as_float32():
    model = single_op_model(B.MATRIX_DIAG, [In([3], np.bool_)], Out([3, 3], np.bool_))
    with pytest.raises(KernelError, match="MATRIX_DIAG v1: input 'x0' has type BOOL"):
        Interpreter(model_content=model).allocate_tensors()


def test_matrix_set_diag_refuses_a_diagonal_of_the_wrong_size():
    model = single_op_model(B.MATRIX_SET_DIAG, [In([2, 3, 4]), In([2, 4])], Out([2, 3, 4]))
    with pytest.raises(KernelError, match=r"MATRIX_SET_DIAG v1: the diagonal 'x1' has shape \[2, 4\]; .* needs \[2, 3\]"):
        Interpreter(model_content=model).allocate_tensors()


def test_matrix_set_diag_refuses_a_vector():
    model = single_op_model(B.MATRIX_SET_DIAG, [In([3]), In([3])], Out([3]))
    with pytest.raises(KernelError, match="MATRIX_SET_DIAG v1: the input must have at least two dimensions"):
        Interpreter(model_content=model).allocate_tensors()
