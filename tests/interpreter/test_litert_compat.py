"""What LiteRT's Python interpreter does, litedelegate does (issue 17): each case runs on
both ``ai_edge_litert.interpreter.Interpreter`` and ours, so the expectation is checked on
LiteRT itself, not guessed. Our messages contain LiteRT's phrase (and may say more)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import interpreter as ours

MODEL = pathlib.Path(__file__).parents[1] / "data" / "models" / "real" / "mp_face_detection_short_range.tflite"


def module(runtime: str):
    if runtime == "litert":
        from ai_edge_litert import interpreter as litert

        return litert
    return ours


both = pytest.mark.parametrize("runtime", ["litedelegate", "litert"])


@both
@pytest.mark.parametrize("content", [b"abc", b"\0" * 64, b"\x10\0\0\0TFL3" + b"\0" * 4],
                         ids=["too-short", "wrong-identifier", "root-past-the-end"])
def test_content_that_is_not_a_model_is_not_a_valid_flatbuffer(runtime, content):
    with pytest.raises(ValueError, match="The model is not a valid Flatbuffer buffer"):
        module(runtime).Interpreter(model_content=content)


@both
def test_a_missing_file_could_not_be_opened(runtime, tmp_path):
    path = tmp_path / "missing.tflite"
    with pytest.raises(ValueError, match=f"Could not open '{path}'"):
        module(runtime).Interpreter(model_path=str(path))


@both
@pytest.mark.parametrize("name", ["AUTO", "BUILTIN", "BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES"])
def test_every_op_resolver_type_runs_the_model(runtime, name):
    m = module(runtime)
    interpreter = m.Interpreter(model_path=str(MODEL), experimental_op_resolver_type=m.OpResolverType[name])
    interpreter.allocate_tensors()
    interpreter.invoke()


def test_litert_s_own_op_resolver_type_is_accepted_by_ours():
    from ai_edge_litert.interpreter import OpResolverType as LiteRTResolverType

    interpreter = ours.Interpreter(model_path=str(MODEL), experimental_op_resolver_type=LiteRTResolverType.BUILTIN_REF)
    assert interpreter.op_resolver_type is ours.OpResolverType.BUILTIN_REF


@both
@pytest.mark.parametrize("value", ["test", 7], ids=["str", "int"])
def test_an_unknown_op_resolver_type_is_refused(runtime, value):
    with pytest.raises(ValueError, match=f"Unrecognized passed in op resolver type: {value}"):
        module(runtime).Interpreter(model_path=str(MODEL), experimental_op_resolver_type=value)


@both
def test_an_unknown_keyword_is_a_type_error(runtime):
    with pytest.raises(TypeError, match="unexpected keyword argument 'num_thread'"):
        module(runtime).Interpreter(model_path=str(MODEL), num_thread=2)


@both
def test_litert_s_tuning_keywords_are_accepted(runtime):
    module(runtime).Interpreter(
        model_path=str(MODEL),
        experimental_disable_delegate_clustering=True,
        experimental_default_delegate_latest_features=True,
    ).allocate_tensors()


@both
def test_safe_to_run_says_whether_a_tensor_view_is_held(runtime):
    interpreter = module(runtime).Interpreter(model_path=str(MODEL))
    interpreter.allocate_tensors()
    assert interpreter._safe_to_run()
    view = interpreter.tensor(interpreter.get_input_details()[0]["index"])()
    assert not interpreter._safe_to_run()
    del view
    assert interpreter._safe_to_run()


@both
def test_a_bad_node_index_is_an_invalid_node_index(runtime):
    interpreter = module(runtime).Interpreter(model_path=str(MODEL))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match="Invalid node index"):
        interpreter._get_op_details(10_000)
