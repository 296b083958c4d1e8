"""The device probe (``backends/gpu/probe.py``) with small fake CuPy modules: each fake
fails at one step (a allocation, b NVRTC compile and launch, c cuBLAS), and the error
names the step, the underlying error and the fix; a fake where everything works passes
(its RawModule runs the probe kernel with numpy). No device is needed."""

from __future__ import annotations

import re
import types

import numpy as np
import pytest

from backends.gpu import probe
from backends.gpu.device import GpuUnavailableError
from backends.gpu.probe import PROBE_OPTIONS, PROBE_SIZE, PROBE_SOURCE, describe_cuda_install, probe_cuda_device


class CUDARuntimeError(RuntimeError):
    """Named like cupy_backends.cuda.api.runtime.CUDARuntimeError."""


class NVRTCError(RuntimeError):
    """Named like cupy_backends.cuda.libs.nvrtc.NVRTCError."""


class CUBLASError(RuntimeError):
    """Named like cupy_backends.cuda.libs.cublas.CUBLASError."""


class FakeArray:
    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    def get(self) -> np.ndarray:
        return self.data.copy()


class FakeCupy:
    """The subset of CuPy the probe may use, over numpy. ``fail`` names what breaks:
    ``"device"``, ``"empty"``, ``"asarray"``, ``"compile"``, ``"launch"``,
    ``"wrong-kernel"``, ``"arange"`` or ``"matmul"``; ``calls`` records what ran."""

    def __init__(self, fail: str | None = None) -> None:
        self.fail = fail
        self.calls: list[str] = []
        self.cuda = types.SimpleNamespace(Device=self._device)

    def _maybe_fail(self, what: str, error: Exception) -> None:
        self.calls.append(what)
        if self.fail == what:
            raise error

    def _device(self, device_id: int) -> "FakeDevice":
        self._maybe_fail("device", CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient"))
        return FakeDevice(self, device_id)

    def empty(self, shape, dtype=np.float32):
        self._maybe_fail("empty", CUDARuntimeError("cudaErrorMemoryAllocation: out of memory"))
        return FakeArray(np.empty(shape, dtype))

    def asarray(self, array):
        self._maybe_fail("asarray", CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access"))
        return FakeArray(np.array(array))

    def arange(self, n, dtype=None):
        self._maybe_fail(
            "arange",
            RuntimeError("Failed to find CUDA headers. Please install CUDA toolkit headers (e.g., pip install cupy-cuda12x[ctk])"),
        )
        return FakeArray(np.arange(n, dtype=dtype))

    def RawModule(self, code: str, options=()):  # noqa: N802 (CuPy's name)
        self._maybe_fail("compile", NVRTCError("NVRTC_ERROR_BUILTIN_OPERATION_FAILURE (7): libnvrtc-builtins.so.12.9 not found"))
        return FakeModule(self, code, tuple(options))

    def matmul(self, a: FakeArray, b: FakeArray) -> FakeArray:
        self._maybe_fail("matmul", CUBLASError("CUBLAS_STATUS_NOT_INITIALIZED: libcublas.so.12: cannot open shared object file"))
        return FakeArray(a.data @ b.data)


class FakeDevice:
    def __init__(self, cupy: FakeCupy, device_id: int) -> None:
        self.cupy = cupy
        self.device_id = device_id

    def __enter__(self):
        self.cupy.calls.append(f"enter {self.device_id}")
        return self

    def __exit__(self, *exc) -> None:
        self.cupy.calls.append(f"exit {self.device_id}")

    def synchronize(self) -> None:
        self.cupy.calls.append("synchronize")


class FakeModule:
    """Runs the probe kernel with numpy, after checking what NVRTC would be given."""

    def __init__(self, cupy: FakeCupy, code: str, options: tuple) -> None:
        self.cupy = cupy
        self.code = code
        self.options = options

    def get_function(self, name: str):
        assert re.search(rf'extern "C" __global__ void {name}\(', self.code), name
        cupy = self.cupy

        def kernel(grid, block, args):
            cupy._maybe_fail("launch", CUDARuntimeError("cudaErrorUnsupportedPtxVersion: the provided PTX was compiled with an unsupported toolchain"))
            array, n = args
            assert isinstance(n, np.int32), "a kernel's int argument must be passed as numpy.int32"
            assert grid[0] * block[0] >= int(n), "the launch must cover every element"
            values = array.data[: int(n)]
            array.data[: int(n)] = 2 * values + (1 if cupy.fail != "wrong-kernel" else 2)

        return kernel


def probe_error(fake: FakeCupy, device_id: int = 0) -> GpuUnavailableError:
    with pytest.raises(GpuUnavailableError) as caught:
        probe_cuda_device(fake, device_id)
    return caught.value


# -- it passes where everything works -------------------------------------------------------


def test_probe_passes_on_a_working_cupy_and_runs_the_three_steps_in_order_on_that_device():
    fake = FakeCupy()
    probe_cuda_device(fake, 1)
    calls = fake.calls
    assert calls[:2] == ["device", "enter 1"] and calls[-1] == "exit 1"
    steps = [c for c in calls if c in ("empty", "asarray", "compile", "launch", "arange", "matmul")]
    assert steps == ["empty", "asarray", "compile", "launch", "arange", "asarray", "asarray", "matmul"]
    assert "synchronize" in calls


def test_probe_kernel_source_includes_nothing_and_uses_the_delegates_options():
    assert "#include" not in PROBE_SOURCE
    assert PROBE_OPTIONS == ("--std=c++17",)
    assert 'extern "C" __global__ void litedelegate_probe(' in PROBE_SOURCE


def test_probe_kernel_compiles_with_the_pip_nvrtc_without_headers():
    """The source must compile with the NVRTC wheel alone (CI: cupy-cuda12x and
    nvidia-cuda-nvrtc-cu12, no CUDA headers), as CuPy's RawModule would compile it."""
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    from backends.gpu.cuda.nvrtc import compile_source

    cubin = compile_source(PROBE_SOURCE, "litedelegate_probe.cu", "sm_75", options=PROBE_OPTIONS, warnings_as_errors=True)
    assert cubin[:4] == b"\x7fELF"


# -- each step's failure names the step, the cause and the fix -----------------------------


@pytest.mark.parametrize(
    "fail, cause",
    [
        ("device", "CUDARuntimeError: cudaErrorInsufficientDriver: CUDA driver version is insufficient"),
        ("empty", "CUDARuntimeError: cudaErrorMemoryAllocation: out of memory"),
        ("asarray", "CUDARuntimeError: cudaErrorIllegalAddress: an illegal memory access"),
    ],
)
def test_a_failed_allocation_names_step_a_the_cause_and_the_driver_fix(fail, cause):
    fake = FakeCupy(fail)
    error = probe_error(fake, 0)
    message = str(error)
    assert "CUDA device 0" in message
    assert "step a (allocation and copy)" in message
    assert cause in message
    assert "fix: install or update the NVIDIA driver" in message and "nvidia-smi" in message
    assert isinstance(error.__cause__, CUDARuntimeError)
    assert "compile" not in fake.calls and "matmul" not in fake.calls  # stopped at a


@pytest.mark.parametrize(
    "fail, cause",
    [
        ("compile", "NVRTCError: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE (7): libnvrtc-builtins.so.12.9 not found"),
        ("launch", "CUDARuntimeError: cudaErrorUnsupportedPtxVersion: the provided PTX was compiled"),
        ("arange", "RuntimeError: Failed to find CUDA headers. Please install CUDA toolkit headers"),
    ],
)
def test_a_failed_compile_or_launch_names_step_b_the_cause_and_the_nvrtc_fix(fail, cause):
    fake = FakeCupy(fail)
    message = str(probe_error(fake, 0))
    assert "step b (NVRTC compile and kernel launch)" in message
    assert cause in message
    assert "fix: NVRTC, the CUDA headers or the driver are missing or mismatched" in message
    assert "pip install 'litedelegate[gpu]'" in message and "cupy-cuda12x[ctk]" in message
    assert "litedelegate[gpu-cuda13]" in message and "update the NVIDIA driver" in message
    assert "matmul" not in fake.calls  # stopped at b
    assert fake.calls[-1] == "exit 0"  # and left the device's context


def test_a_kernel_that_computes_wrong_values_fails_step_b_with_the_first_wrong_element():
    message = str(probe_error(FakeCupy("wrong-kernel")))
    assert "step b (NVRTC compile and kernel launch)" in message
    assert "WrongResult: the probe kernel (out[i] = 2*i+1) gave wrong values" in message
    assert f"at {PROBE_SIZE} of {PROBE_SIZE} element(s), first at [0]: 2.0 instead of 1.0" in message


def test_a_failed_matmul_names_step_c_the_cause_and_the_ctk_fix():
    error = probe_error(FakeCupy("matmul"), 2)
    message = str(error)
    assert "CUDA device 2" in message
    assert "step c (cuBLAS matmul)" in message
    assert "CUBLASError: CUBLAS_STATUS_NOT_INITIALIZED: libcublas.so.12: cannot open shared object file" in message
    assert "fix: cuBLAS is missing or does not load: pip install 'litedelegate[gpu]'" in message
    assert "nvidia-cublas-cu12" in message and "cupy-cuda13x[ctk]" in message
    assert isinstance(error.__cause__, CUBLASError)


def test_a_matmul_with_wrong_numbers_fails_step_c(monkeypatch):
    fake = FakeCupy()
    monkeypatch.setattr(fake, "matmul", lambda a, b: FakeArray(a.data @ b.data + 1))
    message = str(probe_error(fake))
    assert "step c (cuBLAS matmul)" in message and "WrongResult: cupy.matmul (16x8 @ 8x12) gave wrong values" in message


def test_a_long_multi_line_cause_is_one_line_in_the_message(monkeypatch):
    fake = FakeCupy()

    def broken(code, options=()):
        raise NVRTCError("line one\nline two\n" + "x" * 2000)

    monkeypatch.setattr(fake, "RawModule", broken)
    message = str(probe_error(fake))
    assert "\n" not in message and "line one line two" in message and len(message) < 1500


# -- describe_cuda_install ------------------------------------------------------------------


def _raises(*_args, **_kwargs):
    raise RuntimeError("broken")


def test_describe_says_unknown_for_everything_that_fails():
    class Broken:
        @property
        def __version__(self):
            raise RuntimeError("broken")

    broken = Broken()
    broken.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(runtimeGetVersion=_raises, driverGetVersion=_raises),
        nvrtc=types.SimpleNamespace(getVersion=_raises),
    )
    assert describe_cuda_install(broken) == "CuPy unknown, CUDA runtime unknown, driver unknown, NVRTC unknown"
    # a module with no cuda namespace at all
    assert describe_cuda_install(types.SimpleNamespace()) == "CuPy unknown, CUDA runtime unknown, driver unknown, NVRTC unknown"


def test_describe_reads_the_versions():
    fake = types.SimpleNamespace(
        __version__="14.2.0",
        cuda=types.SimpleNamespace(
            runtime=types.SimpleNamespace(runtimeGetVersion=lambda: 12090, driverGetVersion=lambda: 13000),
            nvrtc=types.SimpleNamespace(getVersion=lambda: (12, 9)),
        ),
    )
    assert describe_cuda_install(fake) == "CuPy 14.2.0, CUDA runtime 12.9, driver 13.0, NVRTC 12.9"
    fake.cuda.runtime.driverGetVersion = lambda: 0  # what CuPy returns without a driver
    assert "driver none" in describe_cuda_install(fake)


def test_describe_with_the_installed_cupy_is_one_line():
    cupy = pytest.importorskip("cupy")
    line = describe_cuda_install(cupy)
    assert line.startswith(f"CuPy {cupy.__version__}") and "\n" not in line
    assert re.search(r"CUDA runtime (\d+\.\d+|unknown), driver (\d+\.\d+|none|unknown), NVRTC (\d+\.\d+|unknown)$", line), line


def test_device_and_probe_do_not_import_each_other():
    # The errors live in backends/gpu/errors.py, which both import: no import circle, lazy or not.
    import ast
    import pathlib

    gpu = pathlib.Path(probe.__file__).parent

    def imported(name: str) -> set[str]:
        tree = ast.parse((gpu / f"{name}.py").read_text(encoding="utf-8"))
        return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}

    assert "backends.gpu.device" not in imported("probe")
    assert "backends.gpu.probe" in imported("device")
    assert not {"backends.gpu.device", "backends.gpu.probe"} & imported("errors")
