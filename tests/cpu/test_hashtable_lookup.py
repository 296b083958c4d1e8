"""HASHTABLE_LOOKUP against ai-edge-litert's reference kernels (BUILTIN_REF): values of each
type (rows of rank 1 to 3, strings), keys found and missing, and TFLite's ``bsearch`` with its
wrapping ``a - b`` comparator on unsorted keys, repeated keys and keys far apart."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from backends.cpu.kernels.hashtable_lookup import glibc_bsearch
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator
from schema.enums import TensorType as T

B = BuiltinOperator
KEYS = np.array([-7, 0, 3, 10, 11, 40], np.int32)
LOOKUP = np.array([3, 4, -7, 40, 41, 0, 10, -8], np.int32)


def lookup_model(keys, values, n=LOOKUP.size, value_type=None):
    out_type = value_type if value_type is not None else values.dtype
    return single_op_model(B.HASHTABLE_LOOKUP, [In([n], np.int32), Const(keys), Const(values)],
                           [Out([n, *values.shape[1:]], out_type), Out([n], np.uint8)])


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.int8, np.uint8, np.int16, np.bool_, np.float16])
def test_values_of_each_type_are_found_or_zero_like_litert(dtype):
    values = np.random.default_rng(0).integers(-50, 50, (KEYS.size, 3)).astype(dtype)
    model = lookup_model(KEYS, values)
    assert stamped_version(model) == 1
    ours = assert_matches_litert(model, [LOOKUP])
    np.testing.assert_array_equal(ours[1], [1, 0, 1, 1, 0, 1, 1, 0])


def test_rows_of_rank_3_and_scalar_rows_match_litert():
    rng = np.random.default_rng(1)
    assert_matches_litert(lookup_model(KEYS, rng.standard_normal((KEYS.size, 2, 3)).astype(np.float32)), [LOOKUP])
    assert_matches_litert(lookup_model(KEYS, rng.standard_normal(KEYS.size).astype(np.float32)), [LOOKUP])


def test_string_values_are_found_or_empty_like_litert():
    values = np.array([b"minus seven", b"", b"three", "d\u00e9j\u00e0".encode(), b"\x00x", b"forty"], dtype=object)
    model = lookup_model(KEYS, values, value_type=T.STRING)
    ours = assert_matches_litert(model, [LOOKUP])
    assert list(ours[0]) == [b"three", b"", b"minus seven", b"forty", b"", b"", "d\u00e9j\u00e0".encode(), b""]


def test_unsorted_keys_find_what_bsearch_finds_like_litert():
    keys = np.array([10, 3, 40, -7, 11, 0], np.int32)
    values = np.arange(12, dtype=np.float32).reshape(6, 2)
    assert_matches_litert(lookup_model(keys, values), [LOOKUP])


def test_repeated_keys_give_the_row_bsearch_lands_on_like_litert():
    keys = np.array([1, 2, 2, 2, 2, 2, 2, 9], np.int32)
    values = np.arange(8, dtype=np.int32)
    ours = assert_matches_litert(lookup_model(keys, values, n=3), [np.array([2, 9, 1], np.int32)])
    assert ours[0][0] == 4  # the middle one, where the search first looks


def test_keys_further_apart_than_int32_wrap_like_litert():
    keys = np.array([-(2**31), -1, 0, 2**31 - 1], np.int32)
    lookup = np.array([2**31 - 1, -(2**31), -1, 5, 0, -5], np.int32)
    assert_matches_litert(lookup_model(keys, np.arange(8, dtype=np.int64).reshape(4, 2), n=6), [lookup])


def test_glibc_bsearch_on_sorted_keys_is_a_plain_binary_search():
    keys = np.array([-5, -2, 0, 7, 100], np.int32)
    np.testing.assert_array_equal(glibc_bsearch(np.array([7, -5, 100, 3, -6, 101]), keys), [3, 0, 4, -1, -1, -1])


def test_an_empty_table_fails_at_invoke():
    model = single_op_model(B.HASHTABLE_LOOKUP, [In([2], np.int32), In([0], np.int32), In([0], np.float32)],
                            [Out([2], np.float32), Out([2], np.uint8)])
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    with pytest.raises(KernelError, match="HASHTABLE_LOOKUP: the table is empty"):
        interpreter.invoke()


def test_values_with_another_row_count_than_the_keys_are_refused():
    model = single_op_model(B.HASHTABLE_LOOKUP, [In([2], np.int32), Const(KEYS), Const(np.ones(5, np.float32))],
                            [Out([2], np.float32), Out([2], np.uint8)])
    with pytest.raises(KernelError, match=r"HASHTABLE_LOOKUP v1: values \[5\] must have a row per key \(6\)"):
        Interpreter(model_content=model).allocate_tensors()


def test_hits_of_another_type_than_uint8_are_refused_as_in_litert():
    model = single_op_model(B.HASHTABLE_LOOKUP, [In([2], np.int32), Const(KEYS), Const(np.ones(6, np.float32))],
                            [Out([2], np.float32), Out([2], np.int32)])
    with pytest.raises(KernelError, match="hits output 'y1' has type INT32"):
        Interpreter(model_content=model).allocate_tensors()


def test_string_values_of_rank_2_are_refused_as_in_litert():
    values = np.array([[b"a"]] * 6, dtype=object)
    model = single_op_model(B.HASHTABLE_LOOKUP, [In([2], np.int32), Const(KEYS), Const(values)],
                            [Out([2, 1], T.STRING), Out([2], np.uint8)])
    with pytest.raises(KernelError, match="STRING values must be a vector"):
        Interpreter(model_content=model).allocate_tensors()
