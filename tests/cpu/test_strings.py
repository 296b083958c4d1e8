"""The CPU kernels on STRING tensors, against LiteRT.

LiteRT runs strings through GATHER (1-D input only), GATHER_ND, RESHAPE, SQUEEZE,
EXPAND_DIMS, SLICE, STRIDED_SLICE, FILL, TILE, SHAPE and RANK (and EQUAL / NOT_EQUAL,
tested in ``test_comparison.py``), and refuses them in CONCATENATION, PACK, UNPACK, SPLIT,
SPLIT_V, TRANSPOSE, BROADCAST_TO, REVERSE_V2, SELECT / SELECT_V2, PAD, MIRROR_PAD,
ZEROS_LIKE and more: each case below runs on both runtimes, with LiteRT's reference
kernels (``BUILTIN_REF``), or its default ones where BUILTIN_REF does not register the
version the converter stamps for strings (SQUEEZE v2, STRIDED_SLICE v5 and up: there the
default registration is the reference kernel).

Inputs are object arrays of ``bytes`` given to ``set_tensor`` as they are (the oracle's
``np.asarray(value, np.bytes_)`` would drop trailing NULs), with empty strings, UTF-8 and
binary bytes among them.
"""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator as B
from schema.params import (
    ConcatenationParams,
    GatherParams,
    PackParams,
    ReshapeParams,
    ShapeParams,
    SplitParams,
    SqueezeParams,
    StridedSliceParams,
    UnpackParams,
)
from schema.enums import TensorType as T
from test_reshape import In, single_op, version_of

S = np.bytes_  # the dtype LiteRT reports for STRING; the test models' string type


def strings(shape, seed: int = 0) -> np.ndarray:
    """Distinct strings of varied lengths: empty, ASCII, UTF-8, binary with NULs."""
    pieces = [b"", b"a", b"bc", "\u00e9".encode(), b"\x00\xff", b"tail\x00", "\u4e2d\u6587".encode(), b"x" * 40]
    count = int(np.prod(shape, dtype=np.int64))
    values = np.empty(count, dtype=object)
    values[:] = [pieces[(i + seed) % len(pieces)] + str(i).encode() * (i % 3) for i in range(count)]
    return values.reshape(shape)


def _litert(model: bytes, resolver: str):
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    return LiteRT(model_content=bytes(model), experimental_op_resolver_type=OpResolverType[resolver])


def run(interpreter, inputs) -> list[np.ndarray]:
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs):
        if value.dtype == np.object_ and value.ndim == 0:
            # A 0-d string goes in as a bytes array of its exact length: LiteRT stores a 0-d
            # array's raw buffer (an object array's would be a pointer).
            value = np.array(value[()], dtype=f"S{max(len(value[()]), 1)}")
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def assert_same(ours: list[np.ndarray], theirs: list[np.ndarray]) -> None:
    assert len(ours) == len(theirs)
    for i, (got, want) in enumerate(zip(ours, theirs)):
        assert got.dtype == want.dtype, f"output {i}: dtype {got.dtype} vs LiteRT {want.dtype}"
        assert got.shape == want.shape, f"output {i}: shape {got.shape} vs LiteRT {want.shape}"
        assert got.tolist() == want.tolist(), f"output {i}: {got!r} vs LiteRT {want!r}"
        if got.dtype == np.object_:
            assert all(type(v) is bytes for v in got.reshape(-1).tolist())


def assert_matches_litert(model: bytes, inputs, resolver: str = "BUILTIN_REF") -> list[np.ndarray]:
    theirs = run(_litert(model, resolver), inputs)
    ours = run(Interpreter(model_content=model), inputs)
    assert_same(ours, theirs)
    return ours


def assert_both_fail(model: bytes, inputs, ours_match: str, litert_match: str, resolver: str = "BUILTIN_REF") -> None:
    with pytest.raises(RuntimeError, match=litert_match):
        run(_litert(model, resolver), inputs)
    with pytest.raises(KernelError, match=ours_match):
        run(Interpreter(model_content=model), inputs)


# -- GATHER ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype, version", [(np.int32, 1), (np.int64, 1), (np.int16, 6)])
def test_gather_of_a_string_vector_matches_litert(index_dtype, version):
    m = single_op(B.GATHER, [In([6], S), In([4], index_dtype)], [([4], S)], GatherParams(axis=0))
    assert version_of(m) == version  # strings add no version of their own
    assert_matches_litert(m, [strings([6]), np.array([5, 0, 2, 2], index_dtype)])


