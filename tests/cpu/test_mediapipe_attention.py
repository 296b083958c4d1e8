"""MediaPipe's attention face-mesh ops on the CPU: ``Landmarks2TransformMatrix``,
``TransformTensorBilinear`` and ``TransformLandmarks``, version 2.

LiteRT cannot run them (MediaPipe's own resolver adds them), so the oracle is MediaPipe's
definition: hand-computed cases (identity, translation, scale, rotation, bilinear samples at
known points, zeros outside the image) and a direct port of MediaPipe's C++ loops
(``tests/mediapipe_attention_reference.py``) on random inputs, which the kernels equal bit for
bit. Outside CI, ``benchmarks/compare_mediapipe.py`` runs one-node models of each op through
MediaPipe's own runtime: equal bit for bit there too (the matrix within an ulp of glibc's
cosf/sinf).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from flatbuffers import flexbuffers

import mediapipe_attention_reference as mediapipe
from backends.cpu import builtin_op_resolver
from backends.cpu.kernels.mediapipe_attention import (
    LANDMARKS_TO_TRANSFORM_MATRIX,
    TRANSFORM_LANDMARKS,
    TRANSFORM_TENSOR_BILINEAR,
    LandmarksToTransformMatrixOptions,
)
from delegate_sdk.context import KernelError
from delegate_sdk.op_resolver import UnsupportedOperatorError
from interpreter import Interpreter
from model_helpers import Const, In, Out, single_op_model
from oracle import run_ours
from schema.custom_options import CustomOptionsError, flexbuffer_bytes

F32 = np.float32


def matrix_options(subset, left=0, right=1, target=0.0, out_h=16, out_w=16, scale_x=1.5, scale_y=1.5, **overrides) -> bytes:
    values = dict(subset_idxs=list(subset), left_rotation_idx=left, right_rotation_idx=right,
                  target_rotation_radians=target, output_height=out_h, output_width=out_w, scale_x=scale_x, scale_y=scale_y)
    values.update(overrides)
    return flexbuffer_bytes({k: v for k, v in values.items() if v is not None})


def matrix_model(count: int, options: bytes, *, version: int = 2) -> bytes:
    return single_op_model(LANDMARKS_TO_TRANSFORM_MATRIX, [In([1, count, 3])], Out([1, 4, 4]), version=version,
                           custom_options=options)


def bilinear_model(input_shape, out_hw, options: bytes | None = None, *, matrix=None, out_channels=None) -> bytes:
    channels = input_shape[3] if out_channels is None else out_channels
    matrix_input = In([1, 4, 4]) if matrix is None else Const(np.asarray(matrix, F32).reshape(1, 4, 4))
    options = flexbuffer_bytes({"output_height": out_hw[0], "output_width": out_hw[1]}) if options is None else options
    return single_op_model(TRANSFORM_TENSOR_BILINEAR, [In(input_shape), matrix_input], Out([1, *out_hw, channels]),
                           version=2, custom_options=options)


def landmarks_model(shape) -> bytes:
    return single_op_model(TRANSFORM_LANDMARKS, [In(shape), In([1, 4, 4])], Out(list(shape)), version=2)


def affine(a, b, tx, c, d, ty) -> np.ndarray:
    """The 4x4 matrix of the 2-D map (x, y) -> (a x + b y + tx, c x + d y + ty)."""
    return np.array([[a, b, 0, tx], [c, d, 0, ty], [0, 0, 1, 0], [0, 0, 0, 1]], F32)


def to_matrix(landmarks, options: bytes) -> np.ndarray:
    (matrix,) = run_ours(matrix_model(landmarks.shape[0], options), [landmarks.reshape(1, -1, 3).astype(F32)])
    assert matrix.shape == (1, 4, 4)
    return matrix[0]


def sample(image, matrix, out_hw) -> np.ndarray:
    (out,) = run_ours(bilinear_model([1, *image.shape], out_hw), [image[None].astype(F32), np.asarray(matrix, F32).reshape(1, 4, 4)])
    return out[0]


def box_landmarks(x0, y0, x1, y1) -> np.ndarray:
    """Landmarks 0 and 1 are the box's left and right middle points; 2..5 its corners."""
    ym = (y0 + y1) / 2
    return np.array([[x0, ym, 0], [x1, ym, 0], [x0, y0, 1], [x1, y0, 2], [x0, y1, 3], [x1, y1, 4]], F32)


