"""NON_MAX_SUPPRESSION_V4 and NON_MAX_SUPPRESSION_V5: greedy (soft) non-max suppression of
boxes by score, as TFLite's ``kernels/non_max_suppression.cc`` and
``internal/reference/non_max_suppression.h`` run it.

Inputs: boxes ``[n, 4]`` (two opposite corners ``y1, x1, y2, x2``, in either order), scores
``[n]``, max_output_size (int32 scalar), iou_threshold, score_threshold and, with a sixth
input, soft_nms_sigma (float32 scalars). Five inputs give (selected_indices,
num_selected); six give (selected_indices, selected_scores, num_selected): TFLite chooses
by the number of inputs, not by the op, and so does this kernel.

The candidates (scores above score_threshold) go into a ``std::priority_queue`` ordered by
score. Each step takes the top, compares it with the boxes selected since it was last
looked at (newest first): an IoU >= iou_threshold drops it; with sigma > 0 each IoU also
decays its score by ``exp(-0.5 / sigma * iou * iou)`` (float32), and a score at or below
score_threshold drops it. An undecayed candidate is selected; a candidate still above
score_threshold goes back into the queue (also a selected one: TFLite has no ``continue``
there, so it meets itself next time, and a box of zero area, whose IoU with itself is 0,
is selected again). Equal scores leave the queue in libstdc++'s heap order, repeated here
(``_stl_heap``), so ties give LiteRT's order. IoU is computed in float32 as TFLite does.

The indices (and scores) have max_output_size elements, zero past the selections; when
max_output_size is not constant they are dynamic, sized at invoke (LiteRT 2.3 does not
shrink them to the selections, as later TFLite sources do). Boxes and scores are float32:
LiteRT 2.3 refuses the int8/int16 variants that newer TFLite sources add.
"""

from __future__ import annotations

import math

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._stl_heap import heap_pop, heap_push
from backends.cpu.kernels.reshape import inputs_pending
from schema.enums import BuiltinOperator, TensorType

T = TensorType


class BoxCorners:
    """Boxes as TFLite's IoU functions see them: float32 corners and areas. (Shared with
    ``TFLite_Detection_PostProcess``, whose IoU is the same computation.)"""

    def __init__(self, ymin: np.ndarray, xmin: np.ndarray, ymax: np.ndarray, xmax: np.ndarray) -> None:
        self.ymin, self.xmin, self.ymax, self.xmax = ymin, xmin, ymax, xmax
        with np.errstate(all="ignore"):  # inf and NaN corners give C++'s inf and NaN, silently
            self.area = (ymax - ymin) * (xmax - xmin)
        # Without NaN, np.minimum/np.maximum decide as std::min/std::max do (they may differ
        # only in the sign of a zero, which no comparison sees): the faster path.
        finite = not any(np.isnan(corner).any() for corner in (ymin, xmin, ymax, xmax))
        self._min, self._max = (np.minimum, np.maximum) if finite else (_cpp_min, _cpp_max)

    @classmethod
    def of_corner_pairs(cls, boxes: np.ndarray) -> "BoxCorners":
        """Boxes ``[n, 4]`` of two opposite corners ``y1, x1, y2, x2`` in either order, sorted
        with ``std::min``/``std::max`` as C++ evaluates them (a NaN second operand gives the
        first)."""
        y1, x1, y2, x2 = (boxes[:, i] for i in range(4))
        return cls(_cpp_min(y1, y2), _cpp_min(x1, x2), _cpp_max(y1, y2), _cpp_max(x1, x2))

    def iou(self, i, j) -> np.ndarray:
        """IoU of box(es) ``i`` with box(es) ``j`` (indices or index arrays, broadcast):
        TFLite's ``ComputeIntersectionOverUnion(boxes, i, j)``, zero when an area is not
        positive. The order matters only for NaN corners (``std::min``/``std::max``)."""
        top = self._min(self.ymax[i], self.ymax[j])
        right = self._min(self.xmax[i], self.xmax[j])
        bottom = self._max(self.ymin[i], self.ymin[j])
        left = self._max(self.xmin[i], self.xmin[j])
        zero = np.float32(0)
        with np.errstate(all="ignore"):  # inf and NaN corners give C++'s inf and NaN, silently
            intersection = self._max(top - bottom, zero) * self._max(right - left, zero)
            iou = intersection / (self.area[i] + self.area[j] - intersection)
        return np.where((self.area[i] <= 0) | (self.area[j] <= 0), zero, iou)


def _cpp_min(a, b):
    """``std::min(a, b)``: ``b < a ? b : a``."""
    return np.where(b < a, b, a)


def _cpp_max(a, b):
    """``std::max(a, b)``: ``a < b ? b : a``."""
    return np.where(a < b, b, a)