@pytest.mark.parametrize(
    "positions, out_shape, axis",
    [(np.array([[3, 0], [2, 2]], np.int32), [2, 2], 0), (np.array(2, np.int32), [], 0),
     (np.array([1, 3], np.int32), [2], -1), (np.zeros([0], np.int32), [0], 0)],
    ids=["matrix of positions", "scalar position", "axis -1", "no positions"],
)
def test_gather_of_strings_with_constant_positions_matches_litert(positions, out_shape, axis):
    m = single_op(B.GATHER, [In([4], S), positions], [(out_shape, S)], GatherParams(axis=axis))
    assert_matches_litert(m, [strings([4], seed=3)])


def test_gather_from_a_string_constant_matches_litert():
    m = single_op(B.GATHER, [strings([5], seed=1), In([3], np.int32)], [([3], S)], GatherParams(axis=0))
    assert_matches_litert(m, [np.array([4, 4, 0], np.int32)])


@pytest.mark.parametrize("shape, axis", [([4, 2], 0), ([2, 4], 1), ([], 0)])
def test_gather_of_strings_needs_a_vector_as_in_litert(shape, axis):
    m = single_op(B.GATHER, [In(shape, S), np.array([0], np.int32)], [([1], S)], GatherParams(axis=axis))
    value = strings(shape)
    assert_both_fail(m, [value], r"GATHER v1.*a STRING input must be 1-D", r"NumDimensions\(input\) != 1")


@pytest.mark.parametrize("bad", [4, -1])
def test_gather_of_strings_out_of_range_fails_as_in_litert(bad):
    m = single_op(B.GATHER, [In([4], S), In([2], np.int32)], [([2], S)], GatherParams(axis=0))
    assert_both_fail(m, [strings([4]), np.array([1, bad], np.int32)], f"index {bad} is out of range", "gather index out of bounds")


# -- GATHER_ND ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params_shape, indices, out_shape",
    [([3, 2], np.array([[2, 1], [0, 0]], np.int32), [2]), ([2, 2, 2], np.array([[1, 0], [0, 1]], np.int32), [2, 2]),
     ([3], np.array([[2], [0]], np.int64), [2]), ([2, 2], np.array([[1, 1]], np.int16), [1])],
    ids=["elements", "rows", "int64 indices", "int16 indices"],
)
def test_gather_nd_of_strings_matches_litert(params_shape, indices, out_shape):
    m = single_op(B.GATHER_ND, [In(params_shape, S), indices], [(out_shape, S)])
    assert version_of(m) == (4 if indices.dtype == np.int16 else 2)
    assert_matches_litert(m, [strings(params_shape, seed=2)])


def test_gather_nd_of_strings_out_of_range_fails_as_in_litert():
    m = single_op(B.GATHER_ND, [In([2, 2], S), np.array([[2, 1]], np.int32)], [([1], S)])
    assert_both_fail(m, [strings([2, 2])], "index 2 is out of range", "gather_nd index out of bounds")


# -- RESHAPE, SQUEEZE, EXPAND_DIMS ----------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, spec, params, out_shape",
    [([2, 3], np.array([3, 2], np.int32), None, [3, 2]), ([2, 3], np.array([-1, 2], np.int32), None, [3, 2]),
     ([2, 3], None, ReshapeParams(new_shape=(6,)), [6]), ([1, 1], np.zeros([0], np.int32), None, []),
     ([], np.array([1, 1, 1], np.int32), None, [1, 1, 1])],
    ids=["shape tensor", "-1", "params", "to scalar", "from scalar"],
)
def test_reshape_of_strings_matches_litert(shape, spec, params, out_shape):
    inputs = [In(shape, S)] + ([spec] if spec is not None else [])
    m = single_op(B.RESHAPE, inputs, [(out_shape, S)], params)
    assert version_of(m) == 1
    assert_matches_litert(m, [strings(shape)])


def test_reshape_of_strings_to_a_shape_known_at_invoke_matches_litert():
    m = single_op(B.RESHAPE, [In([2, 3], S), In([2], np.int32)], [([3, 2], S)])
    for new_shape in ([6, 1], [1, 6], [3, 2]):
        assert_matches_litert(m, [strings([2, 3]), np.array(new_shape, np.int32)])


