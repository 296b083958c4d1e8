"""What building an Interpreter leaves behind: the cyclic garbage collector, paused while
the model's objects are made, is on again after it, whether the model loads or not."""

from __future__ import annotations

import gc
import pathlib

import pytest

from interpreter import Interpreter
from schema.errors import ModelError

MODEL = pathlib.Path(__file__).resolve().parents[1] / "data" / "models" / "real" / "mp_palm_detection_lite.tflite"


def test_the_collector_is_on_after_a_model_loads():
    assert gc.isenabled()
    Interpreter(model_content=MODEL.read_bytes())
    assert gc.isenabled()


def test_the_collector_is_on_after_a_model_is_refused():
    data = bytearray(MODEL.read_bytes())
    data[4:8] = b"XXXX"  # (not a TFLite file identifier)
    with pytest.raises(ModelError):
        Interpreter(model_content=bytes(data))
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    try:
        Interpreter(model_content=MODEL.read_bytes())
        assert not gc.isenabled()
    finally:
        gc.enable()