# -- Landmarks2TransformMatrix -------------------------------------------------------------------


def test_an_upright_box_gives_a_scaled_crop_centred_on_it():
    # Box 20 x 40 centred at (20, 40), eyes horizontal: no rotation. The 16 x 16 crop spans the
    # box scaled by 1.5: 30 x 60 from (5, 10). Matrix = T(20, 40) S(30/16, 60/16) T(-8, -8).
    matrix = to_matrix(box_landmarks(10, 20, 30, 60), matrix_options(range(2, 6)))
    np.testing.assert_array_equal(matrix, affine(1.875, 0, 5, 0, 3.75, 10))
    # The crop's corners land on the scaled box's corners.
    np.testing.assert_array_equal(matrix @ [16, 16, 0, 1], [35, 70, 0, 1])


def test_output_size_and_scales_divide_the_box():
    matrix = to_matrix(box_landmarks(0, 0, 32, 8), matrix_options(range(2, 6), out_h=4, out_w=8, scale_x=2.0, scale_y=1.0))
    # scale_x: 2 * 32 / 8 = 8, scale_y: 1 * 8 / 4 = 2; centre (16, 4); shift (-4, -2).
    np.testing.assert_array_equal(matrix, affine(8, 0, 16 - 32, 0, 2, 4 - 4))


def test_the_eye_line_sets_the_rotation():
    # The same 20 x 40 box turned by 90 degrees: the "right eye" straight below the "left eye".
    # Then the crop's x axis runs down the image (along the eye line) and its y axis to the left.
    landmarks = np.array([[20, 30, 0], [20, 50, 0], [0, 30, 0], [40, 30, 0], [0, 50, 0], [40, 50, 0]], F32)
    matrix = to_matrix(landmarks, matrix_options(range(2, 6)))
    # Rotated frame: the box is 20 (along the eye line) x 40, centre (20, 40): scales 30/16, 60/16.
    want = affine(0, -3.75, 20 + 8 * 3.75, 1.875, 0, 40 - 8 * 1.875)
    np.testing.assert_allclose(matrix, want, rtol=0, atol=1e-5)
    direction = matrix @ [1, 0, 0, 0]
    np.testing.assert_allclose(direction[:2] / np.linalg.norm(direction[:2]), [0, 1], atol=1e-6)  # along right - left


