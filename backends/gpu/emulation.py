"""An emulated CUDA machine: a cupy-shaped module whose arrays live in numpy memory inside
an emulated memory pool, and whose devices, streams, events, pools and graphs follow
CUDA's rules strictly enough that a bug a real device punishes fails here as well.

``GpuDelegate(device="host")`` runs on it (the op code takes its numpy branch), and the
GPU tests run the *device* branch on it too (``emulated_cuda_device``: hand-written
kernels through the host shim, several devices), so the code that a real GPU runs is
exercised on every CPU-only machine.

The rules, and how a violation shows:

* **Streams.** Every kernel launch, copy and allocation happens on the current stream of
  the current device (``with device:``, ``with stream:``, as in CuPy). Each pool block
  remembers the stream operation that last wrote it and those that read it since. Work on
  stream S may touch a block last written (or, to write it, read) by work on stream T only
  if that work is ordered before: T is S, the host synchronized T (or an event after it),
  S waited on an event recorded on T after it, or the legacy default stream's implicit
  ordering with blocking streams applies. Otherwise: :class:`StreamRaceError`.
* **Host threads.** As in CUDA and CuPy, the current device (``cudaSetDevice``), the
  current stream of each device (CuPy's stream stack) and the allocator
  (``using_allocator``) are per host thread: a thread starts on device 0 and the legacy
  default streams, and entering a device or a stream in one thread changes nothing in
  another. Everything else (pools, blocks, streams, captures, counters) is the machine's,
  shared by every thread, and changed under one reentrant lock, each launch whole (its
  numpy or host-shim work included): the stream rules are checked across threads as
  within one, and the emulated work of several threads is serialized.
* **Devices.** Arrays belong to the device that allocated them. Using one in a kernel
  while another device is current, or making a stream current under another device:
  :class:`WrongDeviceError` (CuPy and CUDA refuse both).
* **Memory.** Pools hand out blocks per stream, as CuPy's do, rounded up to 512 bytes (in the
  host shim's sanitized mode, ``LITEDELEGATE_SHIM_SANITIZE=1``, exactly the bytes asked
  for: AddressSanitizer's redzones then border every device buffer). Fresh memory and memory
  returned to the pool (when its last array is garbage-collected) hold 0xFF bytes: NaN
  as float, -1 as int. Reading what nobody wrote gives NaN, not zeros. As in CuPy, an
  array holds only a weak reference to its pool (``PooledMemory``): when the pool object
  is gone, every block it handed out goes back to the driver, poisoned and free for any
  other pool to take, even while arrays still point into it. Using such an array (or
  replaying a graph that touches it) raises :class:`FreedMemoryError`.
* **Host transfers.** A device-to-host copy into pinned memory is asynchronous: the
  pinned buffer holds poison until the host synchronizes the stream (or an event after the
  copy). A copy to or from pageable memory blocks the host: CUDA synchronizes the stream
  first, so it is counted as a synchronization and a blocking copy (``cupy.asarray`` of a
  host array stages it through pinned memory, as CuPy does, and does not wait).
  Implicit conversion to numpy raises ``TypeError``, as in CuPy.
* **Where work ran.** Every launch, copy, allocation and synchronization is counted on
  the machine, on its device and on its stream (:meth:`EmulatedMachine.work_on`): tests
  read what was asked of the machine, not what the caller says it asked.
* **Graphs.** Between ``stream.begin_capture()`` and ``end_capture()`` nothing executes:
  operations are recorded with the memory they touch, by address. A host synchronization
  or a copy from pageable host memory during capture raises
  :class:`StreamCaptureUnsupportedError` and invalidates the capture, as CUDA does.
  The capture mode (``begin_capture(mode)``, relaxed by default as in CuPy) decides what a
  capture forbids elsewhere: in global mode, every thread's potentially unsafe calls
  (``cudaMalloc`` when a pool grows, synchronous copies, stream, event and device
  synchronizations); in thread-local mode, those of the capturing thread; in relaxed mode,
  none. A forbidden call raises :class:`StreamCaptureUnsupportedError` in its thread and
  invalidates the capture. So does, in any mode, work on the legacy default stream while a
  blocking stream of its device is capturing (the legacy stream would wait for it).
  ``graph.launch()`` replays the operations under the stream rules and checks that every
  block still belongs to the graph: alive (some array still holds it), or freed during the
  capture into a pool that served that capture and nothing else; and the pool object is
  still there (a dropped pool gave every block back to the driver). Otherwise
  :class:`FreedMemoryError`: on a device the replay would write into memory the pool hands
  to someone else.
* **CuPy's own habits** that matter under capture are modelled where we know them:
  ``concatenate``/``stack`` of more than 8 small arrays uploads a pointer table from host
  memory (``cupy/_core/_routines_manipulation.pyx``), which a capture cannot hold; and
  CuPy refuses every cuBLAS call (``matmul``, ``dot``, ``einsum``...) while a stream is
  capturing (``cupy_backends/cuda/libs/cublas.pyx``: setStream). The second applies on
  machines made with ``cupy_library_rules=True`` (the emulated CUDA device the device
  branch runs on); host emulation's numpy branch is not CuPy's and keeps ``matmul``.
* **cuBLAS itself** (``libcublas``, which ``cuda/cublas.py`` calls without CuPy):
  :class:`EmulatedCublas` runs ``cublasGemmStridedBatchedEx``'s column-major arithmetic on the
  memory its pointers name, on the stream of its handle (``cublasSetStream``; the legacy default
  stream until then), ordered and race-checked like any launch, captured and replayed like any
  kernel. As in cuBLAS, ``cublasSetStream`` resets the handle's workspace; a capture of a GEMM
  whose handle has no workspace of its own (``cublasSetWorkspace``) is refused (cuBLAS would
  allocate one inside the graph: memory nodes, one workspace per captured graph).

``RawModule`` builds the source with the host shim (``cuda/host.py``, g++) and runs it on
the CPU under the same rules; every pointer argument counts as read and written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import operator
import re
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

POISON = 0xFF
_ROUND = 512  # CuPy's pool rounds every allocation up to 512 bytes
_CONCAT_POINTER_TABLE_ABOVE = 8  # CuPy: more arrays than this -> one kernel with a pointer table
#: numpy functions whose CuPy counterparts call cuBLAS.
_CUBLAS_FUNCTIONS = frozenset({"matmul", "dot", "vdot", "inner", "tensordot", "einsum"})


class EmulatedDeviceError(RuntimeError):
    """A rule that a real CUDA device enforces (by failing, or by giving wrong numbers) was broken."""


class StreamRaceError(EmulatedDeviceError):
    """Work on one stream touched memory that work on another stream uses, unordered."""


class WrongDeviceError(EmulatedDeviceError):
    """An array or a stream was used while another device was current."""


class FreedMemoryError(EmulatedDeviceError):
    """A graph replay touched memory that went back to a pool others allocate from."""


class StreamCaptureUnsupportedError(RuntimeError):
    """What CUDA returns for an operation that a stream capture cannot hold
    (``cudaErrorStreamCaptureUnsupported``, then ``...Invalidated`` at ``end_capture``).
    A program may catch it and run without a graph, as it would on a device."""


# ---------------------------------------------------------------------------------------------
# Streams and events
# ---------------------------------------------------------------------------------------------


class Stream:
    """A CUDA stream of one emulated device (``cupy.cuda.Stream``)."""

    def __init__(self, machine: "EmulatedMachine", device_id: int, non_blocking: bool = False, *, null: bool = False) -> None:
        self.machine = machine
        self.device_id = device_id
        self.non_blocking = non_blocking
        self.is_null = null
        self.seq = 0  # operations issued
        self.completed = 0  # operations the host knows have finished
        self.waits: dict[Stream, int] = {}  # stream -> last of its operations this one waited for
        self.capture: _Capture | None = None
        self._pending: list[tuple[int, np.ndarray, np.ndarray]] = []  # async copies into pinned memory
        self.ptr = 0 if null else next(machine.handles)

    def __repr__(self) -> str:
        kind = "legacy default stream" if self.is_null else ("non-blocking stream" if self.non_blocking else "stream")
        return f"<{kind} {self.ptr:#x} of device {self.device_id}>"

    def _issue(self) -> int:
        self.seq += 1
        return self.seq

    def _complete(self, seq: int) -> None:
        if seq <= self.completed:
            return
        self.completed = seq
        ready = [p for p in self._pending if p[0] <= seq]
        self._pending = [p for p in self._pending if p[0] > seq]
        for _, out, values in ready:
            out[...] = values

    # -- the cupy API ------------------------------------------------------------------------
    def __enter__(self) -> "Stream":
        """Make this stream current in the calling thread (CuPy's stream stack is per thread)."""
        thread = self.machine.thread
        if self.device_id != thread.device:
            raise WrongDeviceError(
                f"{self} made current while device {thread.device} is current: CUDA rejects its "
                "first launch (invalid resource handle); enter the stream's device first"
            )
        thread.stream_stacks[self.device_id].append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = self.machine.thread.stream_stacks[self.device_id]
        del stack[len(stack) - 1 - stack[::-1].index(self)]

    def synchronize(self) -> None:
        """Block the host until every operation issued to this stream has finished."""
        machine = self.machine
        with machine.lock:
            machine.forbid_during_capture(self, "stream synchronization")
            machine.forbid_unsafe_call("stream synchronization")
            machine.count(self.device_id, self, synchronizations=1)
            self._complete(self.seq)

    def record(self, event: "Event | None" = None) -> "Event":
        event = event or Event(self.machine)
        event.record(self)
        return event

    def wait_event(self, event: "Event") -> None:
        with self.machine.lock:
            if event.recorded is None:
                return
            stream, seq = event.recorded
            self.waits[stream] = max(self.waits.get(stream, 0), seq)

    def begin_capture(self, mode: int | None = None) -> None:
        """Start capturing; ``mode`` is CUDA's (``cupy.cuda.runtime.streamCaptureMode*``),
        relaxed by default as in CuPy. It decides which *other* calls the capture forbids
        (:meth:`EmulatedMachine.forbid_unsafe_call`): relaxed none, thread-local those of the
        capturing thread, global those of every thread."""
        machine = self.machine
        mode = STREAM_CAPTURE_MODE_RELAXED if mode is None else int(mode)
        if mode not in _CAPTURE_MODES:
            raise ValueError(f"cudaErrorInvalidValue: stream capture mode {mode}")
        with machine.lock:
            if self.is_null:
                raise StreamCaptureUnsupportedError("the legacy default stream cannot be captured")
            if self.capture is not None:
                raise StreamCaptureUnsupportedError(f"{self} is already capturing")
            self.capture = _Capture(next(machine.handles), machine.next_tick(), mode=mode, thread=threading.get_ident())
            machine.captures.append(self.capture)

    def is_capturing(self) -> bool:
        return self.capture is not None

    def end_capture(self) -> "Graph":
        machine = self.machine
        with machine.lock:
            capture, self.capture = self.capture, None
            if capture is None:
                raise StreamCaptureUnsupportedError(f"{self} is not capturing")
            machine.captures.remove(capture)
            if capture.invalid:
                raise StreamCaptureUnsupportedError(f"the capture was invalidated by {capture.invalid}")
            return Graph(machine, capture, machine.next_tick())


class Event:
    """A CUDA event (``cupy.cuda.Event``): orders streams, synchronizes the host, times work."""

    def __init__(self, machine: "EmulatedMachine", block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        self.machine = machine
        self.recorded: tuple[Stream, int] | None = None
        self.time: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        with self.machine.lock:
            stream = stream or self.machine.current_stream()
            self.recorded = (stream, stream._issue())
            self.time = time.perf_counter()

    def synchronize(self) -> None:
        machine = self.machine
        with machine.lock:
            if self.recorded is not None:
                stream, seq = self.recorded
                machine.forbid_during_capture(stream, "event synchronization")
                machine.forbid_unsafe_call("event synchronization")
                machine.count(stream.device_id, stream, synchronizations=1)
                stream._complete(seq)

    @property
    def done(self) -> bool:
        return self.recorded is None or self.recorded[0].completed >= self.recorded[1]


def get_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two recorded events (host time here); CUDA requires both done."""
    if start.time is None or end.time is None:
        raise RuntimeError("both events must be recorded")
    if not end.done:
        raise RuntimeError("cudaErrorNotReady: the end event has not completed; synchronize first")
    return (end.time - start.time) * 1e3


# ---------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------


class Block:
    """Device memory from a pool: its bytes and what has been done to them."""

    __slots__ = (
        "memory", "size", "pool", "device_id", "stream", "generation", "live", "alloc_tick", "label",
        "last_write", "reads", "released", "uploaded", "read_count", "__weakref__",
    )

    def __init__(self, size: int, pool: "MemoryPool", device_id: int, stream: Stream) -> None:
        self.memory = np.full(size, POISON, dtype=np.uint8)
        self.size = size
        self.pool = weakref.ref(pool)
        self.device_id = device_id
        self.stream = stream
        self.generation = 0
        self.live = False
        self.alloc_tick = 0
        self.label = ""
        self.last_write: tuple[Stream, int] | None = None
        self.reads: dict[Stream, int] = {}
        self.released = False  # given back to the driver (its pool is gone)
        self.uploaded = False  # last written by a host-to-device copy
        self.read_count = 0


class MemoryPointer:
    """What a pool's ``malloc`` returns (``cupy.cuda.MemoryPointer`` over CuPy's
    ``PooledMemory``); arrays hold it, and the block goes back to the pool when the last
    holder is gone. Like ``PooledMemory`` it holds the pool weakly: the pointer does not
    keep the pool (nor, through it, the memory) alive.

    ``generation``: the block's allocation this pointer holds; the block is someone
    else's once it differs (its pool died and another pool took the memory)."""

    __slots__ = ("block", "size", "device_id", "generation", "__weakref__")

    def __init__(self, block: Block, size: int) -> None:
        self.block = block
        self.size = size
        self.device_id = block.device_id
        self.generation = block.generation

    @property
    def freed(self) -> bool:
        """The memory is no longer this pointer's: its pool is gone (the block went back
        to the driver, and perhaps to another pool since)."""
        return self.block.released or self.block.generation != self.generation

    @property
    def ptr(self) -> int:
        return int(self.block.memory.ctypes.data)


def _block_size(nbytes: int) -> int:
    """The bytes of the block for an allocation of ``nbytes``: rounded up to 512 as CuPy
    does, or, in the host shim's sanitized mode, exactly ``nbytes`` (each block its own
    allocation, so AddressSanitizer's redzones border it: a kernel reading past a
    buffer is caught instead of reading the rounding slack)."""
    from backends.gpu.cuda.host import sanitizing

    if sanitizing():
        return int(nbytes)
    return max(_ROUND, -(-int(nbytes) // _ROUND) * _ROUND)


class MemoryPool:
    """``cupy.cuda.MemoryPool``: blocks rounded to 512 bytes (exact in the host shim's
    sanitized mode), reused per (device, stream, size)."""

    def __init__(self, machine: "EmulatedMachine", allocator: Any = None) -> None:
        self.machine = machine
        self.free: dict[tuple[int, Stream, int], list[Block]] = {}
        self.blocks: weakref.WeakSet[Block] = weakref.WeakSet()
        self.captures: set[int] = set()  # captures this pool served
        self.served_outside_captures = False
        self.last_alloc_tick = 0
        self.is_default = False
        self._used = 0
        with machine.lock:
            machine.pools.add(self)
        weakref.finalize(self, _release_blocks, weakref.ref(machine), self.blocks)

    def malloc(self, nbytes: int) -> MemoryPointer:
        with self.machine.lock:
            return self._malloc(nbytes)

    def _malloc(self, nbytes: int) -> MemoryPointer:
        machine = self.machine
        device_id, stream = machine.thread.device, machine.current_stream()
        size = _block_size(nbytes)
        free = self.free.get((device_id, stream, size))
        block = free.pop() if free else machine.from_driver(size, self, device_id, stream)
        self.blocks.add(block)
        tick = machine.next_tick()
        block.generation += 1
        block.live, block.alloc_tick, block.label = True, tick, machine.label
        block.uploaded, block.read_count = False, 0
        self.last_alloc_tick = tick
        if stream.capture is not None:
            self.captures.add(stream.capture.id)
        else:
            self.served_outside_captures = True
        self._used += size
        machine.count(device_id, stream, allocations=1)
        pointer = MemoryPointer(block, int(nbytes))
        # (a weak reference to the pool, as CuPy's PooledMemory: a bound method would keep it alive)
        weakref.finalize(pointer, _give_back, weakref.ref(self), block, block.generation)
        return pointer

    def _give_back(self, block: Block, generation: int) -> None:
        with self.machine.lock:  # (a finalizer: it runs in whichever thread dropped the last array)
            if block.generation != generation or not block.live:
                return
            block.live = False
            self._used -= block.size
            block.memory.fill(POISON)
            self.free.setdefault((block.device_id, block.stream, block.size), []).append(block)

    def used_bytes(self) -> int:
        return self._used

    def free_all_blocks(self, stream: Any = None) -> None:
        with self.machine.lock:
            for blocks in self.free.values():
                for block in blocks:
                    self.machine.to_driver(block)
            self.free.clear()

    def n_free_blocks(self) -> int:
        with self.machine.lock:
            return sum(len(b) for b in self.free.values())


def _give_back(pool: "weakref.ref[MemoryPool]", block: Block, generation: int) -> None:
    """A pointer is gone: its block goes back to its pool, if the pool is still there
    (CuPy's ``PooledMemory.free``; without the pool, the driver has the memory already)."""
    alive = pool()
    if alive is not None:
        alive._give_back(block, generation)


def _release_blocks(machine: "weakref.ref[EmulatedMachine]", blocks: "weakref.WeakSet[Block]") -> None:
    """A pool is gone: every block it handed out goes back to the driver, those that
    arrays still point into included (as CuPy's pool frees its chunks when it dies)."""
    alive = machine()
    if alive is None:
        return
    with alive.lock:
        for block in list(blocks):
            if block.pool() is None:  # (not one the driver has handed to another pool since)
                alive.to_driver(block)


class PinnedMemory(bytearray):
    """Page-locked host memory (``cupy.cuda.alloc_pinned_memory``): a buffer for numpy."""


# ---------------------------------------------------------------------------------------------
# Arrays
# ---------------------------------------------------------------------------------------------


class EmulatedArray(NDArrayOperatorsMixin):
    """A device array (``cupy.ndarray``): a numpy view into a pool block, and the pointer
    that keeps the block allocated. Every numpy function and operator on it runs as a
    kernel on the current stream of the current device."""

    __slots__ = ("_raw", "data", "_machine")
    __array_priority__ = 100

    def __init__(self, raw: np.ndarray, data: MemoryPointer, machine: "EmulatedMachine") -> None:
        self._raw = raw
        self.data = data
        self._machine = machine

    # -- metadata (no device work) ---------------------------------------------------------------
    shape = property(lambda self: self._raw.shape)
    dtype = property(lambda self: self._raw.dtype)
    ndim = property(lambda self: self._raw.ndim)
    size = property(lambda self: self._raw.size)
    nbytes = property(lambda self: self._raw.nbytes)
    itemsize = property(lambda self: self._raw.itemsize)
    strides = property(lambda self: self._raw.strides)
    flags = property(lambda self: self._raw.flags)

    @property
    def device(self) -> "_DeviceHandle":
        return _DeviceHandle(self._machine, self.data.device_id)

    def __array_namespace__(self, api_version: Any = None) -> "EmulatedCupy":
        """The emulated cupy module this array belongs to (shared code finds its xp here)."""
        return self._machine.module

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return f"EmulatedArray({self.get()!r}, device={self.data.device_id})"

    # -- numpy protocols -------------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed (as in CuPy): copy it to the host with "
            "`.get()` or `asnumpy()`"
        )

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        function = ufunc if method == "__call__" else getattr(ufunc, method)
        return self._machine.call(function, inputs, kwargs, f"{ufunc.__name__}{'' if method == '__call__' else '.' + method}")

    def __array_function__(self, func: Callable, types: Any, args: Any, kwargs: Any) -> Any:
        name = func.__name__
        if name in ("concatenate", "stack", "hstack", "vstack"):
            self._machine.cupy_pointer_table(args[0] if args else kwargs.get("arrays", ()), name)
        return self._machine.call(func, args, kwargs, name)

    # -- methods, each the numpy function on the raw memory -----------------------------------
    def __getitem__(self, key: Any) -> Any:
        return self._machine.call(operator.getitem, (self, key), {}, "getitem")

    def __setitem__(self, key: Any, value: Any) -> None:
        self._machine.setitem(self, key, value)

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return self._machine.call(np.reshape, (self, shape), {"order": order}, "reshape")

    def transpose(self, *axes: Any) -> Any:
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else (axes or None)
        return self._machine.call(np.transpose, (self, axes), {}, "transpose")

    @property
    def T(self) -> Any:
        return self.transpose()

    def ravel(self, order: str = "C") -> Any:
        return self._machine.call(np.ravel, (self,), {"order": order}, "ravel")

    def astype(self, dtype: Any, order: str = "K", casting: Any = None, subok: Any = None, copy: bool = True) -> Any:
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return self._machine.call(lambda a: a.astype(dtype, order=order), (self,), {}, "astype")

    def copy(self, order: str = "C") -> Any:
        return self._machine.call(lambda a: a.copy(order=order), (self,), {}, "copy")

    def view(self, dtype: Any = None) -> Any:
        """The same memory as another dtype (no device work)."""
        return self._machine.call(lambda a: a.view(dtype), (self,), {}, "view")

    def fill(self, value: Any) -> None:
        self._machine.setitem(self, Ellipsis, value)

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        return self._machine.call(np.sum, (self, *args), kwargs, "sum")

    def max(self, *args: Any, **kwargs: Any) -> Any:
        return self._machine.call(np.max, (self, *args), kwargs, "max")

    def min(self, *args: Any, **kwargs: Any) -> Any:
        return self._machine.call(np.min, (self, *args), kwargs, "min")

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        return self._machine.call(np.mean, (self, *args), kwargs, "mean")

    def clip(self, *args: Any, **kwargs: Any) -> Any:
        return self._machine.call(np.clip, (self, *args), kwargs, "clip")

    # -- host transfers --------------------------------------------------------------------------
    def get(self, stream: Stream | None = None, order: str = "C", out: np.ndarray | None = None, blocking: bool = True) -> np.ndarray:
        """Copy to the host, into ``out`` or a new array. ``blocking=False`` with a pinned
        ``out`` returns at once: the values are there after the stream is synchronized."""
        return self._machine.download(self, stream, out, blocking)

    def set(self, arr: np.ndarray, stream: Stream | None = None) -> None:
        """Copy a host array of the same shape into this array."""
        self._machine.upload_into(self, np.asarray(arr), stream)

    def item(self) -> Any:
        return self.get().item()

    def tolist(self) -> Any:
        return self.get().tolist()

    def __float__(self) -> float:
        return float(self.get())

    def __int__(self) -> int:
        return int(self.get())

    def __bool__(self) -> bool:
        return bool(self.get())

    def __index__(self) -> int:
        return operator.index(self.get().item())


class _DeviceHandle:
    """``cupy.cuda.Device``: ``with Device(i):`` makes device ``i`` current."""

    def __init__(self, machine: "EmulatedMachine", device_id: int | None = None) -> None:
        self.machine = machine
        self.id = machine.current_device if device_id is None else int(device_id)
        if not 0 <= self.id < len(machine.devices):
            raise RuntimeError(f"cudaErrorInvalidDevice: device {self.id} (this machine has {len(machine.devices)})")

    def __enter__(self) -> "_DeviceHandle":
        """Make this device current in the calling thread (``cudaSetDevice`` is per thread)."""
        thread = self.machine.thread
        thread.previous_devices.append(thread.device)
        thread.device = self.id
        return self

    def __exit__(self, *exc: Any) -> None:
        thread = self.machine.thread
        thread.device = thread.previous_devices.pop()

    def use(self) -> None:
        self.machine.thread.device = self.id

    def synchronize(self) -> None:
        machine = self.machine
        with machine.lock:
            for stream in machine.streams_of(self.id):
                machine.forbid_during_capture(stream, "device synchronization")
            machine.forbid_unsafe_call("device synchronization")
            machine.count(self.id, None, synchronizations=1)
            for stream in machine.streams_of(self.id):
                stream._complete(stream.seq)

    @property
    def compute_capability(self) -> str:
        return "90"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _DeviceHandle) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id} (emulated)>"


