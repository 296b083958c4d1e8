"""SEGMENT_SUM and UNSORTED_SEGMENT_{SUM, PROD, MAX, MIN} against ai-edge-litert: float32
and int32, ids constant or given at run time (a dynamic output with LiteRT's shape),
ids of a higher rank, negative ids, and the ids LiteRT refuses.

SEGMENT_SUM is not in LiteRT's reference resolver: it is compared with LiteRT's default
kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES), the UNSORTED ones with BUILTIN_REF."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, assert_outputs_equal, litert_interpreter, run_interpreter

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator

B = BuiltinOperator
UNSORTED = [B.UNSORTED_SEGMENT_SUM, B.UNSORTED_SEGMENT_PROD, B.UNSORTED_SEGMENT_MAX, B.UNSORTED_SEGMENT_MIN]


def litert_default_kernels(model):
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
    from ai_edge_litert.interpreter import OpResolverType

    return LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)


def assert_segment_sum_matches_litert(model, inputs):
    """Outputs and the output's shape as get_output_details reports it, against LiteRT's default kernels."""
    theirs, ours = litert_default_kernels(model), Interpreter(model_content=model)
    assert_outputs_equal(run_interpreter(ours, inputs), run_interpreter(theirs, inputs))
    assert list(ours.get_output_details()[0]["shape"]) == list(theirs.get_output_details()[0]["shape"])


def data(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.normal(size=shape).astype(dtype)
    return rng.integers(-9, 10, shape).astype(dtype)


def segment_sum_model(shape, ids=None, dtype=np.float32):
    id_spec = In([shape[0]], np.int32) if ids is None else Const(np.array(ids, np.int32))
    rows = 1 if ids is None or not len(ids) else ids[-1] + 1
    return single_op_model(B.SEGMENT_SUM, [In(shape, dtype), id_spec], Out([rows, *shape[1:]], dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("ids", [[0, 0, 1, 1, 2], [0, 0, 0, 0, 0], [0, 1, 2, 3, 4], [0, 1, 1, 1, 2]])
def test_segment_sum_with_ids_at_run_time_matches_litert(dtype, ids):
    model = segment_sum_model([5, 2, 3], dtype=dtype)
    assert stamped_version(model) == 1
    assert_segment_sum_matches_litert(model, [data([5, 2, 3], dtype), np.array(ids, np.int32)])


def test_segment_sum_with_constant_ids_matches_litert():
    assert_segment_sum_matches_litert(segment_sum_model([6, 4], [0, 0, 1, 2, 2, 2]), [data([6, 4], seed=1)])


def test_segment_sum_of_int32_wraps_like_litert():
    x = np.full([3, 2], 2**30, np.int32)
    assert_segment_sum_matches_litert(segment_sum_model([3, 2], dtype=np.int32), [x, np.zeros([3], np.int32)])


@pytest.mark.parametrize("ids", [[0, 0, 1, 3, 3], [1, 1, 2, 2, 2], [0, 1, 0, 1, 1]])
def test_segment_sum_refuses_ids_that_litert_refuses(ids):
    model = segment_sum_model([5, 2])
    inputs = [data([5, 2]), np.array(ids, np.int32)]
    with pytest.raises(RuntimeError, match="segment_sum"):
        run_interpreter(litert_default_kernels(model), inputs)
    with pytest.raises(KernelError, match=r"SEGMENT_SUM v1\) failed: ValueError: SEGMENT_SUM: segment_ids must start at 0 and grow by 0 or 1"):
        run_interpreter(Interpreter(model_content=model), inputs)


def unsorted_model(op, shape, id_shape, count, dtype=np.float32, ids=None, count_shape=(), count_at_run_time=True):
    id_spec = In(id_shape, np.int32) if ids is None else Const(np.array(ids, np.int32).reshape(id_shape))
    count_spec = In(list(count_shape), np.int32) if count_at_run_time else Const(np.full(count_shape, count, np.int32))
    out = Out([count, *shape[len(id_shape):]], dtype)
    return single_op_model(op, [In(shape, dtype), id_spec, count_spec], out)


@pytest.mark.parametrize("op", UNSORTED)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_unsorted_segment_ops_with_a_run_time_count_match_litert(op, dtype):
    model = unsorted_model(op, [6, 3], [6], 5, dtype)
    assert stamped_version(model) == 1
    ids = np.array([3, 0, -1, 3, 1, 0], np.int32)  # segment 2 and 4 empty, one id skipped
    ours = assert_matches_litert(model, [data([6, 3], dtype), ids, np.array(5, np.int32)])
    assert ours[0].shape == (5, 3)


@pytest.mark.parametrize("op", UNSORTED)
def test_unsorted_segment_ops_with_constant_ids_and_count_match_litert(op):
    model = unsorted_model(op, [5, 2], [5], 3, ids=[2, 2, 0, 1, 0], count_shape=(1,), count_at_run_time=False)
    assert_matches_litert(model, [data([5, 2], seed=2)])


@pytest.mark.parametrize("op", UNSORTED)
def test_unsorted_segment_ops_with_ids_of_rank_2_match_litert(op):
    model = unsorted_model(op, [2, 3, 4], [2, 3], 4)
    ids = np.array([[0, 1, 0], [3, -1, 1]], np.int32)
    assert_matches_litert(model, [data([2, 3, 4], seed=3), ids, np.array(4, np.int32)])


def test_the_run_time_count_gives_litert_s_output_shape():
    model = unsorted_model(B.UNSORTED_SEGMENT_SUM, [4, 2], [4], 1)
    ours, theirs = Interpreter(model_content=model), litert_interpreter(model)
    for count in (3, 7):
        inputs = [data([4, 2]), np.array([0, 2, 2, 1], np.int32), np.array(count, np.int32)]
        assert_outputs_equal(run_interpreter(ours, inputs), run_interpreter(theirs, inputs))
        assert list(ours.get_output_details()[0]["shape"]) == list(theirs.get_output_details()[0]["shape"]) == [count, 2]


@pytest.mark.parametrize("op", [B.UNSORTED_SEGMENT_MAX, B.UNSORTED_SEGMENT_MIN])
def test_max_and_min_ignore_nan_like_litert(op):
    x = np.array([[np.nan, 1.0], [2.0, np.nan], [np.nan, np.nan]], np.float32)
    model = unsorted_model(op, [3, 2], [3], 2)
    assert_matches_litert(model, [x, np.array([0, 0, 1], np.int32), np.array(2, np.int32)])


def test_int32_product_wraps_like_litert():
    x = np.full([4, 1], 65536 + 3, np.int32)
    model = unsorted_model(B.UNSORTED_SEGMENT_PROD, [4, 1], [4], 1, np.int32)
    assert_matches_litert(model, [x, np.zeros([4], np.int32), np.array(1, np.int32)])


@pytest.mark.parametrize("op", UNSORTED)
def test_an_id_at_or_above_num_segments_is_refused_as_litert_refuses_it(op):
    model = unsorted_model(op, [3, 2], [3], 2)
    inputs = [data([3, 2]), np.array([0, 2, 1], np.int32), np.array(2, np.int32)]
    with pytest.raises(RuntimeError, match="max_index < num_segments_"):
        run_interpreter(litert_interpreter(model), inputs)
    with pytest.raises(KernelError, match=f"{op.name}: num_segments is 2; it must be at least 0 and above every segment id .the largest is 2."):
        run_interpreter(Interpreter(model_content=model), inputs)


def test_segment_ids_that_are_not_a_prefix_of_the_data_shape_are_refused():
    model = unsorted_model(B.UNSORTED_SEGMENT_SUM, [3, 2], [2], 2)
    with pytest.raises(KernelError, match=r"UNSORTED_SEGMENT_SUM v1: the shape of segment_ids \[2\] must be a prefix of the data's shape \[3, 2\]"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("op", [B.SEGMENT_SUM, B.UNSORTED_SEGMENT_MAX])
def test_segment_ops_refuse_int8_data(op):
    inputs = [In([3], np.int8), In([3], np.int32)] + ([In([], np.int32)] if op != B.SEGMENT_SUM else [])
    model = single_op_model(op, inputs, Out([3], np.int8))
    with pytest.raises(KernelError, match=f"{op.name} v1: data 'x0' has type INT8"):
        Interpreter(model_content=model).allocate_tensors()
