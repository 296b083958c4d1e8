"""MediaPipe's attention face-mesh ops on the GPU delegate: ``Landmarks2TransformMatrix``,
``TransformTensorBilinear`` and ``TransformLandmarks`` v2 (``cuda/mediapipe_attention.cu``).

Each kernel against its numpy twin (the kernel built for the CPU by the host shim, the twin as
host emulation runs it), within ``kernel_twin.TWIN_TOLERANCE``; then one-node models and a
chain of the three through ``GpuDelegate`` on host emulation and on the emulated CUDA device,
against the CPU path (whose kernels equal MediaPipe's loops: tests/cpu/test_mediapipe_attention.py),
over several invokes with the CUDA graph replayed. What the GPU does not take is refused with a
reason.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from backends.cpu.kernels.mediapipe_attention import (
    LANDMARKS_TO_TRANSFORM_MATRIX,
    TRANSFORM_LANDMARKS,
    TRANSFORM_TENSOR_BILINEAR,
    LandmarksToTransformMatrixOptions,
)
from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.cuda.mediapipe_attention import (
    SOURCE,
    LandmarksToTransformMatrixCuda,
    TransformLandmarksCuda,
    TransformTensorBilinearCuda,
)
from backends.gpu.ops import gpu_custom_support_table
from interpreter import Interpreter
from interpreter.testing import assert_matches_cpu
from kernel_twin import assert_twin_matches, run_both_ways
from model_helpers import In, Out, single_op_model
from schema.builder import ModelBuilder
from schema.custom_options import flexbuffer_bytes

F32, F16 = np.float32, np.float16
STORAGES = [F32, F16]
DEVICES = [lambda: "host", emulated_cuda_device]
DEVICE_IDS = ["host", "emulated-cuda"]
NAMES = (LANDMARKS_TO_TRANSFORM_MATRIX, TRANSFORM_TENSOR_BILINEAR, TRANSFORM_LANDMARKS)


def matrix_options(subset, left=0, right=1, target=0.0, out_h=16, out_w=16, scale_x=1.5, scale_y=1.5) -> bytes:
    return flexbuffer_bytes(dict(subset_idxs=list(subset), left_rotation_idx=left, right_rotation_idx=right,
                                 target_rotation_radians=target, output_height=out_h, output_width=out_w,
                                 scale_x=scale_x, scale_y=scale_y))


def turn(angle: float, scale: float, tx: float, ty: float) -> np.ndarray:
    c, s = scale * math.cos(angle), scale * math.sin(angle)
    return np.array([[c, -s, 0, tx], [s, c, 0, ty], [0, 0, 1, 0], [0, 0, 0, 1]], F32)[None]


# -- kernels against their twins -------------------------------------------------------------------


@pytest.mark.parametrize("storage", STORAGES, ids=["f32", "f16"])
@pytest.mark.parametrize("seed", range(3))
def test_matrix_kernel_equals_its_twin(storage, seed):
    rng = np.random.default_rng(seed)
    landmarks = rng.uniform(0, 192, (1, 60, 3)).astype(storage)
    subset = rng.integers(0, 60, 2 * seed + 7)  # an odd count too
    options = LandmarksToTransformMatrixOptions.parse(matrix_options(
        subset.tolist(), left=int(rng.integers(60)), right=int(rng.integers(60)), target=float(rng.uniform(-3, 3)),
        out_h=int(rng.integers(8, 33)), out_w=int(rng.integers(8, 33)), scale_x=float(rng.uniform(1, 2)),
        scale_y=float(rng.uniform(1, 2))))
    both = run_both_ways(lambda **where: LandmarksToTransformMatrixCuda(options, storage, **where), SOURCE,
                         [landmarks, subset.astype(np.int32)])
    assert both.kernel_launches == 1
    assert_twin_matches(both)


BILINEAR_CASES = {
    "identity": (np.eye(4, dtype=F32)[None], (6, 7)),
    "rotated-scaled-partly-outside": (turn(0.7, 1.3, 3.0, -2.0), (9, 10)),
    "upside-down-outside": (turn(math.pi, 0.8, 20.0, 14.0), (12, 12)),
    "on-the-last-column": (turn(0.0, 1.0, 12.0, 0.0), (4, 2)),
    "downscale-2": (turn(0.0, 2.0, 0.0, 0.0), (5, 6)),
}


@pytest.mark.parametrize("storage", STORAGES, ids=["f32", "f16"])
@pytest.mark.parametrize("case", list(BILINEAR_CASES))
def test_bilinear_kernel_equals_its_twin(storage, case):
    matrix, (out_h, out_w) = BILINEAR_CASES[case]
    x = np.random.default_rng(1).standard_normal((1, 11, 13, 3)).astype(storage)
    both = run_both_ways(lambda **where: TransformTensorBilinearCuda(out_h, out_w, storage, **where), SOURCE,
                         [x, matrix.astype(storage)])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    assert both.kernel[0].any()


def test_bilinear_kernel_gives_zeros_for_a_nan_matrix_as_its_twin():
    matrix = turn(0.0, 1.0, 0.0, 0.0)
    matrix[0, 0, 0] = np.nan
    x = np.ones((1, 5, 5, 2), F32)
    both = run_both_ways(lambda **where: TransformTensorBilinearCuda(3, 3, F32, **where), SOURCE, [x, matrix])
    assert_twin_matches(both)
    assert not both.kernel[0].any()


@pytest.mark.parametrize("storage", STORAGES, ids=["f32", "f16"])
@pytest.mark.parametrize("dims", [2, 3])
def test_landmarks_kernel_equals_its_twin(storage, dims):
    rng = np.random.default_rng(dims)
    points = rng.uniform(-5, 50, (1, 300, dims)).astype(storage)  # two blocks of 256 threads
    both = run_both_ways(lambda **where: TransformLandmarksCuda(storage, **where), SOURCE,
                         [points, turn(0.4, 3.0, 7.0, -1.0).astype(storage)])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    if dims == 3:
        np.testing.assert_array_equal(both.kernel[0][..., 2], points[..., 2])  # z: bits unchanged


# -- the delegate on one-node models and a chain -------------------------------------------------


def landmarks_input(count: int = 12, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(20, 170, (1, count, 3)).astype(F32)


def check_on_gpu(model: bytes, make_device, inputs, precision: str = "float32") -> GpuDelegate:
    """Four invokes against the CPU path: every node delegated, the graph replayed."""
    tolerance = {"rtol": 1e-2, "atol": 1e-1} if precision == "float16" else {"rtol": 1e-5, "atol": 1e-4}
    delegate = GpuDelegate(device=make_device(), precision=precision)
    interpreter = assert_matches_cpu(model, lambda: delegate, inputs=inputs, invokes=4, **tolerance)
    assert all(p.delegated for p in interpreter.node_placements())
    (stats,) = delegate.partition_stats()
    assert stats.graph == "replaying" and stats.invokes == 4
    return delegate


@pytest.mark.parametrize("make_device", DEVICES, ids=DEVICE_IDS)
def test_landmarks_to_transform_matrix_on_the_gpu(make_device):
    model = single_op_model(LANDMARKS_TO_TRANSFORM_MATRIX, [In([1, 12, 3])], Out([1, 4, 4]), version=2,
                            custom_options=matrix_options(range(2, 12), left=0, right=1))
    check_on_gpu(model, make_device, [landmarks_input()])


@pytest.mark.parametrize("make_device", DEVICES, ids=DEVICE_IDS)
def test_transform_tensor_bilinear_on_the_gpu(make_device):
    model = single_op_model(TRANSFORM_TENSOR_BILINEAR, [In([1, 24, 20, 5]), In([1, 4, 4])], Out([1, 8, 6, 5]), version=2,
                            custom_options=flexbuffer_bytes({"output_height": 8, "output_width": 6}))
    x = np.random.default_rng(0).standard_normal((1, 24, 20, 5)).astype(F32)
    check_on_gpu(model, make_device, [x, turn(0.3, 2.5, 4.0, 3.0)])


@pytest.mark.parametrize("make_device", DEVICES, ids=DEVICE_IDS)
def test_transform_landmarks_on_the_gpu(make_device):
    model = single_op_model(TRANSFORM_LANDMARKS, [In([1, 30, 2]), In([1, 4, 4])], Out([1, 30, 2]), version=2)
    points = np.random.default_rng(0).uniform(0, 16, (1, 30, 2)).astype(F32)
    check_on_gpu(model, make_device, [points, turn(-0.5, 1.7, 40.0, 60.0)])


def attention_chain_model() -> bytes:
    """What the face mesh does per region: landmarks -> matrix; the matrix crops a feature map
    (TransformTensorBilinear) and maps crop landmarks back (TransformLandmarks)."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    landmarks = graph.add_input("landmarks", [1, 12, 3])
    features = graph.add_input("features", [1, 48, 48, 4])
    crop_points = graph.add_input("crop_points", [1, 7, 2])
    matrix = graph.add_tensor("matrix", [1, 4, 4])
    crop = graph.add_tensor("crop", [1, 16, 16, 4])
    points = graph.add_tensor("points", [1, 7, 2])
    graph.add_operator(LANDMARKS_TO_TRANSFORM_MATRIX, [landmarks], [matrix], version=2,
                       custom_options=matrix_options(range(2, 12), left=0, right=1))
    graph.add_operator(TRANSFORM_TENSOR_BILINEAR, [features, matrix], [crop], version=2,
                       custom_options=flexbuffer_bytes({"output_height": 16, "output_width": 16}))
    graph.add_operator(TRANSFORM_LANDMARKS, [crop_points, matrix], [points], version=2)
    graph.add_output(crop)
    graph.add_output(points)
    builder.add_signature("serving_default", graph)
    return builder.build()


