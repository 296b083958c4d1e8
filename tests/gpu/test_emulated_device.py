"""The emulated CUDA machine (``backends/gpu/emulation.py``) punishes what a real device
punishes: each test breaks one rule and expects the error a device would turn into wrong
numbers or a crash, or checks that the correct pattern passes."""

from __future__ import annotations

import gc
import threading

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


# -- host threads -------------------------------------------------------------------------------
# CUDA keeps the current device per host thread (cudaSetDevice), CuPy the current stream and
# the allocator; everything else on the machine is shared by the threads.


def in_thread(work):
    """Run ``work()`` in a new thread; its result, or the exception it raised."""
    outcome = {}

    def run():
        try:
            outcome["result"] = work()
        except BaseException as error:  # handed to the caller
            outcome["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def test_the_current_device_is_per_host_thread(cp):
    entered, leave = threading.Event(), threading.Event()
    seen = {}

    def on_device_1():
        with cp.cuda.Device(1):
            entered.set()
            leave.wait(timeout=60)
            seen["device_1"] = ones(cp).data.device_id

    thread = threading.Thread(target=on_device_1)
    thread.start()
    entered.wait(timeout=60)
    assert cp.cuda.Device().id == 0  # the other thread's `with Device(1)` is not this thread's
    assert ones(cp).data.device_id == 0
    leave.set()
    thread.join(timeout=60)
    assert seen["device_1"] == 1


def test_a_new_host_thread_starts_on_device_0_and_the_legacy_default_stream(cp):
    with cp.cuda.Device(1):
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            current = in_thread(lambda: (cp.cuda.Device().id, cp.cuda.get_current_stream()))
    assert current[0] == 0
    assert current[1].is_null and current[1].device_id == 0


def test_the_current_stream_is_per_host_thread(cp):
    mine = cp.cuda.Stream(non_blocking=True)
    with mine:
        theirs = in_thread(lambda: cp.cuda.get_current_stream())
        assert cp.cuda.get_current_stream() is mine
    assert theirs.is_null


def test_the_allocator_is_per_host_thread(cp):
    pool = cp.cuda.MemoryPool()
    with cp.cuda.using_allocator(pool.malloc):
        in_thread(lambda: ones(cp))
        assert pool.used_bytes() == 0  # the other thread allocated from the default pool
        kept = ones(cp)
        assert pool.used_bytes() == 512
    del kept


def test_two_threads_on_their_own_streams_of_one_device_do_not_race(cp):
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(4)]
    results = [None] * 4
    start = threading.Barrier(4)

    def work(k):
        start.wait(timeout=60)
        with streams[k]:
            x = cp.asarray(np.full(256, k, np.float32))
            for _ in range(200):
                x = x * 1 + 1
            results[k] = x.get(stream=streams[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [r.tolist() for r in results] == [[k + 200.0] * 256 for k in range(4)]
    work_on = cp.machine.work_on()
    assert [work_on[(0, s.ptr)].launches for s in streams] == [400] * 4  # each thread's on its stream
    assert (0, 0) not in work_on  # nothing on the legacy default stream


def writer_and_reader_threads(cp, ordered):
    """A thread writes ``x`` on its stream; then another thread reads it on its own stream,
    after waiting for an event recorded behind the write if ``ordered``."""
    writer, reader = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)

    def write():
        with writer:
            x = cp.asarray(np.ones(4, np.float32)) * 3
            return x, writer.record()

    x, written = in_thread(write)

    def read():
        if ordered:
            reader.wait_event(written)
        with reader:
            return (x + 1).get(stream=reader)

    return in_thread(read)


def test_a_read_on_one_thread_s_stream_of_what_another_thread_s_stream_wrote_is_a_race(cp):
    with pytest.raises(StreamRaceError, match="reads"):
        writer_and_reader_threads(cp, ordered=False)


def test_an_event_orders_two_threads_streams(cp):
    assert writer_and_reader_threads(cp, ordered=True).tolist() == [4.0] * 4


# -- capture modes: what one thread's capture forbids to the others ---------------------------


def capture_while_another_thread_works(cp, mode):
    """A capture begun in this thread in ``mode``; meanwhile another thread allocates from a
    new pool (cudaMalloc), synchronizes its own stream and copies to pageable host memory.
    Returns what the other thread raised (or None), the graph (or what end_capture raised),
    the captured result and the capturing stream."""
    capturing = cp.cuda.Stream(non_blocking=True)
    with capturing:
        x = ones(cp)
    capturing.synchronize()
    other = cp.cuda.Stream(non_blocking=True)

    def work():
        pool = cp.cuda.MemoryPool()
        with other, cp.cuda.using_allocator(pool.malloc):
            y = ones(cp) * 2
            other.synchronize()
            return y.get(stream=other)

    with capturing:
        capturing.begin_capture() if mode is None else capturing.begin_capture(mode)
        cp.multiply(x, 5, out=x)  # (in place: no allocation in the capturing thread)
        try:
            in_thread(work)
            error = None
        except StreamCaptureUnsupportedError as raised:
            error = raised
        try:
            graph = capturing.end_capture()
        except StreamCaptureUnsupportedError as raised:
            graph = raised
    return error, graph, x, capturing


def test_a_capture_in_relaxed_mode_the_default_as_in_cupy_leaves_other_threads_free(cp):
    error, graph, y, stream = capture_while_another_thread_works(cp, None)
    assert error is None
    graph.launch(stream=stream)
    assert y.get(stream=stream).tolist() == [5.0] * 4


def test_a_capture_in_global_mode_forbids_another_thread_s_cudamalloc_and_is_invalidated(cp):
    error, graph, _, _ = capture_while_another_thread_works(cp, cp.cuda.runtime.streamCaptureModeGlobal)
    assert isinstance(error, StreamCaptureUnsupportedError)
    assert "cudaMalloc" in str(error) and "global mode" in str(error)
    assert isinstance(graph, StreamCaptureUnsupportedError)
    assert "in another thread during a global-mode capture" in str(graph)


def test_a_capture_in_thread_local_mode_leaves_other_threads_free(cp):
    error, graph, _, _ = capture_while_another_thread_works(cp, cp.cuda.runtime.streamCaptureModeThreadLocal)
    assert error is None
    assert not isinstance(graph, Exception)


def test_a_capture_in_thread_local_mode_forbids_its_own_thread_s_unsafe_calls(cp):
    capturing, other = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with capturing:
        capturing.begin_capture(cp.cuda.runtime.streamCaptureModeThreadLocal)
        with pytest.raises(StreamCaptureUnsupportedError, match="stream synchronization"):
            other.synchronize()
        with pytest.raises(StreamCaptureUnsupportedError, match="invalidated"):
            capturing.end_capture()


def test_a_capture_in_relaxed_mode_lets_its_own_thread_allocate_fresh_memory(cp):
    # The delegate captures into a new pool: every first allocation is a cudaMalloc.
    capturing = cp.cuda.Stream(non_blocking=True)
    pool = cp.cuda.MemoryPool()
    with capturing, cp.cuda.using_allocator(pool.malloc):
        x = cp.empty((4,), np.float32)
        x.fill(2)
        capturing.begin_capture()
        y = x * 3
        graph = capturing.end_capture()
        graph.launch()
        assert y.get(stream=capturing).tolist() == [6.0] * 4


def test_work_on_the_legacy_default_stream_while_a_blocking_stream_captures_invalidates_it(cp):
    capturing = cp.cuda.Stream()  # blocking: the legacy default stream waits for it
    with capturing:
        x = ones(cp)
    capturing.synchronize()
    with capturing:
        capturing.begin_capture()
        cp.multiply(x, 2, out=x)
        with pytest.raises(StreamCaptureUnsupportedError, match="cudaErrorStreamCaptureImplicit"):
            in_thread(lambda: ones(cp))  # another thread, on the legacy default stream
        with pytest.raises(StreamCaptureUnsupportedError, match="invalidated"):
            capturing.end_capture()


def test_work_on_the_legacy_default_stream_while_a_non_blocking_stream_captures_is_allowed(cp):
    capturing = cp.cuda.Stream(non_blocking=True)
    with capturing:
        x = ones(cp)
    capturing.synchronize()
    with capturing:
        capturing.begin_capture()
        cp.multiply(x, 2, out=x)
        assert in_thread(lambda: ones(cp).get().tolist()) == [1.0] * 4
        capturing.end_capture().launch()
        assert x.get(stream=capturing).tolist() == [2.0] * 4