def test_a_target_rotation_turns_the_crop():
    landmarks = box_landmarks(10, 20, 30, 60)
    upright = to_matrix(landmarks, matrix_options(range(2, 6)))
    turned = to_matrix(landmarks, matrix_options(range(2, 6), target=math.pi / 2))
    # rotation = pi/2 - 0: the box is measured in a frame turned by 90 degrees (40 x 20), and the
    # crop's axes turn by -90 degrees: x maps to -y, y to x.
    np.testing.assert_allclose(turned @ [1, 0, 0, 0], [0, -3.75, 0, 0], atol=1e-6)
    np.testing.assert_allclose(turned @ [0, 1, 0, 0], [1.875, 0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(turned @ [8, 8, 0, 1], upright @ [8, 8, 0, 1], atol=1e-5)  # same centre


def test_an_odd_subset_repeats_its_last_index_and_changes_nothing():
    landmarks = box_landmarks(10, 20, 30, 60)
    even = to_matrix(landmarks, matrix_options([2, 3, 4, 5]))
    odd = to_matrix(landmarks, matrix_options([2, 3, 4, 5, 5, 3, 2]))
    np.testing.assert_array_equal(odd, even)


@pytest.mark.parametrize("seed", range(4))
def test_matrix_equals_mediapipes_loops_on_random_landmarks(seed):
    rng = np.random.default_rng(seed)
    landmarks = rng.uniform(0, 192, (40, 3)).astype(F32)
    subset = rng.integers(0, 40, 15).tolist()
    args = dict(left=int(rng.integers(40)), right=int(rng.integers(40)), target=float(rng.uniform(-1, 1)),
                out_h=int(rng.integers(4, 32)), out_w=int(rng.integers(4, 32)), scale_x=float(rng.uniform(1, 2)),
                scale_y=float(rng.uniform(1, 2)))
    got = to_matrix(landmarks, matrix_options(subset, **args))
    want = mediapipe.landmarks_to_transform_matrix(landmarks, subset, args["left"], args["right"], args["target"],
                                                   args["out_h"], args["out_w"], args["scale_x"], args["scale_y"])
    np.testing.assert_array_equal(got.reshape(-1), want)


def test_the_face_mesh_models_options_are_read():
    # Node 192 of face_landmark_with_attention.tflite (the lips), as the converter wrote it.
    subset = [61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 185, 40, 39, 37, 0, 267, 269, 270, 409]
    options = LandmarksToTransformMatrixOptions.parse(matrix_options(subset, left=61, right=291))
    assert options.subset_idxs == tuple(subset) and (options.left_rotation_idx, options.right_rotation_idx) == (61, 291)
    assert (options.output_height, options.output_width, options.scale_x, options.scale_y) == (16, 16, 1.5, 1.5)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(subset=[]), "subset_idxs is missing or empty"),
        (dict(subset=[2, -1]), "negative indices"),
        (dict(left=-1), "left_rotation_idx is -1"),
        (dict(out_h=0), "output_height is 0"),
        (dict(scale_y=None), "scale_y is 0.0"),
        (dict(subset_idxs="lips"), "'subset_idxs' is not a vector"),
    ],
    ids=["empty-subset", "negative-subset", "negative-left", "zero-height", "missing-scale", "string-subset"],
)
def test_bad_matrix_options_fail_clearly(overrides, message):
    args = dict(subset=[2, 3])
    args.update(overrides)
    options = matrix_options(**args)
    with pytest.raises(CustomOptionsError, match=message):
        LandmarksToTransformMatrixOptions.parse(options)
    with pytest.raises(KernelError, match=f"{LANDMARKS_TO_TRANSFORM_MATRIX} v2: .*{message}"):
        Interpreter(model_content=matrix_model(6, options)).allocate_tensors()


def test_an_untyped_subset_vector_is_refused_as_mediapipe_finds_no_indices_in_it():
    # flexbuffers' Dumps writes a list as an untyped vector; MediaPipe's AsTypedVector() reads
    # that as empty, and its kernel then reads past the empty subset (here: a clear error).
    untyped = bytes(flexbuffers.Dumps(dict(subset_idxs=[2, 3], output_height=16, output_width=16, scale_x=1.5, scale_y=1.5)))
    with pytest.raises(KernelError, match="'subset_idxs' is an untyped or fixed-size vector; MediaPipe reads it with AsTypedVector"):
        Interpreter(model_content=matrix_model(6, untyped)).allocate_tensors()


@pytest.mark.parametrize(
    "options, message",
    [
        (matrix_options([2, 6]), r"subset_idxs holds indices \[6\] past the 6 landmarks"),
        (matrix_options([2, 3], right=9), "right_rotation_idx is 9, past the 6 landmarks"),
        (None, "custom options are empty"),
    ],
    ids=["subset-past-the-end", "right-past-the-end", "no-options"],
)
def test_indices_past_the_landmarks_and_missing_options_fail_clearly(options, message):
    with pytest.raises(KernelError, match=f"{LANDMARKS_TO_TRANSFORM_MATRIX} v2: .*{message}"):
        Interpreter(model_content=matrix_model(6, options)).allocate_tensors()


def test_landmarks_must_be_one_batch_of_xyz_triples():
    options = matrix_options([0, 1])
    model = single_op_model(LANDMARKS_TO_TRANSFORM_MATRIX, [In([1, 6, 2])], Out([1, 4, 4]), version=2, custom_options=options)
    with pytest.raises(KernelError, match=r"landmarks must be \[1, N, 3\].*got \[1, 6, 2\]"):
        Interpreter(model_content=model).allocate_tensors()