# ---------------------------------------------------------------------------------------------
# Graphs
# ---------------------------------------------------------------------------------------------


#: CUDA's stream capture modes (``cudaStreamCaptureMode``; ``cupy.cuda.runtime.streamCaptureMode*``).
STREAM_CAPTURE_MODE_GLOBAL = 0
STREAM_CAPTURE_MODE_THREAD_LOCAL = 1
STREAM_CAPTURE_MODE_RELAXED = 2
_CAPTURE_MODES = {STREAM_CAPTURE_MODE_GLOBAL: "global", STREAM_CAPTURE_MODE_THREAD_LOCAL: "thread-local",
                  STREAM_CAPTURE_MODE_RELAXED: "relaxed"}


@dataclass
class _Capture:
    id: int
    begin_tick: int
    nodes: list["_Node"] = None  # type: ignore[assignment]
    invalid: str | None = None
    mode: int = STREAM_CAPTURE_MODE_RELAXED
    thread: int = 0  # the host thread that began it

    def __post_init__(self) -> None:
        self.nodes = []


@dataclass
class _Node:
    """One recorded operation: re-run against the same memory at each replay."""

    label: str
    run: Callable[[], None]
    reads: list[Block]
    writes: list[Block]


class Graph:
    """A captured CUDA graph (``cupy.cuda.graph.Graph``)."""

    def __init__(self, machine: "EmulatedMachine", capture: _Capture, end_tick: int) -> None:
        self.machine = machine
        self.capture_id = capture.id
        self.begin_tick = capture.begin_tick
        self.end_tick = end_tick
        self.nodes = capture.nodes
        touched = {id(b): b for node in self.nodes for b in (*node.reads, *node.writes)}
        self._blocks = list(touched.values())
        self._generation = {id(b): b.generation for b in self._blocks}

    def upload(self, stream: Stream | None = None) -> None:
        return None

    def launch(self, stream: Stream | None = None) -> None:
        machine = self.machine
        with machine.lock:
            stream = stream or machine.current_stream()
            machine.forbid_during_capture(stream, "launching a graph into a capture")
            for block in self._blocks:
                self._check_owned(block)
            for node in self.nodes:
                machine.access(stream, node.reads, node.writes, f"graph node {node.label}")
                with np.errstate(all="ignore"):
                    node.run()
            machine.count(stream.device_id, stream, graph_launches=1, graph_nodes=len(self.nodes))

    def _check_owned(self, block: Block) -> None:
        what = f"memory that the graph's '{block.label}' used" if block.label else "memory the graph uses"
        if block.released:
            raise FreedMemoryError(f"graph replay touches {what}, which was given back to the driver (its pool is gone)")
        if block.generation != self._generation[id(block)]:
            raise FreedMemoryError(
                f"graph replay touches {what}, which the pool has since handed to '{block.label}': "
                "keep every array a graph touches alive, or capture into a pool only the graph uses"
            )
        if block.live:
            return
        pool = block.pool()
        owned = (
            pool is not None
            and block.alloc_tick > self.begin_tick
            and pool.captures == {self.capture_id}
            and not pool.served_outside_captures
        )
        if not owned:
            raise FreedMemoryError(
                f"graph replay writes into {what}, which went back to a pool that serves other allocations: "
                "keep every array a graph touches alive, or capture into a pool only the graph uses"
            )

    def debug_dot_str(self) -> str:
        lines = [f'"node_{i}"[label="{{KERNEL\\n| {node.label}}}"];' for i, node in enumerate(self.nodes)]
        return "digraph emulated_graph {\n" + "\n".join(lines) + "\n}\n"


