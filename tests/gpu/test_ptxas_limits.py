"""Every kernel, assembled by NVIDIA's ptxas for sm_80 and sm_90 from the PTX that NVRTC makes
of it as the project builds it (``nvrtc.compile_source``: CuPy's options), fits every launch the
launchers ask for (``launch_configurations.py``), within the hardware's limits:

- no register spills (spill stores and loads 0);
- no stack frame, that is no local memory: no accumulator (nor anything else) lives in local
  memory, except in the kernels of :data:`STACK_FRAME_ALLOWED`, each with its reason;
- registers x threads per block within the SM's 65,536 registers, as the hardware allocates
  them (per warp, in units of 256 registers);
- static + dynamic shared memory per block within 48 KB, or within the kernel's opt-in
  attribute (``max_dynamic_shared_size_bytes``) and the architecture's opt-in maximum.

So a kernel edit that would fail to launch on a GPU (too many registers for its block, too much
shared memory) or that puts its sums in local memory fails here, without a GPU. ptxas comes from
the ``nvidia-cuda-nvcc-cu12`` wheel (the ``test`` extra); without it the test is skipped.
"""

from __future__ import annotations

import functools
import pathlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

import pytest

from backends.gpu.cuda.sources import KERNELS, SOURCES, read_source
from launch_configurations import LaunchConfiguration, launch_configurations

#: The SM limits the checks use, per architecture (CUDA C Programming Guide, "Technical
#: Specifications per Compute Capability"): registers per SM (and per block), the register
#: allocation unit per warp, and the shared memory a block may opt in to.
@dataclass(frozen=True)
class Limits:
    registers_per_block: int = 65536
    register_unit: int = 256  # registers are allocated per warp in units of 256
    static_shared_bytes: int = 48 * 1024  # static, and static + dynamic without the opt-in
    opt_in_shared_bytes: int = 0


LIMITS = {"sm_80": Limits(opt_in_shared_bytes=163 * 1024), "sm_90": Limits(opt_in_shared_bytes=227 * 1024)}

#: Kernels that may keep a stack frame, and why: none of them has an accumulator there.
STACK_FRAME_ALLOWED = {
    name: "sinf/cosf (CUDA's libdevice) reduce a huge argument with a 28-byte table on the stack; "
          "the kernel has no accumulator"
    for name in ("elementwise_unary_f32", "elementwise_unary_f16")
} | {
    name: "cosf/sinf of the rotation: the same 28-byte table on the stack for a huge angle; one thread, no accumulator"
    for name in ("landmarks_to_transform_matrix_f32", "landmarks_to_transform_matrix_f16")
}


@dataclass(frozen=True)
class PtxasReport:
    """What ``ptxas -v`` says of one entry function."""

    registers: int
    shared_bytes: int  # static __shared__
    stack_bytes: int
    spill_stores: int
    spill_loads: int


def ptxas_path() -> str | None:
    """ptxas from the nvidia-cuda-nvcc-cu12 wheel, else on PATH."""
    try:
        import nvidia.cuda_nvcc

        for root in nvidia.cuda_nvcc.__path__:
            candidate = pathlib.Path(root) / "bin" / "ptxas"
            if candidate.is_file():
                return str(candidate)
    except ImportError:
        pass
    return shutil.which("ptxas")


