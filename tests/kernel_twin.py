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


#: How far a float kernel's result may lie from its numpy twin's (numpy's ``rtol``/``atol``), by
#: the dtype the result is stored in: the one tolerance of every kernel-against-twin comparison.
#:
#: The kernel and its twin evaluate the same float32 expression; they may differ in how they
#: round it, and on a device more than on the host shim:
#: - order: the twin sums in numpy's or BLAS's order, the kernel in its own (sequentially, or
#:   a tensor core's 16 products at once);
#: - fused multiply-adds: NVRTC contracts ``acc + x * w`` into one fma (``--fmad=true``, one
#:   rounding where the twin has two); the host shim rounds twice, as the twin;
#: - flush-to-zero: CuPy compiles with ``-ftz=true``, so a float32 subnormal (below 2**-126,
#:   about 1.2e-38) read or produced by the kernel is 0 on a device.
#: Each rounding moves a partial sum by at most u = 2**-24 of its magnitude. The tests' sums
#: have at most a few hundred terms of magnitude about 1 (standard-normal or uniform inputs and
#: weights), so their partial sums stay below about 30, and their roundings, of random signs,
#: move a result by about u * 30 * sqrt(300), 3e-5, at the very most: hence ``rtol`` 2**-16
#: (1.5e-5, 256 units in the last place; a result of magnitude s may move by rtol * s) and
#: ``atol`` 2**-14 (6.1e-5: a result that cancels to about 0 moves as much as its partial
#: sums; a flushed subnormal moves by less than 1.2e-38). CUDA's expf, tanhf, powf... are
#: within 2 ulp of numpy's, far inside both. A wrong index or a lost term moves a result by a
#: whole term (0.1 to 1): far outside.
#: float16 storage: both round the same float32 value to binary16, except where the float32
#: values differ across a rounding boundary: one half ulp apart, 2**-10 relative (2**-24 absolute
#: among subnormal halves). Hence ``rtol`` 2**-9 (two half ulps) and the float32 ``atol``.
TWIN_TOLERANCE: dict[np.dtype, dict[str, float]] = {
    np.dtype(np.float32): {"rtol": 2.0**-16, "atol": 2.0**-14},
    np.dtype(np.float16): {"rtol": 2.0**-9, "atol": 2.0**-14},
}


def assert_equals_twin(kernel: np.ndarray, twin: np.ndarray, err_msg: str = "") -> None:
    """``kernel`` (a kernel's result) equals ``twin`` (its twin's): the same dtype and shape,
    integers bit for bit, floats within :data:`TWIN_TOLERANCE` (NaN where the other has NaN)."""
    assert kernel.dtype == twin.dtype and kernel.shape == twin.shape, (kernel.dtype, kernel.shape, twin.dtype, twin.shape)
    assert_close_to_reference(kernel, twin, err_msg)


def assert_close_to_reference(kernel: np.ndarray, reference: np.ndarray, err_msg: str = "") -> None:
    """``kernel`` (a kernel's result) equals ``reference`` (numpy's, in any dtype) within
    :data:`TWIN_TOLERANCE` of the kernel's float dtype, or bit for bit for an integer result."""
    kernel = np.asarray(kernel)
    if kernel.dtype.kind != "f":
        np.testing.assert_array_equal(kernel, reference, err_msg=err_msg)
        return
    np.testing.assert_allclose(kernel.astype(np.float64), np.asarray(reference).astype(np.float64), err_msg=err_msg,
                               **TWIN_TOLERANCE[kernel.dtype])


def assert_twin_matches(both: BothWays, rtol: float | None = None, atol: float | None = None) -> None:
    """The twin computed what the kernel computed, with as many launches: integers bit for bit,
    floats within :data:`TWIN_TOLERANCE` (or an explicit ``rtol``/``atol``)."""
    assert both.twin_launches == both.kernel_launches, (both.twin_launches, both.kernel_launches)
    assert len(both.kernel) == len(both.twin)
    for kernel, twin in zip(both.kernel, both.twin):
        if rtol is None and atol is None:
            assert_equals_twin(kernel, twin)
            continue
        assert kernel.dtype == twin.dtype and kernel.shape == twin.shape
        np.testing.assert_allclose(twin.astype(np.float64), kernel.astype(np.float64), rtol=rtol or 0.0, atol=atol or 0.0)


def exact_values(rng: np.random.Generator, shape, dtype=np.float32) -> np.ndarray:
    """Values in {-1, -3/4, ..., 3/4, 1}: their products are multiples of 1/16 and every sum of
    fewer than 2**20 of them is exact in float32, in any order, with or without fused
    multiply-adds, and never subnormal. Two kernels that add the same products then agree bit
    for bit on a device too (their float16 results round the same exact value)."""
    return (rng.integers(-4, 5, shape) / 4).astype(dtype)
