"""The CuPy GPU delegate (with host emulation for machines without a GPU)."""

from backends.gpu.delegate import GpuDelegate, PartitionStats
from backends.gpu.device import Device, DeviceCounters, GpuUnavailableError, HostDevice, emulated_cuda_device, open_device

__all__ = [
    "Device", "DeviceCounters", "GpuDelegate", "GpuUnavailableError", "HostDevice", "PartitionStats",
    "emulated_cuda_device", "open_device",
]
