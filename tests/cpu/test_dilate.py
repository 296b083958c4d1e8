"""DILATE against ai-edge-litert (BUILTIN_REF): factors per axis, the padding value,
several types, and dilations given at run time (a dynamic output whose shape
get_output_details reports as LiteRT does)."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, litert_interpreter, run_interpreter

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator

B = BuiltinOperator


def dilate_model(shape, factors, dtype=np.float32, padding=0, dilations_at_run_time=False):
    dilations = In([len(shape)], np.int32) if dilations_at_run_time else Const(np.array(factors, np.int32))
    out_shape = [(s - 1) * d + 1 for s, d in zip(shape, factors)]
    return single_op_model(B.DILATE, [In(shape, dtype), dilations, Const(np.array(padding, dtype))], Out(out_shape, dtype))


@pytest.mark.parametrize("shape, factors", [
    ([3, 3], [2, 3]), ([4], [1]), ([4], [3]), ([2, 3, 4], [1, 1, 2]), ([2, 3, 4], [3, 1, 1]), ([1, 2, 1, 3], [2, 2, 2, 2]),
    ([2, 2], [1, 1]),
])
def test_dilate_matches_litert(shape, factors):
    model = dilate_model(shape, factors, padding=-7.5)
    assert stamped_version(model) == 1
    assert_matches_litert(model)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, np.bool_])
def test_dilate_of_each_type_matches_litert(dtype):
    padding = True if dtype == np.bool_ else 5
    assert_matches_litert(dilate_model([2, 3], [2, 2], dtype, padding=padding))


def test_dilations_given_at_run_time_match_litert_with_litert_s_output_shape():
    model = dilate_model([2, 3], [3, 2], dilations_at_run_time=True)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    dilations = np.array([3, 2], np.int32)
    ours = Interpreter(model_content=model)
    theirs = litert_interpreter(model)
    expected = run_interpreter(theirs, [x, dilations])
    got = run_interpreter(ours, [x, dilations])
    np.testing.assert_array_equal(got[0], expected[0])
    assert list(ours.get_output_details()[0]["shape"]) == list(theirs.get_output_details()[0]["shape"]) == [4, 5]


def test_dilations_below_1_are_refused():
    with pytest.raises(KernelError, match=r"DILATE v1: dilations \[0, 2\] must all be at least 1"):
        Interpreter(model_content=dilate_model([2, 3], [0, 2])).allocate_tensors()


def test_dilations_of_the_wrong_length_are_refused():
    model = single_op_model(B.DILATE, [In([2, 3]), Const(np.array([2], np.int32)), Const(np.array(0, np.float32))], Out([3, 3]))
    with pytest.raises(KernelError, match=r"DILATE v1: dilations 'c1' has shape \[1\]; it must be 1-D with one factor per input axis \(2\)"):
        Interpreter(model_content=model).allocate_tensors()