# -- TransformTensorBilinear ---------------------------------------------------------------------

IMAGE = np.arange(8 * 9 * 2, dtype=F32).reshape(8, 9, 2) * F32(0.5)  # a ramp: bilinear is exact on it


def test_the_identity_matrix_copies_the_top_left_window():
    # The pixel-centre correction cancels: m03 += 0.5 + 0 - 0.5.
    np.testing.assert_array_equal(sample(IMAGE, np.eye(4), (5, 6)), IMAGE[:5, :6])


def test_a_whole_pixel_translation_shifts_the_window():
    np.testing.assert_array_equal(sample(IMAGE, affine(1, 0, 2, 0, 1, 1), (5, 6)), IMAGE[1:6, 2:8])


def test_a_half_pixel_translation_averages_neighbours():
    got = sample(IMAGE, affine(1, 0, 0.5, 0, 1, 0), (4, 4))
    np.testing.assert_array_equal(got, (IMAGE[:4, :4] + IMAGE[:4, 1:5]) / 2)


def test_a_scale_of_two_averages_each_2x2_block():
    # Output pixel centre (x + 0.5) maps to 2x + 1: the middle of input pixels 2x and 2x + 1.
    image = np.random.default_rng(0).integers(-8, 8, (8, 8, 3)).astype(F32)
    got = sample(image, affine(2, 0, 0, 0, 2, 0), (4, 4))
    np.testing.assert_array_equal(got, image.reshape(4, 2, 4, 2, 3).mean(axis=(1, 3)))


def test_a_quarter_turn_rotates_the_image():
    # out[y, x] = in[x, 7 - y]: (x, y) -> (-y + 8, x) before the pixel-centre correction.
    image = np.random.default_rng(1).standard_normal((8, 8, 2)).astype(F32)
    got = sample(image, affine(0, -1, 8, 1, 0, 0), (8, 8))
    np.testing.assert_array_equal(got, np.rot90(image, k=1, axes=(0, 1)))


def test_a_fractional_position_mixes_the_four_neighbours():
    # Output (0, 0) samples (1.25, 2.75): rows 2 and 3, columns 1 and 2.
    image = np.random.default_rng(2).standard_normal((5, 5, 1)).astype(F32)
    got = sample(image, affine(1, 0, 1.25, 0, 1, 2.75), (1, 1))
    upper = 0.75 * image[2, 1, 0] + 0.25 * image[2, 2, 0]
    lower = 0.75 * image[3, 1, 0] + 0.25 * image[3, 2, 0]
    np.testing.assert_allclose(got[0, 0, 0], 0.25 * upper + 0.75 * lower, rtol=1e-6)


def test_positions_outside_the_image_give_zeros():
    # Shifted left by 3 and up by 2: the first 3 columns and 2 rows fall outside.
    got = sample(IMAGE, affine(1, 0, -3, 0, 1, -2), (6, 7))
    assert not got[:2].any() and not got[:, :3].any()
    np.testing.assert_array_equal(got[2:, 3:], IMAGE[:4, :4])


def test_a_position_past_the_last_pixel_by_a_fraction_is_outside():
    # x from 8.5 - 0.5 = 8 (the last column, inside) and 8.25: outside (MediaPipe: tx > W - 1).
    got = sample(IMAGE, affine(1, 0, 8, 0, 1, 0), (2, 1))
    np.testing.assert_array_equal(got[:, 0], IMAGE[:2, 8])  # the right neighbour (past the edge) weighs 0
    assert not sample(IMAGE, affine(1, 0, 8.25, 0, 1, 0), (2, 1)).any()


def test_a_nan_matrix_gives_zeros():
    assert not sample(IMAGE, affine(np.nan, 0, 0, 0, 1, 0), (3, 3)).any()


