"""MediaPipe's attention face mesh (``face_landmark_with_attention.tflite``) on the CPU path, on a
real portrait, against MediaPipe's plain face mesh (``face_landmark.tflite``) on the same crop
(tests/face_mesh.py: the face detector finds the face, both models get the same 192x192 crop).

LiteRT cannot run the attention model (its three MediaPipe ops), and the two models are different
networks, so they agree only approximately. Measured on this crop (Pillow 13, this runtime): the
468 mesh points lie 0.97 px apart on average (95th percentile 2.5 px, at most 4.5 px) in the
192x192 crop; the refined lips and eyes, which go through all three custom ops (the feature map
cropped by TransformTensorBilinear with Landmarks2TransformMatrix's matrix, the crop's landmarks
mapped back by TransformLandmarks), lie 1.27, 1.16 and 1.08 px on average from the plain model's
mesh points they refine. Sampling the crops transposed (x and y swapped in TransformTensorBilinear)
moves the eyes to 2.7 and 4.1 px and the lips to 1.85 px from the model's own mesh: hence the
limits below.
"""

from __future__ import annotations

import numpy as np
import pytest

from face_mesh import (
    FACE_LANDMARK,
    FACE_LANDMARK_WITH_ATTENTION,
    detect_face,
    distances,
    mesh,
    portrait,
    portrait_face_crop,
    refined_region_indices,
    run_model,
)

MESH_MEAN_LIMIT_PX = 2.0  # measured 0.97
MESH_MAX_LIMIT_PX = 8.0  # measured 4.5
REGION_MEAN_LIMIT_PX = 1.5  # measured 1.08 to 1.27 (own mesh: 0.72 to 1.17)
REGION_MAX_LIMIT_PX = 6.0  # measured 4.1


@pytest.fixture(scope="module")
def plain():
    return run_model(FACE_LANDMARK, portrait_face_crop())


@pytest.fixture(scope="module")
def attention():
    return run_model(FACE_LANDMARK_WITH_ATTENTION, portrait_face_crop())


def test_the_detector_finds_the_portraits_face():
    detection = detect_face(portrait())
    assert detection.score > 0.85  # 0.90
    (cx, cy), (w, h) = detection.centre, detection.size
    assert 230 < cx < 300 and 210 < cy < 280 and 140 < w < 210 and 170 < h < 240  # (268, 245), 175 x 205


def test_the_attention_model_runs_whole_and_sees_a_face(attention, plain):
    assert {k: v.shape for k, v in attention.items()} == {
        "output_mesh_identity": (1, 1, 1, 1404), "output_lips": (1, 1, 1, 160), "output_left_eye": (1, 1, 1, 142),
        "output_right_eye": (1, 1, 1, 142), "output_left_iris": (1, 1, 1, 10), "output_right_iris": (1, 1, 1, 10),
        "conv_faceflag": (1, 1, 1, 1),
    }
    assert all(np.isfinite(v).all() for v in attention.values())
    assert attention["conv_faceflag"].item() > 0 and next(v for v in plain.values() if v.size == 1).item() > 0  # logits 23.7, 21.9


def test_its_468_mesh_points_agree_with_the_plain_face_mesh(attention, plain):
    apart = distances(mesh(attention), mesh(plain))
    assert apart.mean() < MESH_MEAN_LIMIT_PX, f"mean {apart.mean():.2f} px"
    assert apart.max() < MESH_MAX_LIMIT_PX, f"max {apart.max():.2f} px at point {int(apart.argmax())}"
    assert np.ptp(mesh(attention), axis=0).min() > 100  # a face filling the crop, not a collapsed mesh


@pytest.mark.parametrize("region", ["output_lips", "output_left_eye", "output_right_eye"])
def test_its_refined_lips_and_eyes_agree_with_the_mesh_points_they_refine(attention, plain, region):
    indices = list(refined_region_indices()[region])
    refined = attention[region].reshape(-1, 2)
    assert len(refined) == len(indices)
    for reference in (mesh(plain), mesh(attention)):
        apart = distances(refined, reference[indices])
        assert apart.mean() < REGION_MEAN_LIMIT_PX, f"{region}: mean {apart.mean():.2f} px"
        assert apart.max() < REGION_MAX_LIMIT_PX, f"{region}: max {apart.max():.2f} px"


@pytest.mark.parametrize("iris, eye", [("output_left_iris", "output_left_eye"), ("output_right_iris", "output_right_eye")])
def test_each_iris_lies_in_its_eye(attention, plain, iris, eye):
    centre, ring = attention[iris].reshape(5, 2)[0], attention[iris].reshape(5, 2)[1:]
    contour = mesh(plain)[list(refined_region_indices()[eye][:16])]  # the eyelid contour
    assert (contour.min(axis=0) < centre).all() and (centre < contour.max(axis=0)).all()
    radius = distances(ring, centre[None])
    assert (3 < radius).all() and (radius < 8).all(), radius  # 4.2 to 5.7 px
