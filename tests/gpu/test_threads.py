"""Interpreters with their own GpuDelegate, invoked from several threads at once.

Each GpuDelegate opens its own ``Device``: its own stream and memory pool on the device
(``backends/gpu/device.py``), so N interpreters in N threads queue their work (and replay
their CUDA graphs) on N streams, and each waits only for its own stream. On a real GPU
the waits (``stream.synchronize()``, the copies, ``graph.launch()``) are CuPy calls that
release the GIL (``cupy_backends/cuda/api/runtime.pyx``: ``with nogil``), and CuPy
captures graphs in relaxed mode, so one thread's capture does not forbid another's
allocation. The scaling itself (invokes/s with 1 and 4 threads) needs a GPU:
``benchmarks/gpu_threads.py`` measures it.

Here, the threads run on host emulation and on the emulated CUDA device (one emulated
machine per interpreter: the emulated machine keeps its current device and stream per
machine, not per thread), with outputs compared with the CPU path (our CPU kernels,
themselves tested against LiteRT's reference kernels).
"""

from __future__ import annotations

import pathlib
import sys
import threading

import numpy as np
import pytest

from backends.gpu import GpuDelegate
from backends.gpu.device import Device, emulated_cuda_device
from backends.gpu.emulation import EmulatedCupy
from interpreter import Interpreter

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
from oracle import random_inputs, run_interpreter  # noqa: E402

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"
TINY = MODELS / "converter" / "add_mul_broadcast_float32.tflite"
INT8 = MODELS / "converter" / "mini_mobilenet_int8.tflite"
THREADS = 4
INVOKES = 6


def run_in_threads(model: bytes, make_device, invokes: int = INVOKES) -> tuple[list, list]:
    """THREADS interpreters, each with its own delegate, invoked ``invokes`` times each in
    its own thread, all started together; per thread, every invoke's outputs and inputs."""
    interpreters = [Interpreter(model_content=model, experimental_delegates=[GpuDelegate(device=make_device())])
                    for _ in range(THREADS)]
    inputs = [[random_inputs(model, seed=10 * k + i) for i in range(invokes)] for k in range(THREADS)]
    outputs: list[list] = [[] for _ in range(THREADS)]
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(k: int) -> None:
        try:
            start.wait()
            for values in inputs[k]:
                outputs[k].append(run_interpreter(interpreters[k], values))
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors, errors
    assert all(not t.is_alive() for t in threads)
    return outputs, inputs


def assert_equal_to_the_cpu_path(model: bytes, outputs, inputs, exact: bool) -> None:
    cpu = Interpreter(model_content=model)
    for per_thread_outputs, per_thread_inputs in zip(outputs, inputs):
        assert len(per_thread_outputs) == len(per_thread_inputs)
        for got, values in zip(per_thread_outputs, per_thread_inputs):
            for a, b in zip(got, run_interpreter(cpu, values)):
                if exact:
                    np.testing.assert_array_equal(a, b)
                else:
                    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("path, exact", [(TINY, False), (INT8, True)], ids=["float32", "int8"])
def test_four_interpreters_in_four_threads_on_host_emulation_give_the_cpu_path_s_outputs(path, exact):
    model = path.read_bytes()
    outputs, inputs = run_in_threads(model, lambda: "host")
    assert_equal_to_the_cpu_path(model, outputs, inputs, exact)


def test_four_interpreters_in_four_threads_on_the_emulated_cuda_device_give_the_cpu_path_s_outputs():
    # The device branch: the hand-written kernels through the host shim, which ctypes runs
    # without the GIL, so the four threads' kernels do run at the same time.
    model = TINY.read_bytes()
    outputs, inputs = run_in_threads(model, emulated_cuda_device, invokes=4)
    assert_equal_to_the_cpu_path(model, outputs, inputs, exact=False)


def test_each_delegate_on_one_device_has_a_stream_and_a_pool_of_its_own():
    cupy = EmulatedCupy(device_name="one emulated device")
    devices = [Device(cupy, 0, name="emulated cuda:0") for _ in range(THREADS)]
    delegates = [GpuDelegate(device=d) for d in devices]
    assert len({id(d.device.stream) for d in delegates}) == THREADS
    assert len({id(d.device.pool) for d in delegates}) == THREADS
    assert not any(d.device.stream.is_null for d in delegates)


def test_an_invoke_creates_no_cuda_events(monkeypatch):
    """The timing events are made at prepare and recorded again at every invoke."""
    model = TINY.read_bytes()
    delegate = GpuDelegate(device="host")
    interpreter = Interpreter(model_content=model, experimental_delegates=[delegate])
    values = random_inputs(model)
    run_interpreter(interpreter, values)
    run_interpreter(interpreter, values)  # (captures the graph)
    created = []
    events = delegate.device.xp.cuda
    original = events.Event
    monkeypatch.setattr(events, "Event", lambda *a, **k: created.append(1) or original(*a, **k))
    run_interpreter(interpreter, values)
    assert created == []
    assert delegate.partition_stats()[0].device_ms is not None
