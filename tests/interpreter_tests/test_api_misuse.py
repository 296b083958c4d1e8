"""API misuse ends in a clear ValueError / TypeError (issue 16), as in LiteRT where LiteRT
has one: the cases marked ``both`` run on ai_edge_litert's Interpreter as well, so the
expected exception type is checked, not guessed."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from interpreter import Interpreter

MODEL = pathlib.Path(__file__).parents[1] / "data" / "models" / "real" / "mp_face_detection_short_range.tflite"


def litert_class():
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter

    return LiteRTInterpreter


both = pytest.mark.parametrize("runtime", ["litedelegate", "litert"])


def make(runtime: str, **kwargs):
    cls = Interpreter if runtime == "litedelegate" else litert_class()
    return cls(**kwargs)


def allocated(runtime: str):
    interpreter = make(runtime, model_content=MODEL.read_bytes())
    interpreter.allocate_tensors()
    return interpreter


@both
@pytest.mark.parametrize("content", ["a model as text", 5], ids=["str", "int"])
def test_model_content_that_is_not_bytes_is_a_type_error(runtime, content):
    with pytest.raises(TypeError):
        make(runtime, model_content=content)


def test_model_content_as_a_numpy_array_is_a_type_error_that_says_how_to_pass_it():
    content = np.frombuffer(MODEL.read_bytes(), np.uint8)
    with pytest.raises(TypeError, match=r"model_content must be the model's bytes .* got ndarray \(pass array.tobytes\(\)\)"):
        Interpreter(model_content=content)


def test_model_content_as_a_bytearray_or_memoryview_is_read():
    data = MODEL.read_bytes()
    for content in (bytearray(data), memoryview(data)):
        assert Interpreter(model_content=content).get_input_details()[0]["shape"].tolist() == [1, 128, 128, 3]


def test_num_threads_true_is_refused_with_litert_wording():
    with pytest.raises(ValueError, match="type of num_threads should be int"):
        Interpreter(model_content=MODEL.read_bytes(), num_threads=True)


@both
@pytest.mark.parametrize("index", ["0", 1.0, None], ids=["str", "float", "None"])
def test_get_tensor_with_an_index_that_is_not_an_int_is_a_type_error(runtime, index):
    interpreter = allocated(runtime)
    with pytest.raises(TypeError):
        interpreter.get_tensor(index)


def test_get_tensor_accepts_numpy_integers():
    interpreter = allocated("litedelegate")
    index = interpreter.get_input_details()[0]["index"]
    assert interpreter.get_tensor(np.int64(index)).shape == (1, 128, 128, 3)


def test_set_tensor_with_a_str_index_is_a_type_error():
    interpreter = allocated("litedelegate")
    with pytest.raises(TypeError, match="tensor_index must be an int, got str '0'"):
        interpreter.set_tensor("0", np.zeros((1, 128, 128, 3), np.float32))


@both
def test_resize_to_dimensions_that_are_not_numbers_is_a_value_error(runtime):
    interpreter = allocated(runtime)
    with pytest.raises(ValueError):
        interpreter.resize_tensor_input(0, "abc")


def test_resize_to_fractional_dimensions_is_refused_not_truncated():
    interpreter = allocated("litedelegate")
    with pytest.raises(ValueError, match=r"Cannot resize input input: the dimensions \[1, 32.5, 128, 3\] must be integers"):
        interpreter.resize_tensor_input(0, [1, 32.5, 128, 3])
    assert interpreter.get_input_details()[0]["shape"].tolist() == [1, 128, 128, 3]


def test_resize_to_integral_float_dimensions_is_accepted():
    interpreter = allocated("litedelegate")
    interpreter.resize_tensor_input(0, [2.0, 128, 128, 3])
    interpreter.allocate_tensors()
    assert interpreter.get_input_details()[0]["shape"].tolist() == [2, 128, 128, 3]


@pytest.mark.parametrize("delegate", [None, object(), "gpu"], ids=["None", "object", "str"])
def test_modify_graph_with_something_that_is_not_a_delegate_is_a_type_error(delegate):
    interpreter = allocated("litedelegate")
    with pytest.raises(TypeError, match="is not a delegate: a delegate has a prepare"):
        interpreter.modify_graph_with_delegate(delegate)
    assert interpreter.delegation_reports == []
