"""Run a hand-written kernel's launcher both ways: on the emulated CUDA device (the ``.cu``
kernel, built for the CPU by the host shim) and in host emulation (its numpy twin, which
the emulated machine runs as one launch). Twin tests compare the two results and the two
launch counts: host emulation must launch what a device launches, and compute it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from backends.gpu.device import DeviceCounters, emulated_cuda_device, open_device


@dataclass
class BothWays:
    kernel: list[np.ndarray]  # the .cu kernel's outputs
    twin: list[np.ndarray]  # the numpy twin's outputs
    kernel_launches: int
    twin_launches: int


def run_both_ways(
    make_launcher: Callable[..., Any],
    source: str,
    inputs: Sequence[np.ndarray | None],
    call: Callable[..., Any] | None = None,
) -> BothWays:
    """``call(launcher, *device_inputs)`` (default ``launcher(*device_inputs)``) on both
    devices; its result (a device array or a tuple of them) comes back to the host."""
    call = call or (lambda launcher, *arrays: launcher(*arrays))
    outputs, launches = [], []
    for device in (emulated_cuda_device(), open_device("host")):
        with device.active():
            launcher = make_launcher(**device.launcher_arguments(source))
            arrays = [None if a is None else device.upload(np.asarray(a)) for a in inputs]
            counters = DeviceCounters()
            with device.counting(counters):
                result = call(launcher, *arrays)
            results = result if isinstance(result, (tuple, list)) else (result,)
            outputs.append([device.download(r) for r in results])
            launches.append(counters.kernel_launches)
    return BothWays(outputs[0], outputs[1], launches[0], launches[1])


def assert_twin_matches(both: BothWays, rtol: float = 0.0, atol: float = 0.0) -> None:
    """The twin computed what the kernel computed (within ``rtol``/``atol``; exact by
    default), with as many launches."""
    assert both.twin_launches == both.kernel_launches, (both.twin_launches, both.kernel_launches)
    assert len(both.kernel) == len(both.twin)
    for kernel, twin in zip(both.kernel, both.twin):
        assert kernel.dtype == twin.dtype and kernel.shape == twin.shape
        if rtol == 0 and atol == 0:
            np.testing.assert_array_equal(twin, kernel)
        else:
            np.testing.assert_allclose(twin.astype(np.float64), kernel.astype(np.float64), rtol=rtol, atol=atol)
