"""``TFLite_Detection_PostProcess``: the last node of SSD-style detectors, a custom op in
LiteRT's default resolver (version 1), as ``tflite/kernels/detection_postprocess.cc`` runs it.

Inputs: box encodings ``[1, boxes, >=4]`` (``y, x, h, w`` first), class scores
``[1, boxes, classes (+1 background)]`` and anchors ``[boxes, 4]`` (``y, x, h, w``).
Outputs (float32): boxes ``[1, D, 4]`` (``ymin, xmin, ymax, xmax``), classes ``[1, D]``,
scores ``[1, D]`` and the number of detections ``[1]``, with
``D = max_detections * max_classes_per_detection``.

1. Decode, in double, rounded to float32 (``y_scale`` ... ``w_scale`` from the options):

       ycenter = y / y_scale * anchor.h + anchor.y      half_h = 0.5 * exp(h / h_scale) * anchor.h
       xcenter = x / x_scale * anchor.w + anchor.x      half_w = 0.5 * exp(w / w_scale) * anchor.w
       box = (ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w)  (float32)

   uint8 encodings and anchors are dequantized first, ``(float(q) - zero_point) * scale`` in
   float32; uint8 scores likewise. A decoded box with ymin > ymax or xmin > xmax is an error.
2. Single-class NMS (``NonMaxSuppressionSingleClassHelper``): the scores at or above
   ``nms_score_threshold``, stable-sorted by decreasing score; each box still in the running
   is selected and drops the later ones whose IoU with it is above ``nms_iou_threshold``;
   at most the given number are selected.
3. Regular NMS (``use_regular_nms``): step 2 per class with ``min(detections_per_class,
   max_detections)`` boxes each (classes in order, background skipped), merged by
   decreasing score, earlier classes first on ties (``std::inplace_merge``), the first
   ``max_detections`` kept; unused rows are zero. This is LiteRT's single-thread path (its
   default); with more threads LiteRT merges per-thread lists and ties may come out in
   another order.
   Fast NMS (otherwise): per box the ``min(max_classes_per_detection, classes)`` best classes
   (``std::partial_sort``, or the first maximum for one class: ties as LiteRT, through
   libstdc++'s heap order), step 2 on each box's best score with ``max_detections``; each
   selected box gives ``max_classes_per_detection`` rows. Rows LiteRT does not write are
   zero here.

Types: encodings float32 (anchors float32) or uint8 (anchors uint8); scores float32 or
uint8. LiteRT 2.3 has no int8 path (its kernel fails at invoke): refused here at prepare.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backends.cpu.kernel import CpuKernel, register_custom
from backends.cpu.kernels._stl_heap import partial_sort
from backends.cpu.kernels.non_max_suppression import BoxCorners
from backends.cpu.kernels.reshape import inputs_pending
from delegate_sdk.tensor import RuntimeTensor
from schema.custom_options import CustomOptionsError, FlexbufferMap
from schema.enums import TensorType

T = TensorType

DETECTION_POSTPROCESS = "TFLite_Detection_PostProcess"
DEFAULT_DETECTIONS_PER_CLASS = 100


@dataclass(frozen=True)
class DetectionOptions:
    """The custom options, read as TFLite's ``Init`` reads them (floats rounded to float32)."""

    max_detections: int
    max_classes_per_detection: int
    detections_per_class: int
    use_regular_nms: bool
    score_threshold: np.float32
    iou_threshold: np.float32
    num_classes: int
    scales: tuple[np.float32, np.float32, np.float32, np.float32]  # y, x, h, w

    @classmethod
    def parse(cls, custom_options: bytes | None) -> "DetectionOptions":
        options = FlexbufferMap(custom_options)
        dpc = "detections_per_class"
        return cls(
            max_detections=options.as_int64("max_detections"),
            max_classes_per_detection=options.as_int64("max_classes_per_detection"),
            detections_per_class=DEFAULT_DETECTIONS_PER_CLASS if options.is_null(dpc) else options.as_int64(dpc),
            use_regular_nms=options.as_bool("use_regular_nms"),
            score_threshold=np.float32(options.as_float("nms_score_threshold")),
            iou_threshold=np.float32(options.as_float("nms_iou_threshold")),
            num_classes=options.as_int64("num_classes"),
            scales=tuple(np.float32(options.as_float(f"{axis}_scale")) for axis in "yxhw"),
        )

    def problem(self) -> str | None:
        """Why LiteRT's kernel refuses these options, or None."""
        if self.num_classes <= 0:
            return f"num_classes {self.num_classes} is not positive"
        for name in ("max_detections", "max_classes_per_detection", "detections_per_class"):
            if getattr(self, name) < 0:
                return f"{name} {getattr(self, name)} is negative"
        if not 0 < self.iou_threshold <= 1:
            return f"nms_iou_threshold {self.iou_threshold:g} is not in (0, 1]"
        if self.use_regular_nms and min(self.detections_per_class, self.max_detections) <= 0:
            return "regular NMS needs detections_per_class and max_detections above 0"
        if self.use_regular_nms and self.max_classes_per_detection == 0:
            # LiteRT sizes the outputs max_detections * 0 rows, then writes max_detections.
            return "regular NMS writes max_detections rows: max_classes_per_detection 0 leaves none"
        if not self.use_regular_nms and self.max_classes_per_detection <= 0:
            return "fast NMS needs max_classes_per_detection above 0"
        return None


