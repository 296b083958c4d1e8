"""Interpreters with their own GpuDelegate, invoked from several threads at once.

Each GpuDelegate opens its own ``Device``: its own stream and memory pool on the device
(``backends/gpu/device.py``), so N interpreters in N threads queue their work (and replay
their CUDA graphs) on N streams, and each waits only for its own stream. On a real GPU
the waits (``stream.synchronize()``, the copies, ``graph.launch()``) are CuPy calls that
release the GIL (``cupy_backends/cuda/api/runtime.pyx``: ``with nogil``), and CuPy
captures graphs in relaxed mode, so one thread's capture does not forbid another's
allocation. The scaling itself (invokes/s with 1 and 4 threads) needs a GPU:
``benchmarks/gpu_threads.py`` measures it.

Here the threads share ONE emulated machine, as they share one GPU: the machine keeps the
current device, the current streams and the allocator per host thread (as CUDA and CuPy
do) and checks every operation of every thread against the stream rules, so a delegate
that queued work on another thread's stream, or read memory another stream wrote
unordered, fails here. Outputs are compared with the CPU path (our CPU kernels, themselves
tested against LiteRT's reference kernels).
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import threading
import types
import warnings

import numpy as np
import pytest

from backends.gpu import GpuDelegate
from backends.gpu.device import HOST, Device
from backends.gpu import emulation
from backends.gpu.emulation import EmulatedCupy, StreamRaceError
from interpreter import Interpreter

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
from oracle import random_inputs, run_interpreter  # noqa: E402

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"
TINY = MODELS / "converter" / "add_mul_broadcast_float32.tflite"
INT8 = MODELS / "converter" / "mini_mobilenet_int8.tflite"
THREADS = 4
INVOKES = 6


def one_machine(kind: str, device_count: int = 1) -> EmulatedCupy:
    """One emulated machine: host emulation (the ops' numpy branch) or the emulated CUDA
    device (the hand-written kernels through the host shim)."""
    if kind == HOST:
        return EmulatedCupy(device_count, device_name="host emulation", cupy_library_rules=False)
    return EmulatedCupy(device_count, device_name="one emulated CUDA device")


def device_of(cupy: EmulatedCupy, kind: str, device_id: int = 0) -> Device:
    """A Device (its own stream and pool) on device ``device_id`` of the shared machine."""
    if kind == HOST:
        return Device(cupy, device_id, name=HOST, is_host=True)
    return Device(cupy, device_id, name=f"emulated cuda:{device_id}")


def run_in_threads(model: bytes, devices, invokes: int = INVOKES, cuda_graphs: bool = True) -> tuple[list, list, list]:
    """One interpreter per device, each with its own delegate, invoked ``invokes`` times each
    in its own thread, all started together; per thread, every invoke's outputs and inputs,
    and the delegates."""
    delegates = [GpuDelegate(device=device, cuda_graphs=cuda_graphs) for device in devices]
    interpreters = [Interpreter(model_content=model, experimental_delegates=[d]) for d in delegates]
    count = len(interpreters)
    inputs = [[random_inputs(model, seed=10 * k + i) for i in range(invokes)] for k in range(count)]
    outputs: list[list] = [[] for _ in range(count)]
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def work(k: int) -> None:
        try:
            start.wait()
            for values in inputs[k]:
                outputs[k].append(run_interpreter(interpreters[k], values))
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors, errors
    assert all(not t.is_alive() for t in threads)
    return outputs, inputs, delegates


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


def work_of_one_delegate_alone(model: bytes, kind: str, invokes: int, cuda_graphs: bool):
    """What one delegate asks of its stream for ``invokes`` invokes, alone on a machine."""
    device = device_of(one_machine(kind), kind)
    interpreter = Interpreter(model_content=model, experimental_delegates=[GpuDelegate(device=device, cuda_graphs=cuda_graphs)])
    for i in range(invokes):
        run_interpreter(interpreter, random_inputs(model, seed=i))
    return device.xp.machine.stream_work(device.stream)


CASES = [
    pytest.param(HOST, TINY, False, 12, id="host-float32"),
    pytest.param(HOST, INT8, True, 4, id="host-int8"),
    pytest.param("emulated cuda", TINY, False, 12, id="emulated_cuda-float32"),
    pytest.param("emulated cuda", INT8, True, 3, id="emulated_cuda-int8"),
]


@pytest.mark.parametrize("cuda_graphs", [True, False], ids=["graphs", "eager"])
@pytest.mark.parametrize("kind, path, exact, invokes", CASES)
def test_four_interpreters_in_four_threads_on_one_device_give_the_cpu_path_s_outputs(kind, path, exact, invokes, cuda_graphs):
    model = path.read_bytes()
    cupy = one_machine(kind)
    outputs, inputs, _ = run_in_threads(model, [device_of(cupy, kind) for _ in range(THREADS)], invokes, cuda_graphs)
    assert_equal_to_the_cpu_path(model, outputs, inputs, exact)


@pytest.mark.parametrize("cuda_graphs", [True, False], ids=["graphs", "eager"])
@pytest.mark.parametrize("kind", [HOST, "emulated cuda"])
def test_each_thread_s_delegate_works_on_its_own_stream_only(kind, cuda_graphs):
    """Each of the four streams got exactly what one delegate alone asks of its stream for
    the same invokes (launches, replays, copies, waits), and the legacy default stream
    nothing: no thread's work landed on another's stream."""
    model, invokes = TINY.read_bytes(), 8
    cupy = one_machine(kind)
    devices = [device_of(cupy, kind) for _ in range(THREADS)]
    run_in_threads(model, devices, invokes, cuda_graphs)
    alone = work_of_one_delegate_alone(model, kind, invokes, cuda_graphs)
    work_on = cupy.machine.work_on()
    assert sorted(work_on) == sorted((0, d.stream.ptr) for d in devices)
    for device in devices:
        assert work_on[(0, device.stream.ptr)] == alone
    assert (alone.graph_launches > 0) == cuda_graphs


def test_each_delegate_counts_only_its_own_work_on_a_shared_device():
    model, invokes = TINY.read_bytes(), 8
    cupy = one_machine(HOST)
    _, _, delegates = run_in_threads(model, [device_of(cupy, HOST) for _ in range(THREADS)], invokes)
    totals = [dataclasses.asdict(d.device.counters) for d in delegates]
    assert all(total == totals[0] for total in totals)
    assert totals[0]["uploads"] >= invokes  # (the inputs of every invoke, and no more than its own)
    assert sum(t["uploads"] for t in totals) == cupy.machine.stats.uploads


def test_threads_on_two_devices_of_one_machine_each_keep_their_current_device():
    """Two threads on device 1 and two on device 0: a thread entering device 1 does not
    make device 1 current in another thread (on a shared current device, the others would
    launch on device 1 with device 0's arrays: WrongDeviceError)."""
    model = TINY.read_bytes()
    cupy = one_machine("emulated cuda", device_count=2)
    devices = [device_of(cupy, "emulated cuda", k % 2) for k in range(THREADS)]
    outputs, inputs, _ = run_in_threads(model, devices, invokes=8)
    assert_equal_to_the_cpu_path(model, outputs, inputs, exact=False)
    work_on = cupy.machine.work_on()
    assert {key[0] for key in work_on} == {0, 1}
    assert all(work_on[(d.id, d.stream.ptr)].launches + work_on[(d.id, d.stream.ptr)].graph_launches > 0 for d in devices)


def test_two_threads_delegates_sharing_one_stream_without_graphs_are_ordered_by_it():
    """One stream shared by two delegates in two threads (one Device handed to both), no
    graphs: the stream orders their work, so nothing races, and the outputs are right.
    (With graphs, one's capture would take in the other's work: see below.)"""
    model = TINY.read_bytes()
    shared = device_of(one_machine(HOST), HOST)
    outputs, inputs, _ = run_in_threads(model, [shared, shared], invokes=8, cuda_graphs=False)
    assert_equal_to_the_cpu_path(model, outputs, inputs, exact=False)
    assert list(shared.xp.machine.work_on()) == [(0, shared.stream.ptr)]


def two_threads_interleaved(cupy: EmulatedCupy) -> np.ndarray:
    """Two delegates' Devices on one machine, two threads, in this order: A uploads an input
    on its stream; B makes its own stream current; A runs a kernel on its input and copies
    the result back. Returns A's result."""
    a, b = device_of(cupy, HOST), device_of(cupy, HOST)
    xp = cupy
    b_entered, a_done = threading.Event(), threading.Event()
    result: dict = {}

    def thread_a() -> None:
        try:
            with a.active():
                x = xp.asarray(np.arange(4, dtype=np.float32))
                b_thread.start()
                b_entered.wait(timeout=60)
                result["y"] = (x * 2).get(stream=a.stream)
        except BaseException as error:
            result["error"] = error
        finally:
            a_done.set()

    def thread_b() -> None:
        with b.active():
            b_entered.set()
            a_done.wait(timeout=60)

    b_thread = threading.Thread(target=thread_b)
    a_thread = threading.Thread(target=thread_a)
    a_thread.start()
    a_thread.join(timeout=60)
    b_thread.join(timeout=60)
    if "error" in result:
        raise result["error"]
    return result["y"]


def test_a_stream_made_current_in_another_thread_does_not_become_this_thread_s():
    assert two_threads_interleaved(one_machine(HOST)).tolist() == [0.0, 2.0, 4.0, 6.0]


def test_a_current_stream_shared_by_two_threads_is_caught_as_a_stream_race():
    """Mutation: the machine keeps one current device and stream stack for all threads (as
    the emulated machine once did, and as a runtime without per-thread streams would). A's
    kernel is then queued on B's stream while its input was written on A's, unordered: on
    a device the kernel can run before the upload lands. The machine catches it."""
    cupy = one_machine(HOST)
    cupy.machine.thread = types.SimpleNamespace(  # one state for every thread
        device=0, previous_devices=[], stream_stacks=[[]], allocators=[], label=""
    )
    with pytest.raises(StreamRaceError, match="reads"):
        two_threads_interleaved(cupy)


def invoke_another_delegate_during_a_capture(monkeypatch, mode, share_stream=False):
    """Delegate A captures its graph (its second invoke) while, from another thread,
    delegate B on the same device invokes (it replays its graph, waits for its stream).
    ``mode``: None, the delegate's own (CuPy's default), or the capture mode forced on it;
    ``share_stream``: B on A's Device (its stream and pool) rather than on one of its own.
    Returns B's outputs (or what B's invoke raised), A's outputs, A's delegate, the CPU path's
    outputs and the warnings."""
    model = TINY.read_bytes()
    cupy = one_machine(HOST)
    a = device_of(cupy, HOST)
    b = a if share_stream else device_of(cupy, HOST)
    delegate_a = GpuDelegate(device=a)
    interpreter_a = Interpreter(model_content=model, experimental_delegates=[delegate_a])
    interpreter_b = Interpreter(model_content=model, experimental_delegates=[GpuDelegate(device=b)])
    values = random_inputs(model)
    run_interpreter(interpreter_a, values)
    for _ in range(3):
        run_interpreter(interpreter_b, values)  # (B replays its graph from now on)
    if mode is not None:
        begin_capture = emulation.Stream.begin_capture
        monkeypatch.setattr(emulation.Stream, "begin_capture", lambda stream, _=None: begin_capture(stream, mode))
    b_outcome: list = []
    b_started = threading.Event()
    labelled = a.labelled

    def b_invokes_while_a_captures(label):
        if a.stream.is_capturing() and threading.current_thread() is main and not b_started.is_set():
            b_started.set()
            thread = threading.Thread(target=lambda: b_outcome.append(invoke_or_error(interpreter_b, values)))
            thread.start()
            thread.join(timeout=60)
        return labelled(label)

    main = threading.current_thread()
    monkeypatch.setattr(a, "labelled", b_invokes_while_a_captures)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs_a = run_interpreter(interpreter_a, values)
    return b_outcome[0], outputs_a, delegate_a, run_interpreter(Interpreter(model_content=model), values), caught


def test_a_stream_shared_by_two_threads_delegates_lets_one_s_capture_take_in_the_other_s_work(monkeypatch):
    """Mutation: B shares A's stream, and invokes while A captures. On a device B's graph
    would be launched into A's capture (its work recorded into A's graph, not run): CUDA
    refuses it. B's invoke fails, and A's capture is invalidated: A runs eagerly."""
    outputs_b, outputs_a, delegate_a, cpu, caught = invoke_another_delegate_during_a_capture(monkeypatch, None, share_stream=True)
    assert isinstance(outputs_b, Exception) and "capturing" in str(outputs_b)
    assert delegate_a.partition_stats()[0].graph.startswith("capture failed")
    for x, y in zip(outputs_a, cpu):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def invoke_or_error(interpreter, values):
    try:
        return run_interpreter(interpreter, values)
    except Exception as error:  # handed to the test
        return error


def test_a_delegate_s_capture_leaves_another_thread_s_delegate_free_to_invoke(monkeypatch):
    """The delegate captures as CuPy does by default, in relaxed mode: B's replay, its wait
    for its stream, and A's own allocations into its new graph pool are all allowed."""
    outputs_b, outputs_a, delegate_a, cpu, caught = invoke_another_delegate_during_a_capture(monkeypatch, None)
    for got in (outputs_a, outputs_b):
        for x, y in zip(got, cpu):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    assert not [w for w in caught if "capture failed" in str(w.message)]
    assert delegate_a.partition_stats()[0].graph == "replaying"


def test_a_delegate_capturing_in_global_mode_would_stop_other_threads_delegates(monkeypatch):
    """Mutation: the same with the capture forced into CUDA's global mode. B's wait for its
    stream is refused (cudaErrorStreamCaptureUnsupported), and A's capture fails (its graph
    pool's cudaMalloc is refused too, and the capture is invalidated): A runs eagerly."""
    global_mode = emulation.STREAM_CAPTURE_MODE_GLOBAL
    outputs_b, outputs_a, delegate_a, cpu, caught = invoke_another_delegate_during_a_capture(monkeypatch, global_mode)
    assert isinstance(outputs_b, Exception) and "global mode" in str(outputs_b)
    assert [w for w in caught if "capture failed" in str(w.message)]
    assert delegate_a.partition_stats()[0].graph.startswith("capture failed")
    for x, y in zip(outputs_a, cpu):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


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
