"""Check that a CUDA device really works before the GPU delegate claims it.

``cupy.cuda.runtime.getDeviceCount() > 0`` is not enough: CuPy imports and counts devices
without NVRTC, without the CUDA headers CuPy compiles against and without cuBLAS, and then
fails at the first kernel of the first inference. :func:`probe_cuda_device` runs, once, the
three things the delegate needs (allocate and copy, compile and launch kernels, a cuBLAS
matrix product) and turns the first failure into a :class:`GpuUnavailableError` that names
the step, the underlying error and the fix.

It uses only this part of CuPy's API (an emulated CuPy for tests implements exactly it):
``cuda.Device(i)`` as a context manager and its ``synchronize()``, ``empty``, ``arange``,
``asarray``, ``RawModule(code=..., options=...)``, ``get_function``, calling a kernel as
``kernel(grid, block, args)``, ``matmul`` and ``ndarray.get()``.
"""

from __future__ import annotations

from contextlib import ExitStack
from types import ModuleType
from typing import Any, Callable

import numpy as np

from backends.gpu.errors import GpuUnavailableError

#: Threads the probe kernel runs (one block).
PROBE_SIZE = 256

#: The probe kernel: ``x[i] = 2 * x[i] + 1``. It includes nothing, so it compiles with the
#: NVRTC of a pip wheel that ships no headers; a failure to compile it is then CuPy's
#: environment (NVRTC, the headers CuPy itself adds, the driver), not this source.
PROBE_SOURCE = r"""
extern "C" __global__ void litedelegate_probe(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = 2.0f * x[i] + 1.0f;
    }
}
"""

#: ``cupy.RawModule`` options, as the delegate passes them (``sources.CUPY_OPTIONS``).
PROBE_OPTIONS = ("--std=c++17",)

_DRIVER_FIX = (
    "install or update the NVIDIA driver (cupy-cuda12x needs one for CUDA 12, >= 525; cupy-cuda13x one for "
    "CUDA 13, >= 580; `nvidia-smi` shows it) and check that the device is not out of memory or held in "
    "exclusive mode by another process"
)
_NVRTC_FIX = (
    "NVRTC, the CUDA headers or the driver are missing or mismatched: pip install 'litedelegate[gpu]' "
    "(cupy-cuda12x[ctk]: NVRTC, the headers and cuBLAS from pip), or on a CUDA 13 driver "
    "'litedelegate[gpu-cuda13]' (cupy-cuda13x[ctk]); keep one CuPy package only; update the NVIDIA driver if "
    "it is older than the CUDA of NVRTC"
)
_CUBLAS_FIX = (
    "cuBLAS is missing or does not load: pip install 'litedelegate[gpu]' (cupy-cuda12x[ctk] brings "
    "nvidia-cublas-cu12), or on a CUDA 13 driver 'litedelegate[gpu-cuda13]' (cupy-cuda13x[ctk])"
)

STEP_ALLOCATION = "a (allocation and copy)"
STEP_KERNEL = "b (NVRTC compile and kernel launch)"
STEP_CUBLAS = "c (cuBLAS matmul)"


class WrongResult(Exception):
    """A step ran but gave wrong numbers."""


def probe_cuda_device(cupy: ModuleType, device_id: int) -> None:
    """Run, once, on CUDA device ``device_id``: (a) an allocation and a copy there and back
    (driver only), (b) an NVRTC compile and launch of a tiny kernel, then one of CuPy's own
    kernels (``cupy.arange``, which needs the CUDA headers), (c) a cuBLAS matrix product;
    each result is checked against numpy. It takes milliseconds once CuPy's kernel cache
    holds the kernels; the caller runs it once per device it opens.

    Raises:
      GpuUnavailableError: naming the step that failed, the underlying error (type and
        message) and the fix.
    """
    with ExitStack() as stack:
        # Selecting the device is part of step a: without a driver it is what fails first.
        device = _step(STEP_ALLOCATION, device_id, _DRIVER_FIX, lambda: _enter(stack, cupy, device_id))
        array = _step(STEP_ALLOCATION, device_id, _DRIVER_FIX, lambda: _allocate(cupy, device))
        _step(STEP_KERNEL, device_id, _NVRTC_FIX, lambda: _run_kernel(cupy, device, array))
        _step(STEP_CUBLAS, device_id, _CUBLAS_FIX, lambda: _matmul(cupy, device))


def _step(name: str, device_id: int, fix: str, run: Callable[[], Any]) -> Any:
    try:
        return run()
    except Exception as error:
        raise GpuUnavailableError(
            f"CUDA device {device_id} failed the GPU delegate's probe at step {name}: "
            f"{type(error).__name__}: {_one_line(error)}; fix: {fix}"
        ) from error


def _enter(stack: ExitStack, cupy: ModuleType, device_id: int) -> Any:
    device = cupy.cuda.Device(device_id)
    stack.enter_context(device)
    return device


