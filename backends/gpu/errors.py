"""The GPU delegate's own errors, in a module that imports nothing of the delegate's, so that
``device.py`` and ``probe.py`` can both raise them without importing each other."""

from __future__ import annotations


class GpuUnavailableError(RuntimeError):
    """No usable CUDA device: the message says what is missing and what to do."""


class DeviceMemoryError(MemoryError):
    """The device (or the pinned host memory staging its copies) could not hold a buffer
    the delegate needs: the message says how many bytes, for what, and what to do."""
