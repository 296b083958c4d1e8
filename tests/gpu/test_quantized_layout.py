"""Data movement on the GPU (backends/gpu/ops/reshape.py, pad.py,
concat_split.py, space_depth.py, slicing.py), bit for bit
with LiteRT's reference kernels (BUILTIN_REF): RESHAPE of int8/uint8, PAD / PADV2,
CONCATENATION of int8/uint8 (uint8 inputs rescaled), STRIDED_SLICE, SPLIT, SPLIT_V, PACK
on float32, int8 and uint8.

Every case runs through ``GpuDelegate(device="host")`` and through the emulated CUDA
device (the device branch, CuPy's rules), over four invokes with new inputs (the graph is
captured at the second and replayed from the third), against the oracle and against our
CPU path; the node must have been delegated and its partition must replay a graph. Each
claimed (op, version) also has a test that the version above the claim (or a type not
claimed) is refused, with a reason naming it.
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
from schema.builder import quantization
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.params import (
    ConcatenationParams,
    PackParams,
    ReshapeParams,
    SplitParams,
    SplitVParams,
    StridedSliceParams,
)

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"
INVOKES = 4

DEVICES = {
    "host": lambda precision="float32": GpuDelegate(device="host", precision=precision),
    "emulated-cuda": lambda precision="float32": GpuDelegate(device=emulated_cuda_device(), precision=precision),
}


# -- building one-node models ---------------------------------------------------------------------


def _build(op, inputs, outputs, params, shapes) -> bytes:
    return single_op_model(op, inputs, [Out(shape, dtype, q) for (dtype, q), shape in zip(outputs, shapes)], params)


def model(op, inputs, outputs, params=None) -> bytes:
    """A one-node model; ``outputs`` are (dtype, quantization) pairs, their shapes what our CPU
    kernel's prepare gives."""
    outputs = [o if isinstance(o, tuple) else (o, None) for o in outputs]
    return single_op_model(op, inputs, [Out(None, *o) for o in outputs], params)


def values(dtype, shape, seed, *, float16_exact=False) -> np.ndarray:
    """Random values over a quantized type's whole range; floats in [-2, 2] (multiples of
    1/16 with ``float16_exact``: what float16 storage holds exactly)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        if float16_exact:
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
    """LiteRT on its default resolver: only for (op, version) pairs BUILTIN_REF does not
    register although the default registration is the reference kernel (STRIDED_SLICE
    v5-v8: ``Register_STRIDED_SLICE()`` returns ``Register_STRIDED_SLICE_REF()``), as
    tests/cpu/test_slice.py does."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    return LiteRT(model_content=bytes(m), experimental_op_resolver_type=OpResolverType.BUILTIN)


def check(m: bytes, make_inputs=None, *, precision="float32", devices=tuple(DEVICES), reference=litert_interpreter) -> None:
    """Through each device: the node delegated, four invokes bit-exact with BUILTIN_REF
    (``reference``), a graph replaying; then the same model against our CPU path
    (assert_matches_cpu)."""
    oracle = reference(m)
    details = oracle.get_input_details()
    if make_inputs is None:
        def make_inputs(k):
            return [values(d["dtype"], tuple(d["shape"]), 10 * k + i, float16_exact=precision == "float16")
                    for i, d in enumerate(details)]
    for name in devices:
        delegate = DEVICES[name](precision)
        interpreter = Interpreter(model_content=m)
        interpreter.modify_graph_with_delegate(delegate)
        interpreter.allocate_tensors()
        placements = interpreter.node_placements()
        assert placements and all(p.delegated for p in placements), [(p.op, p.version, p.rejections) for p in placements]
        for k in range(INVOKES):
            inputs = make_inputs(k)
            got, want = invoke(interpreter, inputs), run_interpreter(oracle, inputs)
            assert len(got) == len(want)
            for i, (g, w) in enumerate(zip(got, want)):
                where = f"{name}, invoke {k + 1}, output {i}"
                assert g.dtype == w.dtype and g.shape == w.shape, f"{where}: {g.dtype}{g.shape} vs LiteRT {w.dtype}{w.shape}"
                np.testing.assert_array_equal(g, w, err_msg=where)
        stats = delegate.partition_stats()
        assert [s.graph for s in stats] == ["replaying"], [s.graph for s in stats]
        if precision == "float32":
            assert_matches_cpu(m, lambda: DEVICES[name](), invokes=INVOKES)


