"""BUCKETIZE against ai-edge-litert (BUILTIN_REF): each input type, values on the
boundaries, integers that round when compared as float32, NaN, empty and unsorted
boundaries."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator
from schema.params import BucketizeParams

B = BuiltinOperator
BOUNDARIES = (-3.5, -1.0, 0.0, 0.0, 2.25, 10.0)


def bucketize_model(shape, dtype=np.float32, boundaries=BOUNDARIES):
    return single_op_model(B.BUCKETIZE, [In(shape, dtype)], Out(shape, np.int32), BucketizeParams(boundaries=boundaries))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_bucketize_of_each_type_matches_litert(dtype):
    model = bucketize_model([4, 10], dtype)
    assert stamped_version(model) == 1
    x = np.random.default_rng(0).uniform(-6, 12, [4, 10]).astype(dtype)
    assert_matches_litert(model, [x])


def test_values_on_the_boundaries_go_to_the_bucket_above_like_litert():
    x = np.array([*BOUNDARIES, -np.inf, np.inf, np.nan, -0.0], np.float32)
    assert_matches_litert(bucketize_model([x.size]), [x])


def test_float64_values_next_to_a_float32_boundary_compare_in_float64_like_litert():
    edge = float(np.float32(2.25))
    x = np.array([np.nextafter(edge, -1), edge, np.nextafter(edge, 3)], np.float64)
    assert_matches_litert(bucketize_model([3], np.float64), [x])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_large_integers_compare_as_float32_like_litert(dtype):
    boundaries = (16777216.0, 16777220.0)  # 2**24 and 2**24 + 4
    x = np.array([16777215, 16777216, 16777217, 16777218, 16777219, 16777220], dtype)
    ours = assert_matches_litert(bucketize_model([6], dtype, boundaries), [x])
    assert ours[0][4] == 2  # 16777219 < 16777220, but as a float32 it is 16777220


def test_bucketize_without_boundaries_puts_everything_in_bucket_0_like_litert():
    assert_matches_litert(bucketize_model([5], boundaries=()), [np.arange(5, dtype=np.float32)])


def test_unsorted_boundaries_are_refused():
    with pytest.raises(KernelError, match=r"BUCKETIZE v1: the boundaries must be sorted"):
        Interpreter(model_content=bucketize_model([3], boundaries=(1.0, 0.0))).allocate_tensors()


def test_bucketize_refuses_int8():
    with pytest.raises(KernelError, match="BUCKETIZE v1: input 'x0' has type INT8"):
        Interpreter(model_content=bucketize_model([3], np.int8)).allocate_tensors()