@pytest.mark.parametrize(
    "params, out_shape", [(SqueezeParams(), [3]), (SqueezeParams(squeeze_dims=(0,)), [3, 1]), (SqueezeParams(squeeze_dims=(-1,)), [1, 3])]
)
def test_squeeze_of_strings_v2_matches_litert(params, out_shape):
    m = single_op(B.SQUEEZE, [In([1, 3, 1], S)], [(out_shape, S)], params)
    assert version_of(m) == 2
    # BUILTIN_REF registers SQUEEZE v1 only; its default registration is the same kernel.
    assert_matches_litert(m, [strings([1, 3, 1])], resolver="BUILTIN")


def test_squeeze_of_strings_stamped_v1_matches_litert_reference_kernels():
    m = single_op(B.SQUEEZE, [In([1, 3, 1], S)], [([3], S)], SqueezeParams(), version=1)
    assert_matches_litert(m, [strings([1, 3, 1])])


@pytest.mark.parametrize("axis, out_shape", [(np.array([1], np.int32), [3, 1]), (np.array([-1], np.int64), [3, 1]), (np.array(0, np.int32), [1, 3])])
def test_expand_dims_of_strings_matches_litert(axis, out_shape):
    m = single_op(B.EXPAND_DIMS, [In([3], S), axis], [(out_shape, S)])
    assert version_of(m) == 1
    assert_matches_litert(m, [strings([3])])


# -- SLICE, STRIDED_SLICE -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, begin, size",
    [([3, 4], np.array([1, 1], np.int32), np.array([2, 2], np.int32)),
     ([3, 4], np.array([1, 1], np.int64), np.array([2, -1], np.int64)),
     ([2, 0], np.array([0, 0], np.int32), np.array([1, 0], np.int32))],
    ids=["int32", "int64 to the end", "empty"],
)
def test_slice_of_strings_v3_matches_litert(shape, begin, size):
    out_shape = [s if s != -1 else d - b for d, b, s in zip(shape, begin.tolist(), size.tolist())]
    m = single_op(B.SLICE, [In(shape, S), begin, size], [(out_shape, S)])
    assert version_of(m) == 3
    assert_matches_litert(m, [strings(shape)])


def test_slice_of_strings_of_rank_5_is_v5_and_matches_litert():
    m = single_op(B.SLICE, [In([1, 1, 1, 2, 4], S), np.array([0, 0, 0, 1, 1], np.int32), np.array([1, 1, 1, 1, 2], np.int32)],
                  [([1, 1, 1, 1, 2], S)])
    assert version_of(m) == 5
    assert_matches_litert(m, [strings([1, 1, 1, 2, 4])])


def test_slice_of_strings_with_begin_known_at_invoke_matches_litert():
    m = single_op(B.SLICE, [In([3, 4], S), In([2], np.int32), np.array([2, 2], np.int32)], [([2, 2], S)])
    for begin in ([0, 0], [1, 2]):
        assert_matches_litert(m, [strings([3, 4]), np.array(begin, np.int32)])


STRIDED = {
    "strides 2": ([3, 4], [0, 0], [3, 4], [2, 2], StridedSliceParams(), [2, 2], 5),
    "negative stride": ([5], [4], [0], [-2], StridedSliceParams(), [2], 5),
    "masks": ([3, 4], [1, 3], [0, 0], [1, -1], StridedSliceParams(begin_mask=0, end_mask=1), [2, 3], 5),
    "shrink axis": ([3, 4], [1, 0], [2, 4], [1, 1], StridedSliceParams(shrink_axis_mask=1), [4], 5),
    "rank 5": ([1, 1, 1, 2, 3], [0, 0, 0, 0, 1], [1, 1, 1, 2, 3], [1] * 5, StridedSliceParams(), [1, 1, 1, 2, 2], 5),
    "new axis": ([3], [0, 0], [1, 3], [1, 1], StridedSliceParams(new_axis_mask=1), [1, 3], 6),
    "ellipsis": ([2, 3], [0, 1], [1, 3], [1, 1], StridedSliceParams(ellipsis_mask=1), [2, 2], 6),
    "offset": ([5], [1], [2], [1], StridedSliceParams(offset=True), [2], 8),
}


@pytest.mark.parametrize("case", list(STRIDED))
def test_strided_slice_of_strings_matches_litert(case):
    shape, begin, end, strides, params, out_shape, version = STRIDED[case]
    index = [np.array(v, np.int32) for v in (begin, end, strides)]
    m = single_op(B.STRIDED_SLICE, [In(shape, S), *index], [(out_shape, S)], params)
    assert version_of(m) == version
    # BUILTIN_REF registers STRIDED_SLICE up to v4 only; the default one is the same kernel.
    assert_matches_litert(m, [strings(shape)], resolver="BUILTIN")