def refused(m: bytes, *words: str) -> str:
    """The node is not taken and the reason names every one of ``words``."""
    plan = plan_delegation(GpuDelegate(device="host"), m)
    assert plan.taken == [], f"the node was delegated: {plan}"
    reason = plan.reason(0)
    for word in words:
        assert word in reason, f"{word!r} not in {reason!r}"
    return reason


def claims(op) -> set[int]:
    entry = gpu_support_table()[op]
    return set(range(1, entry + 1)) if isinstance(entry, int) else set(entry)


Q8 = quantization(0.05, -7)     # an int8 activation
QU8 = quantization(0.04, 131)   # a uint8 activation
I32 = np.int32


# -- RESHAPE --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,q", [(np.int8, Q8), (np.uint8, QU8)], ids=["int8", "uint8"])
def test_reshape_int8_uint8_by_shape_tensor(dtype, q):
    m = model(B.RESHAPE, [In([1, 4, 4, 8], dtype, q), np.array([1, -1, 16], I32)], [(dtype, q)])
    assert stamped_version(m) == 1
    check(m)


def test_reshape_int8_by_params():
    m = model(B.RESHAPE, [In([2, 3, 4], np.int8, Q8)], [(np.int8, Q8)], ReshapeParams(new_shape=(6, 4)))
    check(m)


def test_reshape_int8_with_another_output_quantization_is_refused():
    m = model(B.RESHAPE, [In([2, 6], np.int8, Q8), np.array([3, 4], I32)], [(np.int8, quantization(0.1, -7))])
    refused(m, "TFLite requires them equal")


def test_reshape_of_int16_is_refused_naming_the_type():
    q = quantization(0.001, 0)
    m = model(B.RESHAPE, [In([2, 6], np.int16, q), np.array([3, 4], I32)], [(np.int16, q)])
    assert 1 in claims(B.RESHAPE) and stamped_version(m) == 1  # RESHAPE has one version: the type decides
    refused(m, "INT16")


# -- PAD / PADV2 ----------------------------------------------------------------------------------

PADS = np.array([[0, 1], [2, 0], [1, 3], [0, 2]], I32)


@pytest.mark.parametrize("dtype,q,version", [(np.int8, Q8, 2), (np.uint8, QU8, 1)], ids=["int8", "uint8"])
def test_pad_fills_with_the_output_zero_point(dtype, q, version):
    m = model(B.PAD, [In([2, 3, 4, 2], dtype, q), PADS], [(dtype, q)])
    assert stamped_version(m) == version
    check(m)


def test_pad_int8_with_int64_paddings_of_rank_2():
    m = model(B.PAD, [In([3, 5], np.int8, Q8), np.array([[2, 0], [1, 1]], np.int64)], [(np.int8, Q8)])
    check(m)


@pytest.mark.parametrize("dtype,q,version", [(np.int8, Q8, 2), (np.uint8, QU8, 1)], ids=["int8", "uint8"])
def test_padv2_with_a_constant_value(dtype, q, version):
    value = Const(np.array([np.iinfo(dtype).max], dtype), q)  # the type's maximum: not the zero point
    m = model(B.PADV2, [In([1, 3, 4, 2], dtype, q), PADS, value], [(dtype, q)])
    assert stamped_version(m) == version
    check(m)


@pytest.mark.parametrize("dtype,q", [(np.int8, Q8), (np.uint8, QU8), (np.float32, None)], ids=["int8", "uint8", "float32"])
def test_padv2_with_a_runtime_value(dtype, q):
    m = model(B.PADV2, [In([2, 3, 3], dtype, q), np.array([[1, 0], [0, 2], [3, 1]], I32), In([1], dtype, q)], [(dtype, q)])
    check(m)


def test_padv2_float32_with_a_constant_value():
    m = model(B.PADV2, [In([1, 3, 4, 2]), PADS, np.array([-1.25], np.float32)], [np.float32])
    assert stamped_version(m) == 1
    check(m)