@pytest.mark.parametrize("seed", range(4))
def test_bilinear_equals_mediapipes_loops_on_random_matrices(seed):
    # Random rotations, scales and shifts: positions inside, outside and on the edges.
    rng = np.random.default_rng(seed)
    image = rng.standard_normal((11, 13, 3)).astype(F32)
    angle, scale = rng.uniform(-math.pi, math.pi), rng.uniform(0.3, 1.5)
    c, s = scale * math.cos(angle), scale * math.sin(angle)
    matrix = affine(c, -s, rng.uniform(-4, 14), s, c, rng.uniform(-4, 12))
    got = sample(image, matrix, (9, 10))
    np.testing.assert_array_equal(got, mediapipe.transform_tensor_bilinear(image, matrix, 9, 10))


def test_the_output_tensors_shape_sets_the_output_size_without_options():
    model = bilinear_model([1, 8, 9, 2], (3, 4), options=b"")
    (got,) = run_ours(model, [IMAGE[None], np.eye(4, dtype=F32)[None]])
    np.testing.assert_array_equal(got[0], IMAGE[:3, :4])


@pytest.mark.parametrize(
    "input_shape, out_hw, options, out_channels, message",
    [
        ([1, 8, 9, 2], (3, 4), flexbuffer_bytes({"output_height": 5, "output_width": 4}), None,
         "option output_height is 5 but the output tensor has 3"),
        ([2, 8, 9, 2], (3, 4), None, None, "batch must be 1"),
        ([1, 8, 9, 2], (3, 4), None, 3, r"output channels \(3\) differ from the input's \(2\)"),
        ([1, 8, 9], (3, 4), None, 9, "input and output must be 4-D"),
    ],
    ids=["options-disagree", "batch-2", "channels", "rank-3"],
)
def test_bad_bilinear_nodes_fail_clearly(input_shape, out_hw, options, out_channels, message):
    if len(input_shape) == 3:
        model = single_op_model(TRANSFORM_TENSOR_BILINEAR, [In(input_shape), In([1, 4, 4])], Out([1, *out_hw, 9]),
                                version=2, custom_options=b"")
    else:
        model = bilinear_model(input_shape, out_hw, options, out_channels=out_channels)
    with pytest.raises(KernelError, match=f"{TRANSFORM_TENSOR_BILINEAR} v2: .*{message}"):
        Interpreter(model_content=model).allocate_tensors()


def test_the_matrix_must_hold_sixteen_values():
    model = single_op_model(TRANSFORM_TENSOR_BILINEAR, [In([1, 8, 9, 2]), In([1, 2, 4])], Out([1, 3, 4, 2]), version=2)
    with pytest.raises(KernelError, match=r"matrix must hold 16 values .*got shape \[1, 2, 4\]"):
        Interpreter(model_content=model).allocate_tensors()


# -- TransformLandmarks --------------------------------------------------------------------------


def transform(points, matrix) -> np.ndarray:
    (out,) = run_ours(landmarks_model([1, *points.shape]), [points[None].astype(F32), np.asarray(matrix, F32)[None]])
    return out[0]


def test_the_identity_matrix_keeps_the_landmarks():
    points = np.random.default_rng(0).uniform(0, 16, (7, 2)).astype(F32)
    np.testing.assert_array_equal(transform(points, np.eye(4)), points)


def test_a_scale_and_translation_moves_xy_and_copies_z():
    points = np.array([[0, 0, 5], [16, 16, -3], [4, 8, 0.5]], F32)
    got = transform(points, affine(1.875, 0, 5, 0, 3.75, 10))
    np.testing.assert_array_equal(got, [[5, 10, 5], [35, 70, -3], [12.5, 40, 0.5]])


def test_a_quarter_turn_rotates_the_landmarks():
    points = np.array([[1, 0], [0, 1], [2, 3]], F32)
    np.testing.assert_array_equal(transform(points, affine(0, -1, 0, 1, 0, 0)), [[0, 1], [-1, 0], [-3, 2]])