def _lower_score(a: list, b: list) -> bool:
    """The queue's comparator: candidates ``[score, index, suppress_begin]`` by score."""
    return a[0] < b[0]


def non_max_suppression(
    boxes: np.ndarray,
    scores: np.ndarray,
    max_output_size: int,
    iou_threshold: float,
    score_threshold: float,
    soft_nms_sigma: float,
) -> tuple[list[int], list[float]]:
    """The selected box indices and their (possibly decayed) scores, in selection order."""
    corners = BoxCorners.of_corner_pairs(boxes)
    candidates = np.flatnonzero(scores > np.float32(score_threshold))
    wanted = min(candidates.size, max_output_size)
    if soft_nms_sigma > 0:
        return _soft_nms_in_queue_order(corners, scores, candidates, wanted, iou_threshold, score_threshold, soft_nms_sigma)
    selected = _hard_nms_by_decreasing_score(corners, scores, candidates, wanted, iou_threshold)
    if selected is None:  # tied scores among the candidates the loop looks at
        selected = _hard_nms_in_queue_order(corners, scores, candidates, wanted, iou_threshold)
    return selected, [float(scores[i]) for i in selected]


def _queue_of(scores: np.ndarray, candidates: np.ndarray) -> list[list]:
    """TFLite's priority queue of candidates ``[score, index, suppress_begin]``, pushed in
    index order."""
    queue: list[list] = []
    for index in candidates:
        heap_push(queue, [float(scores[index]), int(index), 0], _lower_score)
    return queue


def _hard_nms_in_queue_order(
    corners: BoxCorners, scores: np.ndarray, candidates: np.ndarray, wanted: int, iou_threshold: float
) -> list[int]:
    """TFLite's loop with sigma 0, popping the queue as libstdc++ does (for tied scores).
    Scores never decay, so a candidate that survives is selected and pushed back; whether it
    overlaps some selected box is kept in ``overlapped``, updated once per selection."""
    threshold = np.float32(iou_threshold)
    queue = _queue_of(scores, candidates)
    overlapped = np.zeros(scores.shape, bool)
    selected: list[int] = []
    while len(selected) < wanted and queue:
        candidate = heap_pop(queue, _lower_score)
        index, begin = candidate[1], candidate[2]
        if begin == 0:
            suppressed = overlapped[index]
        else:  # a selected box back in the queue meets only the boxes selected since
            suppressed = np.any(corners.iou(index, np.array(selected[begin:])) >= threshold)
        if suppressed:
            continue
        candidate[2] = len(selected)
        selected.append(index)
        overlapped[candidates] |= corners.iou(candidates, index) >= threshold
        heap_push(queue, candidate, _lower_score)
    return selected


def _soft_nms_in_queue_order(
    corners: BoxCorners,
    scores: np.ndarray,
    candidates: np.ndarray,
    wanted: int,
    iou_threshold: float,
    score_threshold: float,
    soft_nms_sigma: float,
) -> tuple[list[int], list[float]]:
    """TFLite's loop with sigma > 0, step for step."""
    queue = _queue_of(scores, candidates)
    scale = np.float32(np.float32(-0.5) / np.float32(soft_nms_sigma))
    selected: list[int] = []
    selected_scores: list[float] = []
    while len(selected) < wanted and queue:
        candidate = heap_pop(queue, _lower_score)
        original_score = candidate[0]
        earlier = np.array(selected[candidate[2] :][::-1], np.int64)  # newest first
        hard_suppressed = bool(earlier.size) and _decay(
            candidate, corners.iou(candidate[1], earlier), iou_threshold, score_threshold, scale
        )
        candidate[2] = len(selected)
        if hard_suppressed:
            continue
        if candidate[0] == original_score:
            selected.append(candidate[1])
            selected_scores.append(candidate[0])
        if candidate[0] > score_threshold:
            heap_push(queue, candidate, _lower_score)
    return selected, selected_scores


def _hard_nms_by_decreasing_score(
    corners: BoxCorners, scores: np.ndarray, candidates: np.ndarray, wanted: int, iou_threshold: float
) -> list[int] | None:
    """What the queue loop gives with sigma 0 when the candidates it pops have distinct
    scores (None when two of them tie, or one ties with the next unpopped candidate: then
    the heap decides their order). Candidates leave the queue by decreasing score; a
    selected one comes straight back and meets only itself (IoU 1, or 0 for a box of zero
    area: then it is selected until the output is full); a candidate falls when it overlaps
    a box selected before it, so each selection drops at once every later one it overlaps."""
    order = candidates[np.argsort(scores[candidates], kind="stable")[::-1]]
    alive = np.ones(order.size, bool)
    threshold = np.float32(iou_threshold)
    selected: list[int] = []
    position = -1
    while len(selected) < wanted:
        following = np.flatnonzero(alive[position + 1 :])
        if following.size == 0:
            position = order.size - 1
            break
        position += 1 + int(following[0])
        best = int(order[position])
        selected.append(best)
        if not corners.iou(best, best) >= threshold:
            selected += [best] * (wanted - len(selected))
            break
        alive[position + 1 :] &= ~(corners.iou(order[position + 1 :], best) >= threshold)
    looked_at = scores[order[: position + 2]]  # the popped ones and the next in line
    return selected if np.all(looked_at[1:] != looked_at[:-1]) else None


