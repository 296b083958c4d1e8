"""NON_MAX_SUPPRESSION_V4 and _V5 against ai-edge-litert (BUILTIN_REF), ties and TFLite's
quirks included (a selected box meets itself again; zero-area boxes are selected twice)."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_matches_litert, litert_interpreter, run_interpreter, run_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B

V4, V5 = B.NON_MAX_SUPPRESSION_V4, B.NON_MAX_SUPPRESSION_V5


def nms_model(op, num_boxes, max_output_size=5, iou_threshold=0.5, score_threshold=0.0, sigma=None,
              max_size_is_input=False, soft=None) -> bytes:
    """main(boxes, scores[, max_output_size]) = op(...): six inputs (soft NMS, three
    outputs) when ``soft`` (default: for V5)."""
    soft = (op == V5) if soft is None else soft
    builder = ModelBuilder()
    graph = builder.subgraph()
    boxes = graph.add_input("boxes", [num_boxes, 4])
    scores = graph.add_input("scores", [num_boxes])
    if max_size_is_input:
        size = graph.add_input("max_output_size", [], np.int32)
    else:
        size = graph.add_constant("max_output_size", np.array(max_output_size, np.int32))
    inputs = [boxes, scores, size, graph.add_constant("iou_threshold", np.array(iou_threshold, np.float32)),
              graph.add_constant("score_threshold", np.array(score_threshold, np.float32))]
    if soft:
        inputs.append(graph.add_constant("sigma", np.array(sigma or 0.0, np.float32)))
    length, signature = ([1], [-1]) if max_size_is_input else ([max_output_size], None)
    outputs = [graph.add_tensor("selected_indices", length, np.int32, shape_signature=signature)]
    if soft:
        outputs.append(graph.add_tensor("selected_scores", length, np.float32, shape_signature=signature))
    outputs.append(graph.add_tensor("num_selected", [], np.int32))
    graph.add_operator(op, inputs, outputs)
    for out in outputs:
        graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


def clustered_boxes(num_boxes, seed=0):
    """Boxes around a few centres, so many overlap; corners in random order."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2, 0.8, size=(4, 2))[rng.integers(0, 4, num_boxes)]
    centres += rng.normal(0, 0.03, size=centres.shape)
    half = rng.uniform(0.05, 0.15, size=(num_boxes, 2))
    corners = np.concatenate([centres - half, centres + half], axis=1)
    flip = rng.random(num_boxes) < 0.3  # (y2, x2, y1, x1): TFLite takes either order
    corners[flip] = corners[flip][:, [2, 3, 0, 1]]
    return corners.astype(np.float32)


def scores_with_ties(num_boxes, seed=0):
    return np.random.default_rng(seed).choice(np.array([0.2, 0.5, 0.7, 0.9], np.float32), num_boxes)


@pytest.mark.parametrize("op", [V4, V5], ids=lambda op: op.name)
def test_nms_is_version_1_and_matches_litert(op):
    model = nms_model(op, 20, max_output_size=6)
    assert stamped_version(model) == 1
    scores = np.random.default_rng(1).uniform(0, 1, 20).astype(np.float32)
    assert_matches_litert(model, [clustered_boxes(20), scores])


@pytest.mark.parametrize("op", [V4, V5], ids=lambda op: op.name)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_nms_with_tied_scores_selects_in_litert_order(op, seed):
    """Equal scores leave TFLite's priority queue in libstdc++'s heap order."""
    model = nms_model(op, 24, max_output_size=10, iou_threshold=0.3)
    assert_matches_litert(model, [clustered_boxes(24, seed), scores_with_ties(24, seed)])


