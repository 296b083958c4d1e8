"""The device the ``gpu``-marked tests run on.

By default CUDA device ``i`` (``open_device(i)``). With ``LITEDELEGATE_TEST_DEVICE=emulated``
they run on the emulated CUDA machine instead, through the very code path a GPU takes
(the hand-written kernels run by the host shim, CuPy's calls by the emulated CuPy), so
the device tests are themselves checked on any machine: the device check's ``--host``
mode does this.
"""

from __future__ import annotations

import os

import pytest

EMULATED = os.environ.get("LITEDELEGATE_TEST_DEVICE") == "emulated"


@pytest.fixture
def cuda_device():
    """``make(device_id=0)``: a new Device for the GPU delegate on that device."""
    from backends.gpu.device import emulated_cuda_device, open_device

    def make(device_id: int = 0):
        if EMULATED:
            return emulated_cuda_device(device_id, device_count=max(2, device_id + 1))
        return open_device(device_id)

    return make


@pytest.fixture
def cuda_device_count() -> int:
    if EMULATED:
        return 2
    import cupy

    return cupy.cuda.runtime.getDeviceCount()
