"""Direct ports of MediaPipe's C++ loops for its attention face-mesh ops (version 2), scalar by
scalar: ``mediapipe/util/tflite/operations/landmarks_to_transform_matrix.cc``
(``LandmarksToTransformMatrixV2``), ``transform_tensor_bilinear.cc``
(``TransformTensorBilinearV2``) and ``transform_landmarks.cc`` (``TransformLandmarksV2``).

LiteRT cannot run these ops, so these ports are the tests' oracle beside hand-computed cases.
Each C++ ``float`` is an ``np.float32`` here and each ``double`` a Python float, operation by
operation in the C++ order (``float * float`` rounds to float; ``1.0 - f`` is a double), so the
kernels must equal them bit for bit. ``std::cos``/``sin``/``atan2`` of a float are taken in
double and rounded (glibc's float functions are correctly rounded on these arguments, or within
an ulp: the tests of the matrix allow that ulp).
"""

from __future__ import annotations

import math

import numpy as np

f32 = np.float32


def _dot(l, r):
    # float DotProduct(float4 l, float4 r) { return l.x * r.x + l.y * r.y + l.z * r.z + l.w * r.w; }
    return f32(f32(f32(f32(l[0] * r[0]) + f32(l[1] * r[1])) + f32(l[2] * r[2])) + f32(l[3] * r[3]))


class _Mat:
    """MediaPipe's Mat3 / Mat4: row-major floats, products summed from 0 in float."""

    def __init__(self, n, values):
        self.n, self.data = n, [f32(v) for v in values]

    def get(self, r, c):
        return self.data[r * self.n + c]

    def times(self, other):
        out = []
        for r in range(self.n):
            for c in range(self.n):
                total = f32(0.0)
                for k in range(self.n):
                    total = f32(total + f32(self.get(r, k) * other.get(k, c)))
                out.append(total)
        return _Mat(self.n, out)

    def apply(self, vec):
        out = []
        for r in range(self.n):
            total = f32(0.0)
            for k in range(self.n):
                total = f32(total + f32(self.get(r, k) * vec[k]))
            out.append(total)
        return out


def _cos(x):
    return f32(math.cos(float(x)))


def _sin(x):
    return f32(math.sin(float(x)))