def dequantized(tensor: RuntimeTensor, values: np.ndarray) -> np.ndarray:
    """float32 values of a float32 or uint8 tensor: ``(float(q) - zero_point) * scale`` in float32."""
    if tensor.type == T.FLOAT32:
        return values
    scale = np.float32(tensor.quantization.scale[0])
    zero_point = np.float32(int(tensor.quantization.zero_point[0]))
    with np.errstate(over="ignore"):  # a huge scale gives inf, as in TFLite
        return (values.astype(np.float32) - zero_point) * scale


def decode_boxes(encodings: np.ndarray, anchors: np.ndarray, scales) -> BoxCorners:
    """Corner boxes from center-size encodings ``[boxes, 4]`` and anchors ``[boxes, 4]``
    (float32), computed in double and rounded once, as ``DecodeCenterSizeBoxes``."""
    y, x, h, w = (encodings[:, i].astype(np.float64) for i in range(4))
    anchor_y, anchor_x, anchor_h, anchor_w = (anchors[:, i].astype(np.float64) for i in range(4))
    y_scale, x_scale, h_scale, w_scale = (float(s) for s in scales)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ycenter = (y / y_scale * anchor_h + anchor_y).astype(np.float32)
        xcenter = (x / x_scale * anchor_w + anchor_x).astype(np.float32)
        half_h = (0.5 * np.exp(h / h_scale) * anchor_h).astype(np.float32)
        half_w = (0.5 * np.exp(w / w_scale) * anchor_w).astype(np.float32)
        return BoxCorners(ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w)


class Overlaps:
    """Per box, the boxes whose IoU with it is above the threshold (as TFLite computes it,
    the selected box first): rows computed when first needed, in blocks (the candidates next
    in line), and kept for the invoke (regular NMS asks for the same boxes class after class)."""

    BLOCK = 64

    def __init__(self, boxes: BoxCorners, iou_threshold: np.float32) -> None:
        self.boxes = boxes
        self.iou_threshold = iou_threshold
        self.every_box = np.arange(len(boxes.area))
        self.rows: dict[int, np.ndarray] = {}

    def of(self, order: np.ndarray, suppressed: np.ndarray, position: int) -> np.ndarray:
        """The row of box ``order[position]``; when it is missing, those of the next
        candidates still in the running too (``order`` from ``position`` on, not ``suppressed``)."""
        box = int(order[position])
        if box not in self.rows:
            next_in_line = order[position:][~suppressed[position:]][: self.BLOCK].tolist()
            missing = np.array([b for b in next_in_line if b not in self.rows], np.int64)
            block = self.boxes.iou(missing[:, None], self.every_box[None, :]) > self.iou_threshold
            self.rows.update(zip(missing.tolist(), block))
        return self.rows[box]


