"""MediaPipe's attention face-mesh ops (``face_landmark_with_attention.tflite``), version 2,
as MediaPipe defines them (``mediapipe/util/tflite/operations/landmarks_to_transform_matrix.cc``,
``transform_tensor_bilinear.cc``, ``transform_landmarks.cc``; options read as TFLite's GPU
delegate reads them, ``delegates/gpu/common/mediapipe/*``). MediaPipe's CPU resolver
registers version 2 of each, and only that version: so here. All three are float32.

``Landmarks2TransformMatrix`` v2: ``landmarks [1, N, 3]`` -> ``matrix [1, 4, 4]``. Options
(FlexBuffer map): ``subset_idxs`` (landmark indices), ``left_rotation_idx``,
``right_rotation_idx``, ``target_rotation_radians``, ``output_height``, ``output_width``,
``scale_x``, ``scale_y``. With ``r = target - atan2(y_right - y_left, x_right - x_left)``,
the subset's (x, y) rotated by ``r`` have a bounding box of size ``w x h``; its centre,
rotated back by ``-r``, is ``(cx, cy)``. The matrix is
``T(cx, cy) R(-r) S(scale_x w / output_width, scale_y h / output_height)
T(-output_width / 2, -output_height / 2)``: it maps a pixel of the output crop to the
landmarks' space. Float32 throughout, each matrix product summed in MediaPipe's order.

``TransformTensorBilinear`` v2: ``(input [1, H, W, C], matrix [1, 4, 4])`` -> ``[1, OH, OW, C]``
(the output tensor's shape, as MediaPipe's kernel reads it; options ``output_height`` and
``output_width``, when given, must agree). The matrix's first two rows, corrected for
pixel centres (``m03 += m00 / 2 + m01 / 2 - 1/2``, in double), map output pixel
``(x, y, 0, 1)`` to an input position ``(tx, ty)`` (float32 dot products). A position
outside ``[0, W-1] x [0, H-1]`` gives 0; inside, the four neighbours are mixed (a neighbour
past the last row or column reads 0) as MediaPipe mixes them, partly in double::

    upper  = float((1.0 - dx) * q11 + float(dx * q21))
    lower  = float((1.0 - dx) * q12 + float(dx * q22))
    result = float(float(dy * lower) + (1.0 - dy) * upper)

A NaN position gives 0 (MediaPipe converts ``floor(NaN)`` to an int: undefined behaviour).

``TransformLandmarks`` v2: ``(landmarks [1, N, D], matrix [1, 4, 4])`` -> ``[1, N, D]``,
D = 2 or 3: each ``(x, y)`` becomes the matrix's first two rows times ``(x, y, 0, 1)``
(float32, summed left to right); z, when present, is copied. No options.

MediaPipe reads only batch 0 and leaves other batches unwritten: a batch above 1 is refused
here, as are indices past the landmarks (MediaPipe reads out of bounds) and an empty subset.

The math is in plain functions (``landmarks_to_transform_matrix``,
``transform_tensor_bilinear``, ``transform_landmarks``) that the GPU delegate's numpy twins
share (``backends/gpu/cuda/mediapipe_attention.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from flatbuffers import flexbuffers

from backends.cpu.kernel import CpuKernel, register_custom
from backends.cpu.kernels.reshape import inputs_pending
from schema.custom_options import CustomOptionsError, FlexbufferMap
from schema.enums import TensorType

LANDMARKS_TO_TRANSFORM_MATRIX = "Landmarks2TransformMatrix"
TRANSFORM_TENSOR_BILINEAR = "TransformTensorBilinear"
TRANSFORM_LANDMARKS = "TransformLandmarks"
#: The only version MediaPipe's CPU resolver registers for each of the three.
MEDIAPIPE_ATTENTION_VERSION = 2

F32 = np.float32
F64 = np.float64
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


# -- options ----------------------------------------------------------------------------------

def _int32(options: FlexbufferMap, key: str) -> int:
    """``m[key].AsInt32()``: 0 when missing, floats truncated; a value past int32 is refused."""
    value = options.as_int64(key)
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise CustomOptionsError(f"custom option {key!r} is {value}, outside int32")
    return value


def _typed_int_vector(custom_options: bytes, key: str) -> tuple[int, ...]:
    """``m[key].AsTypedVector()`` read with ``AsInt32()``: empty when missing. Any other vector
    is refused: ``AsTypedVector()`` reads it as empty, and MediaPipe then reads past its subset."""
    ref = flexbuffers.GetRoot(custom_options).AsMap
    try:
        ref = ref[key]
    except KeyError:
        return ()
    if ref.IsNull:
        return ()
    if not ref.IsTypedVector:
        # (not ref.IsAnyVector: flatbuffers 25's Python calls a property there and raises TypeError)
        kind = "an untyped or fixed-size vector" if ref.IsVector or ref.IsFixedTypedVector else "not a vector"
        raise CustomOptionsError(
            f"custom option {key!r} is {kind}; MediaPipe reads it with AsTypedVector(), which finds no indices "
            "there: write a typed vector of integers"
        )
    vector = ref.AsTypedVector
    if len(vector) == 0:
        return ()
    if vector.ElementType not in (flexbuffers.Type.INT, flexbuffers.Type.UINT, flexbuffers.Type.FLOAT, flexbuffers.Type.BOOL):
        raise CustomOptionsError(f"custom option {key!r} is a typed vector of {flexbuffers.Type(vector.ElementType).name}, not of numbers")
    return tuple(int(v) for v in vector.Value)


@dataclass(frozen=True)
class LandmarksToTransformMatrixOptions:
    """The options of a ``Landmarks2TransformMatrix`` v2 node (``LandmarksToTransformMatrixV2Attributes``)."""

    subset_idxs: tuple[int, ...]
    left_rotation_idx: int
    right_rotation_idx: int
    target_rotation_radians: float
    output_height: int
    output_width: int
    scale_x: float
    scale_y: float

    @classmethod
    def parse(cls, custom_options: bytes | None) -> "LandmarksToTransformMatrixOptions":
        """Read the FlexBuffer map as ``ParseLandmarksToTransformMatrixV2Attributes`` does
        (missing keys read 0) and check it as MediaPipe's Eval does; raise
        ``CustomOptionsError`` saying what is wrong."""
        m = FlexbufferMap(custom_options)
        options = cls(
            subset_idxs=_typed_int_vector(bytes(custom_options), "subset_idxs"),
            left_rotation_idx=_int32(m, "left_rotation_idx"),
            right_rotation_idx=_int32(m, "right_rotation_idx"),
            target_rotation_radians=float(F32(m.as_float("target_rotation_radians"))),
            output_height=_int32(m, "output_height"),
            output_width=_int32(m, "output_width"),
            scale_x=float(F32(m.as_float("scale_x"))),
            scale_y=float(F32(m.as_float("scale_y"))),
        )
        problem = options.problem()
        if problem:
            raise CustomOptionsError(problem)
        return options

    def problem(self) -> str | None:
        for name in ("left_rotation_idx", "right_rotation_idx"):
            if getattr(self, name) < 0:
                return f"{name} is {getattr(self, name)}; it must not be negative"
        for name in ("output_height", "output_width"):
            if getattr(self, name) <= 0:
                return f"{name} is {getattr(self, name)}; it must be positive"
        for name in ("scale_x", "scale_y"):
            if not getattr(self, name) > 0:
                return f"{name} is {getattr(self, name)}; it must be positive"
        if not self.subset_idxs:
            return "subset_idxs is missing or empty; it lists the landmarks whose bounding box is cropped"
        negative = [i for i in self.subset_idxs if i < 0]
        if negative:
            return f"subset_idxs holds negative indices {negative[:5]}"
        return None

    def landmarks_problem(self, count: int) -> str | None:
        """Why these options cannot index ``count`` landmarks, or None."""
        used = {"left_rotation_idx": self.left_rotation_idx, "right_rotation_idx": self.right_rotation_idx}
        for name, index in used.items():
            if index >= count:
                return f"{name} is {index}, past the {count} landmarks"
        past = sorted({i for i in self.subset_idxs if i >= count})
        if past:
            return f"subset_idxs holds indices {past[:5]} past the {count} landmarks"
        return None


def transform_tensor_output_size(custom_options: bytes | None) -> tuple[int | None, int | None]:
    """``(output_height, output_width)`` of a ``TransformTensorBilinear`` v2 node's options
    (``ParseTransformTensorBilinearV2Attributes``), each None when not given; no options at
    all: ``(None, None)``. Raises ``CustomOptionsError`` for unreadable options."""
    if not custom_options:
        return None, None
    m = FlexbufferMap(custom_options)
    height, width = (None if m.is_null(key) else _int32(m, key) for key in ("output_height", "output_width"))
    return height, width


# -- shapes -----------------------------------------------------------------------------------

def landmarks_shape_reason(shape, options: LandmarksToTransformMatrixOptions) -> str | None:
    """Why ``Landmarks2TransformMatrix`` cannot read landmarks of ``shape``, or None."""
    if len(shape) != 3 or shape[0] != 1 or shape[2] != 3:
        return f"landmarks must be [1, N, 3] (x, y, z triples, batch 1), got {list(shape)}"
    return options.landmarks_problem(int(shape[1]))


def matrix_shape_reason(shape) -> str | None:
    """Why a tensor of ``shape`` is not a transformation matrix (16 values, a 4x4 matrix), or None."""
    if int(np.prod(shape, dtype=np.int64)) != 16:
        return f"the transformation matrix must hold 16 values (a [1, 4, 4] matrix), got shape {list(shape)}"
    return None


def transform_tensor_shape_reason(input_shape, output_shape, option_size) -> str | None:
    """Why ``TransformTensorBilinear`` cannot map ``input_shape`` to ``output_shape``, or None."""
    if len(input_shape) != 4 or len(output_shape) != 4:
        return f"input and output must be 4-D (NHWC), got {list(input_shape)} and {list(output_shape)}"
    if input_shape[0] != 1 or output_shape[0] != 1:
        return f"batch must be 1 (MediaPipe reads and writes batch 0 only), got {list(input_shape)} -> {list(output_shape)}"
    if output_shape[3] != input_shape[3]:
        return f"output channels ({output_shape[3]}) differ from the input's ({input_shape[3]})"
    if min(input_shape[1:3]) <= 0 or min(output_shape[1:3]) <= 0:
        return f"empty image: {list(input_shape)} -> {list(output_shape)}"
    for name, given, actual in zip(("output_height", "output_width"), option_size, output_shape[1:3]):
        if given is not None and given != actual:
            return f"option {name} is {given} but the output tensor has {actual}"
    return None


def transform_landmarks_shape_reason(shape) -> str | None:
    """Why ``TransformLandmarks`` cannot transform landmarks of ``shape``, or None."""
    if len(shape) != 3 or shape[0] != 1 or shape[2] not in (2, 3):
        return f"landmarks must be [1, N, 2] or [1, N, 3] (batch 1), got {list(shape)}"
    return None


# -- the math ---------------------------------------------------------------------------------

def _dot_xy1(row: np.ndarray, x, y):
    """MediaPipe's ``DotProduct(row, (x, y, 0, 1))`` in float32, left to right."""
    return ((row[0] * x + row[1] * y) + row[2] * F32(0.0)) + row[3] * F32(1.0)