def landmarks_to_transform_matrix(landmarks, subset_idxs, left, right, target, out_h, out_w, scale_x, scale_y):
    """``LandmarksToTransformMatrixV2`` (with ``ParseLandmarksToTransformMatrixV2Attributes``'s
    pairing of ``subset_idxs``): the 16 output floats."""
    data = [f32(v) for v in np.asarray(landmarks, np.float32).reshape(-1)]

    def xyz(i):
        return [data[i * 3], data[i * 3 + 1], data[i * 3 + 2]]

    # EstimateRotationRadians
    l, r_ = xyz(left), xyz(right)
    rotation = f32(math.atan2(float(f32(r_[1] - l[1])), float(f32(r_[0] - l[0]))))
    rotation = f32(f32(target) - rotation)
    # the attributes' pairs: an odd count repeats the last index
    pairs = [(subset_idxs[i * 2], subset_idxs[i * 2 + 1]) for i in range(len(subset_idxs) // 2)]
    if len(subset_idxs) % 2:
        pairs.append((subset_idxs[-1], subset_idxs[-1]))
    # EstimateCenterAndSize
    points = []
    for a, b in pairs:
        points += [xyz(a), xyz(b)]
    for p in points:
        p[2] = f32(1.0)
    r = rotation
    t_rotation = _Mat(3, [_cos(r), -_sin(r), 0.0, _sin(r), _cos(r), 0.0, 0.0, 0.0, 1.0])
    t_rotation_inverse = _Mat(3, [_cos(-r), -_sin(-r), 0.0, _sin(-r), _cos(-r), 0.0, 0.0, 0.0, 1.0])
    points = [t_rotation.apply(p) for p in points]
    hi, lo = list(points[0]), list(points[0])
    for p in points[1:]:
        if hi[0] < p[0]:
            hi[0] = p[0]
        if hi[1] < p[1]:
            hi[1] = p[1]
        if lo[0] > p[0]:
            lo[0] = p[0]
        if lo[1] > p[1]:
            lo[1] = p[1]
    crop_width, crop_height = f32(hi[0] - lo[0]), f32(hi[1] - lo[1])
    crop = list(lo)
    crop[0] = f32(f32(crop[0] + hi[0]) / f32(2))
    crop[1] = f32(f32(crop[1] + hi[1]) / f32(2))
    crop = t_rotation_inverse.apply(crop)
    crop_x, crop_y = crop[0], crop[1]
    # LandmarksToTransformMatrixV2
    t = _Mat(4, [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1])
    t = t.times(_Mat(4, [1, 0, 0, crop_x, 0, 1, 0, crop_y, 0, 0, 1, 0, 0, 0, 0, 1]))
    rr = f32(-rotation)
    t = t.times(_Mat(4, [_cos(rr), -_sin(rr), 0, 0, _sin(rr), _cos(rr), 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]))
    sx = f32(f32(f32(scale_x) * crop_width) / f32(out_w))
    sy = f32(f32(f32(scale_y) * crop_height) / f32(out_h))
    t = t.times(_Mat(4, [sx, 0, 0, 0, 0, sy, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]))
    shift_x, shift_y = f32(-1.0 * (out_w / 2.0)), f32(-1.0 * (out_h / 2.0))
    t = t.times(_Mat(4, [1, 0, 0, shift_x, 0, 1, 0, shift_y, 0, 0, 1, 0, 0, 0, 0, 1]))
    return np.array(t.data, np.float32)


def transform_tensor_bilinear(image, matrix, out_h, out_w):
    """``TransformTensorBilinearV2`` of ``image [H, W, C]``: ``[out_h, out_w, C]``."""
    image = np.asarray(image, np.float32)
    in_h, in_w, channels = image.shape
    m = [f32(v) for v in np.asarray(matrix, np.float32).reshape(-1)]
    x_t, y_t = m[0:4], m[4:8]
    x_t[3] = f32(float(x_t[3]) + (float(x_t[0]) * 0.5 + float(x_t[1]) * 0.5 - 0.5))
    y_t[3] = f32(float(y_t[3]) + (float(y_t[0]) * 0.5 + float(y_t[1]) * 0.5 - 0.5))
    out = np.zeros((out_h, out_w, channels), np.float32)

    def read(h, w, z):
        return f32(0.0) if h < 0 or w < 0 or h >= in_h or w >= in_w else image[h, w, z]

    for oy in range(out_h):
        for ox in range(out_w):
            coord = (f32(ox), f32(oy), f32(0.0), f32(1.0))
            tx, ty = _dot(x_t, coord), _dot(y_t, coord)
            if tx < 0.0 or tx > in_w - 1 or ty < 0.0 or ty > in_h - 1:
                continue
            fx, fy = f32(math.floor(tx)), f32(math.floor(ty))
            for z in range(channels):
                q11, q21 = read(int(fy), int(fx), z), read(int(fy), int(fx) + 1, z)
                q12, q22 = read(int(fy) + 1, int(fx), z), read(int(fy) + 1, int(fx) + 1, z)
                right, lower_c = f32(tx - fx), f32(ty - fy)
                upper = f32((1.0 - float(right)) * float(q11) + float(f32(right * q21)))
                lower = f32((1.0 - float(right)) * float(q12) + float(f32(right * q22)))
                out[oy, ox, z] = f32(float(f32(lower_c * lower)) + (1.0 - float(lower_c)) * float(upper))
    return out


def transform_landmarks(landmarks, matrix):
    """``TransformLandmarksV2`` of ``landmarks [N, D]``, D = 2 or 3."""
    points = np.asarray(landmarks, np.float32)
    m = [f32(v) for v in np.asarray(matrix, np.float32).reshape(-1)]
    out = points.copy()
    for i, p in enumerate(points):
        lv = (p[0], p[1], f32(0.0), f32(1.0))
        out[i, 0], out[i, 1] = _dot(m[0:4], lv), _dot(m[4:8], lv)
    return out