def single_class_nms(overlaps: Overlaps, scores: np.ndarray, score_threshold, limit: int) -> list[int]:
    """``NonMaxSuppressionSingleClassHelper``: the selected box indices, best first."""
    kept = np.flatnonzero(scores >= score_threshold)
    order = kept[np.argsort(-scores[kept], kind="stable")]
    limit = min(order.size, limit)
    suppressed = np.zeros(order.size, bool)
    selected: list[int] = []
    for position in range(order.size):
        if len(selected) >= limit:
            break
        if suppressed[position]:
            continue
        selected.append(int(order[position]))
        suppressed[position + 1 :] |= overlaps.of(order, suppressed, position)[order[position + 1 :]]
    return selected


def best_classes(scores: np.ndarray, count: int) -> np.ndarray:
    """Per row of ``scores [boxes, classes]``, the ``count`` best classes as LiteRT's
    ``DecreasingPartialArgSort`` gives them: the first maximum for one (``ArgMaxVector``:
    a NaN first element wins, later NaNs never do); else ``std::partial_sort`` by ``>``.
    Rows whose top ``count + 1`` values are distinct and not NaN have one answer, taken from a
    sort; the others repeat libstdc++'s moves."""
    if count == 1:
        first_is_nan = np.isnan(scores[:, 0])
        firsts = np.argmax(np.where(np.isnan(scores), -np.inf, scores), axis=1)
        return np.where(first_is_nan, 0, firsts)[:, None]
    order = np.argsort(-scores, axis=1, kind="stable")
    top = np.take_along_axis(scores, order[:, : count + 1], axis=1)
    ambiguous = np.isnan(scores).any(axis=1) | (top[:, 1:] == top[:, :-1]).any(axis=1)
    result = order[:, :count].copy()
    for row in np.flatnonzero(ambiguous):
        values = scores[row].tolist()
        indices = list(range(len(values)))
        partial_sort(indices, count, lambda i, j: values[i] > values[j])
        result[row] = indices[:count]
    return result


