"""STABLEHLO_GATHER and STABLEHLO_SCATTER (v1) against ai-edge-litert (BUILTIN_REF): StableHLO's
dimension numbers (the spec's examples and the common layouts), index vectors on any axis,
start indices clamped (gather) or out of the operand (scatter: skipped), every update
computation LiteRT runs (replace, add, multiply, maximum, minimum) with repeated indices,
every type, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, run_ours

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.params import StablehloGatherParams, StablehloScatterParams

DATA_TYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
              np.uint32, np.uint64]


def numbered(shape, dtype=np.float32) -> np.ndarray:
    return (np.arange(int(np.prod(shape))) + 1).astype(dtype).reshape(shape)


def gather_params(offset_dims, collapsed, start_index_map, index_vector_dim, slice_sizes) -> StablehloGatherParams:
    return StablehloGatherParams(offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed),
                                 start_index_map=tuple(start_index_map), index_vector_dim=index_vector_dim,
                                 slice_sizes=tuple(slice_sizes))


def gather_model(operand_shape, indices, params, dtype=np.float32, indices_as_input=False, out_shape=None):
    """(``out_shape`` None: the shape our kernel gives; models it refuses need one.)"""
    indices_spec = In(indices.shape, indices.dtype) if indices_as_input else Const(indices)
    return single_op_model(B.STABLEHLO_GATHER, [In(operand_shape, dtype), indices_spec], Out(out_shape, dtype), params)


#: StableHLO's gather example (spec.md): operand [3, 4, 2], index vectors on axis 2.
SPEC_INDICES = np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 2]]], np.int32)
SPEC_GATHER = gather_params([2, 3], [0], [1, 0], 2, [1, 2, 2])


def test_gather_of_the_stablehlo_spec_example_matches_litert():
    model = gather_model([3, 4, 2], SPEC_INDICES, SPEC_GATHER)
    assert stamped_version(model) == 1
    outputs = assert_matches_litert(model, [numbered([3, 4, 2])])
    assert outputs[0].shape == (2, 3, 2, 2)


@pytest.mark.parametrize("operand_shape, indices, params", [
    # x[idx] on axis 0 (jax's take): one row per index
    ([5, 3], np.array([[4], [0], [2], [2]], np.int32), gather_params([1], [0], [0], 1, [1, 3])),
    # index vectors on axis 0 of the indices, offset axes first
    ([4, 5], np.array([[1, 3, 0], [2, 0, 4]], np.int32), gather_params([0], [0], [0, 1], 0, [1, 2])),
    # a slice kept whole along a collapsed-free axis, the batch axis last in the result
    ([3, 4, 2], np.array([[0, 1], [2, 2]], np.int32), gather_params([0, 1, 2], [], [0, 1], 1, [1, 2, 2])),
    # int64 indices, a start past the end (clamped to size - slice)
    ([6], np.array([[5], [1], [9]], np.int64), gather_params([1], [], [0], 1, [3])),
    # every axis collapsed: scalar slices (GATHER_ND's layout)
    ([3, 4], np.array([[2, 3], [0, 1], [1, 1]], np.int32), gather_params([], [0, 1], [0, 1], 1, [1, 1])),
])
def test_gather_layouts_match_litert(operand_shape, indices, params):
    assert_matches_litert(gather_model(operand_shape, indices, params), [numbered(operand_shape)])


def test_gather_with_indices_as_a_graph_input_matches_litert():
    model = gather_model([3, 4, 2], SPEC_INDICES, SPEC_GATHER, indices_as_input=True)
    assert_matches_litert(model, [numbered([3, 4, 2]), SPEC_INDICES[:, :, ::-1].copy()])


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=lambda d: np.dtype(d).name)
def test_gather_of_each_type_matches_litert(dtype):
    assert_matches_litert(gather_model([3, 4, 2], SPEC_INDICES, SPEC_GATHER, dtype), [numbered([3, 4, 2], dtype)])


def test_gather_with_the_index_vector_dim_after_the_last_axis_equals_litert_on_vectors_of_one():
    # index_vector_dim == rank (vectors of one element) is StableHLO's; LiteRT reads past the
    # indices' shape there, so compare with LiteRT on the same indices with a trailing axis of 1.
    indices = np.array([[3, 0], [1, 2]], np.int32)
    ours = run_ours(gather_model([5, 2], indices, gather_params([2], [0], [0], 2, [1, 2])), [numbered([5, 2])])
    reference = gather_model([5, 2], indices[..., None], gather_params([2], [0], [0], 2, [1, 2]))
    expected = assert_matches_litert(reference, [numbered([5, 2])])
    np.testing.assert_array_equal(ours[0], expected[0])


def test_gather_clamps_a_negative_start_to_0_as_stablehlo_does():
    # (LiteRT does not clamp below: it would read before the operand.)
    model = gather_model([6], np.array([[-2], [4]], np.int32), gather_params([1], [], [0], 1, [2]))
    ours = run_ours(model, [numbered([6])])
    np.testing.assert_array_equal(ours[0], [[1, 2], [5, 6]])


def refused(model, pattern: str) -> None:
    with pytest.raises(KernelError, match=pattern):
        Interpreter(model_content=model).allocate_tensors()


def test_gather_with_a_slice_larger_than_the_operand_is_refused():
    model = gather_model([3, 2], np.array([[0]], np.int32), gather_params([1, 2], [], [0], 1, [4, 2]), out_shape=[1, 4, 2])
    refused(model, r"node 0 \(STABLEHLO_GATHER v1\).*slice_sizes \[4, 2\] must lie within the operand's shape \[3, 2\]")


def test_gather_with_a_start_index_map_of_another_length_is_refused():
    model = gather_model([3, 2], np.array([[0, 1]], np.int32), gather_params([1], [0], [0], 1, [1, 2]), out_shape=[1, 2])
    refused(model, r"STABLEHLO_GATHER v1: start_index_map \[0\] must name one operand axis per index vector element \(2\)")


def test_gather_with_offset_dims_that_do_not_place_the_slice_is_refused():
    model = gather_model([3, 2], np.array([[0]], np.int32), gather_params([1], [], [0], 1, [1, 2]), out_shape=[1, 2])
    refused(model, r"STABLEHLO_GATHER v1: offset_dims \[1\] must place the 2 slice axes not collapsed")


def test_gather_with_float_indices_is_refused():
    model = gather_model([3, 2], np.array([[0.0]], np.float32), gather_params([1], [0], [0], 1, [1, 2]), out_shape=[1, 2])
    refused(model, r"STABLEHLO_GATHER v1: start_indices 'c1' has type FLOAT32; this kernel supports INT32, INT64")


# -- scatter ---------------------------------------------------------------------------------------


def scatter_params(window_dims, inserted, to_operand, index_vector_dim, region) -> StablehloScatterParams:
    return StablehloScatterParams(update_window_dims=tuple(window_dims), inserted_window_dims=tuple(inserted),
                                  scatter_dims_to_operand_dims=tuple(to_operand), index_vector_dim=index_vector_dim,
                                  update_computation_subgraph_index=region)


def scatter_model(operand_shape, indices, updates_shape, params_fields, combine=B.STABLEHLO_ADD, dtype=np.float32):
    """main(operand, updates) = STABLEHLO_SCATTER(operand, indices, updates); subgraph 1 is the
    update computation: one ``combine`` node, or none (replace) when ``combine`` is None."""
    builder = ModelBuilder()
    main = builder.subgraph()
    operand = main.add_input("operand", list(operand_shape), dtype)
    index_tensor = main.add_constant("indices", indices)
    updates = main.add_input("updates", list(updates_shape), dtype)
    out = main.add_tensor("out", list(operand_shape), dtype)
    main.add_operator(B.STABLEHLO_SCATTER, [operand, index_tensor, updates], [out], scatter_params(*params_fields, 1))
    main.add_output(out)
    builder.add_signature("serving_default", main)
    region = builder.subgraph("update_computation")
    a, b = region.add_input("a", [], dtype), region.add_input("b", [], dtype)
    if combine is None:
        region.add_output(b)
    else:
        result = region.add_tensor("result", [], dtype)
        region.add_operator(combine, [a, b], [result])
        region.add_output(result)
    return builder.build()


#: StableHLO's scatter example (spec.md): operand [3, 4, 2], updates [2, 3, 2, 2].
SPEC_SCATTER = ([2, 3], [0], [1, 0], 2)
COMBINATIONS = [None, B.STABLEHLO_ADD, B.STABLEHLO_MULTIPLY, B.STABLEHLO_MAXIMUM, B.STABLEHLO_MINIMUM]


def combination_id(combine) -> str:
    return "replace" if combine is None else combine.name


@pytest.mark.parametrize("combine", COMBINATIONS, ids=combination_id)
def test_scatter_of_the_stablehlo_spec_example_matches_litert(combine):
    # (Windows overlap: several updates combine into one element, in order.)
    model = scatter_model([3, 4, 2], SPEC_INDICES, [2, 3, 2, 2], SPEC_SCATTER, combine)
    assert stamped_version(model) == 1
    rng = np.random.default_rng(0)
    assert_matches_litert(model, [numbered([3, 4, 2]), rng.uniform(-3, 3, (2, 3, 2, 2)).astype(np.float32)])


@pytest.mark.parametrize("combine", COMBINATIONS, ids=combination_id)
def test_scatter_with_repeated_indices_combines_in_order_as_litert(combine):
    # Rows 1 and 3 are updated three and two times (replace: the last update wins).
    indices = np.array([[1], [3], [1], [0], [1], [3]], np.int32)
    model = scatter_model([4, 3], indices, [6, 3], ([1], [0], [0], 1), combine)
    rng = np.random.default_rng(1)
    assert_matches_litert(model, [numbered([4, 3]), rng.uniform(-3, 3, (6, 3)).astype(np.float32)])


def test_scatter_skips_the_update_elements_that_fall_outside_the_operand_as_litert():
    # Windows of 2 rows starting at rows 3 and 5 of 4: the one inside row 3 lands, the rest are skipped.
    model = scatter_model([4, 2], np.array([[3], [5]], np.int32), [2, 2, 2], ([1, 2], [], [0], 1))
    assert_matches_litert(model, [numbered([4, 2]), np.full((2, 2, 2), 10, np.float32)])


def test_scatter_with_index_vectors_on_axis_0_and_int64_indices_matches_litert():
    indices = np.array([[0, 2, 1], [1, 0, 3]], np.int64)  # vectors (row, column) along axis 0
    model = scatter_model([3, 4], indices, [3], ([], [0, 1], [0, 1], 0), B.STABLEHLO_ADD)
    assert_matches_litert(model, [numbered([3, 4]), np.array([100, 200, 300], np.float32)])


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("combine", [B.STABLEHLO_ADD, B.STABLEHLO_MULTIPLY, B.STABLEHLO_MAXIMUM], ids=combination_id)
def test_scatter_of_each_type_matches_litert(combine, dtype):
    model = scatter_model([3, 4, 2], SPEC_INDICES, [2, 3, 2, 2], SPEC_SCATTER, combine, dtype)
    updates = numbered([2, 3, 2, 2], dtype)[::-1].copy()
    if np.dtype(dtype).kind in "iu":
        updates[0, 0, 0, 0] = np.iinfo(dtype).max  # (a sum or product that wraps)
    assert_matches_litert(model, [numbered([3, 4, 2], dtype), updates])


def test_scatter_maximum_and_minimum_keep_the_operand_with_a_nan_update_as_std_max_and_min():
    for combine in (B.STABLEHLO_MAXIMUM, B.STABLEHLO_MINIMUM):
        model = scatter_model([3], np.array([[0], [1], [2]], np.int32), [3], ([], [0], [0], 1), combine)
        operand = np.array([np.nan, 2.0, 5.0], np.float32)
        outputs = assert_matches_litert(model, [operand, np.array([1.0, np.nan, 4.0], np.float32)])
        assert np.isnan(outputs[0][0]) and outputs[0][1] == 2.0


def test_scatter_whose_update_computation_is_another_op_is_refused_naming_what_litert_runs():
    model = scatter_model([4, 3], np.array([[1]], np.int32), [1, 3], ([1], [0], [0], 1), B.STABLEHLO_AND, np.int32)
    refused(model, r"node 0 \(STABLEHLO_SCATTER v1\).*update computation subgraph 1 holds \['STABLEHLO_AND'\]; "
                   r"LiteRT runs update computation subgraphs of one node, of \['STABLEHLO_ADD'")


def test_scatter_with_updates_that_do_not_match_the_indices_batch_is_refused():
    model = scatter_model([4, 3], np.array([[1], [2]], np.int32), [3, 3], ([1], [0], [0], 1))
    refused(model, r"STABLEHLO_SCATTER v1: the updates' scatter axes \[0\] have sizes \[3\]; the scatter indices' batch has \[2\]")


def test_scatter_with_an_update_computation_subgraph_that_does_not_exist_is_refused():
    model = single_op_model(B.STABLEHLO_SCATTER, [In([4]), Const(np.array([[1]], np.int32)), In([1])], Out([4]),
                            scatter_params([], [0], [0], 1, 5))
    refused(model, r"STABLEHLO_SCATTER v1: the update computation subgraph 5 does not exist")


def test_scatter_of_bool_is_refused_as_litert_does():
    model = scatter_model([4], np.array([[1]], np.int32), [1], ([], [0], [0], 1), None, np.bool_)
    refused(model, r"STABLEHLO_SCATTER v1: operand 'operand' has type BOOL")
