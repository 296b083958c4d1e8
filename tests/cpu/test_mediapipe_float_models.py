"""The other real float models (MediaPipe face landmark, palm detection, pose detection:
PRELU with slopes of both signs, large convolutions with a bias, depthwise layers) against
ai-edge-litert's reference kernels, every output within 1e-5 of its scale (max |value|):
as for face detection (tests/cpu/test_real_models.py), the float32 sums of dozens of
layers run in another order than the reference kernels' loops."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import FLOAT_RTOL, MODELS_DIR, litert_interpreter, run_litert, run_ours

MODELS = ["mp_face_landmark", "mp_palm_detection_lite", "mp_pose_detection"]


@pytest.mark.parametrize("name", MODELS)
def test_mediapipe_float_model_matches_litert(name):
    path = MODELS_DIR / "real" / f"{name}.tflite"
    (detail,) = litert_interpreter(path).get_input_details()
    image = np.random.default_rng(0).uniform(-1, 1, size=tuple(detail["shape"])).astype(np.float32)
    expected, ours = run_litert(path, [image]), run_ours(path, [image])
    assert [o.shape for o in ours] == [e.shape for e in expected]
    for i, (got, want) in enumerate(zip(ours, expected)):
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=FLOAT_RTOL, atol=FLOAT_RTOL * scale, err_msg=f"{name} output {i}")