def test_padv2_float32_in_float16_storage():
    m = model(B.PADV2, [In([1, 3, 4, 2]), PADS, np.array([0.75], np.float32)], [np.float32])
    check(m, precision="float16")


def test_padv2_value_with_another_quantization_is_refused():
    value = Const(np.array([3], np.int8), quantization(0.5, 0))
    m = _build(B.PADV2, [In([2, 3], np.int8, Q8), np.array([[1, 1], [0, 0]], I32), value], [(np.int8, Q8)], None, [[4, 3]])
    refused(m, "TFLite requires them equal")


@pytest.mark.parametrize("op", [B.PAD, B.PADV2], ids=lambda o: B(o).name)
def test_pad_above_version_2_is_refused_naming_the_version(op):
    q = quantization(0.001, 0)
    m = model(op, [In([2, 3], np.int16, q), np.array([[1, 1], [0, 0]], I32)], [(np.int16, q)])
    assert stamped_version(m) == 3 and max(claims(op)) == 2
    refused(m, "v3")


# -- CONCATENATION --------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [3, -2, 0])
def test_concatenation_int8_v2(axis):
    shapes = [[2, 3, 4, 5]] * 3
    shapes = [[s + k if i == axis % 4 else s for i, s in enumerate(shape)] for k, shape in enumerate(shapes)]
    m = model(B.CONCATENATION, [In(s, np.int8, Q8) for s in shapes], [(np.int8, Q8)], ConcatenationParams(axis=axis))
    assert stamped_version(m) == 2
    check(m)


def test_concatenation_int8_with_a_constant_input():
    constant = Const(values(np.int8, (2, 2), 7), Q8)
    m = model(B.CONCATENATION, [In([2, 3], np.int8, Q8), constant], [(np.int8, Q8)], ConcatenationParams(axis=1))
    check(m)


def test_concatenation_of_ten_int8_inputs_runs_in_a_graph():
    # More than 8 arrays: CuPy's concatenate would upload a pointer table (not capturable).
    m = model(B.CONCATENATION, [In([1, 2, 3], np.int8, Q8) for _ in range(10)], [(np.int8, Q8)], ConcatenationParams(axis=2))
    check(m)


@pytest.mark.parametrize("axis", [1, -1])
def test_concatenation_uint8_v1_rescales_inputs_with_other_quantization(axis):
    params = [(0.04, 131), (0.013, 7), (0.1, 250), (0.5, 128)]  # the first equals the output's: copied
    shapes = [[2, 3, 4]] * 4
    shapes = [[s + k if i == axis % 3 else s for i, s in enumerate(shape)] for k, shape in enumerate(shapes)]
    inputs = [In(s, np.uint8, quantization(*p)) for s, p in zip(shapes, params)]
    m = model(B.CONCATENATION, inputs, [(np.uint8, QU8)], ConcatenationParams(axis=axis))
    assert stamped_version(m) == 1
    check(m)


def test_concatenation_uint8_rescales_a_constant_input_and_saturates():
    constant = Const(values(np.uint8, (3, 2), 3), quantization(0.5, 100))  # a much wider range: clamps at 0 and 255
    m = model(
        B.CONCATENATION, [In([3, 4], np.uint8, quantization(0.001, 0)), constant, In([3, 1], np.uint8, QU8)],
        [(np.uint8, QU8)], ConcatenationParams(axis=1),
    )
    check(m)


def test_concatenation_uint8_with_equal_quantization_copies():
    m = model(B.CONCATENATION, [In([2, 2, 3], np.uint8, QU8), In([2, 1, 3], np.uint8, QU8)], [(np.uint8, QU8)],
              ConcatenationParams(axis=1))
    check(m)


def test_concatenation_int8_needing_requantization_is_refused():
    m = _build(B.CONCATENATION, [In([2, 3], np.int8, Q8), In([2, 3], np.int8, quantization(0.1, 0))],
               [(np.int8, Q8)], ConcatenationParams(axis=0), [[4, 3]])
    refused(m, "TFLite requires them equal")


def test_concatenation_int8_with_a_fused_activation_is_refused():
    m = _build(B.CONCATENATION, [In([2, 3], np.int8, Q8), In([2, 3], np.int8, Q8)], [(np.int8, Q8)],
               ConcatenationParams(axis=0, fused_activation_function=Act.RELU), [[4, 3]])
    refused(m, "RELU")


