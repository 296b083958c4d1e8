"""EMBEDDING_LOOKUP against ai-edge-litert's reference kernels (BUILTIN_REF): copies of
each table type, hybrid int8/uint8 tables dequantized per tensor and per row (float32 and
float16 outputs), TFLite's quirks (uint8 bytes read as int8, a table without scale gives 0,
only the first zero point is checked), versions 1-4, and the nodes refused with a clear
error."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import quantization
from schema.enums import BuiltinOperator
from schema.enums import TensorType as T

B = BuiltinOperator
IDS = np.array([2, 0, 1, 2, 4, 0], np.int32)
RNG = np.random.default_rng(0)
INT8_TABLE = RNG.integers(-128, 128, (5, 3)).astype(np.int8)
ROW_SCALES = [0.5, 0.25, 2.0, 0.0625, 3.0]


def lookup_model(table, out_dtype, q=None, version=None, table_is_input=False):
    table_spec = In(table.shape, table.dtype, q) if table_is_input else Const(table, q)
    return single_op_model(B.EMBEDDING_LOOKUP, [In([IDS.size], np.int32), table_spec],
                           Out([IDS.size, *table.shape[1:]], out_dtype), version=version)


def refused(model) -> str:
    with pytest.raises(KernelError) as error:
        Interpreter(model_content=model).allocate_tensors()
    return str(error.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_])
def test_a_table_of_each_type_is_copied_row_by_row_like_litert(dtype):
    table = RNG.integers(-100, 100, (5, 3)).astype(dtype) if dtype != np.float32 else RNG.standard_normal((5, 3)).astype(dtype)
    model = lookup_model(table, dtype)
    assert stamped_version(model) == 1
    ours = assert_matches_litert(model, [IDS])
    np.testing.assert_array_equal(ours[0], table[IDS])


def test_a_table_of_rank_4_copies_whole_slices_like_litert():
    table = RNG.standard_normal((5, 2, 3, 2)).astype(np.float32)
    assert_matches_litert(lookup_model(table, np.float32), [IDS])


def test_a_table_given_at_run_time_is_looked_up_like_litert():
    table = RNG.standard_normal((5, 3)).astype(np.float32)
    assert_matches_litert(lookup_model(table, np.float32, table_is_input=True), [IDS, table])


def test_a_quantized_int8_table_copied_to_an_int8_output_keeps_its_bytes_like_litert():
    q = quantization(0.5, 3)
    model = single_op_model(B.EMBEDDING_LOOKUP, [In([IDS.size], np.int32), Const(INT8_TABLE, q)],
                            Out([IDS.size, 3], np.int8, q))
    assert_matches_litert(model, [IDS])


@pytest.mark.parametrize("out_dtype", [np.float32, np.float16])
def test_a_hybrid_int8_table_is_dequantized_with_its_scale_like_litert(out_dtype):
    model = lookup_model(INT8_TABLE, out_dtype, quantization(0.37, 0))
    assert stamped_version(model) == 1
    ours = assert_matches_litert(model, [IDS], rtol=0, atol=0)
    np.testing.assert_array_equal(ours[0], (INT8_TABLE[IDS].astype(np.float32) * np.float32(0.37)).astype(out_dtype))


def test_a_hybrid_uint8_table_is_read_as_int8_bytes_like_litert():
    table = INT8_TABLE.view(np.uint8)
    ours = assert_matches_litert(lookup_model(table, np.float32, quantization(0.5, 0)), [IDS], rtol=0, atol=0)
    assert (ours[0] < 0).any()  # byte 200 is -56, not 200


def test_a_hybrid_table_without_quantization_gives_zeros_like_litert():
    ours = assert_matches_litert(lookup_model(INT8_TABLE, np.float32), [IDS])
    assert not ours[0].any()


@pytest.mark.parametrize("table_dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("out_dtype", [np.float32, np.float16])
def test_a_per_channel_table_is_version_4_and_scales_each_row_like_litert(table_dtype, out_dtype):
    table = INT8_TABLE.view(table_dtype)
    model = lookup_model(table, out_dtype, quantization(ROW_SCALES, 0))
    assert stamped_version(model) == 4
    assert_matches_litert(model, [IDS], rtol=0, atol=0)


def test_per_channel_zero_points_after_the_first_are_ignored_like_litert():
    model = lookup_model(INT8_TABLE, np.float32, quantization(ROW_SCALES, [0, 5, -3, 1, 2]))
    ours = assert_matches_litert(model, [IDS], rtol=0, atol=0)
    np.testing.assert_array_equal(ours[0], INT8_TABLE[IDS] * np.float32(ROW_SCALES)[IDS, None])


@pytest.mark.parametrize("version", [2, 3])
def test_versions_2_and_3_run_the_same_kernel_like_litert(version):
    float_model = lookup_model(RNG.standard_normal((5, 3)).astype(np.float32), np.float32, version=version)
    hybrid_model = lookup_model(INT8_TABLE, np.float32, quantization(0.5, 0), version=version)
    assert stamped_version(float_model) == stamped_version(hybrid_model) == version
    assert_matches_litert(float_model, [IDS])
    assert_matches_litert(hybrid_model, [IDS])


def test_no_ids_give_an_empty_output_like_litert():
    model = single_op_model(B.EMBEDDING_LOOKUP, [In([0], np.int32), Const(np.ones((5, 3), np.float32))],
                            Out([0, 3], np.float32))
    assert assert_matches_litert(model, [np.zeros(0, np.int32)])[0].shape == (0, 3)


@pytest.mark.parametrize("bad_id", [5, -1])
def test_an_id_outside_the_table_fails_at_invoke_naming_it(bad_id):
    interpreter = Interpreter(model_content=lookup_model(np.ones((5, 3), np.float32), np.float32))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.array([0, bad_id, 1, 2, 3, 4], np.int32))
    with pytest.raises(KernelError, match=rf"EMBEDDING_LOOKUP.*index {bad_id} is out of range \[0, 5\)"):
        interpreter.invoke()


def test_a_hybrid_table_with_a_zero_point_is_refused_as_in_litert():
    message = refused(lookup_model(INT8_TABLE, np.float32, quantization(0.5, 3)))
    assert "EMBEDDING_LOOKUP v1" in message and "zero point 3" in message


def test_per_channel_scales_along_dimension_1_are_refused_as_in_litert():
    model = lookup_model(INT8_TABLE, np.float32, quantization([0.5, 0.25, 2.0], 0, quantized_dimension=1))
    assert "one per row (5) along dimension 0" in refused(model)


def test_a_per_channel_table_copied_to_int8_is_refused_as_in_litert():
    model = lookup_model(INT8_TABLE, np.int8, quantization(ROW_SCALES, 0))
    assert "EMBEDDING_LOOKUP v4" in refused(model)


@pytest.mark.parametrize("table_dtype, out_dtype", [(np.float32, np.int32), (np.int16, np.float32), (np.float16, np.float32)])
def test_an_output_that_is_neither_a_copy_nor_hybrid_is_refused(table_dtype, out_dtype):
    """LiteRT copies raw bytes there (float32 -> int32) or reads the table as int8 bytes."""
    message = refused(lookup_model(np.ones((5, 3), table_dtype), out_dtype, quantization(0.5, 0)))
    assert "output 'y0' is" in message and "the output must have the table's type" in message


def test_a_string_table_is_refused_litert_crashes_on_it():
    model = single_op_model(B.EMBEDDING_LOOKUP, [In([2], np.int32), Const(np.array([[b"a"], [b"bc"]], dtype=object))],
                            Out([2, 1], T.STRING))
    assert "STRING" in refused(model)


def test_ids_of_rank_2_and_a_table_of_rank_1_are_refused_as_in_litert():
    model = single_op_model(B.EMBEDDING_LOOKUP, [In([2, 2], np.int32), Const(np.ones((5, 3), np.float32))],
                            Out([2, 3], np.float32))
    assert "input 0 (tensor 0) is 2-D, the op takes a 1-D tensor there" in refused(model)
    model = single_op_model(B.EMBEDDING_LOOKUP, [In([2], np.int32), Const(np.ones(5, np.float32))], Out([2], np.float32))
    assert "rank 2 or more" in refused(model)


def test_int64_ids_are_refused_as_in_litert():
    model = single_op_model(B.EMBEDDING_LOOKUP, [In([2], np.int64), Const(np.ones((5, 3), np.float32))],
                            Out([2, 3], np.float32))
    assert "ids input 'x0' has type INT64" in refused(model)