# ---------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------


@dataclass
class MachineStats:
    """What was asked of the emulated machine (of one device, or one stream): the
    delegate's counters on an emulated device are read from here."""

    launches: int = 0  # kernels launched from the host (graph replays not included)
    graph_launches: int = 0
    graph_nodes: int = 0  # operations run by graph replays
    uploads: int = 0
    upload_bytes: int = 0
    downloads: int = 0
    download_bytes: int = 0
    synchronizations: int = 0  # host waits: explicit, and implicit (every blocking copy)
    blocking_copies: int = 0  # copies the host waited for: from or to pageable memory, or blocking=True
    allocations: int = 0
    modules_loaded: int = 0


class _DeviceState:
    def __init__(self, machine: "EmulatedMachine", device_id: int) -> None:
        self.null_stream = Stream(machine, device_id, null=True)
        self.default_pool = MemoryPool(machine)
        self.default_pool.is_default = True
        self.streams: weakref.WeakSet[Stream] = weakref.WeakSet()


class _ThreadState(threading.local):
    """What CUDA and CuPy keep per host thread: the current device (``cudaSetDevice``), the
    current stream of each device (CuPy's stream stack), the allocator (``using_allocator``),
    and (ours) the label of what is running. A new thread starts on device 0, on the
    legacy default streams, with the default pools, as on CUDA."""

    def __init__(self, device_count: int) -> None:
        self.device = 0
        self.previous_devices: list[int] = []  # (``with Device(i):`` nesting)
        self.stream_stacks: list[list[Stream]] = [[] for _ in range(device_count)]
        self.allocators: list[Callable[[int], MemoryPointer]] = []
        self.label = ""