@register_custom(DETECTION_POSTPROCESS, 1, 1)
class DetectionPostProcess(CpuKernel):
    """``TFLite_Detection_PostProcess`` version 1."""

    @property
    def op_name(self) -> str:
        return DETECTION_POSTPROCESS

    def prepare(self) -> None:
        self.require_num_inputs(3)
        if len(self.outputs) != 4:
            raise self.unsupported(f"expected 4 outputs (boxes, classes, scores, count), got {len(self.outputs)}")
        try:
            self.options = DetectionOptions.parse(self.node.custom_options)
        except CustomOptionsError as error:
            raise self.unsupported(str(error)) from None
        problem = self.options.problem()
        if problem:
            raise self.unsupported(problem)
        if inputs_pending(self):
            return
        encodings, scores, anchors = self.inputs
        self.require_types(encodings, T.FLOAT32, T.UINT8, role="box encodings")
        self.require_types(scores, T.FLOAT32, T.UINT8, role="class scores")
        self.require_types(anchors, encodings.type, role="anchors (of the box encodings' type)")
        for out, role in zip(self.outputs, ("boxes", "classes", "scores", "count")):
            self.require_types(out, T.FLOAT32, role=f"{role} output")
        if len(encodings.shape) != 3 or encodings.shape[0] != 1 or encodings.shape[2] < 4:
            raise self.unsupported(f"box encodings must be [1, boxes, 4 or more], they are {list(encodings.shape)}")
        boxes = encodings.shape[1]
        if len(scores.shape) != 3 or scores.shape[:2] != (1, boxes):
            raise self.unsupported(f"class scores must be [1, {boxes}, classes], they are {list(scores.shape)}")
        background = scores.shape[2] - self.options.num_classes
        if background not in (0, 1):
            raise self.unsupported(
                f"class scores have {scores.shape[2]} columns for num_classes {self.options.num_classes}: "
                "there must be one per class, plus at most one for the background"
            )
        if anchors.shape != (boxes, 4):
            raise self.unsupported(f"anchors must be [{boxes}, 4], they are {list(anchors.shape)}")
        for tensor in (encodings, scores, anchors):
            if tensor.type == T.UINT8 and (tensor.quantization is None or len(tensor.quantization.scale) != 1):
                raise self.unsupported(f"uint8 tensor {tensor.name!r} needs one scale and zero point")
        rows = self.options.max_detections * self.options.max_classes_per_detection
        for out, shape in zip(self.outputs, ([1, rows, 4], [1, rows], [1, rows], [1])):
            out.resize(shape)

    def invoke(self) -> None:
        options = self.options
        encodings, scores, anchors = self.inputs
        boxes = decode_boxes(
            dequantized(encodings, encodings.data[0, :, :4]), dequantized(anchors, anchors.data), options.scales
        )
        bad = np.flatnonzero((boxes.ymin > boxes.ymax) | (boxes.xmin > boxes.xmax))
        if bad.size:
            raise ValueError(
                f"{self.op_name}: decoded box {int(bad[0])} has its min corner above its max corner "
                "(a negative anchor height or width?)"
            )
        class_scores = dequantized(scores, scores.data[0])
        class_scores = class_scores[:, class_scores.shape[1] - options.num_classes :]  # background dropped
        for out in self.outputs:
            out.data[...] = 0
        if options.use_regular_nms:
            self.regular_nms(boxes, class_scores)
        else:
            self.fast_nms(boxes, class_scores)

    def regular_nms(self, boxes: BoxCorners, class_scores: np.ndarray) -> None:
        options = self.options
        per_class = min(options.detections_per_class, options.max_detections)
        overlaps = Overlaps(boxes, options.iou_threshold)
        found_boxes, found_classes, found_scores = [], [], []
        for label in range(options.num_classes):
            column = class_scores[:, label]
            chosen = single_class_nms(overlaps, column, options.score_threshold, per_class)
            found_boxes += chosen
            found_classes += [label] * len(chosen)
            found_scores.append(column[chosen])
        merged_scores = np.concatenate(found_scores)
        best = np.argsort(-merged_scores, kind="stable")[: options.max_detections]
        chosen = np.array(found_boxes, np.int64)[best]
        self.write(boxes, chosen, np.array(found_classes)[best, None], merged_scores[best, None], rows_per_detection=1)

    def fast_nms(self, boxes: BoxCorners, class_scores: np.ndarray) -> None:
        options = self.options
        count = min(options.max_classes_per_detection, options.num_classes)
        classes = best_classes(class_scores, count)
        max_scores = class_scores[np.arange(len(classes)), classes[:, 0]]
        overlaps = Overlaps(boxes, options.iou_threshold)
        chosen = np.array(single_class_nms(overlaps, max_scores, options.score_threshold, options.max_detections), np.int64)
        scores = np.take_along_axis(class_scores[chosen], classes[chosen], axis=1)
        self.write(boxes, chosen, classes[chosen], scores, rows_per_detection=options.max_classes_per_detection)

    def write(self, boxes: BoxCorners, chosen: np.ndarray, classes: np.ndarray, scores: np.ndarray, rows_per_detection: int) -> None:
        """Detection ``d``'s ``c``-th class goes to row ``d * rows_per_detection + c``."""
        out_boxes, out_classes, out_scores, out_count = (out.data for out in self.outputs)
        rows = (np.arange(len(chosen))[:, None] * rows_per_detection + np.arange(classes.shape[1])).reshape(-1)
        corners = np.stack([boxes.ymin, boxes.xmin, boxes.ymax, boxes.xmax], axis=1)[chosen]
        out_boxes[0, rows] = np.repeat(corners, classes.shape[1], axis=0)
        out_classes[0, rows] = classes.reshape(-1)
        out_scores[0, rows] = scores.reshape(-1)
        out_count[0] = len(chosen)
