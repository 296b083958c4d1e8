"""Issue 16: memory stays flat over many invokes. The resident set size after 10,000
invokes (each with set_tensor, invoke and get_tensor) is the one after the warm-up, on the
CPU and with the emulated GPU delegate: nothing is allocated per invoke and kept."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from interpreter import Interpreter

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"
INVOKES = 10_000
WARM_UP = 300
#: Allowed growth of the resident set over the 10,000 invokes: 100 bytes kept per invoke
#: would already be 1 MB.
SLACK_BYTES = 1 << 20


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def growth_over_invokes(interpreter: Interpreter) -> int:
    interpreter.allocate_tensors()
    inputs = interpreter.get_input_details()
    values = [np.ones(d["shape"], d["dtype"]) for d in inputs]
    outputs = [d["index"] for d in interpreter.get_output_details()]

    def run_once() -> None:
        for detail, value in zip(inputs, values):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        for index in outputs:
            interpreter.get_tensor(index)

    for _ in range(WARM_UP):
        run_once()
    before = resident_bytes()
    for _ in range(INVOKES):
        run_once()
    return resident_bytes() - before


pytestmark = pytest.mark.skipif(not pathlib.Path("/proc/self/statm").exists(), reason="reads /proc/self/statm (Linux)")


def test_resident_memory_is_flat_over_10000_cpu_invokes():
    model = MODELS / "converter" / "mini_mobilenet_int8.tflite"
    growth = growth_over_invokes(Interpreter(model_path=str(model)))
    assert growth <= SLACK_BYTES, f"resident memory grew by {growth} bytes over {INVOKES} invokes"


def test_resident_memory_is_flat_over_10000_invokes_with_resource_variables():
    from model_helpers import read_then_assign_model

    growth = growth_over_invokes(Interpreter(model_content=read_then_assign_model(shape=(64,))))
    assert growth <= SLACK_BYTES, f"resident memory grew by {growth} bytes over {INVOKES} invokes"


def test_resident_memory_is_flat_over_10000_emulated_gpu_invokes():
    from backends.gpu import GpuDelegate

    interpreter = Interpreter(model_path=str(MODELS / "converter" / "mini_mobilenet_float32.tflite"))
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    growth = growth_over_invokes(interpreter)
    assert growth <= SLACK_BYTES, f"resident memory grew by {growth} bytes over {INVOKES} invokes"
