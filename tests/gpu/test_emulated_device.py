"""The emulated CUDA machine (``backends/gpu/emulation.py``) punishes what a real device
punishes: each test breaks one rule and expects the error a device would turn into wrong
numbers or a crash, or checks that the correct pattern passes."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from backends.gpu.emulation import (
    EmulatedCupy,
    FreedMemoryError,
    StreamCaptureUnsupportedError,
    StreamRaceError,
    WrongDeviceError,
)


@pytest.fixture
def cp():
    return EmulatedCupy(device_count=2)


def ones(cp, shape=(4,)):
    return cp.asarray(np.ones(shape, np.float32))


# -- streams ------------------------------------------------------------------------------------


def test_a_kernel_on_the_default_stream_may_not_read_what_a_non_blocking_stream_wrote(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = ones(cp)
    with pytest.raises(StreamRaceError, match="legacy default stream .* reads"):
        x + 1


def test_an_event_orders_two_streams(cp):
    producer, consumer = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with producer:
        x = ones(cp) * 3
    consumer.wait_event(producer.record())
    with consumer:
        assert (x + 1).get(stream=consumer).tolist() == [4.0] * 4


def test_a_host_synchronization_orders_two_streams(cp):
    producer = cp.cuda.Stream(non_blocking=True)
    with producer:
        x = ones(cp) * 3
    producer.synchronize()
    assert (x + 1).get().tolist() == [4.0] * 4


def test_writing_what_another_stream_still_reads_is_a_race(cp):
    reader = cp.cuda.Stream(non_blocking=True)
    x = ones(cp)
    cp.cuda.Device().synchronize()
    with reader:
        x * 2  # reads x
    with pytest.raises(StreamRaceError, match="writes"):
        x[...] = 0  # default stream: unordered with the read


def test_blocking_streams_and_the_legacy_default_stream_order_each_other(cp):
    blocking = cp.cuda.Stream()
    with blocking:
        x = ones(cp) * 2
    assert (x + 1).get().tolist() == [3.0] * 4  # legacy default stream: implicitly after


# -- devices ------------------------------------------------------------------------------------


def test_an_array_of_device_0_cannot_be_used_while_device_1_is_current(cp):
    x = ones(cp)
    with cp.cuda.Device(1), pytest.raises(WrongDeviceError, match="device 0 used while device 1"):
        x * 2


def test_a_stream_of_device_0_cannot_be_made_current_under_device_1(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    with cp.cuda.Device(1), pytest.raises(WrongDeviceError, match="invalid resource handle"):
        with stream:
            pass


# -- memory ------------------------------------------------------------------------------------


def test_fresh_memory_reads_as_nan_not_zero(cp):
    assert np.isnan(cp.empty((3,), np.float32).get()).all()
    assert (cp.empty((3,), np.int32).get() == -1).all()


def test_memory_given_back_to_the_pool_is_poisoned_and_reused(cp):
    x = ones(cp, (128,))
    block = x.data.block
    del x
    gc.collect()
    assert not block.live and (block.memory == 0xFF).all()
    y = cp.empty((128,), np.float32)
    assert y.data.block is block and np.isnan(y.get()).all()


def test_dropping_a_pool_frees_its_memory_while_arrays_still_point_into_it(cp):
    """CuPy's arrays hold their pool weakly (PooledMemory): when the pool object goes, its
    memory goes back to the driver, poisoned, whatever arrays still point into it."""
    pool = cp.cuda.MemoryPool()
    with cp.cuda.using_allocator(pool.malloc):
        x = ones(cp, (128,))
    block = x.data.block
    del pool
    gc.collect()
    assert x.data.freed and block.released and (block.memory == 0xFF).all()
    with pytest.raises(FreedMemoryError, match="its pool gave back to the driver"):
        x + 1


def test_memory_a_dropped_pool_gave_back_is_handed_to_the_next_pool(cp):
    pool = cp.cuda.MemoryPool()
    with cp.cuda.using_allocator(pool.malloc):
        x = ones(cp, (128,))
    del pool
    gc.collect()
    other = cp.cuda.MemoryPool()
    with cp.cuda.using_allocator(other.malloc):
        y = cp.full((128,), 7.0, np.float32)
    assert y.data.block is x.data.block  # the same memory, someone else's now
    with pytest.raises(FreedMemoryError):
        x.get()
    assert y.get().tolist() == [7.0] * 128


def test_an_array_keeps_its_pool_alive_no_longer_than_cupy_does(cp):
    import weakref

    pool = cp.cuda.MemoryPool()
    with cp.cuda.using_allocator(pool.malloc):
        x = ones(cp, (4,))
    alive = weakref.ref(pool)
    del pool
    gc.collect()
    assert alive() is None and x.data.freed


def test_a_copy_from_pageable_memory_makes_the_host_wait(cp):
    """cudaMemcpyAsync from pageable memory synchronizes the stream first: a host wait,
    counted as a synchronization and a blocking copy; from pinned memory it is neither."""
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = cp.empty((4,), np.float32)
        pinned = np.ndarray((4,), np.float32, buffer=cp.cuda.alloc_pinned_memory(16))
        pinned[...] = 2.0
        x.set(pinned, stream=stream)
        assert (cp.machine.stats.synchronizations, cp.machine.stats.blocking_copies) == (0, 0)
        x.set(np.full(4, 3.0, np.float32), stream=stream)
        assert (cp.machine.stats.synchronizations, cp.machine.stats.blocking_copies) == (1, 1)


def test_asarray_of_a_host_array_is_staged_through_pinned_memory_as_in_cupy(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        ones(cp)
    assert (cp.machine.stats.uploads, cp.machine.stats.synchronizations, cp.machine.stats.blocking_copies) == (1, 0, 0)


def test_a_copy_to_pinned_memory_lands_only_when_the_host_synchronizes(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    pinned = np.ndarray((4,), np.float32, buffer=cp.cuda.alloc_pinned_memory(16))
    with stream:
        x = ones(cp) * 5
        x.get(stream=stream, out=pinned, blocking=False)
    assert np.isnan(pinned).all()
    stream.synchronize()
    assert pinned.tolist() == [5.0] * 4


def test_implicit_conversion_to_numpy_is_refused_as_in_cupy(cp):
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(ones(cp))


# -- graphs ------------------------------------------------------------------------------------


def capture(cp, stream, work, pool=None):
    with cp.cuda.using_allocator(pool.malloc if pool is not None else None):
        stream.begin_capture()
        try:
            result = work()
        finally:
            graph = stream.end_capture()
    return graph, result


def two_steps(x):
    y = x * 2  # an intermediate: freed when this function returns
    return y + 1


def test_nothing_runs_during_a_capture_and_a_replay_reads_the_inputs_of_its_time(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = ones(cp)
        pool = cp.cuda.MemoryPool()
        graph, out = capture(cp, stream, lambda: two_steps(x), pool)
        assert np.isnan(out.get()).all()  # captured, not run
        for value in (1.0, 4.0):
            x.set(np.full(4, value, np.float32), stream=stream)
            graph.launch(stream)
            assert out.get().tolist() == [2 * value + 1] * 4


def test_a_replay_into_intermediates_freed_to_a_shared_pool_is_refused(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = ones(cp)
        graph, out = capture(cp, stream, lambda: two_steps(x))  # the default pool
        gc.collect()
        with pytest.raises(FreedMemoryError, match="pool that serves other allocations"):
            graph.launch(stream)


def test_a_replay_after_the_graphs_pool_served_someone_else_is_refused(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = ones(cp)
        pool = cp.cuda.MemoryPool()
        graph, out = capture(cp, stream, lambda: two_steps(x), pool)
        with cp.cuda.using_allocator(pool.malloc):
            stranger = cp.empty((4,), np.float32)  # takes the freed intermediate's block
        with pytest.raises(FreedMemoryError, match="handed to"):
            graph.launch(stream)
        del stranger


def test_a_replay_after_the_graphs_pool_was_dropped_is_refused(cp):
    """The graph's intermediates were freed into its private pool during the capture and
    its output still points into it: once the pool object is gone, all of it is the
    driver's again, and a device would replay into memory others are handed."""
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = ones(cp)
        pool = cp.cuda.MemoryPool()
        graph, out = capture(cp, stream, lambda: two_steps(x), pool)
        graph.launch(stream)
        del pool
        gc.collect()
        with pytest.raises(FreedMemoryError, match="given back to the driver"):
            graph.launch(stream)


