"""Data movement and reductions on the GPU (backends/gpu/ops/slicing.py, concat_split.py,
transpose.py, space_depth.py, gather.py, tile.py, pad.py, reduce.py) against LiteRT's
reference kernels (BUILTIN_REF): SLICE, UNPACK,
TRANSPOSE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, GATHER, TILE, MIRROR_PAD on float32, int8,
uint8 and int32 (bit for bit); SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, CUMSUM on
float32 (within 1e-5 relative; REDUCE_MAX/MIN of int8, uint8, int32 bit for bit); and
ONE_HOT.

Every case runs through ``GpuDelegate(device="host")`` and through the emulated CUDA
device (the device branch, CuPy's rules), over four invokes with new inputs (the graph is
captured at the second and replayed from the third), against the oracle and against our
CPU path; the node must have been delegated and its partition must replay a graph. Each
family also runs once in float16 storage (1e-2). Each claimed (op, version) has a test
that the version above the claim (or a type not claimed) is refused with a reason naming
it.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.ops import gpu_support_table
from delegate_sdk.testing import plan_delegation
from interpreter.testing import assert_matches_cpu
from interpreter import Interpreter
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import litert_interpreter, run_interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.enums import MirrorPadMode
from schema.params import (
    CumsumParams,
    DepthToSpaceParams,
    GatherParams,
    MirrorPadParams,
    OneHotParams,
    ReducerParams,
    SpaceToDepthParams,
    UnpackParams,
)

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"
INVOKES = 4
I32, I64 = np.int32, np.int64
Q8 = quantization(0.05, -7)     # an int8 activation
QU8 = quantization(0.04, 131)   # a uint8 activation

DEVICES = {
    "host": lambda precision="float32": GpuDelegate(device="host", precision=precision),
    "emulated-cuda": lambda precision="float32": GpuDelegate(device=emulated_cuda_device(), precision=precision),
}


# -- building one-node models ---------------------------------------------------------------------


def _build(op, inputs, outputs, params, shapes, version=None) -> bytes:
    return single_op_model(op, inputs, [Out(shape, dtype, q) for (dtype, q), shape in zip(outputs, shapes)], params,
                           version=version)


def model(op, inputs, outputs, params=None, *, version=None, resolver=None) -> bytes:
    """A one-node model; ``outputs`` are dtypes or (dtype, quantization) pairs. Their shapes
    are what our CPU kernel's prepare gives (a first build with placeholder shapes finds
    them); ``version`` overrides the stamped version."""
    outputs = [o if isinstance(o, tuple) else (o, None) for o in outputs]
    return single_op_model(op, inputs, [Out(None, *o) for o in outputs], params, version=version, resolver=resolver)


def values(dtype, shape, seed, *, exact=False) -> np.ndarray:
    """Random values over an integer type's whole range; floats in [-2, 2] (multiples of
    1/16 with ``exact``: sums of a few of them are exact in any order, and float16 holds
    them exactly)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        if exact:
            return (rng.integers(-32, 33, shape) / 16).astype(dtype)
        return rng.uniform(-2, 2, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def invoke(interpreter, inputs) -> list[np.ndarray]:
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def builtin_oracle(m: bytes):
    """LiteRT on its default resolver, for (op, version) pairs BUILTIN_REF does not register
    (DEPTH_TO_SPACE v2, TILE v3: see tests/cpu/test_space_depth.py, test_tile_broadcast.py);
    these kernels only move values, so they are exact references too."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    return LiteRT(model_content=bytes(m), experimental_op_resolver_type=OpResolverType.BUILTIN)


def check(m: bytes, make_inputs=None, *, precision="float32", exact=True, resolver=None, reference=litert_interpreter) -> None:
    """Through each device: the node delegated, four invokes against BUILTIN_REF
    (``reference``; bit-exact with ``exact``, else within 1e-5 relative; float16 storage
    within 1e-2), a graph replaying; then the same model against our CPU path
    (assert_matches_cpu on ``make_inputs(0)`` when given, or by hand with a test
    ``resolver``)."""
    oracle = reference(m)
    details = oracle.get_input_details()
    cpu_inputs = None if make_inputs is None else make_inputs(0)
    if make_inputs is None:
        def make_inputs(k):
            return [values(d["dtype"], tuple(d["shape"]), 10 * k + i, exact=exact or precision == "float16")
                    for i, d in enumerate(details)]
    for name in DEVICES:
        delegate = DEVICES[name](precision)
        interpreter = Interpreter(model_content=m, op_resolver=resolver)
        interpreter.modify_graph_with_delegate(delegate)
        interpreter.allocate_tensors()
        placements = interpreter.node_placements()
        assert placements and all(p.delegated for p in placements), [(p.op, p.version, p.rejections) for p in placements]
        cpu = Interpreter(model_content=m, op_resolver=resolver) if resolver is not None else None
        if cpu is not None:
            cpu.allocate_tensors()
        for k in range(INVOKES):
            inputs = make_inputs(k)
            got, want = invoke(interpreter, inputs), run_interpreter(oracle, inputs)
            assert len(got) == len(want)
            for i, (g, w) in enumerate(zip(got, want)):
                where = f"{name}, invoke {k + 1}, output {i}"
                assert g.dtype == w.dtype and g.shape == w.shape, f"{where}: {g.dtype}{g.shape} vs LiteRT {w.dtype}{w.shape}"
                if precision == "float16":
                    np.testing.assert_allclose(g, w, rtol=1e-2, atol=1e-2, err_msg=where)
                elif exact or w.dtype.kind != "f":
                    np.testing.assert_array_equal(g, w, err_msg=where)
                else:
                    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=where)
            if cpu is not None:
                for i, (g, c) in enumerate(zip(got, invoke(cpu, inputs))):
                    np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-6, err_msg=f"{name}, CPU, invoke {k + 1}, output {i}")
        stats = delegate.partition_stats()
        assert [s.graph for s in stats] == ["replaying"], [s.graph for s in stats]
        if precision == "float32" and resolver is None:
            assert_matches_cpu(m, lambda: DEVICES[name](), inputs=cpu_inputs, invokes=INVOKES)


def refused(m: bytes, *words: str) -> str:
    """The node is not taken and the reason names every one of ``words``."""
    plan = plan_delegation(GpuDelegate(device="host"), m)
    assert plan.taken == [], f"the node was delegated: {plan}"
    reason = plan.reason(0)
    for word in words:
        assert word in reason, f"{word!r} not in {reason!r}"
    return reason


def claims(op) -> set[int]:
    entry = gpu_support_table().get(op, frozenset())
    return set(range(1, entry + 1)) if isinstance(entry, int) else set(entry)


def above_claim(op, m_float: bytes, version: int) -> None:
    """``version`` is the one just above the claim; a float node stamped with it is refused
    with a reason naming the version."""
    assert version not in claims(op) and version - 1 in claims(op)
    refused(m_float, f"{B(op).name} v{version}")


TYPES = [  # (dtype, quantization) of the moved types, and their ids
    pytest.param(np.float32, None, id="float32"),
    pytest.param(np.int8, Q8, id="int8"),
    pytest.param(np.uint8, QU8, id="uint8"),
    pytest.param(np.int32, None, id="int32"),
]


# -- SLICE ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,q", TYPES)
def test_slice(dtype, q):
    index_type = I64 if dtype == np.int32 else I32
    m = model(B.SLICE, [In([2, 5, 6, 3], dtype, q), np.array([1, 1, 0, 0], index_type), np.array([1, -1, 4, 2], index_type)], [(dtype, q)])
    assert stamped_version(m) == (2 if dtype == np.int8 else 1)
    check(m)


def test_slice_refusals():
    m = model(B.SLICE, [In([4, 6]), np.array([1, 0], I32), np.array([2, 3], I32)], [np.float32], version=3)
    above_claim(B.SLICE, m, 3)
    q16 = quantization(0.001, 0)
    m = model(B.SLICE, [In([4, 6], np.int16, q16), np.array([1, 0], I32), np.array([2, 3], I32)], [(np.int16, q16)])
    assert stamped_version(m) == 4
    refused(m, "SLICE v4")
    m = _build(B.SLICE, [In([4, 6]), In([2], I32), np.array([2, 3], I32)], [(np.float32, None)], None, [[2, 3]])
    refused(m, "begin must be a constant")


# -- UNPACK ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,q", TYPES)
def test_unpack(dtype, q):
    m = model(B.UNPACK, [In([2, 3, 4], dtype, q)], [(dtype, q)] * 3, UnpackParams(num=3, axis=1))
    assert stamped_version(m) == (2 if dtype in (np.int8, np.uint8) else 1)
    check(m)


def test_unpack_last_axis():
    check(model(B.UNPACK, [In([3, 2])], [np.float32] * 2, UnpackParams(num=2, axis=-1)))


def test_unpack_refusals():
    m = model(B.UNPACK, [In([2, 3])], [np.float32] * 2, UnpackParams(num=2, axis=0), version=3)
    above_claim(B.UNPACK, m, 3)
    m = _build(B.UNPACK, [In([2, 3], np.bool_)], [(np.bool_, None)] * 2, UnpackParams(num=2, axis=0), [[3], [3]])
    assert stamped_version(m) == 3
    refused(m, "UNPACK v3")


# -- TRANSPOSE ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,q", TYPES)
def test_transpose(dtype, q):
    perm = np.array([0, 3, 1, 2], I32)
    m = model(B.TRANSPOSE, [In([2, 3, 4, 5], dtype, q), perm], [(dtype, q)])
    assert stamped_version(m) == (2 if dtype == np.int8 else 1)
    check(m)


@pytest.mark.parametrize("shape,perm", [([3, 4], [1, 0]), ([2, 3, 4], [2, 0, 1]), ([2, 3], [0, 1]), ([4, 2, 3], [-1, 0, 1])])
def test_transpose_of_other_ranks(shape, perm):
    check(model(B.TRANSPOSE, [In(shape), np.array(perm, I32)], [np.float32]))


def test_transpose_refusals():
    m = model(B.TRANSPOSE, [In([2, 3]), np.array([1, 0], I32)], [np.float32], version=3)
    above_claim(B.TRANSPOSE, m, 3)
    m = _build(B.TRANSPOSE, [In([2, 3, 4, 5, 6]), np.array([4, 3, 2, 1, 0], I32)], [(np.float32, None)], None, [[6, 5, 4, 3, 2]])
    assert stamped_version(m) == 4
    refused(m, "TRANSPOSE v4")
    m = _build(B.TRANSPOSE, [In([2, 3]), In([2], I32)], [(np.float32, None)], None, [[3, 2]])
    refused(m, "perm must be a constant")
    # LiteRT's reference TRANSPOSE reads an INT64 perm as INT32 values (the CPU kernel reads it
    # as INT64): the GPU takes INT32 perms only
    m = _build(B.TRANSPOSE, [In([2, 3]), np.array([1, 0], I64)], [(np.float32, None)], None, [[3, 2]])
    refused(m, "INT64", "it must be INT32")


# -- DEPTH_TO_SPACE / SPACE_TO_DEPTH --------------------------------------------------------------


@pytest.mark.parametrize("dtype,q", TYPES)
def test_depth_to_space(dtype, q):
    m = model(B.DEPTH_TO_SPACE, [In([2, 3, 4, 8], dtype, q)], [(dtype, q)], DepthToSpaceParams(block_size=2))
    assert stamped_version(m) == (2 if dtype == np.int8 else 1)
    check(m, reference=builtin_oracle if dtype == np.int8 else litert_interpreter)


@pytest.mark.parametrize("dtype,q", TYPES)
def test_space_to_depth(dtype, q):
    m = model(B.SPACE_TO_DEPTH, [In([2, 4, 6, 3], dtype, q)], [(dtype, q)], SpaceToDepthParams(block_size=2))
    assert stamped_version(m) == (2 if dtype == np.int8 else 1)
    check(m)


@pytest.mark.parametrize("op,params,shape", [
    (B.DEPTH_TO_SPACE, DepthToSpaceParams(block_size=3), [1, 2, 1, 18]),
    (B.SPACE_TO_DEPTH, SpaceToDepthParams(block_size=3), [1, 3, 6, 2]),
    (B.DEPTH_TO_SPACE, DepthToSpaceParams(block_size=1), [1, 2, 2, 3]),
], ids=["d2s-3", "s2d-3", "d2s-1"])
def test_other_block_sizes(op, params, shape):
    check(model(op, [In(shape)], [np.float32], params))


@pytest.mark.parametrize("op,params", [(B.DEPTH_TO_SPACE, DepthToSpaceParams(block_size=2)), (B.SPACE_TO_DEPTH, SpaceToDepthParams(block_size=2))], ids=["d2s", "s2d"])
def test_block_refusals(op, params):
    m = model(op, [In([1, 4, 4, 4])], [np.float32], params, version=3)
    above_claim(op, m, 3)
    q16 = quantization(0.001, 0)
    m = _build(op, [In([1, 4, 4, 4], np.int16, q16)], [(np.int16, q16)], params, [[1, 4, 4, 4]])
    refused(m, "INT16")


def test_depth_to_space_needs_a_multiple_of_the_block_squared():
    m = _build(B.DEPTH_TO_SPACE, [In([1, 2, 2, 6])], [(np.float32, None)], DepthToSpaceParams(block_size=2), [[1, 4, 4, 1]])
    refused(m, "not a multiple of block_size^2")


def test_the_pose_model_runs_in_one_partition():
    """mp_pose_detection's three DEPTH_TO_SPACE nodes were its last CPU nodes: now its 291
    nodes are one GPU partition, and it matches the CPU path."""
    pose = (MODELS / "real" / "mp_pose_detection.tflite").read_bytes()
    delegated = assert_matches_cpu(pose, lambda: GpuDelegate(device="host"), invokes=3, rtol=1e-5, atol=1e-4)
    placements = delegated.node_placements()
    assert len(placements) == 291
    assert all(p.delegated and p.partition == 0 for p in placements), [(p.node, p.op) for p in placements if not p.delegated]
    assert sum(p.op == "DEPTH_TO_SPACE" for p in placements) == 3


# -- GATHER ---------------------------------------------------------------------------------------


def _indices(shape, size, dtype, seed):
    return np.random.default_rng(seed).integers(0, size, shape).astype(dtype)


@pytest.mark.parametrize("dtype,q", TYPES)
def test_gather_constant_indices(dtype, q):
    m = model(B.GATHER, [In([3, 5, 4], dtype, q), np.array([4, 0, 2, 2], I32)], [(dtype, q)], GatherParams(axis=1))
    assert stamped_version(m) == (2 if dtype == np.int8 else 1)
    check(m)


@pytest.mark.parametrize("dtype,q", TYPES)
@pytest.mark.parametrize("index_type", [I32, I64], ids=["int32", "int64"])
def test_gather_runtime_indices(dtype, q, index_type):
    m = model(B.GATHER, [In([6, 2, 3], dtype, q), In([2, 3], index_type)], [(dtype, q)], GatherParams(axis=0))

    def make_inputs(k):
        return [values(dtype, (6, 2, 3), k), _indices((2, 3), 6, index_type, 100 + k)]

    check(m, make_inputs)


def test_gather_last_axis_with_a_scalar_index():
    check(model(B.GATHER, [In([2, 3, 4]), np.array(2, I32)], [np.float32], GatherParams(axis=-1)))


def test_gather_refusals():
    m = model(B.GATHER, [In([4, 3]), np.array([1, 0], I32)], [np.float32], GatherParams(axis=0), version=3)
    above_claim(B.GATHER, m, 3)
    m = _build(B.GATHER, [In([2, 4, 3]), Const(np.zeros([2, 2], I32))], [(np.float32, None)], GatherParams(axis=1, batch_dims=1), [[2, 2, 3]])
    assert stamped_version(m) == 5
    refused(m, "GATHER v5")
    m = _build(B.GATHER, [In([2, 4, 3]), Const(np.zeros([2, 2], I32))], [(np.float32, None)], GatherParams(axis=1, batch_dims=1), [[2, 2, 3]], version=1)
    refused(m, "batch_dims 1 is not supported")  # a v1 stamp does not hide it
    m = _build(B.GATHER, [In([4, 3]), In([2], np.int16)], [(np.float32, None)], GatherParams(axis=0), [[2, 3]])
    assert stamped_version(m) == 6
    refused(m, "GATHER v6")
    m = _build(B.GATHER, [In([4, 3]), np.array([1, 4], I32)], [(np.float32, None)], GatherParams(axis=0), [[2, 3]])
    refused(m, "index 4 is out of range [0, 4)")


# -- TILE -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,q", TYPES)
def test_tile(dtype, q):
    m = model(B.TILE, [In([2, 1, 3], dtype, q), np.array([2, 3, 1], I64 if dtype == np.int32 else I32)], [(dtype, q)])
    assert stamped_version(m) == (3 if dtype == np.int8 else 1)
    check(m, reference=builtin_oracle if dtype == np.int8 else litert_interpreter)


def test_tile_of_rank_4_and_2():
    check(model(B.TILE, [In([1, 2, 2, 3]), np.array([2, 1, 2, 1], I32)], [np.float32]))
    check(model(B.TILE, [In([2, 3]), np.array([1, 1], I32)], [np.float32]))


def test_tile_refusals():
    m = model(B.TILE, [In([2, 3]), np.array([2, 1], I32)], [np.float32], version=2)
    assert 2 not in claims(B.TILE) and {1, 3} <= claims(B.TILE)
    refused(m, "TILE v2")
    m = model(B.TILE, [In([2, 3]), np.array([2, 1], I32)], [np.float32], version=4)
    refused(m, "TILE v4")
    m = model(B.TILE, [In([2, 3], np.int16), np.array([2, 1], I32)], [np.int16])
    assert stamped_version(m) == 1
    refused(m, "INT16")
    m = _build(B.TILE, [In([2, 3]), In([2], I32)], [(np.float32, None)], None, [[4, 3]])
    refused(m, "multiples must be a constant")


# -- MIRROR_PAD -----------------------------------------------------------------------------------

MIRROR_PADS = np.array([[0, 1], [2, 3], [1, 0], [2, 2]], I32)


@pytest.mark.parametrize("dtype,q", TYPES)
@pytest.mark.parametrize("mode", [MirrorPadMode.REFLECT, MirrorPadMode.SYMMETRIC], ids=["reflect", "symmetric"])
def test_mirror_pad(dtype, q, mode):
    m = model(B.MIRROR_PAD, [In([2, 4, 3, 3], dtype, q), MIRROR_PADS], [(dtype, q)], MirrorPadParams(mode=mode))
    assert stamped_version(m) == (2 if dtype == np.int8 else 1)
    check(m)


def test_mirror_pad_symmetric_up_to_the_size_with_int64_paddings():
    m = model(B.MIRROR_PAD, [In([3, 2]), np.array([[3, 3], [2, 0]], I64)], [np.float32], MirrorPadParams(mode=MirrorPadMode.SYMMETRIC))
    check(m)


def test_mirror_pad_refusals():
    m = model(B.MIRROR_PAD, [In([3, 4]), np.array([[1, 1], [0, 2]], I32)], [np.float32], MirrorPadParams(), version=3)
    above_claim(B.MIRROR_PAD, m, 3)
    m = _build(B.MIRROR_PAD, [In([3, 4]), np.array([[3, 0], [0, 0]], I32)], [(np.float32, None)], MirrorPadParams(), [[6, 4]])
    refused(m, "REFLECT padding [3, 0] of axis 0 is larger than 2")
    m = _build(B.MIRROR_PAD, [In([3, 4], np.int8, Q8), np.array([[1, 0], [0, 0]], I32)], [(np.int8, quantization(0.1, 0))], MirrorPadParams(), [[4, 4]])
    refused(m, "TFLite requires them equal")


# -- SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN -------------------------------------------------------


def reduce_model(op, shape, axes, keep_dims=False, dtype=np.float32, q=None, out_q=None, version=None):
    axes = np.asarray(axes, I32)
    return model(op, [In(shape, dtype, q), axes], [(dtype, out_q if out_q is not None else q)], ReducerParams(keep_dims=keep_dims), version=version)


REDUCE_AXES = [
    pytest.param([1, 2], False, id="axes12"),
    pytest.param([0, -1], True, id="axes0-1-keep"),
    pytest.param([2, 2, -1], False, id="repeated"),
    pytest.param([0, 1, 2], False, id="all"),
    pytest.param([0, 1, 2], True, id="all-keep"),
    pytest.param([], False, id="none"),
]


@pytest.mark.parametrize("op", [B.SUM, B.REDUCE_PROD, B.REDUCE_MAX, B.REDUCE_MIN], ids=lambda o: B(o).name)
@pytest.mark.parametrize("axes,keep_dims", REDUCE_AXES)
def test_float_reductions(op, axes, keep_dims):
    m = reduce_model(op, [2, 3, 4], axes, keep_dims)
    assert stamped_version(m) == 1
    # SUM: multiples of 1/16 (exact in any order); PROD: no cancellation, 1e-5 relative
    check(m, exact=op != B.REDUCE_PROD)


def _with_specials(shape, seed, first_nan):
    """Values with NaN and +-inf sprinkled in (and a NaN first element when asked)."""
    rng = np.random.default_rng(seed)
    x = values(np.float32, shape, seed, exact=True)
    x[rng.random(shape) < 0.2] = np.nan
    x[rng.random(shape) < 0.1] = -np.inf
    x[rng.random(shape) < 0.1] = np.inf
    x[0, 1, :] = np.nan  # a slot of only NaN
    x.reshape(-1)[0] = np.nan if first_nan else -np.inf
    return x


@pytest.mark.parametrize("op", [B.REDUCE_MAX, B.REDUCE_MIN], ids=lambda o: B(o).name)
@pytest.mark.parametrize("axes,keep_dims", REDUCE_AXES)
def test_max_min_nan_and_infinity_rules(op, axes, keep_dims):
    m = reduce_model(op, [2, 3, 4], axes, keep_dims)
    check(m, lambda k: [_with_specials((2, 3, 4), k, first_nan=k % 2 == 1)])


@pytest.mark.parametrize("op", [B.SUM, B.REDUCE_PROD, B.REDUCE_MAX, B.REDUCE_MIN], ids=lambda o: B(o).name)
def test_float_reductions_of_an_empty_input(op):
    check(reduce_model(op, [2, 0, 3], [1]), lambda k: [np.zeros([2, 0, 3], np.float32)])


@pytest.mark.parametrize("dtype,q,version", [
    pytest.param(np.int8, Q8, 2, id="int8"),
    pytest.param(np.uint8, QU8, 1, id="uint8"),
    pytest.param(np.int32, None, 1, id="int32"),
])
@pytest.mark.parametrize("op", [B.REDUCE_MAX, B.REDUCE_MIN], ids=lambda o: B(o).name)
@pytest.mark.parametrize("axes,keep_dims", [([1], False), ([0, 2], True), ([0, 1, 2], False)], ids=["axis1", "axes02-keep", "all"])
def test_integer_max_min(op, dtype, q, version, axes, keep_dims):
    m = reduce_model(op, [2, 3, 4], axes, keep_dims, dtype, q)
    assert stamped_version(m) == version
    check(m)


def test_reduction_refusals():
    q16 = quantization(0.001, 0)
    for op in (B.REDUCE_MAX, B.REDUCE_MIN):
        m = reduce_model(op, [2, 3], [1], dtype=np.int16, q=q16)
        assert stamped_version(m) == 3
        above_claim(op, m, 3)
        m = _build(op, [In([2, 3], np.int8, Q8), np.array([1], I32)], [(np.int8, quantization(0.1, -7))], ReducerParams(), [[2]])
        refused(m, "TFLite requires them equal")
    # (the CPU has no int8 REDUCE_PROD: shapes given). Quantized SUM (v1 uint8, v2 int8) runs
    # on the GPU since issue 23: tests/gpu/test_int8_window_kernels.py.
    m = _build(B.REDUCE_PROD, [In([2, 3], np.int8, Q8), np.array([1], I32)], [(np.int8, Q8)], ReducerParams(), [[2]])
    assert stamped_version(m) == 2
    above_claim(B.REDUCE_PROD, m, 2)
    m = _build(B.SUM, [In([2, 3]), In([1], I32)], [(np.float32, None)], ReducerParams(), [[2]])
    refused(m, "axes must be a constant")


# -- CUMSUM ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum(axis, exclusive, reverse):
    m = model(B.CUMSUM, [In([3, 4, 5]), np.array([axis], I32)], [np.float32], CumsumParams(exclusive=exclusive, reverse=reverse))
    assert stamped_version(m) == 1
    check(m)  # multiples of 1/16: every running sum is exact


def test_cumsum_of_random_values():
    m = model(B.CUMSUM, [In([2, 17]), np.array([1], I32)], [np.float32], CumsumParams())
    check(m, exact=False)


def test_cumsum_refusals():
    m = model(B.CUMSUM, [In([3, 4]), np.array([1], I32)], [np.float32], CumsumParams(), version=2)
    above_claim(B.CUMSUM, m, 2)
    refused(model(B.CUMSUM, [In([3, 4], I32), np.array([1], I32)], [I32], CumsumParams()), "INT32")
    m = _build(B.CUMSUM, [In([3, 4]), In([1], I32)], [(np.float32, None)], CumsumParams(), [[3, 4]])
    refused(m, "axis must be a constant")


# -- a chain of them in one partition --------------------------------------------------------------


def chain_model() -> bytes:
    """x [2, 6, 5, 4] -> SLICE -> TRANSPOSE -> MIRROR_PAD -> DEPTH_TO_SPACE -> GATHER (runtime
    indices) -> TILE -> CUMSUM -> REDUCE_MAX, every intermediate only on the device."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 6, 5, 4])
    idx = g.add_input("idx", [3], np.int32)

    names = iter(range(100))

    def node(op, inputs, shape, params=None):
        out = g.add_tensor(f"t{next(names)}", shape)
        g.add_operator(op, inputs, [out], params)
        return out

    a = node(B.SLICE, [x, g.add_constant("b", np.array([0, 1, 0, 0], I32)), g.add_constant("s", np.array([-1, 4, 4, -1], I32))], [2, 4, 4, 4])
    a = node(B.TRANSPOSE, [a, g.add_constant("p", np.array([0, 2, 1, 3], I32))], [2, 4, 4, 4])
    a = node(B.MIRROR_PAD, [a, g.add_constant("m", np.array([[0, 0], [1, 1], [2, 0], [0, 0]], I32))], [2, 6, 6, 4], MirrorPadParams())
    a = node(B.DEPTH_TO_SPACE, [a], [2, 12, 12, 1], DepthToSpaceParams(block_size=2))
    a = node(B.GATHER, [a, idx], [2, 3, 12, 1], GatherParams(axis=1))
    a = node(B.TILE, [a, g.add_constant("t", np.array([1, 1, 1, 3], I32))], [2, 3, 12, 3])
    a = node(B.CUMSUM, [a, g.add_constant("c", np.array([2], I32))], [2, 3, 12, 3], CumsumParams(reverse=True))
    a = node(B.REDUCE_MAX, [a, g.add_constant("r", np.array([1, 3], I32))], [2, 12], ReducerParams())
    g.add_output(a)
    builder.add_signature("serving_default", g)
    return builder.build()


def test_a_chain_of_these_ops_is_one_partition_replaying_a_graph():
    m = chain_model()

    def make_inputs(k):
        return [values(np.float32, (2, 6, 5, 4), k, exact=True), _indices((3,), 12, I32, 50 + k)]

    check(m, make_inputs)
    for name, make in DEVICES.items():
        delegate = make()
        interpreter = Interpreter(model_content=m)
        interpreter.modify_graph_with_delegate(delegate)
        interpreter.allocate_tensors()
        for k in range(3):
            invoke(interpreter, make_inputs(k))
        last = delegate.last_invoke()
        assert (last.graph_replays, last.uploads, last.downloads) == (1, 2, 1), (name, last)


# -- float16 storage: one case per op -------------------------------------------------------------

FLOAT16_CASES = {
    "slice": lambda: model(B.SLICE, [In([2, 5, 6, 3]), np.array([1, 1, 0, 0], I32), np.array([1, -1, 4, 2], I32)], [np.float32]),
    "unpack": lambda: model(B.UNPACK, [In([2, 3, 4])], [np.float32] * 3, UnpackParams(num=3, axis=1)),
    "transpose": lambda: model(B.TRANSPOSE, [In([2, 3, 4, 5]), np.array([0, 3, 1, 2], I32)], [np.float32]),
    "depth_to_space": lambda: model(B.DEPTH_TO_SPACE, [In([1, 3, 4, 8])], [np.float32], DepthToSpaceParams(block_size=2)),
    "space_to_depth": lambda: model(B.SPACE_TO_DEPTH, [In([1, 4, 6, 3])], [np.float32], SpaceToDepthParams(block_size=2)),
    "gather": lambda: model(B.GATHER, [In([3, 5, 4]), np.array([4, 0, 2], I32)], [np.float32], GatherParams(axis=1)),
    "tile": lambda: model(B.TILE, [In([2, 1, 3]), np.array([2, 3, 1], I32)], [np.float32]),
    "mirror_pad": lambda: model(B.MIRROR_PAD, [In([2, 4, 3, 3]), MIRROR_PADS], [np.float32], MirrorPadParams(mode=MirrorPadMode.SYMMETRIC)),
    "sum": lambda: reduce_model(B.SUM, [2, 3, 4], [0, 2], True),
    "reduce_prod": lambda: reduce_model(B.REDUCE_PROD, [2, 3, 4], [1]),
    "reduce_max": lambda: reduce_model(B.REDUCE_MAX, [2, 3, 4], [2]),
    "reduce_min": lambda: reduce_model(B.REDUCE_MIN, [2, 3, 4], [0, 1]),
    "cumsum": lambda: model(B.CUMSUM, [In([3, 6]), np.array([1], I32)], [np.float32], CumsumParams(exclusive=True, reverse=True)),
}


@pytest.mark.parametrize("case", list(FLOAT16_CASES))
def test_float16_storage(case):
    check(FLOAT16_CASES[case](), precision="float16")


# -- ONE_HOT ---------------------------------------------------------------------------------------


def one_hot_model(shape, depth, axis, index_type=I32) -> bytes:
    inputs = [In(shape, index_type), np.array(depth, I32), np.array(2.5, np.float32), np.array(-0.5, np.float32)]
    return model(B.ONE_HOT, inputs, [np.float32], OneHotParams(axis=axis))


def test_one_hot_v1_is_claimed():
    assert gpu_support_table()[B.ONE_HOT] == 1


@pytest.mark.parametrize("shape,axis,index_type", [([5], -1, I32), ([2, 3], 0, I64), ([2, 3], 1, I32), ([2, 1, 3], -1, I32)],
                         ids=["vector", "axis0-int64", "axis1", "rank3"])
def test_one_hot(shape, axis, index_type):
    m = one_hot_model(shape, 4, axis, index_type)

    def make_inputs(k):  # -1 and 4..5 are outside [0, depth): a row of off values
        return [np.random.default_rng(k).integers(-1, 6, shape).astype(index_type)]

    check(m, make_inputs)
    check(m, make_inputs, precision="float16")


def test_one_hot_refusals():
    m = _build(B.ONE_HOT, [In([3], I32), np.array(4, I32), np.array(1, I32), np.array(0, I32)],
               [(np.int32, None)], OneHotParams(axis=-1), [[3, 4]])
    refused(m, "INT32", "FLOAT32 on/off values")
    m = _build(B.ONE_HOT, [In([3], I32), np.array(4, I32), In([], np.float32), np.array(0.0, np.float32)],
               [(np.float32, None)], OneHotParams(axis=-1), [[3, 4]])
    refused(m, "on_value must be a constant scalar")
    m = _build(B.ONE_HOT, [In([3], I32), np.array(4, I32), np.array(1.0, np.float32), np.array(0.0, np.float32)],
               [(np.float32, None)], OneHotParams(axis=-1), [[3, 4]], version=2)
    refused(m, "ONE_HOT v2")


def test_the_support_table_entries_of_these_ops():
    table = gpu_support_table()
    assert {op: table[op] for op in (
        B.SLICE, B.UNPACK, B.TRANSPOSE, B.DEPTH_TO_SPACE, B.SPACE_TO_DEPTH, B.GATHER, B.TILE, B.MIRROR_PAD,
        B.SUM, B.REDUCE_PROD, B.REDUCE_MAX, B.REDUCE_MIN, B.CUMSUM,
    )} == {
        B.SLICE: 2, B.UNPACK: 2, B.TRANSPOSE: 2, B.DEPTH_TO_SPACE: 2, B.SPACE_TO_DEPTH: 2, B.GATHER: 2,
        B.TILE: frozenset({1, 3}), B.MIRROR_PAD: 2,
        B.SUM: 2, B.REDUCE_PROD: 1, B.REDUCE_MAX: 2, B.REDUCE_MIN: 2, B.CUMSUM: 1,
    }