def _cos_sin(angle) -> tuple[np.float32, np.float32]:
    """``std::cos``, ``std::sin`` of a float: computed in double, rounded to float32."""
    return F32(np.cos(F64(angle))), F32(np.sin(F64(angle)))


def _fold_max(values: np.ndarray):
    """MediaPipe's ``if (m < v) m = v`` from ``values[0]``: NaN after the first is skipped,
    a NaN first stays."""
    return values[0] if np.isnan(values[0]) else F32(np.nanmax(values))


def _fold_min(values: np.ndarray):
    return values[0] if np.isnan(values[0]) else F32(np.nanmin(values))


def _mat4_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``Mat4::operator*=``: each entry ``sum += a[r, k] * b[k, c]`` from 0, in float32."""
    total = np.zeros((4, 4), F32)
    for k in range(4):
        total = total + a[:, k, None] * b[None, k, :]
    return total


def _mat4(*rows) -> np.ndarray:
    return np.array(rows, F32)


def landmarks_to_transform_matrix(landmarks: np.ndarray, options: LandmarksToTransformMatrixOptions) -> np.ndarray:
    """MediaPipe's ``LandmarksToTransformMatrixV2``: the 16 values (row-major 4x4, float32)
    for ``landmarks`` (N x 3, any float dtype: read as float32)."""
    points = np.asarray(landmarks, F32).reshape(-1, 3)
    zero, one = F32(0.0), F32(1.0)
    # EstimateRotationRadians
    left, right = points[options.left_rotation_idx], points[options.right_rotation_idx]
    angle = F32(np.arctan2(F64(right[1] - left[1]), F64(right[0] - left[0])))
    rotation = F32(options.target_rotation_radians) - angle
    # EstimateCenterAndSize: the subset rotated by `rotation` (Mat3 * (x, y, 1)), its box
    cos_r, sin_r = _cos_sin(rotation)
    subset = points[np.asarray(options.subset_idxs, np.int64)]
    x, y = subset[:, 0], subset[:, 1]
    rotated_x = ((zero + cos_r * x) + (-sin_r) * y) + zero * one
    rotated_y = ((zero + sin_r * x) + cos_r * y) + zero * one
    max_x, max_y = _fold_max(rotated_x), _fold_max(rotated_y)
    min_x, min_y = _fold_min(rotated_x), _fold_min(rotated_y)
    crop_width, crop_height = max_x - min_x, max_y - min_y
    middle_x, middle_y = (min_x + max_x) / F32(2), (min_y + max_y) / F32(2)
    cos_i, sin_i = _cos_sin(-rotation)
    crop_x = ((zero + cos_i * middle_x) + (-sin_i) * middle_y) + zero * one
    crop_y = ((zero + sin_i * middle_x) + cos_i * middle_y) + zero * one
    # The matrix: T(crop) R(-rotation) S(scale) T(-output / 2), multiplied in this order
    t = np.eye(4, dtype=F32)
    t = _mat4_product(t, _mat4((1, 0, 0, crop_x), (0, 1, 0, crop_y), (0, 0, 1, 0), (0, 0, 0, 1)))
    cos_m, sin_m = _cos_sin(-rotation)
    t = _mat4_product(t, _mat4((cos_m, -sin_m, 0, 0), (sin_m, cos_m, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)))
    scale_x = F32(options.scale_x) * crop_width / F32(options.output_width)
    scale_y = F32(options.scale_y) * crop_height / F32(options.output_height)
    t = _mat4_product(t, _mat4((scale_x, 0, 0, 0), (0, scale_y, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)))
    shift_x = F32(-1.0 * (options.output_width / 2.0))
    shift_y = F32(-1.0 * (options.output_height / 2.0))
    t = _mat4_product(t, _mat4((1, 0, 0, shift_x), (0, 1, 0, shift_y), (0, 0, 1, 0), (0, 0, 0, 1)))
    return t.reshape(16)


def pixel_centre_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The matrix's first two rows (float32), each with MediaPipe's align-corners correction
    ``row[3] += row[0] * 0.5 + row[1] * 0.5 - 0.5`` (in double, then rounded to float32)."""
    values = np.asarray(matrix, F32).reshape(-1)
    rows = []
    for row in (values[0:4].copy(), values[4:8].copy()):
        row[3] = F32(F64(row[3]) + (F64(row[0]) * 0.5 + F64(row[1]) * 0.5 - 0.5))
        rows.append(row)
    return rows[0], rows[1]


