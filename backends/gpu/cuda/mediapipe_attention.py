"""Launchers and numpy twins of ``mediapipe_attention.cu``: MediaPipe's attention face-mesh ops
(``Landmarks2TransformMatrix``, ``TransformTensorBilinear``, ``TransformLandmarks``, v2).

Each launcher (a ``sources._Launcher``) computes the grid and the arguments of one launch and
calls ``launch``: on a device the ``.cu`` kernel runs, in host emulation its twin. The twins
are the CPU kernels' own functions (``backends/cpu/kernels/mediapipe_attention.py``), which
compute in MediaPipe's order of operations, as the kernels do; their results are stored in the
storage dtype. ``tests/gpu/test_mediapipe_attention_gpu.py`` checks each twin against its
kernel built by the host shim.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from backends.cpu.kernels.mediapipe_attention import (
    LandmarksToTransformMatrixOptions,
    landmarks_to_transform_matrix,
    transform_landmarks,
    transform_tensor_bilinear,
)
from backends.gpu.cuda.sources import _Launcher, _contiguous, _storage_kernel, elementwise_launch_config

SOURCE = "mediapipe_attention.cu"
ONE_THREAD = ((1, 1, 1), (1, 1, 1))


def _check(storage: np.dtype, *arrays: Any) -> None:
    for array in arrays:
        if array.dtype != storage:
            raise TypeError(f"expected {storage} arrays, got {array.dtype}")


class LandmarksToTransformMatrixCuda(_Launcher):
    """``Landmarks2TransformMatrix`` v2: ``landmarks [1, N, 3]`` (storage dtype) and the
    ``subset`` indices (an int32 device array of ``options.subset_idxs``, uploaded once by the
    caller) -> the matrix ``[1, 4, 4]``. One launch of one thread. ``xp``, ``module`` and
    ``host_device`` as in ``sources._Launcher``."""

    source = SOURCE

    def __init__(self, options: LandmarksToTransformMatrixOptions, storage: Any = np.float32, *, xp: Any = None,
                 module: Any = None, host_device: Any = None) -> None:
        self.options = options
        self.storage = np.dtype(storage)
        self.kernel_name = _storage_kernel("landmarks_to_transform_matrix", self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, landmarks: Any, subset: Any) -> Any:
        _check(self.storage, landmarks)
        if subset.dtype != np.int32 or subset.size != len(self.options.subset_idxs):
            raise ValueError(f"subset must be the {len(self.options.subset_idxs)} int32 subset_idxs")
        xp, o = self.xp, self.options
        landmarks, subset = _contiguous(xp, landmarks), _contiguous(xp, subset)
        out = xp.empty((1, 4, 4), dtype=self.storage)
        args = (landmarks, subset, out, np.int32(subset.size), np.int32(o.left_rotation_idx), np.int32(o.right_rotation_idx),
                np.float32(o.target_rotation_radians), np.int32(o.output_height), np.int32(o.output_width),
                np.float32(o.scale_x), np.float32(o.scale_y))
        twin = functools.partial(landmarks_to_transform_matrix_twin, options=o)
        self.launch(self.kernel_name, *ONE_THREAD, args, twin, (landmarks,), (out,))
        return out


def landmarks_to_transform_matrix_twin(landmarks: np.ndarray, out: np.ndarray, *, options) -> None:
    """``landmarks_to_transform_matrix_*`` in numpy (the CPU kernel's function)."""
    out[...] = landmarks_to_transform_matrix(landmarks.astype(np.float32), options).reshape(out.shape)


class TransformTensorBilinearCuda(_Launcher):
    """``TransformTensorBilinear`` v2: ``(input [1, H, W, C], matrix [1, 4, 4])`` -> ``[1, out_h,
    out_w, C]``, storage float32 or float16. One launch, one thread per output element."""

    source = SOURCE

    def __init__(self, out_h: int, out_w: int, storage: Any = np.float32, *, xp: Any = None, module: Any = None,
                 host_device: Any = None) -> None:
        self.out_h, self.out_w = int(out_h), int(out_w)
        self.storage = np.dtype(storage)
        self.kernel_name = _storage_kernel("transform_tensor_bilinear", self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, matrix: Any) -> Any:
        _check(self.storage, x, matrix)
        if x.ndim != 4 or x.shape[0] != 1 or matrix.size != 16:
            raise ValueError(f"expected an input [1, H, W, C] and a 16-value matrix, got {list(x.shape)} and {list(matrix.shape)}")
        xp = self.xp
        x, matrix = _contiguous(xp, x), _contiguous(xp, matrix)
        _, in_h, in_w, channels = (int(d) for d in x.shape)
        out = xp.empty((1, self.out_h, self.out_w, channels), dtype=self.storage)
        if out.size == 0:
            return out
        grid, block = elementwise_launch_config(out.size)
        args = (x, matrix, out, *(np.int32(v) for v in (in_h, in_w, channels, self.out_h, self.out_w)))
        self.launch(self.kernel_name, grid, block, args, transform_tensor_bilinear_twin, (x, matrix), (out,))
        return out


def transform_tensor_bilinear_twin(x: np.ndarray, matrix: np.ndarray, out: np.ndarray) -> None:
    """``transform_tensor_bilinear_*`` in numpy (the CPU kernel's function)."""
    _, out_h, out_w, _ = out.shape
    out[0] = transform_tensor_bilinear(x[0].astype(np.float32), matrix.astype(np.float32), out_h, out_w)


class TransformLandmarksCuda(_Launcher):
    """``TransformLandmarks`` v2: ``(landmarks [1, N, D], matrix [1, 4, 4])`` -> ``[1, N, D]``,
    D = 2 or 3, storage float32 or float16. One launch, one thread per landmark."""

    source = SOURCE

    def __init__(self, storage: Any = np.float32, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.storage = np.dtype(storage)
        self.kernel_name = _storage_kernel("transform_landmarks", self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, landmarks: Any, matrix: Any) -> Any:
        _check(self.storage, landmarks, matrix)
        if landmarks.ndim != 3 or landmarks.shape[0] != 1 or landmarks.shape[2] not in (2, 3) or matrix.size != 16:
            raise ValueError(f"expected landmarks [1, N, 2 or 3] and a 16-value matrix, got {list(landmarks.shape)} and "
                             f"{list(matrix.shape)}")
        xp = self.xp
        landmarks, matrix = _contiguous(xp, landmarks), _contiguous(xp, matrix)
        out = xp.empty(landmarks.shape, dtype=self.storage)
        count, dims = int(landmarks.shape[1]), int(landmarks.shape[2])
        if count == 0:
            return out
        grid, block = elementwise_launch_config(count)
        args = (landmarks, matrix, out, np.int32(count), np.int32(dims))
        self.launch(self.kernel_name, grid, block, args, transform_landmarks_twin, (landmarks, matrix), (out,))
        return out


def transform_landmarks_twin(landmarks: np.ndarray, matrix: np.ndarray, out: np.ndarray) -> None:
    """``transform_landmarks_*`` in numpy (the CPU kernel's function); z keeps its stored bits."""
    moved = transform_landmarks(landmarks[0].astype(np.float32), matrix.astype(np.float32))
    out[0, :, :2] = moved[:, :2]
    out[0, :, 2:] = landmarks[0, :, 2:]
