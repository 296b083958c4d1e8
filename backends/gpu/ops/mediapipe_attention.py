"""MediaPipe's attention face-mesh ops on the GPU: ``Landmarks2TransformMatrix``,
``TransformTensorBilinear`` and ``TransformLandmarks``, version 2 (TFLite's GPU delegate has
them too, in its MediaPipe op set).

Semantics are the CPU kernels' (``backends/cpu/kernels/mediapipe_attention.py``, MediaPipe's
``mediapipe/util/tflite/operations``); each node is one launch of ``cuda/mediapipe_attention.cu``
(in host emulation, its numpy twin: the CPU kernel's function). Claimed as
``custom_ops = {name: frozenset({2})}``: version 2 only, the one MediaPipe's resolver registers.
Float32 tensors, batch 1, stored as the partition's storage (float16 rounds the matrices too).
``Landmarks2TransformMatrix``'s ``subset_idxs`` are uploaded once, as int32.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from backends.cpu.kernels.mediapipe_attention import (
    LANDMARKS_TO_TRANSFORM_MATRIX,
    MEDIAPIPE_ATTENTION_VERSION,
    TRANSFORM_LANDMARKS,
    TRANSFORM_TENSOR_BILINEAR,
    LandmarksToTransformMatrixOptions,
    landmarks_shape_reason,
    matrix_shape_reason,
    transform_landmarks_shape_reason,
    transform_tensor_output_size,
    transform_tensor_shape_reason,
)
from backends.gpu.cuda.mediapipe_attention import (
    SOURCE,
    LandmarksToTransformMatrixCuda,
    TransformLandmarksCuda,
    TransformTensorBilinearCuda,
)
from backends.gpu.ops.base import GpuOp, TypeReason, shape_reason
from schema.custom_options import CustomOptionsError
from schema.enums import TensorType

VERSION_2 = frozenset({MEDIAPIPE_ATTENTION_VERSION})


class _AttentionOp(GpuOp):
    """What the three share: ``num_inputs`` float32 inputs (named ``roles``), one float32 output."""

    name: ClassVar[str] = ""
    roles: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def rejection_reason(cls, node, op, version, tensors):
        if len(node.inputs) != len(cls.roles) or min(node.inputs) < 0:
            return f"expected inputs ({', '.join(cls.roles)}), got {len(node.inputs)} inputs"
        if len(node.outputs) != 1:
            return f"expected 1 output, got {len(node.outputs)}"
        for role, index in [*zip(cls.roles, node.inputs), ("output", node.outputs[0])]:
            tensor = tensors[index]
            if tensor.type != TensorType.FLOAT32:
                return TypeReason(f"{role} {tensor.name!r} is {tensor.type_name}; the GPU delegate runs {cls.name} on FLOAT32 tensors only")
            reason = shape_reason(role, tensor)
            if reason:
                return reason
        try:
            return cls.node_reason(node, [tensors[i] for i in node.inputs], tensors[node.outputs[0]])
        except CustomOptionsError as error:
            return str(error)

    @classmethod
    def node_reason(cls, node, inputs, output) -> str | None:
        """Per-op conditions (after the type and rank checks); may raise ``CustomOptionsError``."""
        return None

    def run(self, args):
        return [self.launcher(*args)]  # the launcher of ``prepare``, on the node's inputs


class LandmarksToTransformMatrix(_AttentionOp):
    """MediaPipe's ``Landmarks2TransformMatrix`` version 2 (float32)."""

    custom_ops = {LANDMARKS_TO_TRANSFORM_MATRIX: VERSION_2}
    name = LANDMARKS_TO_TRANSFORM_MATRIX
    roles = ("landmarks",)

    @classmethod
    def node_reason(cls, node, inputs, output):
        return landmarks_shape_reason(inputs[0].shape, LandmarksToTransformMatrixOptions.parse(node.custom_options))

    def prepare(self) -> None:
        options = LandmarksToTransformMatrixOptions.parse(self.node.custom_options)
        self.subset = self.upload(np.array(options.subset_idxs, np.int32), np.int32)
        self.launcher = LandmarksToTransformMatrixCuda(options, self.storage, **self.device.launcher_arguments(SOURCE))

    def run(self, args):
        return [self.launcher(args[0], self.subset)]


class TransformTensorBilinear(_AttentionOp):
    """MediaPipe's ``TransformTensorBilinear`` version 2 (float32)."""

    custom_ops = {TRANSFORM_TENSOR_BILINEAR: VERSION_2}
    name = TRANSFORM_TENSOR_BILINEAR
    roles = ("input", "matrix")

    @classmethod
    def node_reason(cls, node, inputs, output):
        size = transform_tensor_output_size(node.custom_options)
        return transform_tensor_shape_reason(inputs[0].shape, output.shape, size) or matrix_shape_reason(inputs[1].shape)

    def prepare(self) -> None:
        _, out_h, out_w, _ = self.outputs[0].shape
        self.launcher = TransformTensorBilinearCuda(out_h, out_w, self.storage, **self.device.launcher_arguments(SOURCE))


class TransformLandmarks(_AttentionOp):
    """MediaPipe's ``TransformLandmarks`` version 2 (float32, 2-D or 3-D landmarks)."""

    custom_ops = {TRANSFORM_LANDMARKS: VERSION_2}
    name = TRANSFORM_LANDMARKS
    roles = ("landmarks", "matrix")

    @classmethod
    def node_reason(cls, node, inputs, output):
        return transform_landmarks_shape_reason(inputs[0].shape) or matrix_shape_reason(inputs[1].shape)

    def prepare(self) -> None:
        self.launcher = TransformLandmarksCuda(self.storage, **self.device.launcher_arguments(SOURCE))
