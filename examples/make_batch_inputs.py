"""Draw the example inputs of ``litedelegate batch`` (``examples/batch_inputs/``).

Eight 128x128 pictures of a cartoon face on a shaded background (the input size of the
bundled face detector, ``tests/data/models/real/mp_face_detection_short_range.tflite``),
each with its own place, size and colours; six PNG and two JPEG. Deterministic: running
it again writes the same pictures.

    python examples/make_batch_inputs.py
"""

from __future__ import annotations

import pathlib

import numpy as np
from PIL import Image, ImageDraw

OUT = pathlib.Path(__file__).resolve().parent / "batch_inputs"
SIZE = 128


def face(seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    top, bottom = rng.integers(60, 220, size=(2, 3))
    ramp = np.linspace(0.0, 1.0, SIZE)[:, None, None]
    background = (top * (1 - ramp) + bottom * ramp).astype(np.uint8)
    image = Image.fromarray(np.broadcast_to(background, (SIZE, SIZE, 3)).copy())
    draw = ImageDraw.Draw(image)
    radius = int(rng.integers(26, 46))
    cx, cy = (int(v) for v in rng.integers(radius + 4, SIZE - radius - 4, size=2))
    skin = tuple(int(v) for v in rng.integers(150, 240, size=3))
    draw.ellipse([cx - radius, cy - int(radius * 1.2), cx + radius, cy + int(radius * 1.2)], fill=skin, outline=(60, 40, 30))
    eye = max(2, radius // 7)
    for side in (-1, 1):
        ex, ey = cx + side * radius // 2, cy - radius // 3
        draw.ellipse([ex - eye, ey - eye, ex + eye, ey + eye], fill=(30, 30, 40))
    draw.arc([cx - radius // 2, cy, cx + radius // 2, cy + radius // 2 + 4], 20, 160, fill=(120, 30, 30), width=2)
    return image


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for index in range(8):
        suffix = "jpg" if index >= 6 else "png"
        path = OUT / f"face_{index}.{suffix}"
        face(index).save(path, **({"quality": 90} if suffix == "jpg" else {"optimize": True}))
        print(f"wrote {path.relative_to(OUT.parent.parent)}")


if __name__ == "__main__":
    main()
