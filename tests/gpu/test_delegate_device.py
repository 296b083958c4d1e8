"""The GPU delegate on the device it was given: which device and stream ran its work, which
memory staged its copies, which pool holds its graph's memory, and the counters the
emulated machine kept of what was asked of it (issue 22).

Each test reads the emulated machine (``backends/gpu/emulation.py``): the machine counts
every launch, copy, host wait and allocation on the device and the stream it happened
on, and every array knows the device and stream that allocated it. So a delegate that
runs device 1's model on device 0, stages a copy in pageable memory, or lets its graph's
pool go fails here, on a CPU, not only on a GPU.

``tests/gpu/README.md`` lists each device defect, the change that puts it back, and the
test that catches it.
"""

from __future__ import annotations

import gc
import pathlib
import sys

import pytest
from gpu_helpers import raises_caused_by, run

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.delegate import GpuPartitionKernel
from backends.gpu.device import open_device
from backends.gpu.emulation import EmulatedCupy, FreedMemoryError, MachineStats
from backends.gpu.placement import PlacementCache
from interpreter.example_model import build_example_model
from interpreter.testing import assert_matches_cpu

MOBILENET = pathlib.Path(__file__).parents[1] / "data" / "models" / "converter" / "mini_mobilenet_float32.tflite"
MAKE_DEVICES = pytest.mark.parametrize(
    "make_device", [lambda: "host", emulated_cuda_device], ids=["host", "emulated-cuda"]
)


def streams_that_worked(machine, before: dict) -> set[tuple[int, int]]:
    """The (device, stream) pairs whose counts changed since ``before``."""
    return {key for key, stats in machine.work_on().items() if stats != before.get(key)}


def device_arrays(delegate: GpuDelegate) -> list:
    """Every device array the delegate's partitions keep: constants, input buffers, graph outputs."""
    return [
        array
        for kernel in delegate.kernels
        for array in (*kernel.constants.values(), *kernel.input_buffers.values(), *kernel.graph_outputs.values())
    ]


# -- which device, which stream -------------------------------------------------------------------


def test_the_device_branch_runs_on_device_1_of_2_like_the_cpu_and_only_there():
    device = emulated_cuda_device(device_id=1, device_count=2)
    machine = device.xp.machine
    before = machine.work_on()
    cache = PlacementCache()  # nothing decided: prepare checks the candidate kernels on the device
    delegate = GpuDelegate(device=device, placement_cache=cache)
    assert_matches_cpu(build_example_model(), lambda: delegate, invokes=4)
    assert_matches_cpu(MOBILENET.read_bytes(), lambda: GpuDelegate(device=device, placement_cache=cache), invokes=4, atol=1e-5)
    assert delegate.partition_stats()[0].graph == "replaying"
    # every launch, copy, wait and allocation: on device 1, on the delegate's stream (and, for
    # prepare's checks of the candidate kernels, on the device's side stream)
    assert device.stream.device_id == 1
    assert streams_that_worked(machine, before) == {(1, device.stream.ptr), (1, device._side_stream.ptr)}
    assert machine.device_stats[0].allocations == 0 and machine.device_stats[0].launches == 0
    arrays = device_arrays(delegate)
    assert arrays and all(a.data.device_id == 1 and a.data.block.stream is device.stream for a in arrays)


@pytest.mark.gpu
def test_a_second_devices_buffers_and_stream_are_device_1s(cuda_device, cuda_device_count):
    """On a CUDA device (or the emulated one the suite was asked for): device 1's buffers
    are on device 1, its stream is device 1's, and the numbers are the CPU's."""
    if cuda_device_count < 2:
        pytest.skip("this machine has one CUDA device")
    device = cuda_device(1)
    delegate = GpuDelegate(device=device)
    assert_matches_cpu(build_example_model(), lambda: delegate, invokes=4)
    assert device.cuda_device.id == 1 and device.stream.device_id == 1
    arrays = device_arrays(delegate)
    assert arrays and all(a.device.id == 1 for a in arrays)


class RecordingCupy(EmulatedCupy):
    """A fake ``cupy`` module (an emulated machine of two devices) that records every
    device id asked of ``cupy.cuda.Device``."""

    def __init__(self) -> None:
        super().__init__(device_count=2, device_name="Fake GPU")
        self.devices_asked: list[int | None] = []
        open_handle = self.cuda.Device

        def device(device_id: int | None = None):
            self.devices_asked.append(device_id)
            return open_handle(device_id)

        self.cuda.Device = device


def test_open_device_opens_the_cuda_device_it_is_asked_for(monkeypatch):
    """``open_device(1)``'s real-CuPy branch, with a fake CuPy: the probe, the device
    handle, the stream and the pool are device 1's; device 0 sees no work at all."""
    fake = RecordingCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    device = open_device(1)
    assert device.id == 1 and device.cuda_device.id == 1 and device.stream.device_id == 1
    assert device.name.startswith("cuda:1 (Fake GPU)") and not device.is_host
    assert fake.devices_asked and set(fake.devices_asked) == {1}
    assert fake.machine.device_stats[1].launches > 0  # the probe's kernel
    assert fake.machine.device_stats[0] == MachineStats()