def _locked(method: Callable) -> Callable:
    """Run a machine method holding the machine's lock."""

    @functools.wraps(method)
    def locked(self: "EmulatedMachine", *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    return locked


class EmulatedMachine:
    """The state behind :class:`EmulatedCupy`: devices, current device and streams, pools,
    pinned memory, the hazard checks and the statistics.

    Threads: the current device, the current streams and the allocator are per host thread
    (:class:`_ThreadState`), as in CUDA and CuPy. Everything else (pools, blocks, streams'
    progress, captures, counters) is shared by every thread and changed only under
    ``lock``, a reentrant lock: one thread's launch (its checks, its bookkeeping and its
    numpy or host-shim work) happens whole, before or after another's, never interleaved
    with it. This serializes the emulated work: correctness, not parallel speed."""

    def __init__(self, device_count: int = 1, cupy_library_rules: bool = True) -> None:
        if device_count < 1:
            raise ValueError("an emulated machine needs at least one device")
        self.cupy_library_rules = cupy_library_rules
        self.lock = threading.RLock()
        self.thread = _ThreadState(device_count)
        self.handles = itertools.count(0x1000, 0x10)
        self.tick = 0
        #: Captures under way on any stream, in the order they began (their mode decides
        #: which calls of other threads they forbid: :meth:`forbid_unsafe_call`).
        self.captures: list[_Capture] = []
        self.pools: weakref.WeakSet[MemoryPool] = weakref.WeakSet()
        self.devices = [_DeviceState(self, i) for i in range(device_count)]
        self.pinned: weakref.WeakValueDictionary[int, PinnedMemory] = weakref.WeakValueDictionary()
        #: Memory given back to the driver by pools that are gone, by (device, size): the
        #: next pool to need that much takes it (cudaFree, then cudaMalloc, often does).
        self.driver_free: dict[tuple[int, int], list[Block]] = {}
        self.stats = MachineStats()
        self.device_stats = [MachineStats() for _ in range(device_count)]
        self.stream_stats: dict[tuple[int, int], MachineStats] = {}
        self.module: Any = None  # the EmulatedCupy over this machine
        self.cublas = EmulatedCublas(self)  # libcublas on this machine (cuda/cublas.py's calls)

    # -- per host thread -----------------------------------------------------------------------
    @property
    def current_device(self) -> int:
        """The calling thread's current device."""
        return self.thread.device

    @current_device.setter
    def current_device(self, device_id: int) -> None:
        self.thread.device = device_id

    @property
    def allocators(self) -> list[Callable[[int], MemoryPointer]]:
        """The calling thread's allocator stack (``cupy.cuda.using_allocator`` is per thread)."""
        return self.thread.allocators

    @property
    def label(self) -> str:
        """What the calling thread is running (for messages): set with :meth:`labelled`."""
        return self.thread.label

    def next_tick(self) -> int:
        with self.lock:
            self.tick += 1
            return self.tick

    # -- what was asked of the machine -----------------------------------------------------------
    def count(self, device_id: int, stream: Stream | None, **amounts: int) -> None:
        """Count work on the machine, on device ``device_id``, and on ``stream`` (None: work
        of the device as a whole, a device synchronization or a module load)."""
        targets = [self.stats, self.device_stats[device_id]]
        with self.lock:
            if stream is not None:
                key = (device_id, stream.ptr)
                per_stream = self.stream_stats.get(key)
                if per_stream is None:
                    per_stream = self.stream_stats[key] = MachineStats()
                targets.append(per_stream)
            for stats in targets:
                for name, amount in amounts.items():
                    setattr(stats, name, getattr(stats, name) + amount)

    @_locked
    def work_on(self) -> dict[tuple[int, int], MachineStats]:
        """What ran where so far: ``(device id, stream handle) -> counts`` (a copy). The
        legacy default stream's handle is 0 on every device."""
        return {key: dataclasses.replace(stats) for key, stats in self.stream_stats.items()}

    @_locked
    def stream_work(self, stream: Stream) -> MachineStats:
        """What ran on ``stream`` so far (a copy; zeros before its first operation)."""
        stats = self.stream_stats.get((stream.device_id, stream.ptr))
        return dataclasses.replace(stats) if stats is not None else MachineStats()

    # -- the driver's memory -----------------------------------------------------------------------
    @_locked
    def to_driver(self, block: Block) -> None:
        """``cudaFree``: the block is poisoned and free for any pool of its device; arrays
        that still point into it hold freed memory (:class:`FreedMemoryError` at their next use)."""
        if block.released:
            return
        block.live = False
        block.released = True
        block.memory.fill(POISON)
        self.driver_free.setdefault((block.device_id, block.size), []).append(block)

    def from_driver(self, size: int, pool: "MemoryPool", device_id: int, stream: Stream) -> Block:
        """``cudaMalloc`` for ``pool``: memory another pool gave back, else new memory."""
        self.forbid_unsafe_call(f"cudaMalloc of {size} bytes (a memory pool growing)")
        free = self.driver_free.get((device_id, size))
        if not free:
            return Block(size, pool, device_id, stream)
        block = free.pop()
        previous = block.pool()
        if previous is not None:  # (a pool that freed its free blocks: they are not its any more)
            previous.blocks.discard(block)
        block.pool, block.stream, block.released = weakref.ref(pool), stream, False
        block.last_write, block.reads = None, {}
        return block

    @contextlib.contextmanager
    def labelled(self, label: str) -> Iterator[None]:
        thread = self.thread
        previous, thread.label = thread.label, label
        try:
            yield
        finally:
            thread.label = previous

    # -- current device, stream, allocator -------------------------------------------------------
    def current_stream(self) -> Stream:
        """The calling thread's current stream on its current device."""
        thread = self.thread
        stack = thread.stream_stacks[thread.device]
        return stack[-1] if stack else self.devices[thread.device].null_stream

    @_locked
    def new_stream(self, non_blocking: bool = False) -> Stream:
        device_id = self.thread.device
        stream = Stream(self, device_id, non_blocking)
        self.devices[device_id].streams.add(stream)
        return stream

    def streams_of(self, device_id: int) -> list[Stream]:
        state = self.devices[device_id]
        with self.lock:
            return [state.null_stream, *state.streams]

    def malloc(self, nbytes: int) -> MemoryPointer:
        allocators = self.thread.allocators
        if allocators:
            return allocators[-1](nbytes)
        return self.devices[self.thread.device].default_pool.malloc(nbytes)

    def forbid_during_capture(self, stream: Stream, what: str) -> None:
        with self.lock:
            capturing = [s for s in self.streams_of(stream.device_id) if s.capture is not None]
            if stream.capture is not None or (what == "device synchronization" and capturing):
                for s in capturing or [stream]:
                    if s.capture is not None:
                        s.capture.invalid = s.capture.invalid or what
                raise StreamCaptureUnsupportedError(f"{what} is not allowed while {stream} is capturing a graph")

    def forbid_unsafe_call(self, what: str) -> None:
        """A call that CUDA deems potentially unsafe during a capture (it may synchronize
        implicitly: ``cudaMalloc``, a synchronous copy, a stream, event or device
        synchronization), made by the calling thread while captures are under way. As in
        CUDA, a capture begun in global mode forbids it in every thread, one begun in
        thread-local mode in the thread that began it, one in relaxed mode (CuPy's
        default, what the delegate uses) nowhere. A forbidden call raises
        :class:`StreamCaptureUnsupportedError` and invalidates the capture (its
        ``end_capture`` fails too)."""
        if not self.captures:
            return
        me = threading.get_ident()
        with self.lock:
            forbidding = [
                c for c in self.captures
                if c.mode == STREAM_CAPTURE_MODE_GLOBAL or (c.mode == STREAM_CAPTURE_MODE_THREAD_LOCAL and c.thread == me)
            ]
            if not forbidding:
                return
            for capture in forbidding:
                who = "the capturing thread" if capture.thread == me else "another thread"
                capture.invalid = capture.invalid or f"{what} in {who} during a {_CAPTURE_MODES[capture.mode]}-mode capture"
            mode = _CAPTURE_MODES[forbidding[0].mode]
            raise StreamCaptureUnsupportedError(
                f"{what} is not allowed while a stream capture in {mode} mode is under way "
                "(cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing)"
            )

    # -- arrays ------------------------------------------------------------------------------
    @_locked
    def empty(self, shape: Any, dtype: Any = np.float32) -> EmulatedArray:
        dtype = np.dtype(dtype)
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        pointer = self.malloc(nbytes)
        raw = pointer.block.memory[:nbytes].view(dtype).reshape(shape)
        return EmulatedArray(raw, pointer, self)

    def _check_device(self, arrays: Sequence[EmulatedArray], label: str) -> None:
        """Each array is on the current device and still holds its memory."""
        for array in arrays:
            if array.data.freed:
                what = f"'{array.data.block.label}'" if array.data.block.label else "an array"
                raise FreedMemoryError(
                    f"{label}: {what} points into memory its pool gave back to the driver (the pool object is gone: "
                    "as in CuPy, arrays hold their pool only weakly; keep the pool as long as its arrays)"
                )
            if array.data.device_id != self.current_device:
                raise WrongDeviceError(
                    f"{label}: an array on device {array.data.device_id} used while device {self.current_device} "
                    "is current (CuPy: 'Array device must be same as the current device')"
                )

    def access(self, stream: Stream, reads: Sequence[Block], writes: Sequence[Block], label: str) -> None:
        """Check and record one stream operation's reads and writes."""
        if stream.is_null and self.captures:
            self._forbid_legacy_stream_during_capture(stream, label)
        for block in reads:
            self._check_ordered(stream, block.last_write, block, label, "reads", "wrote")
        for block in writes:
            self._check_ordered(stream, block.last_write, block, label, "writes", "wrote")
            for prior in block.reads.items():
                self._check_ordered(stream, prior, block, label, "writes", "read")
        seq = stream._issue()
        for block in reads:
            block.reads[stream] = seq
            block.read_count += 1
        for block in writes:
            block.last_write = (stream, seq)
            block.reads = {}
            block.uploaded = False

    def _forbid_legacy_stream_during_capture(self, stream: Stream, label: str) -> None:
        """Work on the legacy default stream waits for every blocking stream of its device;
        one that is capturing (in any mode, from any thread) cannot be waited for: CUDA
        refuses the work and invalidates the capture (``cudaErrorStreamCaptureImplicit``).
        Non-blocking streams, the delegate's, are not concerned."""
        capturing = [
            s for s in self.streams_of(stream.device_id)
            if s.capture is not None and not s.non_blocking and not s.is_null
        ]
        if capturing:
            for s in capturing:
                s.capture.invalid = s.capture.invalid or f"{label} on the legacy default stream"
            raise StreamCaptureUnsupportedError(
                f"{label} on {stream} while {capturing[0]} (a blocking stream) is capturing: the legacy default "
                "stream would wait for it (cudaErrorStreamCaptureImplicit)"
            )

    @staticmethod
    def _check_ordered(stream: Stream, prior: tuple[Stream, int] | None, block: Block, label: str, verb: str, did: str) -> None:
        if prior is None:
            return
        other, seq = prior
        if other is stream or other.completed >= seq or stream.waits.get(other, 0) >= seq:
            return
        if (stream.is_null and not other.non_blocking) or (other.is_null and not stream.non_blocking):
            return  # the legacy default stream and blocking streams order each other
        what = f"'{block.label}'" if block.label else "an array"
        raise StreamRaceError(
            f"{label} on {stream} {verb} {what}, which {other} {did} without an event or a synchronization "
            "in between: on a device the two can overlap"
        )

    def blocks_of(self, values: Any) -> list[Block]:
        return [a.data.block for a in _arrays_in(values)]

    # -- kernels -----------------------------------------------------------------------------------
    @_locked
    def call(self, function: Callable, args: Sequence[Any], kwargs: dict[str, Any], name: str) -> Any:
        """Run a numpy function as device work: views stay views (no work), new results are
        new allocations written by one kernel, ``out=`` arrays are written in place."""
        arrays = _arrays_in((args, kwargs))
        self._check_device(arrays, name)
        stream = self.current_stream()
        capturing = stream.capture is not None
        if capturing and self.cupy_library_rules and name in _CUBLAS_FUNCTIONS:
            self.forbid_during_capture(stream, f"CuPy's {name} (a cuBLAS call; CuPy refuses cuBLAS during stream capture)")
        out = kwargs.get("out")
        outs = [a for a in _as_tuple(out) if isinstance(a, EmulatedArray)]
        raw_args, raw_kwargs = _raw(args), _raw(kwargs)  # what a replay runs: the same memory
        call_kwargs = raw_kwargs
        written = [a._raw for a in outs]
        if capturing and outs:  # nothing executes during a capture: write into scratch instead
            scratch = tuple(np.empty_like(a._raw) for a in outs)
            call_kwargs = {**raw_kwargs, "out": scratch if isinstance(out, tuple) else scratch[0]}
            written = list(scratch)
        with np.errstate(all="ignore"):
            result = function(*raw_args, **call_kwargs)
        wrapped: list[Any] = []
        targets: list[np.ndarray | None] = []  # where a replay copies each new result
        new: list[EmulatedArray] = []
        for value in _as_tuple(result):
            if isinstance(value, np.generic):
                value = np.asarray(value)  # a reduction to a scalar: a 0-d device array, as in CuPy
            targets.append(None)
            if not isinstance(value, np.ndarray):
                wrapped.append(value)
                continue
            owner = next((a for a, w in zip(outs, written) if value is w), None)
            if owner is not None:
                wrapped.append(owner)
                continue
            source = next((a for a in arrays if np.may_share_memory(value, a._raw)), None)
            if source is not None:  # a view: metadata only, no device work
                wrapped.append(EmulatedArray(value, source.data, self))
                continue
            with self.labelled(self.label or name):
                array = self.empty(value.shape, value.dtype)
            if not capturing:
                array._raw[...] = value
            wrapped.append(array)
            targets[-1] = array._raw
            new.append(array)
        if new or outs:
            reads = [a.data.block for a in arrays if all(a is not o for o in outs)]
            writes = [a.data.block for a in (*outs, *new)]
            self._launch(stream, name, reads, writes, lambda: _replay_call(function, raw_args, raw_kwargs, targets))
        return tuple(wrapped) if isinstance(result, tuple) else wrapped[0]

    @_locked
    def setitem(self, target: EmulatedArray, key: Any, value: Any) -> None:
        if isinstance(value, (np.ndarray, list)) and not isinstance(value, EmulatedArray):
            value = self.upload(np.asarray(value, dtype=target.dtype))  # a host array: a copy first, as CuPy
        arrays = _arrays_in((key, value))
        self._check_device([target, *arrays], "setitem")
        stream = self.current_stream()
        raw_key, raw_value = _raw(key), _raw(value)
        if stream.capture is None:
            target._raw[raw_key] = raw_value
        raw_target = target._raw

        def run() -> None:
            raw_target[raw_key] = raw_value

        self._launch(stream, "setitem", [a.data.block for a in arrays], [target.data.block], run)

    def _launch(
        self, stream: Stream, name: str, reads: list[Block], writes: list[Block], run: Callable[[], None], kernel: bool = True
    ) -> None:
        """Record the operation in the capture, or check and account for it now (the caller
        has already run it when nothing is capturing)."""
        label = self.label or name
        if stream.capture is not None:
            stream.capture.nodes.append(_Node(label, run, reads, writes))
        else:
            self.access(stream, reads, writes, label)
        if kernel:
            self.count(stream.device_id, stream, launches=1)

    @_locked
    def launch_raw(self, kernel: Any, name: str, grid: Any, block: Any, args: Sequence[Any]) -> None:
        """A ``RawKernel`` launch: every pointer argument is read and written."""
        arrays = [a for a in args if isinstance(a, EmulatedArray)]
        self._check_device(arrays, name)
        for array in arrays:
            if not array.flags.c_contiguous:
                raise EmulatedDeviceError(f"{name}: a raw kernel reads pointers: pass C-contiguous arrays")
        stream = self.current_stream()
        raw_args = [a._raw if isinstance(a, EmulatedArray) else a for a in args]

        def run() -> None:
            kernel(grid, block, raw_args)

        if stream.capture is None:
            run()
        blocks = [a.data.block for a in arrays]
        self._launch(stream, name, blocks, blocks, run)

    @_locked
    def launch_twin(self, name: str, twin: Callable[..., None], inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """One hand-written kernel run by its numpy twin (host emulation's stand-in for a
        ``.cu`` kernel): ``twin(*inputs, *outputs)`` on the raw memory, reading ``inputs``
        (device arrays, or None for an absent pointer) and writing into ``outputs``. It is
        one launch, ordered, captured and replayed like any kernel."""
        arrays = [a for a in (*inputs, *outputs) if isinstance(a, EmulatedArray)]
        self._check_device(arrays, name)
        if any(not isinstance(a, EmulatedArray) for a in outputs):
            raise EmulatedDeviceError(f"{name}: a kernel writes into device arrays only")
        stream = self.current_stream()
        raw_inputs = [a._raw if isinstance(a, EmulatedArray) else a for a in inputs]
        raw_outputs = [a._raw for a in outputs]

        def run() -> None:
            with np.errstate(all="ignore"):
                twin(*raw_inputs, *raw_outputs)

        if stream.capture is None:
            run()
        reads = [a.data.block for a in inputs if isinstance(a, EmulatedArray)]
        self._launch(stream, name, reads, [a.data.block for a in outputs], run)

    @_locked
    def cupy_pointer_table(self, arrays: Any, name: str) -> None:
        """CuPy joins more than 8 arrays with one kernel that reads a table of their
        addresses, uploaded from host memory at each call."""
        arrays = [a for a in arrays if isinstance(a, EmulatedArray)] if isinstance(arrays, (list, tuple)) else []
        if len(arrays) > _CONCAT_POINTER_TABLE_ABOVE:
            stream = self.current_stream()
            self.forbid_during_capture(
                stream, f"CuPy's {name} of {len(arrays)} arrays (it copies a table of their addresses from host memory)"
            )
            self.count(stream.device_id, stream, uploads=1, upload_bytes=8 * len(arrays))

    # -- host transfers ------------------------------------------------------------------------
    @_locked
    def is_pinned(self, array: np.ndarray) -> bool:
        low, high = _byte_bounds(array)
        for start, memory in list(self.pinned.items()):
            if start <= low and high <= start + len(memory):
                return True
        return False

    @_locked
    def alloc_pinned_memory(self, nbytes: int) -> PinnedMemory:
        memory = PinnedMemory(max(int(nbytes), 1))
        start = np.frombuffer(memory, np.uint8).ctypes.data
        self.pinned[start] = memory
        return memory

    @_locked
    def upload(self, host: Any, dtype: Any = None) -> EmulatedArray:
        """``cupy.asarray`` of a host array: CuPy copies it into pinned staging memory of its
        own, then copies asynchronously (the host does not wait)."""
        host = np.asarray(host, dtype=dtype)
        array = self.empty(host.shape, host.dtype)
        self.upload_into(array, host, None, staged=True)
        return array

    @_locked
    def upload_into(self, array: EmulatedArray, host: np.ndarray, stream: Stream | None, *, staged: bool = False) -> None:
        """``ndarray.set``: an asynchronous copy from pinned memory; from pageable memory
        CUDA synchronizes the stream first and the host waits (a blocking copy)."""
        if host.shape != array.shape:
            raise ValueError(f"shape mismatch: the host array has shape {host.shape}, the device array {array.shape}")
        self._check_device([array], "host-to-device copy")
        stream = stream or self.current_stream()
        if staged or self.is_pinned(host):
            values = np.array(host, dtype=array.dtype)  # read when the stream gets there; modelled as now
            raw = array._raw

            def run() -> None:
                raw[...] = values

            if stream.capture is None:
                run()
            self._launch(stream, "host-to-device copy", [], [array.data.block], run, kernel=False)
        else:
            self.forbid_during_capture(stream, "a host-to-device copy from pageable memory")
            self.forbid_unsafe_call("a host-to-device copy from pageable memory")
            self.access(stream, [], [array.data.block], "host-to-device copy")
            stream._complete(stream.seq)  # the host waits for the stream, then for the copy
            array._raw[...] = host
            self.count(stream.device_id, stream, synchronizations=1, blocking_copies=1)
        array.data.block.uploaded = True
        self.count(stream.device_id, stream, uploads=1, upload_bytes=array.nbytes)

    @_locked
    def download(self, array: EmulatedArray, stream: Stream | None, out: np.ndarray | None, blocking: bool = True) -> np.ndarray:
        stream = stream or self.current_stream()
        self._check_device([array], "device-to-host copy")
        self.forbid_during_capture(stream, "a device-to-host copy")
        self.access(stream, [array.data.block], [], "device-to-host copy")
        self.count(stream.device_id, stream, downloads=1, download_bytes=array.nbytes)
        if out is None:
            out = np.empty(array.shape, array.dtype)
        elif out.shape != array.shape or out.dtype != array.dtype:
            raise ValueError(f"out must be {array.dtype}{list(array.shape)}, got {out.dtype}{list(out.shape)}")
        if not blocking and self.is_pinned(out):  # asynchronous: the values land when the host synchronizes
            if not out.flags.c_contiguous:
                raise ValueError("an asynchronous copy needs a C-contiguous pinned buffer")
            out.reshape(-1).view(np.uint8)[...] = POISON
            stream._pending.append((stream.seq, out, array._raw.copy()))
        else:  # the host waits for the stream to get there
            self.forbid_unsafe_call("a synchronous device-to-host copy")
            self.count(stream.device_id, stream, synchronizations=1, blocking_copies=1)
            stream._complete(stream.seq)
            out[...] = array._raw
        return out

    # -- memory by address (what a library call's pointers name) ----------------------------------
    @_locked
    def stream_at(self, pointer: int, device_id: int) -> Stream:
        """The stream whose handle is ``pointer`` (0: the device's legacy default stream)."""
        for stream in self.streams_of(device_id):
            if stream.ptr == int(pointer):
                return stream
        raise RuntimeError(f"cudaErrorInvalidResourceHandle: no stream {int(pointer):#x} on device {device_id}")

    @_locked
    def memory_at(self, pointer: int, dtype: Any, shape: Sequence[int], strides: Sequence[int], label: str) -> tuple[Block, np.ndarray]:
        """The block holding ``pointer`` and a view of ``shape`` / element ``strides`` from there."""
        dtype = np.dtype(dtype)
        extent = 1 + sum((int(n) - 1) * int(st) for n, st in zip(shape, strides)) if all(shape) else 0
        for pool in list(self.pools):
            for block in list(pool.blocks):
                start = int(block.memory.ctypes.data)
                if start <= int(pointer) < start + block.size:
                    if block.released or not block.live:
                        raise FreedMemoryError(f"{label}: a pointer into memory its pool gave back")
                    if block.device_id != self.current_device:
                        raise WrongDeviceError(f"{label}: memory of device {block.device_id} used on device {self.current_device}")
                    offset = int(pointer) - start
                    if offset + extent * dtype.itemsize > block.size:
                        raise EmulatedDeviceError(f"{label}: reads past the end of its allocation")
                    view = np.ndarray(tuple(int(n) for n in shape), dtype, buffer=block.memory, offset=offset,
                                      strides=tuple(int(st) * dtype.itemsize for st in strides))
                    return block, view
        raise EmulatedDeviceError(f"{label}: {int(pointer):#x} is not device memory of this machine")

    @_locked
    def unread_uploads(self) -> list[str]:
        """Labels of live blocks written by a host-to-device copy and never read since."""
        return [
            block.label or "an unlabelled upload"
            for pool in list(self.pools)
            for block in list(pool.blocks)
            if block.live and block.uploaded and block.read_count == 0
        ]


try:  # numpy >= 2
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:  # pragma: no cover - numpy 1.x
    _byte_bounds = np.byte_bounds


def _as_tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _arrays_in(values: Any) -> list[EmulatedArray]:
    """The device arrays in nested lists, tuples and dicts (no recursion through a
    closure: that would be a reference cycle, and arrays would outlive their last use)."""
    found: list[EmulatedArray] = []
    pending = [values]
    while pending:
        value = pending.pop()
        if isinstance(value, EmulatedArray):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            pending.extend(reversed(value))
        elif isinstance(value, dict):
            pending.extend(reversed(list(value.values())))
    return found


def _raw(value: Any) -> Any:
    if isinstance(value, EmulatedArray):
        return value._raw
    if isinstance(value, tuple):
        return tuple(_raw(v) for v in value)
    if isinstance(value, list):
        return [_raw(v) for v in value]
    if isinstance(value, dict):
        return {k: _raw(v) for k, v in value.items()}
    return value


def _replay_call(function: Callable, args: Any, kwargs: dict[str, Any], targets: list[np.ndarray | None]) -> None:
    """Re-run a recorded call: ``out=`` arrays are written in place, new results copied
    into the memory the capture allocated for them."""
    result = function(*_raw(args), **_raw(kwargs))
    for value, target in zip(_as_tuple(result), targets):
        if target is not None:
            target[...] = value


# ---------------------------------------------------------------------------------------------
# cuBLAS
# ---------------------------------------------------------------------------------------------


def CublasEmulationError(message: str) -> RuntimeError:  # noqa: N802 (raised like a class)
    """What a cuBLAS call that returns an error status raises: ``cuda.cublas.CublasError``, as
    on a device."""
    from backends.gpu.cuda.cublas import CublasError

    return CublasError(message)


@dataclass
class _CublasHandle:
    device_id: int
    stream_pointer: int = 0  # the legacy default stream until cublasSetStream
    workspace: Block | None = None


#: ``cudaDataType`` -> numpy, and the (operand, result, compute) types the emulated cuBLAS runs:
#: float32 (or TF32), float16 operands into float32, int8 into int32.
_CUBLAS_TYPES = {0: np.float32, 2: np.float16, 3: np.int8, 10: np.int32}
_CUBLAS_COMPUTE_32F, _CUBLAS_COMPUTE_32I, _CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 72, 77
_CUBLAS_COMBINATIONS = {(0, 0, 68), (0, 0, 77), (2, 0, 68), (3, 10, 72)}


class EmulatedCublas:
    """``libcublas`` on an emulated machine, with ``cuda/cublas.py``'s ``CublasLibrary`` calls:
    handles, their stream and workspace, and ``cublasGemmStridedBatchedEx`` for float32 or
    float16 operands into float32 and int8 operands into int32 (see the module docstring for
    the rules it keeps). int8 also wants leading dimensions that are multiples of 4 (cuBLAS's
    documented int8 restriction, as the project reads it: not checked on a GPU yet)."""

    def __init__(self, machine: "EmulatedMachine") -> None:
        self.machine = machine
        self.handles: dict[int, _CublasHandle] = {}

    def _state(self, handle: int) -> _CublasHandle:
        state = self.handles.get(int(handle))
        if state is None:
            raise CublasEmulationError("CUBLAS_STATUS_NOT_INITIALIZED: not a live cuBLAS handle")
        return state

    def create(self) -> int:
        handle = next(self.machine.handles)
        self.handles[handle] = _CublasHandle(self.machine.current_device)
        return handle

    def destroy(self, handle: int) -> None:
        self.handles.pop(int(handle), None)

    def set_stream(self, handle: int, stream: int) -> None:
        state = self._state(handle)
        self.machine.stream_at(stream, state.device_id)
        state.stream_pointer = int(stream)
        state.workspace = None  # cublasSetStream resets the workspace to cuBLAS's default pool

    def set_workspace(self, handle: int, pointer: int, nbytes: int) -> None:
        state = self._state(handle)
        block, _ = self.machine.memory_at(pointer, np.uint8, (int(nbytes),), (1,), "cublasSetWorkspace")
        state.workspace = block

    def gemm_strided_batched(
        self, handle: int, transa: int, transb: int, m: int, n: int, k: int,
        a: int, a_type: int, lda: int, stride_a: int, b: int, b_type: int, ldb: int, stride_b: int,
        c: int, c_type: int, ldc: int, stride_c: int, batch: int, compute: int,
    ) -> None:
        """``C = op(A) @ op(B)`` (alpha 1, beta 0) for ``batch`` column-major products."""
        machine, state = self.machine, self._state(handle)
        name = "cublasGemmStridedBatchedEx"
        if b_type != a_type or (a_type, c_type, compute) not in _CUBLAS_COMBINATIONS or (
            a_type == 3 and (lda % 4 or ldb % 4)
        ):
            raise CublasEmulationError(
                f"{name}: CUBLAS_STATUS_NOT_SUPPORTED (types {a_type}, {b_type}, {c_type}, compute {compute}, lda {lda}, ldb {ldb})"
            )
        a_rows, a_cols = (m, k) if transa == 0 else (k, m)
        b_rows, b_cols = (k, n) if transb == 0 else (n, k)
        if min(m, n, k, batch) < 0 or lda < max(1, a_rows) or ldb < max(1, b_rows) or ldc < max(1, m):
            raise CublasEmulationError(f"{name}: CUBLAS_STATUS_INVALID_VALUE (m={m} n={n} k={k} lda={lda} ldb={ldb} ldc={ldc})")
        with machine.lock:
            if machine.current_device != state.device_id:
                raise WrongDeviceError(f"{name}: a handle of device {state.device_id} used on device {machine.current_device}")
            stream = machine.stream_at(state.stream_pointer, state.device_id)
            label = machine.label or name
            a_block, a_view = machine.memory_at(a, _CUBLAS_TYPES[a_type], (batch, a_rows, a_cols), (stride_a, 1, lda), label)
            b_block, b_view = machine.memory_at(b, _CUBLAS_TYPES[b_type], (batch, b_rows, b_cols), (stride_b, 1, ldb), label)
            c_block, c_view = machine.memory_at(c, _CUBLAS_TYPES[c_type], (batch, m, n), (stride_c, 1, ldc), label)
            if stream.capture is not None and state.workspace is None:
                stream.capture.invalid = stream.capture.invalid or f"{name} without a workspace"
                raise EmulatedDeviceError(
                    f"{label}: {name} captured on a handle with no workspace of its own: cuBLAS would allocate one "
                    "inside the graph (cudaMallocAsync memory nodes, a new workspace per capture); call "
                    "cublasSetWorkspace after cublasSetStream"
                )
            tf32 = compute == _CUBLAS_COMPUTE_32F_FAST_TF32
            exact = np.int64 if compute == _CUBLAS_COMPUTE_32I else np.float32  # (int: the sums wrap to int32)

            def run() -> None:
                left = a_view.astype(exact) if transa == 0 else np.swapaxes(a_view, 1, 2).astype(exact)
                right = b_view.astype(exact) if transb == 0 else np.swapaxes(b_view, 1, 2).astype(exact)
                if tf32:
                    from backends.gpu.cuda.cublas import round_to_tf32

                    left, right = round_to_tf32(left), round_to_tf32(right)
                with np.errstate(all="ignore"):
                    c_view[...] = np.matmul(left, right).astype(c_view.dtype)

            if stream.capture is None:
                run()
            writes = [c_block] + ([state.workspace] if state.workspace is not None else [])
            machine._launch(stream, name, [a_block, b_block], writes, run)


# ---------------------------------------------------------------------------------------------
# The cupy-shaped module
# ---------------------------------------------------------------------------------------------


class _RawKernel:
    def __init__(self, machine: EmulatedMachine, function: Any, name: str) -> None:
        self.machine = machine
        self.function = function
        self.name = name

    def __call__(self, grid: Any, block: Any, args: Sequence[Any], *, shared_mem: int = 0) -> None:
        self.machine.launch_raw(self.function, self.name, grid, block, args)


class _RawModule:
    """``cupy.RawModule(code=...)``: the source built for the host with the host shim."""

    _KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(')

    def __init__(self, machine: EmulatedMachine, code: str, options: Sequence[str] = (), name_expressions: Any = None, **_: Any) -> None:
        from backends.gpu.cuda.host import HostModule

        names = self._KERNEL.findall(code)
        if not names:
            raise RuntimeError('no extern "C" __global__ kernel in the source')
        cooperative = "__syncthreads" in code or "__shared__" in code
        self.machine = machine
        self.device_id = machine.current_device
        self.module = HostModule(code, "module.cu", kernels=names, cooperative=cooperative)
        machine.count(self.device_id, None, modules_loaded=1)

    def get_function(self, name: str) -> _RawKernel:
        return _RawKernel(self.machine, self.module.get_function(name), name)


class _Runtime:
    """``cupy.cuda.runtime``: the calls the delegate and the probe make."""

    def __init__(self, machine: EmulatedMachine, name: str) -> None:
        self.machine = machine
        self.name = name

    def getDeviceCount(self) -> int:
        return len(self.machine.devices)

    def getDeviceProperties(self, device_id: int) -> dict[str, Any]:
        # sm_90 with an H200's 132 multiprocessors of 2,048 threads each.
        return {"name": self.name.encode(), "major": 9, "minor": 0, "totalGlobalMem": 80 * 2**30,
                "multiProcessorCount": 132, "maxThreadsPerMultiProcessor": 2048}

    streamCaptureModeGlobal = STREAM_CAPTURE_MODE_GLOBAL  # noqa: N815 (cupy's names)
    streamCaptureModeThreadLocal = STREAM_CAPTURE_MODE_THREAD_LOCAL  # noqa: N815
    streamCaptureModeRelaxed = STREAM_CAPTURE_MODE_RELAXED  # noqa: N815

    def runtimeGetVersion(self) -> int:
        return 12080

    def driverGetVersion(self) -> int:
        return 12080

    def deviceSynchronize(self) -> None:
        _DeviceHandle(self.machine).synchronize()


class _CudaNamespace:
    """``cupy.cuda``."""

    def __init__(self, machine: EmulatedMachine, name: str) -> None:
        self.machine = machine
        self.runtime = _Runtime(machine, name)
        self.graph = type("graph", (), {"Graph": Graph})
        self.MemoryPointer = MemoryPointer
        self.get_elapsed_time = get_elapsed_time

    def Device(self, device_id: int | None = None) -> _DeviceHandle:  # noqa: N802 (cupy's name)
        return _DeviceHandle(self.machine, device_id)

    def Stream(self, null: bool = False, non_blocking: bool = False, ptds: bool = False) -> Stream:  # noqa: N802
        if null:
            return self.machine.devices[self.machine.current_device].null_stream
        return self.machine.new_stream(non_blocking)

    def Event(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> Event:  # noqa: N802
        return Event(self.machine, block, disable_timing, interprocess)

    def MemoryPool(self, allocator: Any = None) -> MemoryPool:  # noqa: N802
        return MemoryPool(self.machine, allocator)

    def get_current_stream(self, device_id: int | None = None) -> Stream:
        return self.machine.current_stream()

    def alloc_pinned_memory(self, nbytes: int) -> PinnedMemory:
        return self.machine.alloc_pinned_memory(nbytes)

    @contextlib.contextmanager
    def using_allocator(self, allocator: Callable[[int], MemoryPointer] | None = None) -> Iterator[None]:
        self.machine.allocators.append(allocator or self.machine.devices[self.machine.current_device].default_pool.malloc)
        try:
            yield
        finally:
            self.machine.allocators.pop()


class EmulatedCupy:
    """A cupy-shaped module over an :class:`EmulatedMachine` (see the module docstring).

    Functions that cupy shares with numpy (``matmul``, ``take``, ``where``, ufuncs...) are
    numpy's, run as device work on :class:`EmulatedArray` arguments.
    """

    ndarray = EmulatedArray

    def __init__(self, device_count: int = 1, device_name: str = "emulated CUDA device (numpy)", cupy_library_rules: bool = True) -> None:
        self.machine = EmulatedMachine(device_count, cupy_library_rules)
        self.machine.module = self
        self.cuda = _CudaNamespace(self.machine, device_name)
        self.__version__ = "emulated"
        self._functions: dict[str, Callable] = {}

    def __getattr__(self, name: str) -> Any:
        value = getattr(np, name)
        if not callable(value) or isinstance(value, type):
            return value  # dtypes, constants (numpy.float32, numpy.inf)
        function = self._functions.get(name)
        if function is None:
            function = self._functions[name] = functools.partial(self._call_function, value, name)
        return function

    def _call_function(self, function: Callable, name: str, *args: Any, **kwargs: Any) -> Any:
        if not _arrays_in((args, kwargs)):  # host values only: the result is made on the device
            result = function(*args, **kwargs)
            if not isinstance(result, (np.ndarray, np.generic)):
                return result
            array = self.machine.empty(np.shape(result), np.asarray(result).dtype)
            self.machine.setitem(array, Ellipsis, result)
            return array
        if name in ("concatenate", "stack", "hstack", "vstack"):
            self.machine.cupy_pointer_table(args[0] if args else kwargs.get("arrays", ()), name)
        return self.machine.call(function, args, kwargs, name)

    # -- creation ---------------------------------------------------------------------------------
    def empty(self, shape: Any, dtype: Any = np.float32, order: str = "C") -> EmulatedArray:
        return self.machine.empty(shape, dtype)

    def full(self, shape: Any, fill_value: Any, dtype: Any = None) -> EmulatedArray:
        dtype = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
        array = self.machine.empty(shape, dtype)
        self.machine.setitem(array, Ellipsis, fill_value)
        return array

    def zeros(self, shape: Any, dtype: Any = np.float32, order: str = "C") -> EmulatedArray:
        return self.full(shape, 0, dtype)

    def ones(self, shape: Any, dtype: Any = np.float32, order: str = "C") -> EmulatedArray:
        return self.full(shape, 1, dtype)

    def empty_like(self, a: EmulatedArray, dtype: Any = None) -> EmulatedArray:
        return self.machine.empty(a.shape, dtype or a.dtype)

    def zeros_like(self, a: EmulatedArray, dtype: Any = None) -> EmulatedArray:
        return self.full(a.shape, 0, dtype or a.dtype)

    def arange(self, *args: Any, dtype: Any = None) -> EmulatedArray:
        return self.machine.upload(np.arange(*args, dtype=dtype))

    def asarray(self, a: Any, dtype: Any = None, order: Any = None) -> EmulatedArray:
        if isinstance(a, EmulatedArray):
            return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
        return self.machine.upload(a, dtype)

    array = asarray

    def ascontiguousarray(self, a: Any, dtype: Any = None) -> EmulatedArray:
        if not isinstance(a, EmulatedArray):
            return self.machine.upload(np.ascontiguousarray(a, dtype=dtype))
        return self.machine.call(np.ascontiguousarray, (a,), {"dtype": dtype}, "ascontiguousarray")

    def asnumpy(self, a: Any, stream: Stream | None = None, order: str = "C", out: np.ndarray | None = None, blocking: bool = True) -> np.ndarray:
        return a.get(stream=stream, out=out, blocking=blocking) if isinstance(a, EmulatedArray) else np.asarray(a)

    def get_default_memory_pool(self) -> MemoryPool:
        return self.machine.devices[self.machine.current_device].default_pool

    def RawModule(self, code: str, options: Sequence[str] = (), **kwargs: Any) -> _RawModule:  # noqa: N802
        return _RawModule(self.machine, code, options, **kwargs)

    def get_array_module(self, *args: Any) -> Any:
        return self