def smooth_features() -> np.ndarray:
    """A feature map that changes slowly: under float16 storage the matrix is rounded too (a
    crop position near 48 moves by up to 1/64 of a pixel), which a smooth map turns into small
    changes of the crop."""
    y, x, c = np.meshgrid(np.arange(48), np.arange(48), np.arange(4), indexing="ij")
    return (np.sin(x / 7 + c) + np.cos(y / 5 - c))[None].astype(F32)


@pytest.mark.parametrize("precision", ["float32", "float16"])
@pytest.mark.parametrize("make_device", DEVICES, ids=DEVICE_IDS)
def test_the_three_chained_run_in_one_partition(make_device, precision):
    rng = np.random.default_rng(5)
    features = smooth_features() if precision == "float16" else rng.standard_normal((1, 48, 48, 4)).astype(F32)
    inputs = [landmarks_input(seed=5) / 4, features, rng.uniform(0, 16, (1, 7, 2)).astype(F32)]
    delegate = check_on_gpu(attention_chain_model(), make_device, inputs, precision)
    (stats,) = delegate.partition_stats()
    assert stats.nodes == (0, 1, 2)
    assert stats.last_invoke.uploads == 3 and stats.last_invoke.downloads == 2


# -- support and refusals --------------------------------------------------------------------------