def test_strided_slice_of_strings_stamped_v1_matches_litert_reference_kernels():
    m = single_op(B.STRIDED_SLICE, [In([3, 4], S), np.array([0, 1], np.int32), np.array([3, 4], np.int32), np.array([2, 1], np.int32)],
                  [([2, 3], S)], StridedSliceParams(), version=1)
    assert_matches_litert(m, [strings([3, 4])])


# -- FILL, TILE -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [np.array([2, 3], np.int32), np.array([0, 3], np.int64), np.zeros([0], np.int32)], ids=["2x3", "empty", "scalar"])
def test_fill_with_a_string_matches_litert(dims):
    m = single_op(B.FILL, [dims, In([], S)], [(dims.tolist(), S)])
    assert version_of(m) == 2
    assert_matches_litert(m, [np.array(b"fill\x00me")])


def test_fill_with_a_string_constant_and_dims_known_at_invoke_matches_litert():
    m = single_op(B.FILL, [In([2], np.int32), np.array(b"const", dtype=object)], [([1, 1], S)])
    for dims in ([2, 2], [3, 1], [0, 4]):
        assert_matches_litert(m, [np.array(dims, np.int32)])


@pytest.mark.parametrize(
    "shape, multiples",
    [([2, 2], np.array([2, 3], np.int32)), ([2], np.array([3], np.int64)), ([1, 2, 1], np.array([2, 1, 3], np.int32)),
     ([2], np.array([0], np.int32)), ([], np.zeros([0], np.int32))],
    ids=["2-D", "int64 multiples", "3-D", "zero", "scalar"],
)
def test_tile_of_strings_v2_matches_litert(shape, multiples):
    out_shape = [d * m for d, m in zip(shape, multiples.tolist())]
    m = single_op(B.TILE, [In(shape, S), multiples], [(out_shape, S)])
    assert version_of(m) == 2
    assert_matches_litert(m, [strings(shape)])


def test_tile_of_strings_with_multiples_known_at_invoke_matches_litert():
    m = single_op(B.TILE, [In([2], S), In([1], np.int32)], [([2], S)])
    for multiples in ([3], [1], [0]):
        assert_matches_litert(m, [strings([2]), np.array(multiples, np.int32)])


# -- SHAPE, RANK, and a chain ----------------------------------------------------------------------


def test_shape_and_rank_of_strings_match_litert():
    for op, params, out in ((B.SHAPE, ShapeParams(out_type=T.INT32), ([2], np.int32)), (B.RANK, None, ([], np.int32))):
        m = single_op(op, [In([2, 3], S)], [out], params)
        assert_matches_litert(m, [strings([2, 3])])


def string_chain_model() -> bytes:
    """GATHER (positions at invoke) -> TILE -> RESHAPE -> STRIDED_SLICE (v5 as stamped,
    so LiteRT's default resolver) -> EXPAND_DIMS, on strings from a constant vocabulary."""
    from schema.builder import ModelBuilder

    builder = ModelBuilder()
    g = builder.subgraph()
    vocabulary = g.add_constant("vocabulary", strings([7], seed=5))
    ids = g.add_input("ids", [4], np.int32)
    words = g.add_tensor("words", [4], T.STRING)
    g.add_operator(B.GATHER, [vocabulary, ids], [words], GatherParams(axis=0))
    tiled = g.add_tensor("tiled", [8], T.STRING)
    g.add_operator(B.TILE, [words, g.add_constant("twice", np.array([2], np.int32))], [tiled])
    grid = g.add_tensor("grid", [2, 4], T.STRING)
    g.add_operator(B.RESHAPE, [tiled, g.add_constant("shape", np.array([2, 4], np.int32))], [grid])
    column = g.add_tensor("column", [2], T.STRING)
    index = [g.add_constant(n, np.array(v, np.int32)) for n, v in (("b", [0, 3]), ("e", [2, 4]), ("s", [1, 1]))]
    g.add_operator(B.STRIDED_SLICE, [grid, *index], [column], StridedSliceParams(shrink_axis_mask=2))
    out = g.add_tensor("out", [2, 1], T.STRING)
    g.add_operator(B.EXPAND_DIMS, [column, g.add_constant("axis", np.array([1], np.int32))], [out])
    g.add_output(out)
    g.add_output(words)
    return builder.build()