def test_a_host_synchronization_during_a_capture_invalidates_it(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = ones(cp)
        stream.begin_capture()
        with pytest.raises(StreamCaptureUnsupportedError, match="device-to-host copy"):
            float(x.sum())
        with pytest.raises(StreamCaptureUnsupportedError, match="invalidated"):
            stream.end_capture()


def test_cupys_concatenate_of_more_than_8_arrays_cannot_be_captured(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        parts = [ones(cp, (1, 2)) for _ in range(9)]
        stream.begin_capture()
        with pytest.raises(StreamCaptureUnsupportedError, match="table of their addresses"):
            cp.concatenate(parts, axis=1)
        with pytest.raises(StreamCaptureUnsupportedError):
            stream.end_capture()
        stream.begin_capture()
        cp.concatenate(parts[:8], axis=1)  # 8 arrays: one copy each, capturable
        stream.end_capture()


def test_the_statistics_count_launches_transfers_and_synchronizations(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = ones(cp)  # 1 upload (staged in pinned memory by CuPy)
        y = (x + 1) * 2  # 2 kernels
        y.get()  # 1 download, pageable: the host waits
    stats = cp.machine.stats
    assert (stats.uploads, stats.launches, stats.downloads, stats.synchronizations, stats.blocking_copies) == (1, 2, 1, 1, 1)


def test_a_blocking_download_into_pinned_memory_is_a_host_wait(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    pinned = np.ndarray((4,), np.float32, buffer=cp.cuda.alloc_pinned_memory(16))
    with stream:
        x = ones(cp)
        x.get(stream=stream, out=pinned, blocking=False)
        assert (cp.machine.stats.synchronizations, cp.machine.stats.blocking_copies) == (0, 0)
        x.get(stream=stream, out=pinned, blocking=True)
        assert (cp.machine.stats.synchronizations, cp.machine.stats.blocking_copies) == (1, 1)


def test_work_is_counted_on_the_device_and_the_stream_it_ran_on(cp):
    with cp.cuda.Device(1):
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            x = ones(cp)
            (x + 1).get(stream=stream)
    work = cp.machine.work_on()
    assert set(work) == {(1, stream.ptr)}
    assert (work[1, stream.ptr].uploads, work[1, stream.ptr].launches, work[1, stream.ptr].downloads) == (1, 1, 1)
    assert x.data.device_id == 1 and x.data.block.stream is stream  # and the array knows where it was made
    assert cp.machine.device_stats[0].allocations == 0 and cp.machine.device_stats[1].allocations == 2


def test_a_buffer_the_device_cannot_hold_is_a_clear_device_memory_error():
    """Issue 16: an allocation past what the device (or the pinned staging memory) can
    hold is a DeviceMemoryError naming the bytes, never numpy's MemoryError or its
    'array is too big' ValueError from inside the delegate."""
    from backends.gpu.device import MAX_BUFFER_BYTES, DeviceMemoryError, emulated_cuda_device

    device = emulated_cuda_device()
    with device.active():
        with pytest.raises(DeviceMemoryError, match=r"cannot allocate 4.612e\+18 bytes of pinned host memory"):
            device.empty_pinned((1 << 30, 1 << 30), np.float32)
        with pytest.raises(DeviceMemoryError, match=r"cannot allocate .* bytes of device memory"):
            device.xp.empty((MAX_BUFFER_BYTES + 1,), dtype=np.uint8)
