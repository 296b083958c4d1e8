"""LSH_PROJECTION against ai-edge-litert's reference kernels (BUILTIN_REF), bit for bit:
DENSE and SPARSE projections of inputs of several types and shapes, with and without
weights, 32 bits per hash function (the wrapping shift), keys of every FarmHash length
branch; and FarmHash's ``Fingerprint64`` itself against the ``pyfarmhash`` bindings when
they are installed."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from backends.cpu.kernels._farmhash import fingerprint64
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator, LSHProjectionType
from schema.params import LSHProjectionParams

B = BuiltinOperator
SPARSE, DENSE = LSHProjectionType.SPARSE, LSHProjectionType.DENSE
RNG = np.random.default_rng(0)


def seeds(num_hash: int, num_bits: int) -> np.ndarray:
    return RNG.uniform(-10, 10, (num_hash, num_bits)).astype(np.float32)


def lsh_model(hash_seeds, input_shape, kind, dtype=np.int32, weighted=False):
    num_hash, num_bits = hash_seeds.shape
    inputs = [Const(hash_seeds), In(input_shape, dtype)] + ([In([input_shape[0]], np.float32)] if weighted else [])
    out = Out([num_hash if kind == SPARSE else num_hash * num_bits], np.int32)
    return single_op_model(B.LSH_PROJECTION, inputs, out, LSHProjectionParams(type=kind))


@pytest.mark.parametrize("kind", [SPARSE, DENSE])
@pytest.mark.parametrize("weighted", [False, True])
def test_projections_of_int32_ids_match_litert_bit_for_bit(kind, weighted):
    model = lsh_model(seeds(4, 6), [5], kind, weighted=weighted)
    assert stamped_version(model) == 1
    x = RNG.integers(-1000, 1000, 5).astype(np.int32)
    inputs = [x, RNG.uniform(-1, 1, 5).astype(np.float32)] if weighted else [x]
    assert_matches_litert(model, inputs)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.int16, np.int64, np.bool_, np.float16])
def test_rows_of_each_type_are_hashed_as_bytes_like_litert(dtype):
    model = lsh_model(seeds(3, 8), [4, 3], DENSE, dtype)
    assert_matches_litert(model, [RNG.integers(-50, 50, (4, 3)).astype(dtype)])


@pytest.mark.parametrize("row_shape", [(), (1,), (3,), (7,), (15,), (40,), (3, 5, 2)])
def test_keys_of_each_farmhash_length_branch_match_litert(row_shape):
    """Keys are 4 seed bytes + a row: 8, 8, 16, 32, 64, 164 and 124 bytes (the loop and tail above 64)."""
    model = lsh_model(seeds(8, 16), [3, *row_shape], DENSE, np.int32)
    assert_matches_litert(model, [RNG.integers(-(2**31), 2**31 - 1, (3, *row_shape)).astype(np.int32)])


def test_32_bits_per_hash_function_wrap_as_in_litert():
    model = lsh_model(seeds(5, 32), [6], SPARSE)
    assert_matches_litert(model, [RNG.integers(0, 100, 6).astype(np.int32)])


def test_31_bits_per_hash_function_offset_by_a_negative_step_as_in_litert():
    model = lsh_model(seeds(3, 31), [6], SPARSE)
    assert_matches_litert(model, [RNG.integers(0, 100, 6).astype(np.int32)])


def test_many_seeds_give_the_same_bits_as_litert():
    """400 bits, each the sign of a sum of FarmHash values: a wrong hash would show."""
    model = lsh_model(seeds(20, 20), [2, 2], DENSE, np.float32, weighted=True)
    ours = assert_matches_litert(model, [RNG.standard_normal((2, 2)).astype(np.float32), np.array([1.0, -0.5], np.float32)])
    assert 100 < ours[0].sum() < 300


def refused(model) -> str:
    with pytest.raises(KernelError) as error:
        Interpreter(model_content=model).allocate_tensors()
    return str(error.value)


def test_an_absent_weight_input_is_refused_as_in_litert():
    """LiteRT: 'Tensor at index 2 was optional but was expected'; two inputs make an unweighted node."""
    inputs = [Const(seeds(2, 4)), In([3], np.int32), None]
    model = single_op_model(B.LSH_PROJECTION, inputs, Out([8], np.int32), LSHProjectionParams(type=DENSE))
    assert "LSH_PROJECTION v1" in refused(model) and "input 2" in refused(model)


def test_fingerprint64_equals_pyfarmhash_for_every_length_up_to_300():
    farmhash = pytest.importorskip("farmhash")
    for length in range(301):
        keys = RNG.integers(0, 256, (4, length)).astype(np.uint8)
        assert [int(v) for v in fingerprint64(keys)] == [farmhash.fingerprint64(bytes(k)) for k in keys], length


def test_fingerprint64_of_the_empty_string_is_farmhash_k2():
    assert int(fingerprint64(np.zeros((1, 0), np.uint8))[0]) == 0x9AE16A3B2F90404F


def test_more_than_32_bits_are_refused_as_in_litert():
    assert "num_bits <= 32" in refused(lsh_model(seeds(2, 33), [3], SPARSE))


def test_an_unknown_projection_type_is_refused():
    assert "SPARSE (1) or DENSE (2)" in refused(lsh_model(seeds(2, 3), [3], LSHProjectionType.UNKNOWN))


def test_a_weight_per_row_is_required_as_in_litert():
    inputs = [Const(seeds(2, 3)), In([3], np.int32), In([4], np.float32)]
    model = single_op_model(B.LSH_PROJECTION, inputs, Out([2], np.int32), LSHProjectionParams(type=SPARSE))
    assert "it must be [3] (one per input row)" in refused(model)


def test_a_string_input_is_refused():
    inputs = [Const(seeds(2, 3)), Const(np.array([b"ab", b"c"], dtype=object))]
    model = single_op_model(B.LSH_PROJECTION, inputs, Out([2], np.int32), LSHProjectionParams(type=SPARSE))
    assert "STRING" in refused(model)