def test_concatenation_above_version_2_is_refused_naming_the_version():
    q = quantization(0.001, 0)
    m = model(B.CONCATENATION, [In([2, 3], np.int16, q), In([2, 3], np.int16, q)], [(np.int16, q)], ConcatenationParams(axis=0))
    assert stamped_version(m) == 3 and max(claims(B.CONCATENATION)) == 2
    refused(m, "v3")


# -- STRIDED_SLICE --------------------------------------------------------------------------------


def strided(x: In, begin, end, strides, **params) -> bytes:
    return model(
        B.STRIDED_SLICE, [x, np.array(begin, I32), np.array(end, I32), np.array(strides, I32)],
        [(x.dtype, x.q)], StridedSliceParams(**params),
    )


@pytest.mark.parametrize("dtype,q,version", [(np.float32, None, 1), (np.uint8, QU8, 1), (np.int8, Q8, 2)],
                         ids=["float32", "uint8", "int8"])
def test_strided_slice_masks_negative_strides_and_shrink(dtype, q, version):
    m = strided(In([3, 7, 6, 4], dtype, q), [1, -1, 0, 1], [3, 0, 6, 0], [1, -2, 2, 1],
                begin_mask=0b0100, end_mask=0b1000, shrink_axis_mask=0)
    assert stamped_version(m) == version
    check(m)
    check(strided(In([3, 7, 6], dtype, q), [1, 2, -1], [2, 7, 0], [1, 3, -1], shrink_axis_mask=0b001))


@pytest.mark.parametrize(
    "begin, end, strides",
    [
        ([-10, -10], [10, 10], [1, 1]),  # out of range: clamped
        ([10, 10], [-10, -10], [-1, -1]),  # out of range backwards: clamped
        ([3, 1], [1, 3], [1, 1]),  # empty along the first axis
        ([-1, 5], [0, 0], [-1, -2]),  # backwards from the last element
    ],
)
def test_strided_slice_clamped_empty_and_backwards(begin, end, strides):
    check(strided(In([4, 6], np.int8, Q8), begin, end, strides))


def test_strided_slice_of_the_streaming_model():
    # mww_hey_jarvis's pattern: drop the first frames of the state (begin_mask 13, end_mask 15).
    m = strided(In([1, 5, 1, 40], np.int8, Q8), [0, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], begin_mask=13, end_mask=15)
    check(m)


@pytest.mark.parametrize("dtype,q", [(np.float32, None), (np.int8, Q8)], ids=["float32", "int8"])
def test_strided_slice_v6_ellipsis_and_new_axis(dtype, q):
    m = strided(In([2, 3, 4], dtype, q), [0, 1, 0], [0, 3, 1], [1, 1, 1], ellipsis_mask=0b001, new_axis_mask=0b100)
    assert stamped_version(m) == 6
    check(m, reference=builtin_oracle)
    m = strided(In([4, 5], dtype, q), [0, 1, 0], [0, 4, 0], [1, 2, 1], new_axis_mask=0b101)
    assert stamped_version(m) == 6
    check(m, reference=builtin_oracle)


@pytest.mark.parametrize("dtype,q", [(np.float32, None), (np.uint8, QU8)], ids=["float32", "uint8"])
def test_strided_slice_v8_offset(dtype, q):
    m = strided(In([4, 6], dtype, q), [1, -4], [2, 3], [1, 1], offset=True)
    assert stamped_version(m) == 8
    check(m, reference=builtin_oracle)
    check(strided(In([4, 6], dtype, q), [3, 5], [-2, -3], [-1, -2], offset=True), reference=builtin_oracle)


def test_strided_slice_float32_in_float16_storage():
    check(strided(In([3, 7, 6]), [1, -1, 0], [3, 0, 6], [1, -2, 2]), precision="float16")


def test_strided_slice_with_runtime_begin_is_refused():
    m = _build(B.STRIDED_SLICE, [In([4, 6]), In([2], I32), np.array([2, 3], I32), np.array([1, 1], I32)],
               [(np.float32, None)], StridedSliceParams(), [[2, 3]])
    refused(m, "begin", "constant")