_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(sm_\d+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas_report(log: str) -> dict[str, PtxasReport]:
    """``{kernel: report}`` from ptxas's ``-v`` output."""
    reports, kernel, frame = {}, None, None
    for line in log.splitlines():
        if entry := _ENTRY.search(line):
            kernel, frame = entry[1], None
        elif (match := _FRAME.search(line)) and kernel:
            frame = tuple(int(v) for v in match.groups())
        elif (match := _USED.search(line)) and kernel:
            if frame is None:
                raise AssertionError(f"ptxas gave no stack frame line for {kernel}:\n{log}")
            reports[kernel] = PtxasReport(int(match[1]), int(match[2] or 0), *frame)
            kernel = None
    return reports


@functools.lru_cache(maxsize=None)
def assembled(source: str, arch: str) -> dict[str, PtxasReport]:
    """ptxas's report of every kernel of ``source`` on ``arch`` (``"sm_80"``), from NVRTC's PTX."""
    from backends.gpu.cuda.nvrtc import compile_source

    ptx = compile_source(read_source(source), source, arch.replace("sm_", "compute_"))
    with tempfile.TemporaryDirectory() as work:
        path = pathlib.Path(work) / f"{pathlib.Path(source).stem}.ptx"
        path.write_bytes(ptx)
        result = subprocess.run(
            [ptxas_path(), "-v", f"-arch={arch}", str(path), "-o", str(path.with_suffix(".cubin"))],
            capture_output=True, text=True, check=False,
        )
    assert result.returncode == 0, f"ptxas failed on {source} for {arch}:\n{result.stderr}"
    return parse_ptxas_report(result.stderr)


needs_ptxas = pytest.mark.skipif(
    ptxas_path() is None, reason="ptxas not found: pip install nvidia-cuda-nvcc-cu12 (the 'test' extra)"
)
try:
    import cupy_backends.cuda.libs.nvrtc  # noqa: F401

    HAVE_NVRTC = True
except ImportError:
    HAVE_NVRTC = False
needs_nvrtc = pytest.mark.skipif(not HAVE_NVRTC, reason="NVRTC not available: pip install cupy-cuda12x nvidia-cuda-nvrtc-cu12")


@functools.lru_cache(maxsize=None)
def all_launches() -> tuple[LaunchConfiguration, ...]:
    return tuple(launch_configurations())


def test_every_kernel_has_a_launch_configuration():
    launched = {launch.kernel for launch in all_launches()}
    missing = sorted(set(KERNELS) - launched)
    assert not missing, f"no probe of launch_configurations.py launches {missing}: add one"
    unknown = sorted(launched - set(KERNELS))
    assert not unknown, f"the launchers launch kernels no source defines: {unknown}"


def register_footprint(registers: int, threads: int, limits: Limits) -> int:
    """The registers a block of ``threads`` holds: per warp, rounded up to the allocation unit."""
    warps = -(-threads // 32)
    per_warp = -(-registers * 32 // limits.register_unit) * limits.register_unit
    return warps * per_warp


def launch_problems(launch: LaunchConfiguration, report: PtxasReport, limits: Limits) -> list[str]:
    """What would keep ``launch`` from running on the architecture (empty when nothing)."""
    problems = []
    registers = register_footprint(report.registers, launch.threads, limits)
    if registers > limits.registers_per_block:
        problems.append(f"{report.registers} registers x {launch.threads} threads = {registers} > {limits.registers_per_block}")
    shared = report.shared_bytes + launch.dynamic_shared_bytes
    allowed = limits.static_shared_bytes
    if launch.max_dynamic_shared_bytes:
        allowed = min(report.shared_bytes + launch.max_dynamic_shared_bytes, limits.opt_in_shared_bytes)
        if launch.dynamic_shared_bytes > launch.max_dynamic_shared_bytes:
            problems.append(f"{launch.dynamic_shared_bytes} bytes of dynamic shared memory past its opt-in {launch.max_dynamic_shared_bytes}")
    if report.shared_bytes > limits.static_shared_bytes or shared > allowed:
        problems.append(f"{report.shared_bytes} static + {launch.dynamic_shared_bytes} dynamic bytes of shared memory > {allowed}")
    return problems


@needs_ptxas
@needs_nvrtc
@pytest.mark.parametrize("arch", sorted(LIMITS))
@pytest.mark.parametrize("source", SOURCES)
def test_every_kernel_assembles_without_spills_or_local_memory(source, arch):
    reports = assembled(source, arch)
    problems = []
    for kernel in (info.name for info in KERNELS.values() if info.source == source):
        report = reports.get(kernel)
        if report is None:
            problems.append(f"{kernel}: not in ptxas's report")
            continue
        if report.spill_stores or report.spill_loads:
            problems.append(f"{kernel}: spills ({report.spill_stores} bytes stored, {report.spill_loads} loaded)")
        if report.stack_bytes and kernel not in STACK_FRAME_ALLOWED:
            problems.append(f"{kernel}: a {report.stack_bytes}-byte stack frame (local memory)")
    assert not problems, f"{source} on {arch}:\n" + "\n".join(problems)


@needs_ptxas
@needs_nvrtc
@pytest.mark.parametrize("arch", sorted(LIMITS))
@pytest.mark.parametrize("source", SOURCES)
def test_every_launch_the_launchers_ask_for_fits_the_kernel_on_the_hardware(source, arch):
    reports = assembled(source, arch)
    problems = set()
    for launch in all_launches():
        if KERNELS[launch.kernel].source != source:
            continue
        for problem in launch_problems(launch, reports[launch.kernel], LIMITS[arch]):
            problems.add(f"{launch.kernel} block {launch.block} ({launch.probe}): {problem}")
    assert not problems, f"{source} on {arch}:\n" + "\n".join(sorted(problems))


def test_the_stack_frame_exceptions_name_kernels_that_exist():
    assert set(STACK_FRAME_ALLOWED) <= set(KERNELS)


# -- the checks themselves, on reports and launches made up for them ------------------------------------

LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'tiles' for 'sm_80'
ptxas info    : Function properties for tiles
    64 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 66 registers, used 1 barriers, 8256 bytes smem, 468 bytes cmem[0]
ptxas info    : Compiling entry function 'plain' for 'sm_80'
ptxas info    : Function properties for plain
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 0 barriers, 380 bytes cmem[0]
"""


def test_the_ptxas_report_is_parsed_per_kernel():
    assert parse_ptxas_report(LOG) == {
        "tiles": PtxasReport(registers=66, shared_bytes=8256, stack_bytes=64, spill_stores=8, spill_loads=4),
        "plain": PtxasReport(registers=18, shared_bytes=0, stack_bytes=0, spill_stores=0, spill_loads=0),
    }


def launch(threads: int, dynamic: int = 0, opt_in: int = 0) -> LaunchConfiguration:
    return LaunchConfiguration("k", (1, 1, 1), (threads, 1, 1), dynamic, opt_in, "made up")


def test_registers_times_threads_past_the_register_file_is_a_problem():
    limits = LIMITS["sm_90"]
    assert launch_problems(launch(512), PtxasReport(128, 0, 0, 0, 0), limits) == []  # 128 x 512 = 65536
    assert launch_problems(launch(512), PtxasReport(130, 0, 0, 0, 0), limits)  # 130 x 32 rounds up to 4352 a warp
    # 255 registers round up to 256 per thread in the warp's allocation: 256 threads need 65536.
    assert launch_problems(launch(256), PtxasReport(255, 0, 0, 0, 0), limits) == []
    assert launch_problems(launch(288), PtxasReport(255, 0, 0, 0, 0), limits)


def test_shared_memory_past_48_kb_needs_the_opt_in_and_stays_within_it():
    limits = LIMITS["sm_80"]
    report = PtxasReport(32, 8 * 1024, 0, 0, 0)
    assert launch_problems(launch(256, dynamic=40 * 1024), report, limits) == []  # 48 KB exactly
    assert launch_problems(launch(256, dynamic=40 * 1024 + 4), report, limits)
    assert launch_problems(launch(256, dynamic=100 * 1024, opt_in=100 * 1024), report, limits) == []
    assert launch_problems(launch(256, dynamic=100 * 1024, opt_in=96 * 1024), report, limits)
    assert launch_problems(launch(256, dynamic=160 * 1024, opt_in=160 * 1024), report, limits)  # > 163 KB