def test_a_gpu_delegate_on_device_1_of_a_cuda_machine_works_on_device_1_only(monkeypatch):
    fake = RecordingCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    delegate = GpuDelegate(device=1, placement_cache=PlacementCache())
    assert_matches_cpu(build_example_model(), lambda: delegate, invokes=3)
    side = delegate.device._side_stream  # (where prepare checked the candidate kernels)
    assert streams_that_worked(fake.machine, {}) <= {(1, 0), (1, delegate.device.stream.ptr), (1, side.ptr)}  # (the probe: 1's default stream)
    assert fake.machine.device_stats[0] == MachineStats() and set(fake.devices_asked) == {1}


# -- pinned staging ---------------------------------------------------------------------------------


@MAKE_DEVICES
def test_both_staging_sides_are_pinned_host_memory(make_device):
    """An asynchronous copy needs page-locked memory: inputs are staged in pinned buffers
    as outputs are (a pageable buffer makes every copy a host wait)."""
    delegate = GpuDelegate(device=make_device())
    run(build_example_model(), delegate, invokes=1)
    machine = delegate.device.xp.machine
    for kernel in delegate.kernels:
        assert kernel.input_staging and kernel.output_staging
        for t, staging in (*kernel.input_staging.items(), *kernel.output_staging.items()):
            assert machine.is_pinned(staging), f"tensor {t}: staged in pageable memory"


@MAKE_DEVICES
def test_after_warm_up_no_copy_makes_the_host_wait(make_device):
    """What the machine saw of one invoke on the delegate's stream: the input up and the
    output down, asynchronously, then one synchronization."""
    delegate = GpuDelegate(device=make_device())
    interpreter = run(build_example_model(), delegate, invokes=3)
    machine, stream = delegate.device.xp.machine, delegate.device.stream
    before = machine.work_on()[stream.device_id, stream.ptr]
    interpreter.invoke()
    after = machine.work_on()[stream.device_id, stream.ptr]
    assert (after.blocking_copies - before.blocking_copies, after.synchronizations - before.synchronizations) == (0, 1)
    assert (after.uploads - before.uploads, after.downloads - before.downloads) == (1, 1)
    assert (after.graph_launches - before.graph_launches, after.launches - before.launches) == (1, 0)


# -- the counters are the machine's -------------------------------------------------------------------


@MAKE_DEVICES
def test_the_delegates_counters_are_what_the_machine_saw_on_its_device(make_device):
    delegate = GpuDelegate(device=make_device())
    interpreter = run(build_example_model(), delegate, invokes=2)
    stats = delegate.device.xp.machine.device_stats[delegate.device.id]
    seen = (stats.synchronizations, stats.uploads, stats.downloads, stats.allocations, stats.graph_launches)
    interpreter.invoke()
    last = delegate.last_invoke()
    moved = (stats.synchronizations, stats.uploads, stats.downloads, stats.allocations, stats.graph_launches)
    assert (last.synchronizations, last.uploads, last.downloads, last.pool_allocations, last.graph_replays) == tuple(
        b - a for a, b in zip(seen, moved)
    )


def test_a_blocking_download_is_counted_as_a_host_wait(monkeypatch):
    """The counters come from the machine: a download the delegate thinks asynchronous but
    that blocks shows as one more synchronization."""
    from backends.gpu.device import Device

    def blocking_download(self, device_array, pinned):
        device_array.get(stream=self.stream, out=pinned, blocking=True)

    monkeypatch.setattr(Device, "download_async", blocking_download)
    delegate = GpuDelegate(device="host")
    run(build_example_model(), delegate, invokes=3)
    assert delegate.last_invoke().synchronizations == 2


# -- the graph's memory pool ------------------------------------------------------------------------


@MAKE_DEVICES
def test_the_graphs_pool_lives_as_long_as_the_graph(make_device):
    delegate = GpuDelegate(device=make_device())
    run(build_example_model(), delegate, invokes=4)
    gc.collect()
    (kernel,) = delegate.kernels
    assert kernel.graph is not None and kernel.graph_pool is not None
    assert not any(a.data.freed for a in kernel.graph_outputs.values())


def test_a_graph_pool_dropped_after_capture_is_caught(monkeypatch):
    """CuPy's arrays do not keep their pool alive: drop the graph's pool and its memory is
    the driver's, though the graph still replays into it."""
    capture = GpuPartitionKernel._capture

    def capture_then_drop_the_pool(self):
        capture(self)
        self.graph_pool = None

    monkeypatch.setattr(GpuPartitionKernel, "_capture", capture_then_drop_the_pool)
    with raises_caused_by(FreedMemoryError, "given back to the driver"):
        run(build_example_model(), GpuDelegate(device=emulated_cuda_device()), invokes=3)