@pytest.mark.parametrize("version", [3, 7])
def test_strided_slice_of_an_unclaimed_version_is_refused_naming_it(version):
    dtype = {3: np.bool_, 7: np.uint32}[version]
    m = strided(In([4, 6], dtype), [1, 0], [3, 6], [1, 2])
    assert stamped_version(m) == version and version not in claims(B.STRIDED_SLICE)
    refused(m, f"v{version}")


# -- SPLIT / SPLIT_V ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,q,version", [(np.float32, None, 1), (np.uint8, QU8, 1), (np.int8, Q8, 2)],
                         ids=["float32", "uint8", "int8"])
@pytest.mark.parametrize("axis", [1, -1])
def test_split(dtype, q, version, axis):
    m = model(B.SPLIT, [np.array([axis], I32), In([2, 6, 3, 9], dtype, q)], [(dtype, q)] * 3, SplitParams(num_splits=3))
    assert stamped_version(m) == version
    check(m)


def test_split_above_version_2_is_refused_naming_the_version():
    m = model(B.SPLIT, [np.array([0], I32), In([4, 3], I32)], [I32, I32], SplitParams(num_splits=2))
    assert stamped_version(m) == 3 and max(claims(B.SPLIT)) == 2
    refused(m, "v3")


@pytest.mark.parametrize("dtype,q,version", [(np.float32, None, 1), (np.uint8, QU8, 1), (np.int8, Q8, 2)],
                         ids=["float32", "uint8", "int8"])
def test_split_v(dtype, q, version):
    m = model(B.SPLIT_V, [In([2, 9, 3], dtype, q), np.array([2, -1, 4], I32), np.array([-2], I32)], [(dtype, q)] * 3,
              SplitVParams(num_splits=3))
    assert stamped_version(m) == version
    check(m)


def test_split_v_of_an_unclaimed_type_is_refused_naming_it():
    q = quantization(0.001, 0)
    m = model(B.SPLIT_V, [In([4, 3], np.int16, q), np.array([1, 3], I32), np.array([0], I32)], [(np.int16, q)] * 2,
              SplitVParams(num_splits=2))
    assert stamped_version(m) == 1  # SPLIT_V's versions do not tell int16 from float32
    refused(m, "INT16")


# -- PACK -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,q,version", [(np.float32, None, 1), (np.uint8, QU8, 1), (np.int8, Q8, 2)],
                         ids=["float32", "uint8", "int8"])
@pytest.mark.parametrize("axis", [0, -1, 1])
def test_pack(dtype, q, version, axis):
    m = model(B.PACK, [In([2, 3, 4], dtype, q) for _ in range(3)], [(dtype, q)], PackParams(values_count=3, axis=axis))
    assert stamped_version(m) == version
    check(m)


def test_pack_of_ten_inputs_runs_in_a_graph():
    m = model(B.PACK, [In([3, 2], np.int8, Q8) for _ in range(10)], [(np.int8, Q8)], PackParams(values_count=10, axis=1))
    check(m)


def test_pack_above_version_2_is_refused_naming_the_version():
    q = quantization(0.001, 0)
    m = model(B.PACK, [In([2, 3], np.int16, q)] * 2, [(np.int16, q)], PackParams(values_count=2, axis=0))
    assert stamped_version(m) == 3 and max(claims(B.PACK)) == 2
    refused(m, "v3")


# -- converter models -----------------------------------------------------------------------------


@pytest.mark.parametrize("path, op", [
    ("converter/pad_int8", "PAD"),
    ("converter/concat_int8", "CONCATENATION"),
    ("converter/reshape_int8", "RESHAPE"),
    ("real/mltk_keyword_spotting_dscnn_int8", "RESHAPE"),
], ids=lambda v: v.split("/")[-1])
def test_int8_models_run_their_data_movement_on_the_gpu(path, op):
    m = (MODELS / f"{path}.tflite").read_bytes()
    delegated = assert_matches_cpu(m, lambda: GpuDelegate(device="host"), invokes=3)
    mine = [p for p in delegated.node_placements() if p.op == op]
    assert mine and all(p.delegated for p in mine), [(p.op, p.rejections) for p in mine]
