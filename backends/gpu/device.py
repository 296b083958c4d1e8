"""Devices the GPU delegate runs on: a CUDA device through CuPy, or the emulated machine
(``backends/gpu/emulation.py``) standing in for one.

``open_device(0)`` never pretends: without cupy, a driver, a device, NVRTC or cuBLAS it
raises :class:`GpuUnavailableError` with one message saying what is missing and what to
do. ``open_device("host")`` is host emulation, which a user asks for by name: numpy
under CUDA's rules (streams, pools, graphs), the ops taking their numpy branch.

Everything the delegate does on a device goes through one :class:`Device`, inside
``device.active()``: the device is current, the delegate's own non-blocking stream is
the current stream, and allocations come from the delegate's own memory pool (counted).
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, fields
from types import ModuleType
from typing import Any, Iterator

import numpy as np

HOST = "host"


from backends.gpu.errors import DeviceMemoryError, GpuUnavailableError  # (re-exported: their public home is here)
from backends.gpu.probe import probe_cuda_device


#: Past this many bytes a single buffer is refused without asking the allocator (no
#: device has that much memory; numpy cannot even describe some such arrays).
MAX_BUFFER_BYTES = 1 << 40


def _out_of_memory(device: "Device", nbytes: int, what: str, error: BaseException | None) -> DeviceMemoryError:
    cause = f" ({type(error).__name__}: {error})" if error is not None and str(error) else ""
    return DeviceMemoryError(
        f"{device.name}: cannot allocate {nbytes if nbytes < MAX_BUFFER_BYTES else f'{nbytes:.3e}'} bytes of {what}{cause}; the model's tensors are too large for "
        "this device at these shapes (smaller input shapes, or the CPU path, need less)"
    )


@dataclass
class DeviceCounters:
    """What the delegate asked of a device: per invoke, per partition, or in total.

    ``kernel_launches`` are kernels launched one by one from the host (eager ops); a graph
    replay is one ``graph_replays`` that runs ``graph_nodes`` operations (kernels, copies,
    memsets). A real device reports eager launches as 0 (CuPy does not count them;
    ``Device.counts_launches``); the emulated machine counts them all.

    On an emulated device every number is what the machine saw asked of that device
    (``EmulatedMachine.device_stats``), not what the delegate says it asked: a blocking
    copy is a synchronization, an op's own upload is an upload. On a CUDA device, where
    CuPy counts nothing, they are the delegate's own bookkeeping.
    """

    kernel_launches: int = 0
    graph_replays: int = 0
    graph_nodes: int = 0
    uploads: int = 0
    upload_bytes: int = 0
    downloads: int = 0
    download_bytes: int = 0
    synchronizations: int = 0
    pool_allocations: int = 0

    def add(self, other: "DeviceCounters") -> None:
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def as_dict(self) -> dict[str, int]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def minus(self, other: "DeviceCounters") -> "DeviceCounters":
        """Field by field ``self - other`` (what happened between two readings)."""
        return DeviceCounters(**{field.name: getattr(self, field.name) - getattr(other, field.name) for field in fields(self)})

    @property
    def transfer_bytes(self) -> int:
        return self.upload_bytes + self.download_bytes


#: The old name of the counters (uploads, downloads, upload_bytes, download_bytes).
TransferCounts = DeviceCounters


class Device:
    """One CUDA device as the delegate uses it: its CuPy (real or emulated), one
    non-blocking stream, a memory pool of its own, compiled modules, counters.

    ``is_host``: host emulation, where the ops take their numpy branch; otherwise the ops
    use the hand-written CUDA kernels (``cuda/*.cu``) and CuPy's.
    """

    def __init__(self, cupy: ModuleType, device_id: int, *, name: str, is_host: bool = False) -> None:
        self.xp = cupy
        self.id = device_id
        self.name = name
        self.is_host = is_host
        self.emulated = hasattr(cupy, "machine")
        self.counts_launches = self.emulated
        self.cuda_device = cupy.cuda.Device(device_id)
        with self.cuda_device:
            self.stream = cupy.cuda.Stream(non_blocking=True)
            self.pool = cupy.cuda.MemoryPool()
        self._total = DeviceCounters()  # everything, prepare included
        self._counting: list[DeviceCounters] = [self._total]  # (a CUDA device: the delegate's bookkeeping)
        self._machine_seen = self._machine_counters()  # (an emulated device: the machine's counts)
        self._modules: dict[str, Any] = {}
        self._cublas: Any = None
        self._side_stream: Any = None
        self._identity: tuple[str, str, str] | None = None
        self._resident_threads: int | None = None

    def __repr__(self) -> str:
        return f"Device({self.name!r})"

    # -- context -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def active(self) -> Iterator["Device"]:
        """This device current, the delegate's stream current, the delegate's pool allocating."""
        with self.cuda_device, self.stream, self.xp.cuda.using_allocator(self._malloc):
            yield self

    @contextlib.contextmanager
    def side_stream(self) -> Iterator[Any]:
        """A second non-blocking stream of this device current inside (inside ``active()``):
        work that is not the delegate's (checking and timing candidate kernels at prepare) runs
        there, so the delegate's stream, its counters and its graphs see none of it. Whoever
        uses it synchronizes it before the delegate's stream touches what it wrote."""
        if self._side_stream is None:
            with self.cuda_device:
                self._side_stream = self.xp.cuda.Stream(non_blocking=True)
        with self._side_stream:
            yield self._side_stream

    @property
    def counters(self) -> DeviceCounters:
        """Everything asked of this device since it was opened, prepare included."""
        if self.emulated:
            now = self._machine_counters()
            self._total.add(now.minus(self._machine_seen))
            self._machine_seen = now
        return self._total

    @contextlib.contextmanager
    def counting(self, counters: DeviceCounters, *more: DeviceCounters) -> Iterator[DeviceCounters]:
        """Also count what happens inside into ``counters`` (and ``more``): on an emulated
        device, what the machine saw asked of this device meanwhile; on a CUDA device, the
        delegate's own bookkeeping (kernel launches not counted)."""
        added = (counters, *more)
        if self.emulated:
            before = self._machine_counters()
            try:
                yield counters
            finally:
                seen = self._machine_counters().minus(before)
                for each in added:
                    each.add(seen)
            return
        self._counting.extend(added)
        try:
            yield counters
        finally:
            for each in added:
                del self._counting[next(i for i, c in enumerate(self._counting) if c is each)]

    def _machine_counters(self) -> DeviceCounters:
        """What the emulated machine counted on this delegate's stream (zeros on a CUDA
        device): other delegates' work on the same device, from other threads, is theirs."""
        if not self.emulated:
            return DeviceCounters()
        stats = self.xp.machine.stream_work(self.stream)
        return DeviceCounters(
            kernel_launches=stats.launches, graph_replays=stats.graph_launches, graph_nodes=stats.graph_nodes,
            uploads=stats.uploads, upload_bytes=stats.upload_bytes, downloads=stats.downloads,
            download_bytes=stats.download_bytes, synchronizations=stats.synchronizations,
            pool_allocations=stats.allocations,
        )

    def _count(self, name: str, amount: int = 1) -> None:
        """The delegate's own bookkeeping, for a CUDA device (an emulated one counts itself)."""
        if self.emulated:
            return
        for counters in self._counting:
            setattr(counters, name, getattr(counters, name) + amount)

    def labelled(self, label: str) -> Any:
        """Name the work inside (the emulated machine's error messages say it)."""
        return self.xp.machine.labelled(label) if self.emulated else contextlib.nullcontext()

    def _malloc(self, nbytes: int) -> Any:
        self._count("pool_allocations")
        if nbytes > MAX_BUFFER_BYTES:
            raise _out_of_memory(self, nbytes, "device memory", None)
        try:
            return self.pool.malloc(nbytes)
        except MemoryError as error:  # (CuPy's OutOfMemoryError is one)
            raise _out_of_memory(self, nbytes, "device memory", error) from error

    # -- memory and transfers (inside active()) ----------------------------------------------
    def upload(self, array: np.ndarray, dtype: Any = None) -> Any:
        """A new device array holding ``array`` (converted to ``dtype`` on the host)."""
        host = np.array(array, dtype=dtype, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
        device_array = self.xp.empty(host.shape, dtype=host.dtype)
        self.upload_into(device_array, host)
        return device_array

    def upload_into(self, device_array: Any, host: np.ndarray) -> None:
        """Copy ``host`` into an existing device array, on the delegate's stream (pinned
        ``host``: asynchronously)."""
        self._count("uploads")
        self._count("upload_bytes", device_array.nbytes)
        device_array.set(host, stream=self.stream)

    def empty_pinned(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A host array in page-locked memory (staging for asynchronous copies)."""
        dtype = np.dtype(dtype)
        nbytes = max(math.prod(int(d) for d in shape) * dtype.itemsize, 1)
        if nbytes > MAX_BUFFER_BYTES:
            raise _out_of_memory(self, nbytes, "pinned host memory", None)
        try:
            return np.ndarray(shape, dtype=dtype, buffer=self.xp.cuda.alloc_pinned_memory(nbytes))
        except MemoryError as error:
            raise _out_of_memory(self, nbytes, "pinned host memory", error) from error

    def download_async(self, device_array: Any, pinned: np.ndarray) -> None:
        """Queue a copy into ``pinned`` on the delegate's stream; it is there after
        :meth:`synchronize`."""
        self._count("downloads")
        self._count("download_bytes", pinned.nbytes)
        device_array.get(stream=self.stream, out=pinned, blocking=False)

    def download(self, device_array: Any) -> np.ndarray:
        """A blocking copy to a new host array (waits for the stream: for debugging paths)."""
        self._count("downloads")
        self._count("download_bytes", device_array.nbytes)
        self._count("synchronizations")
        return device_array.get(stream=self.stream)

    def synchronize(self) -> None:
        """Wait for everything queued on the delegate's stream."""
        self._count("synchronizations")
        self.stream.synchronize()

    # -- kernels and graphs ------------------------------------------------------------------
    def module(self, source: str) -> Any:
        """The shipped ``.cu`` file ``source`` compiled for this device, once per device."""
        module = self._modules.get(source)
        if module is None:
            from backends.gpu.cuda.sources import CUPY_OPTIONS, read_source

            with self.cuda_device:
                module = self._modules[source] = self.xp.RawModule(code=read_source(source), options=CUPY_OPTIONS)
        return module

    def launcher_arguments(self, source: str, vendor: bool = False) -> dict[str, Any]:
        """What a kernel launcher (``cuda/sources.py``'s ``_Launcher``) takes to run
        ``source``'s kernels here: this device's compiled module, or (host emulation) this
        device for the numpy twins; with ``vendor``, also this device's cuBLAS handle."""
        if self.is_host:
            return {"host_device": self}
        arguments = {"xp": self.xp, "module": self.module(source)}
        if vendor:
            arguments["blas"] = self.cublas()
        return arguments

    def cublas(self) -> Any:
        """This device's cuBLAS handle and workspace (``cuda/cublas.py``'s ``CublasHandle``),
        made at the first call: on the emulated machine its emulated library, else
        ``libcublas`` itself. CublasError when the library cannot be loaded."""
        if self._cublas is None:
            from backends.gpu.cuda.cublas import CublasHandle, load_cublas

            library = self.xp.machine.cublas if self.emulated else load_cublas()
            self._cublas = CublasHandle(library, self)
        return self._cublas

    def identity(self) -> tuple[str, str, str]:
        """What a decision measured here depends on: the GPU's name, its compute capability
        and the driver's version (CUDA's ``cudaDriverGetVersion``); asked once."""
        if self._identity is None:
            runtime = self.xp.cuda.runtime
            name = runtime.getDeviceProperties(self.id)["name"]
            name = name.decode() if isinstance(name, bytes) else str(name)
            self._identity = (name, str(self.cuda_device.compute_capability), str(runtime.driverGetVersion()))
        return self._identity

    @property
    def resident_threads(self) -> int:
        """The threads the GPU holds at once: its multiprocessors x the threads each holds
        (CUDA's ``multiProcessorCount`` and ``maxThreadsPerMultiProcessor``; 0 where the
        properties do not say). The tactics' fill rule (``tactics.emptier_reason``) compares
        grids up to it. Asked once."""
        if self._resident_threads is None:
            properties = self.xp.cuda.runtime.getDeviceProperties(self.id)
            self._resident_threads = int(properties.get("multiProcessorCount", 0)) * int(
                properties.get("maxThreadsPerMultiProcessor", 0)
            )
        return self._resident_threads

    @property
    def compute_capability(self) -> int:
        """``80`` for sm_80..."""
        return int(self.cuda_device.compute_capability)

    def launch_twin(self, name: str, twin: Any, inputs: Any, outputs: Any) -> None:
        """Host emulation only: run the numpy twin of a hand-written kernel as one launch
        (``twin(*inputs, *outputs)``, writing ``outputs``); on a device the op launches the
        ``.cu`` kernel itself. Each twin has a test that it computes what its kernel does
        (through the host shim), so host emulation launches what a device launches."""
        if not self.is_host:
            raise RuntimeError(f"{name}: numpy twins run in host emulation only; on a device launch the CUDA kernel")
        self.xp.machine.launch_twin(name, twin, inputs, outputs)

    def event(self) -> Any:
        """A CUDA event recorded now on the delegate's stream (for timing)."""
        event = self.xp.cuda.Event()
        event.record(self.stream)
        return event

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(self.xp.cuda.get_elapsed_time(start, end))

    def launch_graph(self, graph: Any, kernels: int) -> None:
        self._count("graph_replays")
        self._count("graph_nodes", kernels)
        graph.launch(stream=self.stream)

    @staticmethod
    def graph_node_count(graph: Any) -> int:
        """The nodes of a captured graph, counted in CUDA's DOT description of it (each
        node is one line ``"<name>"[...]``); 0 where CuPy cannot describe graphs."""
        try:
            dot = graph.debug_dot_str()
        except Exception:  # an old CuPy without debug_dot_str
            return 0
        return len(re.findall(r'^\s*"[^"]+"\s*\[', dot, flags=re.MULTILINE))


def open_device(device: int | str | Device = 0) -> Device:
    """The device for ``GpuDelegate(device=...)``: an int is a CUDA device id, ``"host"``
    is host emulation, a :class:`Device` is used as it is.

    A CUDA device is probed once when opened (allocate, compile and launch a tiny kernel,
    a cuBLAS call), so that a broken install fails here with its cause, not at the first
    invoke.

    Raises:
      GpuUnavailableError: cupy is not installed, or no driver, device, NVRTC or cuBLAS.
    """
    if isinstance(device, Device):
        return device
    if device == HOST:
        from backends.gpu.emulation import EmulatedCupy

        # The ops' numpy branch is not CuPy's, so CuPy's own capture limits do not apply to it.
        return Device(EmulatedCupy(device_name="host emulation", cupy_library_rules=False), 0, name=HOST, is_host=True)
    if not isinstance(device, int) or isinstance(device, bool) or device < 0:
        raise ValueError(f"device must be a CUDA device id (int >= 0), {HOST!r} or a Device, got {device!r}")
    cupy = _import_cupy()
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # cupy raises CUDARuntimeError subclasses
        raise GpuUnavailableError(
            f"no usable CUDA driver ({type(error).__name__}: {error}); install an NVIDIA driver that "
            "matches your CuPy (cupy-cuda12x or cupy-cuda13x), or use GpuDelegate(device='host') for host emulation"
        ) from error
    if count == 0:
        raise GpuUnavailableError("no CUDA device found; use GpuDelegate(device='host') for host emulation")
    if device >= count:
        raise GpuUnavailableError(f"CUDA device {device} does not exist (this machine has {count})")
    _probe_once(cupy, device)
    name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    return Device(cupy, device, name=f"cuda:{device} ({name})")


_PROBED: set[tuple[int, int]] = set()


def _probe_once(cupy: ModuleType, device_id: int) -> None:
    key = (id(cupy), device_id)
    if key in _PROBED:
        return
    probe_cuda_device(cupy, device_id)
    _PROBED.add(key)


def emulated_cuda_device(device_id: int = 0, device_count: int = 1) -> Device:
    """Device ``device_id`` of a new emulated machine with ``device_count`` devices, run
    the way a real GPU is: the ops take their CUDA branch (hand-written kernels through
    the host shim, which needs g++), under the emulated machine's rules. Tests use it to
    run, on a CPU, the code that a real device runs."""
    from backends.gpu.emulation import EmulatedCupy

    cupy = EmulatedCupy(device_count=device_count, device_name="emulated CUDA device")
    _probe_once(cupy, device_id)
    return Device(cupy, device_id, name=f"emulated cuda:{device_id}")


def _import_cupy() -> ModuleType:
    try:
        import cupy
    except ImportError as error:
        raise GpuUnavailableError(
            "cupy is not installed: pip install 'litedelegate[gpu]' (cupy-cuda12x with the CUDA libraries) on a "
            "machine with an NVIDIA GPU, or use GpuDelegate(device='host') for host emulation"
        ) from error
    return cupy


def HostDevice() -> Device:  # noqa: N802 (the name of the class host emulation once was)
    """Host emulation: the same as ``open_device("host")``."""
    return open_device(HOST)