def _decay(candidate: list, ious: np.ndarray, iou_threshold: float, score_threshold: float, scale: np.float32) -> bool:
    """Soft suppression of ``candidate`` by each IoU in turn (float32, as TFLite's loop);
    True when one IoU reaches the threshold first (hard suppression)."""
    score = np.float32(candidate[0])
    with np.errstate(all="ignore"):  # inf and NaN as in C++, silently
        for iou in ious:
            if iou >= np.float32(iou_threshold):
                return True
            exponent = np.float32(scale * iou) * iou  # <= 0 or NaN: math.exp cannot overflow
            score = np.float32(score * np.float32(math.exp(exponent)))
            candidate[0] = float(score)
            if score <= np.float32(score_threshold):
                break
    return False


@register(BuiltinOperator.NON_MAX_SUPPRESSION_V4, 1, 1)
@register(BuiltinOperator.NON_MAX_SUPPRESSION_V5, 1, 1)
class NonMaxSuppression(CpuKernel):
    """NON_MAX_SUPPRESSION_V4 and _V5, version 1."""

    def prepare(self) -> None:
        self.require_num_inputs(5, 6)
        self.soft = len(self.inputs) == 6
        expected_outputs = 3 if self.soft else 2
        if len(self.outputs) != expected_outputs:
            raise self.unsupported(
                f"with {len(self.inputs)} inputs it has {expected_outputs} outputs, the node has {len(self.outputs)}"
            )
        if inputs_pending(self):
            return
        boxes, scores, max_output_size = self.inputs[:3]
        self.require_types(boxes, T.FLOAT32, role="boxes")
        self.require_types(scores, T.FLOAT32, role="scores")
        self.require_types(max_output_size, T.INT32, role="max_output_size")
        if len(boxes.shape) != 2 or boxes.shape[1] != 4:
            raise self.unsupported(f"boxes must have shape [num_boxes, 4], it has {list(boxes.shape)}")
        if scores.shape != (boxes.shape[0],):
            raise self.unsupported(f"scores must have shape [{boxes.shape[0]}] (one per box), it has {list(scores.shape)}")
        scalars = [(max_output_size, "max_output_size"), (self.inputs[3], "iou_threshold"), (self.inputs[4], "score_threshold")]
        if self.soft:
            scalars.append((self.inputs[5], "soft_nms_sigma"))
        for tensor, role in scalars:
            if tensor.shape != ():
                raise self.unsupported(f"{role} must be a scalar, it has shape {list(tensor.shape)}")
        for tensor, role in scalars[1:]:
            self.require_types(tensor, T.FLOAT32, role=role)
        self.require_types(self.outputs[0], T.INT32, role="selected_indices output")
        self.require_types(self.outputs[-1], T.INT32, role="num_selected output")
        if self.soft:
            self.require_types(self.outputs[1], T.FLOAT32, role="selected_scores output")
        self.outputs[-1].resize([])
        self.fixed_size = max_output_size.is_constant
        for out in self.outputs[:-1]:
            if self.fixed_size:
                out.resize([self.max_output_size()])
            else:
                out.set_dynamic()

    def max_output_size(self) -> int:
        size = int(self.inputs[2].data.reshape(()))
        if size < 0:
            raise ValueError(f"{self.op_name}: max_output_size is {size}; it must not be negative")
        return size

    def invoke(self) -> None:
        boxes, scores, _, iou_threshold, score_threshold = (t.data for t in self.inputs[:5])
        sigma = float(self.inputs[5].data.reshape(())) if self.soft else 0.0
        if sigma < 0:
            raise ValueError(f"{self.op_name}: soft_nms_sigma is {sigma}; it must not be negative")
        size = self.max_output_size()
        selected, selected_scores = non_max_suppression(
            boxes, scores, size, float(iou_threshold.reshape(())), float(score_threshold.reshape(())), sigma
        )
        results = [np.array(selected, np.int32)]
        if self.soft:
            results.append(np.array(selected_scores, np.float32))
        for out, result in zip(self.outputs[:-1], results):
            if not self.fixed_size:
                out.set_data(np.empty(size, out.dtype))
            out.data[...] = 0
            out.data[: len(result)] = result
        self.outputs[-1].data[...] = len(selected)
