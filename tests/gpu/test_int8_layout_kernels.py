"""The 8-bit data movement kernels (``int8_layout.cu``: PAD, CONCATENATION with rescale
tables; ``space_batch.cu``: SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND of 1-, 2- and 4-byte
elements) and their numpy twins (``backends/gpu/cuda/int8_layout.py``, ``space_batch.py``):
each twin computes what its kernel computes (built for the CPU by the host shim), bit for
bit, in one launch (per 8 concatenated inputs), and both equal numpy's own pad /
concatenate and table lookup. SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND nodes equal BUILTIN_REF
and our CPU path here; the other ops end to end against the oracle are in
test_quantized_layout.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.cuda.int8_layout import ByteConcatenationCuda, BytePadCuda
from backends.gpu.cuda.space_batch import SpaceBatchCuda, SpaceBatchGeometry
from interpreter import Interpreter
from interpreter.testing import assert_matches_cpu
from kernel_twin import assert_twin_matches, run_both_ways
from oracle import random_inputs, run_interpreter, run_litert
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType as T

RNG = np.random.default_rng(3)
SOURCE = "int8_layout.cu"


def full_range(dtype, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize(
    "shape, before, after, value",
    [((2, 3, 4, 5), (0, 1, 2, 0), (1, 0, 3, 2), -7), ((5,), (3,), (0,), 0), ((3, 4), (0, 0), (0, 0), 5), ((1, 2, 3), (2, 2, 2), (1, 1, 1), -128)],
    ids=str,
)
def test_pad_twin_matches_the_kernel_and_numpy(shape, before, after, value, dtype):
    if dtype == np.uint8:
        value = abs(value) % 256
    x = full_range(dtype, shape)
    both = run_both_ways(lambda **where: BytePadCuda(before, after, value, dtype, **where), SOURCE, [x])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.kernel[0], np.pad(x, list(zip(before, after)), constant_values=value))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("count", [1, 2, 6, 8, 11])
@pytest.mark.parametrize("axis", [0, 2, -1])
@pytest.mark.parametrize("rescaled", [False, True], ids=["moved", "rescaled"])
def test_concatenation_twin_matches_the_kernel_and_numpy(axis, count, dtype, rescaled):
    shapes = []
    for k in range(count):
        shape = [2, 3, 4]
        shape[axis] = 1 + k % 3
        shapes.append(tuple(shape))
    inputs = [full_range(dtype, s) for s in shapes]
    tables = np.stack([full_range(dtype, (256,)) for _ in inputs]).view(np.uint8) if rescaled else None
    launches = -(-count // 8)
    both = run_both_ways(lambda **where: ByteConcatenationCuda(axis, **where), SOURCE, [tables, *inputs],
                         call=lambda launcher, tables, *xs: launcher(list(xs), tables))
    assert both.kernel_launches == launches
    assert_twin_matches(both)
    looked_up = inputs if tables is None else [tables[k].view(dtype)[x.view(np.uint8)] for k, x in enumerate(inputs)]
    np.testing.assert_array_equal(both.kernel[0], np.concatenate(looked_up, axis=axis))


# -- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND ----------------------------------------------------------

SPACE_BATCH_CASES = [
    # input shape (space-to-batch), block, paddings
    ((1, 12, 12, 4), (2, 2), ((2, 2), (2, 2))),
    ((2, 5, 7, 3), (2, 3), ((1, 0), (0, 2))),
    ((1, 4, 4, 1), (1, 1), ((0, 0), (0, 0))),
    ((3, 6, 2), (3,), ((0, 3),)),  # a 3-D input (v3)
]


def space_batch_geometries(shape, block, paddings):
    to_batch = SpaceBatchGeometry.space_to_batch(shape, block, paddings)
    out_shape = list(to_batch.out_shape) if len(shape) == 4 else [to_batch.out_shape[0], to_batch.out_shape[1], shape[-1]]
    back = SpaceBatchGeometry.batch_to_space(out_shape, block, paddings)
    return to_batch, out_shape, back


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.float16, np.float32], ids=str)
@pytest.mark.parametrize("shape, block, paddings", SPACE_BATCH_CASES, ids=str)
def test_space_to_batch_and_back_twins_match_the_kernels(shape, block, paddings, dtype):
    x = (RNG.standard_normal(shape) * 50).astype(dtype)
    fill = 7 if dtype in (np.int8, np.uint8) else 0
    to_batch, out_shape, back = space_batch_geometries(shape, block, paddings)
    there = run_both_ways(lambda **where: SpaceBatchCuda(to_batch, True, fill, **where), "space_batch.cu", [x],
                          call=lambda launcher, x: launcher(x, out_shape))
    assert there.kernel_launches == 1
    assert_twin_matches(there)
    again = run_both_ways(lambda **where: SpaceBatchCuda(back, False, **where), "space_batch.cu", [there.kernel[0]],
                          call=lambda launcher, y: launcher(y, shape))
    assert again.kernel_launches == 1
    assert_twin_matches(again)
    np.testing.assert_array_equal(again.kernel[0], x)  # the inverse, the padding cropped away
    assert (there.kernel[0] == dtype(fill)).sum() >= there.kernel[0].size - x.size


def space_batch_model(op, shape, block, pairs, dtype) -> bytes:
    """One SPACE_TO_BATCH_ND or BATCH_TO_SPACE_ND node (quantized (0.05, 3) for 8-bit types)."""
    types = {np.float32: T.FLOAT32, np.int8: T.INT8, np.uint8: T.UINT8}
    q = quantization(0.05, 3) if dtype != np.float32 else None
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", list(shape), types[dtype], quantization=q)
    b = g.add_constant("block", np.asarray(block, np.int32))
    p = g.add_constant("pairs", np.asarray(pairs, np.int32).reshape(len(block), 2))
    out = g.add_tensor("out", [1] * len(shape), types[dtype], quantization=q)
    g.add_operator(op, [x, b, p], [out])
    g.add_output(out)
    builder.add_signature("serving_default", g)
    return builder.build()


DEVICES = [pytest.param(lambda: "host", id="host"), pytest.param(emulated_cuda_device, id="emulated-cuda")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8], ids=str)
@pytest.mark.parametrize("shape, block, paddings", SPACE_BATCH_CASES, ids=str)
def test_space_to_batch_and_back_ops_equal_builtin_ref_and_the_cpu(shape, block, paddings, dtype, device):
    _, out_shape, _ = space_batch_geometries(shape, block, paddings)
    for op, in_shape in ((B.SPACE_TO_BATCH_ND, shape), (B.BATCH_TO_SPACE_ND, out_shape)):
        model = space_batch_model(op, in_shape, block, paddings, dtype)
        delegate = GpuDelegate(device=device())
        interpreter = assert_matches_cpu(model, lambda: delegate, invokes=3)
        assert all(p.delegated for p in interpreter.node_placements())
        x = random_inputs(model, seed=3)
        np.testing.assert_array_equal(run_interpreter(interpreter, x)[0], run_litert(model, x)[0])


@pytest.mark.parametrize("tensor_type, reason", [(T.INT16, "max version supported by GpuDelegate is 3"), (T.INT32, "INT32")])
def test_int16_and_int32_space_to_batch_are_left_to_the_cpu_with_a_reason(tensor_type, reason):
    q = quantization(0.05, 0) if tensor_type == T.INT16 else None
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [1, 4, 4, 1], tensor_type, quantization=q)
    b = g.add_constant("block", np.array([2, 2], np.int32))
    p = g.add_constant("pairs", np.zeros((2, 2), np.int32))
    out = g.add_tensor("out", [4, 2, 2, 1], tensor_type, quantization=q)
    g.add_operator(B.SPACE_TO_BATCH_ND, [x, b, p], [out])
    g.add_output(out)
    builder.add_signature("serving_default", g)
    interpreter = Interpreter(model_content=builder.build())
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (placement,) = interpreter.node_placements()
    assert not placement.delegated
    assert reason in " ".join(placement.rejections)


@pytest.mark.parametrize("shape, block, paddings", SPACE_BATCH_CASES[:2], ids=str)
def test_space_to_batch_and_back_with_float16_storage_move_the_half_values(shape, block, paddings):
    _, out_shape, _ = space_batch_geometries(shape, block, paddings)
    for op, in_shape in ((B.SPACE_TO_BATCH_ND, shape), (B.BATCH_TO_SPACE_ND, out_shape)):
        model = space_batch_model(op, in_shape, block, paddings, np.float32)
        interpreter = Interpreter(model_content=model)
        interpreter.modify_graph_with_delegate(GpuDelegate(device="host", precision="float16"))
        assert all(p.delegated for p in interpreter.node_placements())
        x = random_inputs(model, seed=5)
        want = run_litert(model, [x[0].astype(np.float16).astype(np.float32)])[0]
        np.testing.assert_array_equal(run_interpreter(interpreter, x)[0], want)
