"""The face-mesh pipeline of the tests: find the face on the portrait with MediaPipe's face
detector, crop it, and run MediaPipe's two face-landmark models on the crop.

- Image: tests/data/images/grace_hopper.jpg (public domain, see its SOURCES.md), decoded by Pillow.
- Detector: ``mp_face_detection_short_range`` on the whole image resized to 128x128 (no
  letterbox), scaled to [-1, 1]; its 896 anchors are MediaPipe's for that model (stride 8: a
  16x16 grid of 2 anchors per cell, then stride 16: an 8x8 grid of 6), every box decoded as
  MediaPipe's TensorsToDetections does (centre offsets and sizes over 128, anchor size 1); the
  best score wins.
- Crop: MediaPipe's face-landmark ROI, a square of 1.5 times the box's longer side around its
  centre, without the rotation (the portrait's eye line is about 7 degrees off level: both models
  see the same crop, which is all the comparison needs), resized to 192x192 (Pillow's
  bilinear) and scaled to [0, 1], the landmark models' input.
- Mesh: each model gives 468 (x, y, z) in pixels of the 192x192 crop. The attention model's
  refined regions (lips: 80 points, each eye: 71) are the mesh points its own
  ``Landmarks2TransformMatrix`` nodes list in ``subset_idxs``, in that order.
"""

from __future__ import annotations

import functools
import pathlib
from dataclasses import dataclass

import numpy as np

DATA = pathlib.Path(__file__).parent / "data"
PORTRAIT = DATA / "images" / "grace_hopper.jpg"
FACE_DETECTOR = DATA / "models" / "real" / "mp_face_detection_short_range.tflite"
FACE_LANDMARK = DATA / "models" / "real" / "mp_face_landmark.tflite"
FACE_LANDMARK_WITH_ATTENTION = DATA / "models" / "real" / "mediapipe_face_landmark_with_attention.tflite"
CROP_SIZE = 192
ROI_SCALE = 1.5


@dataclass(frozen=True)
class Detection:
    score: float  # sigmoid of the best logit
    centre: tuple[float, float]  # image pixels
    size: tuple[float, float]  # width, height in image pixels


def run_model(path: pathlib.Path, x: np.ndarray, delegate=None) -> dict[str, np.ndarray]:
    """Outputs of one invoke, by name (``delegate``: applied before allocation)."""
    from interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), experimental_delegates=[delegate] if delegate else None)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()}


@functools.lru_cache(maxsize=1)
def portrait() -> np.ndarray:
    from PIL import Image

    with Image.open(PORTRAIT) as image:
        return np.asarray(image.convert("RGB"))


def short_range_anchors() -> np.ndarray:
    """The 896 anchor centres (x, y) of face_detection_short_range, normalized."""
    centres = []
    for grid, per_cell in ((16, 2), (8, 6)):
        for y in range(grid):
            for x in range(grid):
                centres += [((x + 0.5) / grid, (y + 0.5) / grid)] * per_cell
    return np.array(centres)


def detect_face(image: np.ndarray) -> Detection:
    from PIL import Image

    height, width, _ = image.shape
    x = np.asarray(Image.fromarray(image).resize((128, 128), Image.BILINEAR), np.float32) / 127.5 - 1
    outputs = run_model(FACE_DETECTOR, x[None])
    boxes = next(v for v in outputs.values() if v.shape[-1] == 16)[0]
    logits = next(v for v in outputs.values() if v.shape[-1] == 1)[0, :, 0]
    best = int(np.argmax(logits))
    anchor = short_range_anchors()[best]
    centre = (boxes[best, 0] / 128 + anchor[0]) * width, (boxes[best, 1] / 128 + anchor[1]) * height
    size = boxes[best, 2] / 128 * width, boxes[best, 3] / 128 * height
    return Detection(float(1 / (1 + np.exp(-logits[best]))), centre, size)


def face_crop(image: np.ndarray, detection: Detection) -> np.ndarray:
    """The landmark models' input [1, 192, 192, 3] float32 in [0, 1]."""
    from PIL import Image

    side = ROI_SCALE * max(detection.size)
    (cx, cy) = detection.centre
    box = tuple(int(round(v)) for v in (cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2))
    crop = Image.fromarray(image).crop(box).resize((CROP_SIZE, CROP_SIZE), Image.BILINEAR)
    return (np.asarray(crop, np.float32) / 255)[None]


@functools.lru_cache(maxsize=1)
def portrait_face_crop() -> np.ndarray:
    image = portrait()
    return face_crop(image, detect_face(image))


def refined_region_indices() -> dict[str, tuple[int, ...]]:
    """The mesh indices of the attention model's refined lips and eyes: its three
    ``Landmarks2TransformMatrix`` nodes' ``subset_idxs`` (lips, left eye, right eye)."""
    from flatbuffers import flexbuffers

    from schema.model import Model

    nodes = [op for op in Model.from_path(FACE_LANDMARK_WITH_ATTENTION).subgraphs[0].operators
             if op.custom_name == "Landmarks2TransformMatrix"]
    subsets = [tuple(flexbuffers.Loads(bytes(op.custom_options))["subset_idxs"]) for op in nodes]
    return dict(zip(("output_lips", "output_left_eye", "output_right_eye"), subsets))


def mesh(outputs: dict[str, np.ndarray]) -> np.ndarray:
    """The 468 (x, y) of a landmark model's mesh output, crop pixels."""
    name = "output_mesh_identity" if "output_mesh_identity" in outputs else next(k for k, v in outputs.items() if v.size == 1404)
    return outputs[name].reshape(468, 3)[:, :2]


def distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.norm(np.asarray(a, np.float64) - b, axis=1)
