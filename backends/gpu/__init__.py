"""The CuPy GPU delegate (with host emulation for machines without a GPU)."""

from backends.gpu.delegate import GpuDelegate
from backends.gpu.device import GpuUnavailableError, HostDevice, open_device

__all__ = ["GpuDelegate", "GpuUnavailableError", "HostDevice", "open_device"]