@pytest.mark.parametrize("order", [[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [2, 5, 0, 3, 1, 4]], ids=str)
def test_nms_with_a_tie_at_the_last_place_taken_matches_litert(order):
    """Distinct scores above, a tie for the last place: the heap picks the box."""
    boxes = np.array([[i, i, i + 0.5, i + 0.5] for i in range(6)], np.float32)[order]
    scores = np.array([0.9, 0.8, 0.6, 0.6, 0.6, 0.1], np.float32)
    assert_matches_litert(nms_model(V4, 6, max_output_size=3), [boxes, scores])


def test_nms_with_every_score_equal_matches_litert():
    model = nms_model(V4, 16, max_output_size=16, iou_threshold=0.9)
    assert_matches_litert(model, [clustered_boxes(16, 5), np.full(16, 0.5, np.float32)])


@pytest.mark.parametrize("sigma", [0.1, 0.5, 2.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_soft_nms_decays_scores_as_litert(sigma, seed):
    model = nms_model(V5, 20, max_output_size=12, iou_threshold=0.8, score_threshold=0.1, sigma=sigma)
    scores = np.random.default_rng(seed).uniform(0, 1, 20).astype(np.float32)
    assert_matches_litert(model, [clustered_boxes(20, seed), scores])


def test_soft_nms_with_tied_scores_matches_litert():
    model = nms_model(V5, 24, max_output_size=12, iou_threshold=0.9, score_threshold=0.15, sigma=0.3)
    assert_matches_litert(model, [clustered_boxes(24, 7), scores_with_ties(24, 7)])


def test_v4_with_six_inputs_runs_soft_nms_as_litert():
    """TFLite picks soft NMS by the number of inputs, whatever the op."""
    model = nms_model(V4, 16, max_output_size=8, iou_threshold=0.7, sigma=0.5, soft=True)
    scores = np.random.default_rng(2).uniform(0, 1, 16).astype(np.float32)
    assert_matches_litert(model, [clustered_boxes(16, 2), scores])


def test_nms_below_the_score_threshold_pads_with_zeros_as_litert():
    model = nms_model(V5, 10, max_output_size=8, score_threshold=0.6)
    scores = np.linspace(0.1, 0.9, 10).astype(np.float32)
    indices, selected_scores, count = assert_matches_litert(model, [clustered_boxes(10), scores])
    assert count < 8 and not indices[count:].any() and not selected_scores[count:].any()


def test_nms_selects_a_zero_area_box_again_as_litert():
    """A selected box goes back into TFLite's queue; its IoU with itself is 0 when its area is."""
    boxes = np.array([[0.5, 0.5, 0.5, 0.5], [0, 0, 1, 1], [0, 0, 0.9, 0.9]], np.float32)
    scores = np.array([0.9, 0.8, 0.7], np.float32)
    indices, count = assert_matches_litert(nms_model(V4, 3, max_output_size=3), [boxes, scores])
    assert indices.tolist() == [0, 0, 0] and count == 3


def test_nms_of_boxes_with_nan_corners_matches_litert():
    """TFLite's std::min/std::max keep the first operand when the second is NaN."""
    boxes = clustered_boxes(8, 4)
    boxes[1, 2] = boxes[5, 0] = boxes[6, 3] = np.nan
    scores = np.linspace(0.9, 0.2, 8).astype(np.float32)[[3, 0, 6, 1, 7, 2, 5, 4]]
    assert_matches_litert(nms_model(V4, 8, max_output_size=8, iou_threshold=0.2), [boxes, scores])


def test_nms_with_an_iou_threshold_above_one_selects_again_as_litert():
    model = nms_model(V4, 6, max_output_size=6, iou_threshold=1.5)
    assert_matches_litert(model, [clustered_boxes(6, 3), np.linspace(0.9, 0.4, 6).astype(np.float32)])


def test_nms_of_many_boxes_matches_litert():
    model = nms_model(V5, 600, max_output_size=100, iou_threshold=0.45, score_threshold=0.05)
    boxes = clustered_boxes(600, 11)
    scores = np.round(np.random.default_rng(11).uniform(0, 1, 600), 2).astype(np.float32)
    assert_matches_litert(model, [boxes, scores])


@pytest.mark.parametrize("op", [V4, V5], ids=lambda op: op.name)
def test_nms_with_max_output_size_as_input_has_dynamic_outputs_of_that_size_as_litert(op):
    model = nms_model(op, 12, max_size_is_input=True, iou_threshold=0.4)
    theirs, ours = litert_interpreter(model), Interpreter(model_content=model)
    for size in (1, 3, 12):
        inputs = [clustered_boxes(12, size), scores_with_ties(12, size), np.array(size, np.int32)]
        expected, got = run_interpreter(theirs, inputs), run_interpreter(ours, inputs)
        for want, have in zip(expected, got):
            np.testing.assert_array_equal(have, want)
        assert [tuple(d["shape"]) for d in ours.get_output_details()] == [
            tuple(d["shape"]) for d in theirs.get_output_details()
        ]


def test_nms_with_max_output_size_zero_as_input_has_empty_outputs_of_litert_shape():
    """(LiteRT's get_tensor refuses its empty dynamic outputs: shapes and count are compared.)"""
    model = nms_model(V5, 6, max_size_is_input=True)
    theirs, ours = litert_interpreter(model), Interpreter(model_content=model)
    for interpreter in (theirs, ours):
        interpreter.allocate_tensors()
        for detail, value in zip(interpreter.get_input_details(),
                                 [clustered_boxes(6), scores_with_ties(6), np.array(0, np.int32)]):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
    details = [ours.get_output_details(), theirs.get_output_details()]
    assert [tuple(d["shape"]) for d in details[0]] == [tuple(d["shape"]) for d in details[1]] == [(0,), (0,), ()]
    assert ours.get_tensor(details[0][2]["index"]) == theirs.get_tensor(details[1][2]["index"]) == 0
    assert ours.get_tensor(details[0][0]["index"]).shape == (0,)


def test_nms_with_a_negative_sigma_fails_as_in_litert():
    model = nms_model(V5, 4, sigma=-1.0)
    inputs = [clustered_boxes(4), np.full(4, 0.5, np.float32)]
    with pytest.raises(RuntimeError):
        run_litert(model, inputs)
    with pytest.raises(KernelError, match="NON_MAX_SUPPRESSION_V5 v1.*soft_nms_sigma is -1.0"):
        Interpreter(model_content=model).allocate_tensors()
        run_interpreter(Interpreter(model_content=model), inputs)


def test_nms_with_boxes_of_three_coordinates_is_refused_as_in_litert():
    builder = ModelBuilder()
    graph = builder.subgraph()
    inputs = [graph.add_input("boxes", [4, 3]), graph.add_input("scores", [4])]
    inputs += [graph.add_constant(name, np.array(value, dtype)) for name, value, dtype in
               (("size", 2, np.int32), ("iou", 0.5, np.float32), ("score", 0.0, np.float32))]
    outputs = [graph.add_tensor("indices", [2], np.int32), graph.add_tensor("count", [], np.int32)]
    graph.add_operator(V4, inputs, outputs)
    for out in outputs:
        graph.add_output(out)
    model = builder.build()
    with pytest.raises(RuntimeError):
        run_litert(model, [np.zeros((4, 3), np.float32), np.zeros(4, np.float32)])
    with pytest.raises(KernelError, match=r"NON_MAX_SUPPRESSION_V4 v1: boxes must have shape \[num_boxes, 4\]"):
        Interpreter(model_content=model).allocate_tensors()