def test_the_gpu_claims_version_2_of_each():
    table = gpu_custom_support_table()
    for name in NAMES:
        assert table[name] == frozenset({2})
        assert GpuDelegate(device="host").custom_support_table[name] == frozenset({2})


def placement(model: bytes):
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (node,) = interpreter.node_placements()
    return node


def test_a_batch_of_two_stays_on_the_cpu_saying_why():
    model = single_op_model(TRANSFORM_LANDMARKS, [In([2, 5, 2]), In([1, 4, 4])], Out([2, 5, 2]), version=2)
    with pytest.raises(Exception, match="batch 1"):  # the CPU kernel refuses it too
        Interpreter(model_content=model).allocate_tensors()
    node = placement(model)
    assert not node.delegated and "batch 1" in " ".join(node.rejections)


def test_a_float16_landmark_tensor_stays_on_the_cpu_saying_why():
    model = single_op_model(TRANSFORM_LANDMARKS, [In([1, 5, 2], np.float16), In([1, 4, 4])], Out([1, 5, 2], np.float16),
                            version=2)
    node = placement(model)
    assert not node.delegated
    assert "FLOAT32 tensors only" in " ".join(node.rejections)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["float32", "float16"])
def test_the_three_chained_on_a_cuda_device(cuda_device, precision):
    # On a GPU: NVRTC's build of mediapipe_attention.cu (fused multiply-adds kept out by the _rn
    # intrinsics, CUDA's atan2f/cosf/sinf) against the CPU path.
    rng = np.random.default_rng(6)
    features = smooth_features() if precision == "float16" else rng.standard_normal((1, 48, 48, 4)).astype(F32)
    inputs = [landmarks_input(seed=6) / 4, features, rng.uniform(0, 16, (1, 7, 2)).astype(F32)]
    check_on_gpu(attention_chain_model(), cuda_device, inputs, precision)