def test_the_matrix_crop_round_trip_puts_crop_landmarks_back_in_place():
    # What the model does: landmarks found in the 16 x 16 crop go back through the same matrix.
    matrix = to_matrix(box_landmarks(10, 20, 30, 60), matrix_options(range(2, 6)))
    crop_corners = np.array([[0, 0], [16, 0], [0, 16], [16, 16], [8, 8]], F32)
    np.testing.assert_array_equal(transform(crop_corners, matrix), [[5, 10], [35, 10], [5, 70], [35, 70], [20, 40]])


@pytest.mark.parametrize("dims", [2, 3])
def test_landmarks_equal_mediapipes_loops_on_random_matrices(dims):
    rng = np.random.default_rng(dims)
    points = rng.uniform(-10, 50, (23, dims)).astype(F32)
    matrix = rng.standard_normal((4, 4)).astype(F32)
    np.testing.assert_array_equal(transform(points, matrix), mediapipe.transform_landmarks(points, matrix))


@pytest.mark.parametrize("shape, message", [([1, 5, 4], r"\[1, N, 2\] or \[1, N, 3\]"), ([2, 5, 2], "batch 1")])
def test_bad_landmark_shapes_fail_clearly(shape, message):
    with pytest.raises(KernelError, match=f"{TRANSFORM_LANDMARKS} v2: .*{message}"):
        Interpreter(model_content=landmarks_model(shape)).allocate_tensors()


# -- registration ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [LANDMARKS_TO_TRANSFORM_MATRIX, TRANSFORM_TENSOR_BILINEAR, TRANSFORM_LANDMARKS])
def test_the_builtin_resolver_registers_version_2_as_mediapipes_resolver_does(name):
    resolver = builtin_op_resolver()
    assert resolver.custom_versions(name) == (2,)
    assert resolver.find_custom(name, 2).op_name == name


def test_version_1_is_refused_naming_the_versions_there_are():
    with pytest.raises(UnsupportedOperatorError, match=f"{LANDMARKS_TO_TRANSFORM_MATRIX} version 1: .*versions 2"):
        Interpreter(model_content=matrix_model(6, matrix_options([2, 3]), version=1))


def test_constant_landmarks_are_folded_at_prepare():
    landmarks = box_landmarks(10, 20, 30, 60)[None]
    model = single_op_model(LANDMARKS_TO_TRANSFORM_MATRIX, [Const(landmarks)], Out([1, 4, 4]), version=2,
                            custom_options=matrix_options(range(2, 6)))
    (got,) = run_ours(model, [])
    np.testing.assert_array_equal(got[0], affine(1.875, 0, 5, 0, 3.75, 10))


def test_landmarks_whose_shape_is_known_only_at_invoke_are_transformed():
    # A RESHAPE to a shape given at run time makes the landmarks a dynamic tensor.
    from schema.builder import ModelBuilder
    from schema.enums import BuiltinOperator
    from schema.params import ReshapeParams

    builder = ModelBuilder()
    graph = builder.subgraph()
    x, shape, matrix = graph.add_input("x", [1, 36]), graph.add_input("shape", [3], np.int32), graph.add_input("m", [1, 4, 4])
    landmarks, out = graph.add_tensor("landmarks", [1, 12, 3]), graph.add_tensor("out", [1, 12, 3])
    graph.add_operator(BuiltinOperator.RESHAPE, [x, shape], [landmarks], ReshapeParams())
    graph.add_operator(TRANSFORM_LANDMARKS, [landmarks, matrix], [out], version=2)
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    interpreter = Interpreter(model_content=builder.build())
    interpreter.allocate_tensors()
    points = np.arange(36, dtype=F32).reshape(1, 36)
    for new_shape in ([1, 12, 3], [1, 18, 2]):
        x_in, shape_in, matrix_in = (d["index"] for d in interpreter.get_input_details())
        interpreter.set_tensor(x_in, points)
        interpreter.set_tensor(shape_in, np.array(new_shape, np.int32))
        interpreter.set_tensor(matrix_in, affine(1, 0, 5, 0, 2, 0)[None])
        interpreter.invoke()
        got = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        want = points.reshape(new_shape).copy()
        want[..., 0] += 5
        want[..., 1] *= 2
        np.testing.assert_array_equal(got, want)