def _allocate(cupy: ModuleType, device: Any) -> Any:
    # No kernel here: cupy.empty and a host-to-device copy need the driver only, so a
    # failure is the driver's or the device's (cupy.arange would compile a kernel).
    scratch = cupy.empty((PROBE_SIZE,), dtype=np.float32)
    array = cupy.asarray(np.arange(PROBE_SIZE, dtype=np.float32))
    device.synchronize()
    _check(np.asarray(array.get()), np.arange(PROBE_SIZE, dtype=np.float32), "a copy to the device and back")
    del scratch
    return array


def _run_kernel(cupy: ModuleType, device: Any, array: Any) -> None:
    module = cupy.RawModule(code=PROBE_SOURCE, options=PROBE_OPTIONS)
    kernel = module.get_function("litedelegate_probe")
    kernel((1,), (PROBE_SIZE,), (array, np.int32(PROBE_SIZE)))
    device.synchronize()
    expected = 2 * np.arange(PROBE_SIZE, dtype=np.float32) + 1
    _check(np.asarray(array.get()), expected, "the probe kernel (out[i] = 2*i+1)")
    # CuPy's own kernels (cupy.arange is one) #include CuPy's headers, which include the
    # CUDA headers (cuda_fp16.h). CuPy 14 already refuses the RawModule above without
    # them ("Failed to find CUDA headers"); an older CuPy fails only here.
    counted = cupy.arange(PROBE_SIZE, dtype=np.float32)
    device.synchronize()
    _check(np.asarray(counted.get()), np.arange(PROBE_SIZE, dtype=np.float32), "cupy.arange (a CuPy kernel)")


def _matmul(cupy: ModuleType, device: Any) -> None:
    # Small integers: every product and sum is exact in float32 (and in TF32), so any
    # difference is a fault, not rounding.
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, size=(16, 8)).astype(np.float32)
    b = rng.integers(-3, 4, size=(8, 12)).astype(np.float32)
    product = cupy.matmul(cupy.asarray(a), cupy.asarray(b))
    device.synchronize()
    _check(np.asarray(product.get()), a @ b, "cupy.matmul (16x8 @ 8x12)")


def _check(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    if got.shape != expected.shape:
        raise WrongResult(f"{what} returned shape {got.shape}, expected {expected.shape}")
    wrong = np.argwhere(got != expected)
    if len(wrong):
        index = tuple(int(i) for i in wrong[0])
        raise WrongResult(
            f"{what} gave wrong values at {len(wrong)} of {expected.size} element(s), first at {list(index)}: "
            f"{got[index].item()!r} instead of {expected[index].item()!r}"
        )


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 500 else text[:497] + "..."


def describe_cuda_install(cupy: Any) -> str:
    """One line on the CUDA stack CuPy sees, for reports, e.g. ``CuPy 14.2.0
    (cupy-cuda12x), CUDA runtime 12.9, driver 13.0, NVRTC 12.9``. Each part that cannot be
    read says ``unknown``; a driver version of 0 (no driver) says ``none``."""
    return ", ".join(
        (
            f"CuPy {_try(lambda: str(cupy.__version__))}{_cupy_packages(cupy)}",
            f"CUDA runtime {_try(lambda: _cuda_version(cupy.cuda.runtime.runtimeGetVersion()))}",
            f"driver {_try(lambda: _cuda_version(cupy.cuda.runtime.driverGetVersion()))}",
            f"NVRTC {_try(lambda: '.'.join(str(int(v)) for v in _nvrtc(cupy).getVersion()))}",
        )
    )


def _try(read: Callable[[], str]) -> str:
    try:
        return read()
    except Exception:
        return "unknown"


def _cuda_version(value: Any) -> str:
    """``12090`` -> ``12.9`` (CUDA's ``1000 * major + 10 * minor``); ``0`` -> ``none``."""
    value = int(value)
    if value == 0:
        return "none"
    return f"{value // 1000}.{value % 1000 // 10}"


def _nvrtc(cupy: Any) -> Any:
    nvrtc = getattr(cupy.cuda, "nvrtc", None)  # CuPy re-exports cupy_backends.cuda.libs.nvrtc
    if nvrtc is None and getattr(cupy, "__name__", None) == "cupy":  # the real CuPy, an old release
        from cupy_backends.cuda.libs import nvrtc
    if nvrtc is None:
        raise LookupError("this CuPy has no NVRTC binding")
    return nvrtc


def _cupy_packages(cupy: Any) -> str:
    """`` (cupy-cuda12x)``: the installed CuPy distributions, when ``cupy`` is the real
    one; two of them conflict."""
    if getattr(cupy, "__name__", None) != "cupy":
        return ""
    try:
        from importlib.metadata import distributions

        names = sorted(
            {
                name
                for name in (_distribution_name(dist) for dist in distributions())
                if name.lower() == "cupy" or name.lower().startswith(("cupy-cuda", "cupy-rocm"))
            }
        )
    except Exception:
        return ""
    if not names:
        return ""
    if len(names) > 1:
        return f" ({' + '.join(names)}: conflicting CuPy packages, keep one)"
    return f" ({names[0]})"


def _distribution_name(dist: Any) -> str:
    try:
        return str(dist.metadata["Name"] or "")
    except Exception:
        return ""
