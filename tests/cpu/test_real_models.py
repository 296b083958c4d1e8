"""Whole models against ai-edge-litert: the real float model and every converter float32 model.

Each test skips, naming the missing (op, version) pairs, while a kernel the model
needs is not registered yet.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import (
    FLOAT_RTOL,
    MODELS_DIR,
    assert_matches_litert,
    assert_signature_matches_litert,
    litert_interpreter,
    run_litert,
    run_ours,
)

from backends.cpu import builtin_op_resolver
from delegate_sdk.op_resolver import find_unresolved_operators
from delegate_sdk.tensor import Allocation
from interpreter import Interpreter
from schema.enums import BuiltinOperator
from schema.model import Model

FACE_DETECTION = MODELS_DIR / "real" / "mp_face_detection_short_range.tflite"
CONVERTER_FLOAT_MODELS = sorted((MODELS_DIR / "converter").glob("*_float32.tflite"))


def require_kernels(path) -> Model:
    """The parsed model; skips (with the list) when an (op, version) it uses has no CPU kernel yet."""
    model = Model.from_path(path)
    missing = find_unresolved_operators(model, builtin_op_resolver())
    if missing:
        names = sorted({f"{m.op_name} v{m.version}" for m in missing})
        pytest.skip(f"{path.name}: CPU kernels not registered yet for {', '.join(names)}")
    return model


def signature_inputs(path, seed: int = 0) -> dict[str, np.ndarray]:
    """Random float inputs for the model's only signature, by input name."""
    rng = np.random.default_rng(seed)
    details = litert_interpreter(path).get_signature_runner().get_input_details()
    return {
        name: rng.uniform(-2, 2, size=tuple(detail["shape"])).astype(detail["dtype"])
        for name, detail in details.items()
    }


# -- the real model: MediaPipe face detection (float32 activations, float16 weights) ---------------------


def test_face_detection_float16_weights_are_dequantized_once_at_prepare():
    model = require_kernels(FACE_DETECTION)
    graph = model.subgraphs[0]
    dequantize_nodes = [op for op in graph.operators if op.builtin_code == BuiltinOperator.DEQUANTIZE]
    assert dequantize_nodes and all(graph.tensors[op.inputs[0]].type_name == "FLOAT16" for op in dequantize_nodes)
    interpreter = Interpreter(model_path=str(FACE_DETECTION))
    interpreter.allocate_tensors()
    for op in dequantize_nodes:
        weights = interpreter._tensor(op.outputs[0])
        assert weights.allocation is Allocation.PERSISTENT, weights
        np.testing.assert_array_equal(weights.data, graph.tensors[op.inputs[0]].data.astype(np.float32))


def test_face_detection_matches_litert():
    # 1e-5 relative to each output's scale (max |value|), not to each element: the model
    # chains ~40 convolutions whose float32 sums run in another order than the reference
    # kernels' loops (BLAS), so every layer differs from LiteRT by a few ULPs of its scale
    # (measured: 2e-7..8e-7 of the scale at every layer, 4.4e-7 and 2.2e-7 at the two
    # outputs), and outputs that cancel to near zero have no meaningful per-element
    # relative error (up to 0.4% on values ~1e-3 of the scale).
    require_kernels(FACE_DETECTION)
    image = np.random.default_rng(0).uniform(-1, 1, size=(1, 128, 128, 3)).astype(np.float32)
    expected, ours = run_litert(FACE_DETECTION, [image]), run_ours(FACE_DETECTION, [image])
    assert [o.shape for o in ours] == [(1, 896, 16), (1, 896, 1)] == [e.shape for e in expected]
    for i, (got, want) in enumerate(zip(ours, expected)):
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=FLOAT_RTOL, atol=FLOAT_RTOL * scale, err_msg=f"output {i}")


# -- converter models (TensorFlow 2.21 converter, one op family each) ------------------------------------


@pytest.mark.parametrize("path", CONVERTER_FLOAT_MODELS, ids=lambda p: p.stem)
def test_converter_float_model_matches_litert(path):
    require_kernels(path)
    assert_matches_litert(path)


@pytest.mark.parametrize("path", CONVERTER_FLOAT_MODELS, ids=lambda p: p.stem)
def test_converter_float_model_through_its_signature_matches_litert(path):
    require_kernels(path)
    assert_signature_matches_litert(path, signature_inputs(path))