def transform_tensor_bilinear(image: np.ndarray, matrix: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """MediaPipe's ``TransformTensorBilinearV2`` of one image ``[H, W, C]`` (read as float32):
    the ``[out_h, out_w, C]`` float32 result."""
    image = np.asarray(image, F32)
    in_h, in_w, channels = image.shape
    row_x, row_y = pixel_centre_rows(matrix)
    out_y, out_x = np.meshgrid(np.arange(out_h, dtype=F32), np.arange(out_w, dtype=F32), indexing="ij")
    tx, ty = _dot_xy1(row_x, out_x, out_y), _dot_xy1(row_y, out_x, out_y)
    with np.errstate(invalid="ignore"):
        inside = (tx >= 0) & (tx <= F32(in_w - 1)) & (ty >= 0) & (ty <= F32(in_h - 1))  # False for NaN
    floor_x, floor_y = np.where(inside, np.floor(tx), F32(0)), np.where(inside, np.floor(ty), F32(0))
    col, row = floor_x.astype(np.int64), floor_y.astype(np.int64)
    padded = np.zeros((in_h + 1, in_w + 1, channels), F32)  # the row and column past the edge read 0
    padded[:in_h, :in_w] = image
    q11, q21 = padded[row, col], padded[row, col + 1]
    q12, q22 = padded[row + 1, col], padded[row + 1, col + 1]
    dx = np.where(inside, tx - floor_x, F32(0))[..., None]
    dy = np.where(inside, ty - floor_y, F32(0))[..., None]
    upper = ((1.0 - dx.astype(F64)) * q11 + (dx * q21).astype(F64)).astype(F32)
    lower = ((1.0 - dx.astype(F64)) * q12 + (dx * q22).astype(F64)).astype(F32)
    result = ((dy * lower).astype(F64) + (1.0 - dy.astype(F64)) * upper).astype(F32)
    result[~inside] = 0.0
    return result


def transform_landmarks(landmarks: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """MediaPipe's ``TransformLandmarksV2`` of ``landmarks [N, D]`` (D = 2 or 3, read as
    float32): ``[N, D]`` float32, z copied."""
    points = np.asarray(landmarks, F32)
    values = np.asarray(matrix, F32).reshape(-1)
    out = points.copy()
    out[:, 0] = _dot_xy1(values[0:4], points[:, 0], points[:, 1])
    out[:, 1] = _dot_xy1(values[4:8], points[:, 0], points[:, 1])
    return out


# -- the kernels ------------------------------------------------------------------------------

class _AttentionOp(CpuKernel):
    """What the three share: float32 tensors, one output, options parsed in prepare."""

    name: str = ""
    num_inputs: int = 1

    @property
    def op_name(self) -> str:
        return self.name

    def check_tensors(self, roles: tuple[str, ...]) -> None:
        self.require_num_inputs(self.num_inputs)
        if len(self.outputs) != 1:
            raise self.unsupported(f"expected 1 output, got {len(self.outputs)}")
        for role, tensor in zip(roles, self.inputs):
            self.require_types(tensor, TensorType.FLOAT32, role=role)
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")

    def write(self, value: np.ndarray) -> None:
        out = self.outputs[0]
        if out.is_dynamic:
            out.set_data(value.reshape(out.shape))
        else:
            out.data[...] = value.reshape(out.shape)


@register_custom(LANDMARKS_TO_TRANSFORM_MATRIX, MEDIAPIPE_ATTENTION_VERSION, MEDIAPIPE_ATTENTION_VERSION)
class LandmarksToTransformMatrix(_AttentionOp):
    """MediaPipe's ``Landmarks2TransformMatrix`` version 2 (float32)."""

    name = LANDMARKS_TO_TRANSFORM_MATRIX

    def prepare(self) -> None:
        self.check_tensors(("landmarks",))
        try:
            self.options = LandmarksToTransformMatrixOptions.parse(self.node.custom_options)
        except CustomOptionsError as error:
            raise self.unsupported(str(error)) from None
        if inputs_pending(self):
            return
        reason = landmarks_shape_reason(self.inputs[0].shape, self.options)
        if reason:
            raise self.unsupported(reason)
        self.outputs[0].resize((1, 4, 4))

    def invoke(self) -> None:
        self.write(landmarks_to_transform_matrix(self.inputs[0].data, self.options))


@register_custom(TRANSFORM_TENSOR_BILINEAR, MEDIAPIPE_ATTENTION_VERSION, MEDIAPIPE_ATTENTION_VERSION)
class TransformTensorBilinear(_AttentionOp):
    """MediaPipe's ``TransformTensorBilinear`` version 2 (float32)."""

    name = TRANSFORM_TENSOR_BILINEAR
    num_inputs = 2

    def prepare(self) -> None:
        self.check_tensors(("input", "matrix"))
        try:
            option_size = transform_tensor_output_size(self.node.custom_options)
        except CustomOptionsError as error:
            raise self.unsupported(str(error)) from None
        if inputs_pending(self):
            return
        x, matrix = self.inputs
        reason = transform_tensor_shape_reason(x.shape, self.outputs[0].shape, option_size) or matrix_shape_reason(matrix.shape)
        if reason:
            raise self.unsupported(reason)

    def invoke(self) -> None:
        x, matrix = self.inputs
        _, out_h, out_w, _ = self.outputs[0].shape
        self.write(transform_tensor_bilinear(x.data[0], matrix.data, out_h, out_w))


@register_custom(TRANSFORM_LANDMARKS, MEDIAPIPE_ATTENTION_VERSION, MEDIAPIPE_ATTENTION_VERSION)
class TransformLandmarks(_AttentionOp):
    """MediaPipe's ``TransformLandmarks`` version 2 (float32, 2-D or 3-D landmarks)."""

    name = TRANSFORM_LANDMARKS
    num_inputs = 2

    def prepare(self) -> None:
        self.check_tensors(("landmarks", "matrix"))
        if inputs_pending(self):
            return
        landmarks, matrix = self.inputs
        reason = transform_landmarks_shape_reason(landmarks.shape) or matrix_shape_reason(matrix.shape)
        if reason:
            raise self.unsupported(reason)
        self.outputs[0].resize(landmarks.shape)

    def invoke(self) -> None:
        landmarks = self.inputs[0].data
        self.write(transform_landmarks(landmarks.reshape(landmarks.shape[1:]), self.inputs[1].data))
