"""EMBEDDING_LOOKUP_SPARSE against ai-edge-litert's reference kernels (BUILTIN_REF): each
combiner, sparse tensors of rank 1 to 3, tables of rank 2 and 3, empty buckets, unsorted
ids (TFLite's bucket-by-bucket walk), and the nodes refused with a clear error. Float
outputs are compared bit for bit: the sums are float32 in TFLite's order."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator, CombinerType
from schema.params import EmbeddingLookupSparseParams

B = BuiltinOperator
TABLE = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
# Three buckets of a [3, 4] sparse tensor; bucket 1 is empty.
IDS = np.array([1, 3, 0, 5, 2], np.int32)
INDICES = np.array([[0, 0], [0, 1], [2, 0], [2, 1], [2, 3]], np.int32)
DENSE_SHAPE = np.array([3, 4], np.int32)
WEIGHTS = np.array([2.0, 0.5, 1.0, 3.0, -0.7], np.float32)


def sparse_model(n, lookup_rank, table, out_shape, combiner=CombinerType.SUM):
    inputs = [In([n], np.int32), In([n, lookup_rank], np.int32), In([lookup_rank], np.int32), In([n], np.float32),
              Const(table)]
    return single_op_model(B.EMBEDDING_LOOKUP_SPARSE, inputs, Out(out_shape, np.float32),
                           EmbeddingLookupSparseParams(combiner=combiner))


@pytest.mark.parametrize("combiner", [CombinerType.SUM, CombinerType.MEAN, CombinerType.SQRTN])
def test_each_combiner_matches_litert_bit_for_bit(combiner):
    model = sparse_model(5, 2, TABLE, [3, 4], combiner)
    assert stamped_version(model) == 1
    ours = assert_matches_litert(model, [IDS, INDICES, DENSE_SHAPE, WEIGHTS], rtol=0, atol=0)
    assert not ours[0][1].any()  # the empty bucket


def test_the_mean_of_a_bucket_is_its_weighted_sum_over_its_weights():
    ours = assert_matches_litert(sparse_model(5, 2, TABLE, [3, 4], CombinerType.MEAN), [IDS, INDICES, DENSE_SHAPE, WEIGHTS])
    expected = (TABLE[1] * 2.0 + TABLE[3] * 0.5) / 2.5
    np.testing.assert_allclose(ours[0][0], expected, rtol=1e-6)


def test_a_rank_1_sparse_tensor_combines_everything_into_one_embedding_like_litert():
    ids, indices = np.array([4, 0, 4], np.int32), np.array([[0], [2], [5]], np.int32)
    model = sparse_model(3, 1, TABLE, [4], CombinerType.SQRTN)
    ours = assert_matches_litert(model, [ids, indices, np.array([7], np.int32), WEIGHTS[:3]], rtol=0, atol=0)
    assert ours[0].shape == (4,)


def test_a_rank_3_sparse_tensor_and_a_rank_3_table_match_litert():
    table = np.random.default_rng(1).standard_normal((6, 2, 3)).astype(np.float32)
    indices = np.array([[0, 0, 0], [0, 1, 0], [1, 1, 0], [1, 1, 2], [1, 2, 1]], np.int32)
    model = sparse_model(5, 3, table, [2, 3, 2, 3], CombinerType.MEAN)
    ours = assert_matches_litert(model, [IDS, indices, np.array([2, 3, 4], np.int32), WEIGHTS], rtol=0, atol=0)
    assert ours[0].shape == (2, 3, 2, 3)


@pytest.mark.parametrize("combiner", [CombinerType.SUM, CombinerType.MEAN, CombinerType.SQRTN])
def test_unsorted_ids_follow_tflite_s_walk_bucket_by_bucket(combiner):
    indices = np.array([[2, 0], [0, 0], [2, 1], [0, 1], [0, 2]], np.int32)  # buckets 2, 0, 2, 0, 0
    model = sparse_model(5, 2, TABLE, [3, 4], combiner)
    assert_matches_litert(model, [IDS, indices, DENSE_SHAPE, WEIGHTS], rtol=0, atol=0)


def test_weights_summing_to_zero_give_litert_s_infinities_and_nans():
    weights = np.array([1.0, -1.0, 0.0, 2.0, -2.0], np.float32)
    model = sparse_model(5, 2, TABLE, [3, 4], CombinerType.MEAN)
    assert_matches_litert(model, [IDS, INDICES, DENSE_SHAPE, weights], rtol=0, atol=0)


def test_no_ids_give_zeros_of_the_dense_shape_like_litert():
    model = sparse_model(0, 2, TABLE, [3, 4])
    empty = [np.zeros(0, np.int32), np.zeros((0, 2), np.int32), DENSE_SHAPE, np.zeros(0, np.float32)]
    ours = assert_matches_litert(model, empty)
    assert ours[0].shape == (3, 4) and not ours[0].any()


def run_ours(model, inputs):
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()


def test_an_id_outside_the_table_fails_naming_it():
    ids = IDS.copy()
    ids[2] = 6
    with pytest.raises(KernelError, match=r"EMBEDDING_LOOKUP_SPARSE.*index 6 is out of range \[0, 6\)"):
        run_ours(sparse_model(5, 2, TABLE, [3, 4]), [ids, INDICES, DENSE_SHAPE, WEIGHTS])


def test_a_coordinate_outside_the_dense_shape_fails_naming_it():
    indices = INDICES.copy()
    indices[4, 0] = 3
    with pytest.raises(KernelError, match=r"index 3 is out of range \[0, 3\) \(coordinate 0"):
        run_ours(sparse_model(5, 2, TABLE, [3, 4]), [IDS, indices, DENSE_SHAPE, WEIGHTS])


def test_a_dense_shape_of_another_rank_than_the_indices_is_refused():
    inputs = [In([5], np.int32), In([5, 2], np.int32), In([3], np.int32), In([5], np.float32), Const(TABLE)]
    model = single_op_model(B.EMBEDDING_LOOKUP_SPARSE, inputs, Out([3, 4], np.float32))
    with pytest.raises(KernelError, match=r"EMBEDDING_LOOKUP_SPARSE v1: dense_shape 'x2' has 3 entries for indices of rank 2"):
        Interpreter(model_content=model).allocate_tensors()


def test_weights_of_another_length_than_the_ids_are_refused():
    inputs = [In([5], np.int32), In([5, 2], np.int32), In([2], np.int32), In([4], np.float32), Const(TABLE)]
    model = single_op_model(B.EMBEDDING_LOOKUP_SPARSE, inputs, Out([3, 4], np.float32))
    with pytest.raises(KernelError, match="must have as many entries each"):
        Interpreter(model_content=model).allocate_tensors()


def test_an_int8_table_is_refused():
    inputs = [In([5], np.int32), In([5, 2], np.int32), In([2], np.int32), In([5], np.float32),
              Const(TABLE.astype(np.int8))]
    model = single_op_model(B.EMBEDDING_LOOKUP_SPARSE, inputs, Out([3, 4], np.float32))
    with pytest.raises(KernelError, match="table 'c4' has type INT8"):
        Interpreter(model_content=model).allocate_tensors()
