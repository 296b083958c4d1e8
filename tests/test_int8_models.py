"""Full-integer models give ai-edge-litert BUILTIN_REF's outputs bit for bit."""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest

from backends.cpu import builtin_op_resolver
from interpreter import Interpreter
from oracle import first_divergent_node, litert_interpreter, random_inputs, run_litert, run_ours
from schema.enums import BuiltinOperator

MODELS = pathlib.Path(__file__).parent / "data" / "models"
INT8_MODELS = sorted(MODELS.glob("converter/*_int8.tflite")) + [MODELS / "real" / "mltk_keyword_spotting_dscnn_int8.tflite"]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("path", INT8_MODELS, ids=lambda p: p.stem)
def test_int8_model_is_bit_exact_through_get_tensor(path, seed):
    inputs = random_inputs(path, seed=seed)
    for ours, theirs in zip(run_ours(path, inputs), run_litert(path, inputs)):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)


WITH_SIGNATURES = [p for p in INT8_MODELS if "mltk" not in p.stem]


def test_the_keyword_spotting_model_has_no_signature_in_either_runtime():
    path = MODELS / "real" / "mltk_keyword_spotting_dscnn_int8.tflite"
    assert litert_interpreter(path).get_signature_list() == {} == Interpreter(model_path=path).get_signature_list()


@pytest.mark.parametrize("path", WITH_SIGNATURES, ids=lambda p: p.stem)
def test_int8_model_is_bit_exact_through_the_signature_runner(path):
    theirs = litert_interpreter(path)
    (key,) = theirs.get_signature_list()
    details = theirs.get_signature_runner(key).get_input_details()
    rng = np.random.default_rng(7)
    inputs = {}
    for name, detail in details.items():
        dtype, shape = np.dtype(detail["dtype"]), tuple(detail["shape"])
        inputs[name] = (rng.uniform(-1, 1, shape).astype(dtype) if dtype.kind == "f"
                        else rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, shape).astype(dtype))
    expected = theirs.get_signature_runner(key)(**inputs)
    got = Interpreter(model_path=path).get_signature_runner(key)(**inputs)
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name])


def test_a_divergence_is_reported_at_the_first_node_that_differs():
    path = MODELS / "converter" / "mini_mobilenet_int8.tflite"
    inputs = random_inputs(path)
    assert first_divergent_node(path, inputs) is None
    # A resolver whose int8 DEPTHWISE_CONV_2D (v3) is off by one on every output.
    resolver = builtin_op_resolver()
    good = resolver.find_op(BuiltinOperator.DEPTHWISE_CONV_2D, 3)

    def off_by_one(context, node):
        good.invoke(context, node)
        out = context.tensors[node.outputs[0]].data
        np.add(out, 1, out=out, casting="unsafe")

    resolver.add_builtin(BuiltinOperator.DEPTHWISE_CONV_2D, dataclasses.replace(good, invoke=off_by_one), 3, 3)
    node, op_name, tensor_name, difference = first_divergent_node(path, inputs, op_resolver=resolver)
    first_depthwise = next(op["index"] for op in Interpreter(model_path=path).get_ops_details() if op["op_name"] == "DEPTHWISE_CONV_2D")
    assert (node, op_name) == (first_depthwise, "DEPTHWISE_CONV_2D") and difference >= 1