def test_a_chain_of_string_ops_matches_litert():
    m = string_chain_model()
    for ids in ([6, 0, 3, 3], [1, 2, 5, 4]):
        ours = assert_matches_litert(m, [np.array(ids, np.int32)], resolver="BUILTIN")
        assert ours[0].shape == (2, 1)


# -- what LiteRT refuses, refused here too ---------------------------------------------------------


def _refused_cases():
    cases = {
        "CONCATENATION": (single_op(B.CONCATENATION, [In([2, 2], S), In([2, 1], S)], [([2, 3], S)], ConcatenationParams(axis=1)),
                          [strings([2, 2]), strings([2, 1])], "is_supported_type was not true"),
        "PACK": (single_op(B.PACK, [In([2], S), In([2], S)], [([2, 2], S)], PackParams(values_count=2)),
                 [strings([2]), strings([2])], "Type 'STRING' is not supported by pack"),
        "UNPACK": (single_op(B.UNPACK, [In([2, 3], S)], [([3], S), ([3], S)], UnpackParams(num=2)),
                   [strings([2, 3])], "Type 'STRING' is not supported by unpack"),
        "SPLIT": (single_op(B.SPLIT, [np.array(0, np.int32), In([4], S)], [([2], S), ([2], S)], SplitParams(num_splits=2)),
                  [strings([4])], "is_supported_type was not true"),
        "TRANSPOSE": (single_op(B.TRANSPOSE, [In([2, 3], S), np.array([1, 0], np.int32)], [([3, 2], S)]),
                      [strings([2, 3])], "Type STRING is currently not supported by Transpose"),
        "BROADCAST_TO": (single_op(B.BROADCAST_TO, [In([1, 3], S), np.array([2, 3], np.int32)], [([2, 3], S)]),
                         [strings([1, 3])], r"input->type != kTfLiteString"),
        "REVERSE_V2": (single_op(B.REVERSE_V2, [In([3], S), np.array([0], np.int32)], [([3], S)]),
                       [strings([3])], "Type 'STRING' is not supported by reverse"),
        "SELECT_V2": (single_op(B.SELECT_V2, [In([3], np.bool_), In([3], S), In([3], S)], [([3], S)]),
                      [np.array([True, False, True]), strings([3]), strings([3], 1)], "Does not support type other than bool"),
        "PAD": (single_op(B.PAD, [In([2], S), np.array([[1, 1]], np.int32)], [([4], S)]), [strings([2])], "PAD"),
        "ZEROS_LIKE": (single_op(B.ZEROS_LIKE, [In([2], S)], [([2], S)]), [strings([2])], "ZerosLike only currently supports"),
    }
    return cases


REFUSED = _refused_cases()


@pytest.mark.parametrize("op", list(REFUSED))
def test_ops_litert_does_not_run_on_strings_are_refused_naming_the_type(op):
    model, inputs, litert_match = REFUSED[op]
    assert_both_fail(model, inputs, f"{op} v\\d.*STRING", litert_match)


# -- the GPU delegate ------------------------------------------------------------------------------


def test_the_gpu_delegate_leaves_string_nodes_on_the_cpu_saying_why():
    from backends.gpu import GpuDelegate

    m = string_chain_model()
    interpreter = Interpreter(model_content=m, experimental_delegates=[GpuDelegate(device="host")])
    placements = interpreter.node_placements()
    assert [p.runs_on for p in placements] == ["CPU"] * 5
    for placement in placements:
        (reason,) = placement.rejections
        assert "STRING" in reason or f"v{placement.version}" in reason or "does not support" in reason, reason
    # Where the op runs on the GPU at that version, the reason is the STRING tensor.
    assert "STRING" in placements[0].rejections[0] and "STRING" in placements[2].rejections[0]
    ids = np.array([6, 0, 3, 3], np.int32)
    ours = run(interpreter, [ids])
    assert_same(ours, run(Interpreter(model_content=m), [ids]))


def test_a_folded_shape_of_a_string_tensor_may_go_to_the_gpu_without_the_strings():
    # SHAPE of a static-shape tensor is a constant at prepare: the GPU partition runs
    # nothing for it and never reads the strings.
    from backends.gpu import GpuDelegate

    m = single_op(B.SHAPE, [In([2, 3], S)], [([2], np.int32)], ShapeParams(out_type=T.INT32))
    interpreter = Interpreter(model_content=m, experimental_delegates=[GpuDelegate(device="host")])
    np.testing.assert_array_equal(run(interpreter, [strings([2, 3])])[0], [2, 3])
