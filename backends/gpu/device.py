"""Devices the GPU delegate runs on: a CUDA device through CuPy, or the host ("host"
emulation, numpy), which a user must ask for by name.

``open_device(0)`` never pretends: without cupy, a driver, a device or NVRTC it raises
:class:`GpuUnavailableError` with one message saying what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

HOST = "host"


class GpuUnavailableError(RuntimeError):
    """No usable CUDA device: the message says what is missing and what to do."""


@dataclass
class TransferCounts:
    """Host<->device traffic, counted by the device (tests and benchmarks read it)."""

    uploads: int = 0
    downloads: int = 0
    upload_bytes: int = 0
    download_bytes: int = 0


class Device:
    """Where GPU-delegate arrays live. ``xp`` is the array namespace (cupy or numpy)."""

    name: str
    xp: ModuleType
    is_host: bool

    def __init__(self) -> None:
        self.transfers = TransferCounts()

    def upload(self, array: np.ndarray, dtype: Any = None) -> Any:
        """Copy a host array to the device (optionally converting its dtype)."""
        array = np.ascontiguousarray(array if dtype is None else np.asarray(array, dtype=dtype))
        self.transfers.uploads += 1
        self.transfers.upload_bytes += array.nbytes
        return self._to_device(array)

    def download(self, array: Any, out: np.ndarray) -> None:
        """Copy a device array into the host array ``out`` (converting dtype if needed)."""
        self.transfers.downloads += 1
        self.transfers.download_bytes += out.nbytes
        out[...] = self._to_host(array)

    def _to_device(self, array: np.ndarray) -> Any:
        raise NotImplementedError

    def _to_host(self, array: Any) -> np.ndarray:
        raise NotImplementedError

    def synchronize(self) -> None:
        return None


class HostDevice(Device):
    """numpy standing in for the device: everything but the hardware runs for real."""

    name = "host"
    is_host = True
    xp = np

    def _to_device(self, array: np.ndarray) -> np.ndarray:
        return array.copy()

    def _to_host(self, array: np.ndarray) -> np.ndarray:
        return array


class CudaDevice(Device):
    """A CUDA device through CuPy: its memory pool and one stream per delegate."""

    is_host = False

    def __init__(self, device_id: int, cupy: ModuleType) -> None:
        super().__init__()
        self.xp = cupy
        self.device_id = device_id
        self.cuda_device = cupy.cuda.Device(device_id)
        with self.cuda_device:
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self.name = f"cuda:{device_id} ({cupy.cuda.runtime.getDeviceProperties(device_id)['name'].decode()})"

    def _to_device(self, array: np.ndarray) -> Any:
        with self.cuda_device, self.stream:
            return self.xp.asarray(array)

    def _to_host(self, array: Any) -> np.ndarray:
        with self.cuda_device, self.stream:
            return self.xp.asnumpy(array, stream=self.stream)

    def synchronize(self) -> None:
        self.stream.synchronize()


def open_device(device: int | str = 0) -> Device:
    """The device for ``GpuDelegate(device=...)``: an int is a CUDA device id, ``"host"``
    is numpy emulation.

    Raises:
      GpuUnavailableError: cupy is not installed, there is no driver, no device, or no NVRTC.
    """
    if device == HOST:
        return HostDevice()
    if not isinstance(device, int) or isinstance(device, bool) or device < 0:
        raise ValueError(f"device must be a CUDA device id (int >= 0) or {HOST!r}, got {device!r}")
    cupy = _import_cupy()
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # cupy raises CUDARuntimeError subclasses
        raise GpuUnavailableError(
            f"no usable CUDA driver ({type(error).__name__}: {error}); install an NVIDIA driver that "
            "matches cupy-cuda12x, or use GpuDelegate(device='host') for host emulation"
        ) from error
    if count == 0:
        raise GpuUnavailableError("no CUDA device found; use GpuDelegate(device='host') for host emulation")
    if device >= count:
        raise GpuUnavailableError(f"CUDA device {device} does not exist (this machine has {count})")
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as error:
        raise GpuUnavailableError(
            f"NVRTC is not available ({type(error).__name__}: {error}); pip install nvidia-cuda-nvrtc-cu12"
        ) from error
    return CudaDevice(device, cupy)


def _import_cupy() -> ModuleType:
    try:
        import cupy
    except ImportError as error:
        raise GpuUnavailableError(
            "cupy is not installed: pip install 'litedelegate[gpu]' (cupy-cuda12x) on a machine with an "
            "NVIDIA GPU, or use GpuDelegate(device='host') for host emulation"
        ) from error
    return cupy
