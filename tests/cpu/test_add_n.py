"""ADD_N against ai-edge-litert (BUILTIN_REF): float32 and int32, two to many inputs."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator

B = BuiltinOperator


def add_n_model(count, shape=(2, 3, 4), dtype=np.float32, shapes=None):
    shapes = shapes or [shape] * count
    return single_op_model(B.ADD_N, [In(s, dtype) for s in shapes], Out(shapes[0], dtype))


@pytest.mark.parametrize("count", [2, 3, 7])
def test_float_add_n_matches_litert(count):
    model = add_n_model(count)
    assert stamped_version(model) == 1
    assert_matches_litert(model)


def test_int32_add_n_wraps_around_like_litert():
    big = np.full([2, 3], 2**30, np.int32)
    assert_matches_litert(add_n_model(4, (2, 3), np.int32), [big, big, big, -big])


def test_int32_add_n_matches_litert_exactly():
    assert_matches_litert(add_n_model(5, (4, 5), np.int32), seed=3)


def test_add_n_of_scalars_matches_litert():
    assert_matches_litert(add_n_model(3, ()))


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float16])
def test_add_n_refuses_the_types_litert_refuses(dtype):
    with pytest.raises(KernelError, match=f"ADD_N v1: input 0 'x0' has type {np.dtype(dtype).name.upper()}"):
        Interpreter(model_content=add_n_model(2, (3,), dtype)).allocate_tensors()


def test_add_n_refuses_inputs_of_different_shapes():
    model = add_n_model(2, shapes=[(2, 3), (1, 3)])
    with pytest.raises(KernelError, match=r"ADD_N v1: input 1 'x1' has shape \[1, 3\].*same shape"):
        Interpreter(model_content=model).allocate_tensors()
