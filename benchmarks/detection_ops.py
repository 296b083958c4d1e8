"""The detector and sorting ops (TOPK_V2, UNIQUE, NON_MAX_SUPPRESSION_V4/V5 and the custom
``TFLite_Detection_PostProcess``) timed against ai-edge-litert's reference kernels
(BUILTIN_REF) in the same run, on data shaped like a detector's: an SSD's 1917 anchors and
91 classes, thousands of clustered boxes.

    python benchmarks/detection_ops.py [--runs 50] [--rounds 3] [FILTER ...]

For every case: the median time of one ``invoke`` of litedelegate and of LiteRT (one thread
each, the smallest median over the rounds) and the ratio, and whether the outputs are equal
(bit for bit; for the post-process, on the rows LiteRT writes). Where scores tie, NMS replays
libstdc++'s heap in Python (the "tied" cases), which is what costs most.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from delegate_sdk.recipes.base import F32  # noqa: E402
from delegate_sdk.recipes.detection import non_max_suppression, topk, unique  # noqa: E402
from kernels import _litert, _median_seconds, _ours  # noqa: E402
from schema.builder import ModelBuilder  # noqa: E402
from schema.custom_options import flexbuffer_bytes  # noqa: E402
from schema.enums import BuiltinOperator as B  # noqa: E402

ANCHORS, CLASSES = 1917, 91


def postprocess(regular: bool, per_detection: int = 1) -> bytes:
    """An SSD's last node: 1917 anchors, 90 classes and the background, 100 detections."""
    options = dict(
        max_detections=100, max_classes_per_detection=per_detection, detections_per_class=100,
        use_regular_nms=regular, nms_score_threshold=0.3, nms_iou_threshold=0.6, num_classes=CLASSES - 1,
        y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0,
    )
    rng = np.random.default_rng(0)
    anchors = np.concatenate([rng.uniform(0.05, 0.95, (ANCHORS, 2)), rng.uniform(0.05, 0.5, (ANCHORS, 2))], axis=1)
    builder = ModelBuilder()
    graph = builder.subgraph()
    inputs = [graph.add_input("box_encodings", [1, ANCHORS, 4]), graph.add_input("class_predictions", [1, ANCHORS, CLASSES]),
              graph.add_constant("anchors", anchors.astype(np.float32))]
    rows = 100 * per_detection
    outputs = [graph.add_tensor(name, shape) for name, shape in
               (("boxes", [1, rows, 4]), ("classes", [1, rows]), ("scores", [1, rows]), ("count", [1]))]
    graph.add_operator("TFLite_Detection_PostProcess", inputs, outputs, custom_options=flexbuffer_bytes(options))
    for out in outputs:
        graph.add_output(out)
    return builder.build()


def detector_scores(rng) -> np.ndarray:
    return (1 / (1 + np.exp(-rng.normal(-4, 2, (1, ANCHORS, CLASSES))))).astype(np.float32)


def clustered_boxes(count: int, rng) -> np.ndarray:
    centres = rng.uniform(0.2, 0.8, (16, 2))[rng.integers(0, 16, count)] + rng.normal(0, 0.03, (count, 2))
    half = rng.uniform(0.05, 0.15, (count, 2))
    return np.concatenate([centres - half, centres + half], axis=1).astype(np.float32)


def nms_inputs(count: int, tied: bool):
    def make(rng):
        scores = rng.uniform(0, 1, count)
        return [clustered_boxes(count, rng), (np.round(scores, 2) if tied else scores).astype(np.float32)]
    return make


#: name -> (model, inputs from a generator)
CASES: dict[str, tuple[Callable[[], bytes], Callable]] = {
    "topk 16x1000 k10": (lambda: topk(F32, 10, (16, 1000)), lambda rng: [rng.normal(0, 1, (16, 1000)).astype(np.float32)]),
    "unique 10000 of 100 values": (lambda: unique(10000), lambda rng: [rng.integers(0, 100, 10000).astype(np.float32)]),
    "nms_v4 2000 boxes": (lambda: non_max_suppression(B.NON_MAX_SUPPRESSION_V4, 2000, 100), nms_inputs(2000, False)),
    "nms_v4 2000 boxes tied": (lambda: non_max_suppression(B.NON_MAX_SUPPRESSION_V4, 2000, 100), nms_inputs(2000, True)),
    "nms_v5 soft 500 boxes": (lambda: non_max_suppression(B.NON_MAX_SUPPRESSION_V5, 500, 50), nms_inputs(500, False)),
    "postprocess fast 1917x91": (lambda: postprocess(False), lambda rng: [rng.normal(0, 1, (1, ANCHORS, 4)).astype(np.float32), detector_scores(rng)]),
    "postprocess fast 3 classes": (lambda: postprocess(False, 3), lambda rng: [rng.normal(0, 1, (1, ANCHORS, 4)).astype(np.float32), detector_scores(rng)]),
    "postprocess regular 1917x91": (lambda: postprocess(True), lambda rng: [rng.normal(0, 1, (1, ANCHORS, 4)).astype(np.float32), detector_scores(rng)]),
}


def _ready(interpreter, inputs):
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return interpreter


def _same(ours, litert, postprocess_rows: bool) -> bool:
    got = [ours.get_tensor(d["index"]) for d in ours.get_output_details()]
    want = [litert.get_tensor(d["index"]) for d in litert.get_output_details()]
    if postprocess_rows:  # LiteRT leaves the rows past the detections as the arena had them
        count = int(want[3][0])
        return bool(got[3][0] == count) and all(np.array_equal(g[0, :count], w[0, :count]) for g, w in zip(got[:3], want[:3]))
    return all(np.array_equal(g, w) for g, w in zip(got, want))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("filters", nargs="*")
    parser.add_argument("--runs", type=int, default=50, help="invokes per round and runtime (at most)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    header = f"{'case':30s} {'ours ms':>9s} {'ref ms':>9s} {'ours/ref':>9s}  equal"
    print(header)
    print("-" * len(header))
    for name, (build, make_inputs) in CASES.items():
        if args.filters and not any(f in name for f in args.filters):
            continue
        model = build()
        inputs = make_inputs(np.random.default_rng(0))
        ours, litert = _ready(_ours(model), inputs), _ready(_litert(model, True), inputs)
        best = [float("inf")] * 2
        for _ in range(args.rounds):
            for i, interpreter in enumerate((ours, litert)):
                best[i] = min(best[i], _median_seconds(interpreter.invoke, args.runs, 1.0))
        equal = _same(ours, litert, name.startswith("postprocess") and "classes" not in name)
        print(f"{name:30s} {best[0] * 1e3:9.2f} {best[1] * 1e3:9.2f} {best[0] / best[1]:9.1f}  {equal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
