"""Compile CUDA sources with NVRTC alone (no driver, no device): the CI check that every
shipped ``.cu`` compiles exactly as ``cupy.RawModule`` would compile it on a GPU machine.

NVRTC accepts less than nvcc (no ``INFINITY``, no implicit host headers), so a kernel that
nvcc builds can still fail at the user's first inference; this catches it in CI.

Options replicated from CuPy (14.x; ``cupy/_core/core.pyx: assemble_cupy_compiler_options``
and ``cupy/cuda/compiler.py: _compile_with_cache_cuda, _compile_using_nvrtc_no_warning``,
RawModule path with NVRTC and without jitify), in CuPy's order:

1.-2. the user options (``sources.CUPY_OPTIONS``: ``--std=c++17``) with the include paths
   CuPy puts around them (bundled CCCL before, CuPy's own headers and the CUDA headers it
   finds after), by calling CuPy's own ``assemble_cupy_compiler_options`` when CuPy is
   importable; without CuPy, the user options alone (our sources include nothing, so the
   paths matter only to a future source that includes a CuPy header). CuPy adds
   ``--std=c++17`` (CuPy 14; ``c++11`` before) only when no ``-std`` is given: so do we;
3. ``-ftz=true`` (flush subnormals to zero: always added by CuPy);
4. ``-arch=sm_XY`` when XY is at most the newest architecture this NVRTC knows (CuPy
   then loads the cubin), else ``-arch=compute_XY`` (PTX); ``compile_source`` takes either
   form and returns the cubin or the PTX accordingly;
5. ``--device-as-default-execution-space`` (CuPy adds it whenever jitify is off).

Not replicated: ``--pch`` (only with ``CUPY_NVRTC_USE_PCH=1``), debug options
(``CUPY_CUDA_COMPILE_WITH_DEBUG``), and the cupy headers CuPy prepends for ElementwiseKernel
(RawModule does not prepend them).

Uses the low-level binding ``cupy_backends.cuda.libs.nvrtc`` because
``cupy.cuda.compiler.compile_using_nvrtc`` asks the driver for the device's architecture.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from backends.gpu.cuda.sources import CUPY_OPTIONS, SOURCES, read_source

#: NVRTC's error/warning lines: ``name(LINE): error: message``.
_DIAGNOSTIC = re.compile(r"^(?P<file>[^\n(]*)\((?P<line>\d+)\): (?P<kind>error|warning|catastrophic error)[^:]*: (?P<message>.*)$", re.M)


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int
    kind: str
    message: str


class CudaCompileError(RuntimeError):
    """NVRTC rejected a source. ``str(error)`` names the file, the architecture and the
    options, then NVRTC's log (``file(line): error: ...``); ``diagnostics`` parses it."""

    def __init__(self, name: str, arch: str, options: Sequence[str], log: str, reason: str = "") -> None:
        self.name = name
        self.arch = arch
        self.options = tuple(options)
        self.log = log
        self.diagnostics = [
            Diagnostic(m["file"], int(m["line"]), m["kind"], m["message"].strip()) for m in _DIAGNOSTIC.finditer(log)
        ]
        where = ", ".join(f"line {d.line}: {d.message}" for d in self.diagnostics if d.kind != "warning")
        summary = f"{name}: NVRTC could not compile it for {arch}" + (f" ({where})" if where else "")
        if reason:
            summary += f" [{reason}]"
        super().__init__(f"{summary}\noptions: {' '.join(self.options)}\n{log.rstrip()}")


def _nvrtc():
    try:
        from cupy_backends.cuda.libs import nvrtc
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise RuntimeError("NVRTC is not available: pip install cupy-cuda12x nvidia-cuda-nvrtc-cu12") from error
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    return tuple(_nvrtc().getVersion())  # type: ignore[return-value]


def supported_archs() -> tuple[int, ...]:
    """Compute capabilities this NVRTC can target, e.g. ``(50, ..., 90, ...)``."""
    return tuple(int(a) for a in _nvrtc().getSupportedArchs())


def _assembled_options(options: Sequence[str]) -> tuple[str, ...]:
    """CuPy's ``assemble_cupy_compiler_options(options)``: include paths around the user's
    options, and ``--std`` when none is given. Without CuPy (or when CuPy finds no CUDA
    headers and raises), the same minus the include paths: our sources include nothing."""
    try:
        from cupy._core.core import assemble_cupy_compiler_options

        return tuple(assemble_cupy_compiler_options(tuple(options)))
    except Exception:
        if any("-std=" in o for o in options):
            return tuple(options)
        return (*options, "--std=c++17")


def _arch_option(arch: str) -> tuple[str, str]:
    """``("-arch=sm_75", "cubin")`` or ``("-arch=compute_75", "ptx")``."""
    match = re.fullmatch(r"(sm|compute)_(\d+)[af]?", arch)
    if not match:
        raise ValueError(f"arch must look like 'sm_75' (cubin) or 'compute_75' (PTX), got {arch!r}")
    capability = int(match[2])
    if capability not in supported_archs():
        raise ValueError(f"NVRTC {nvrtc_version()} cannot target {arch}; it supports {list(supported_archs())}")
    return f"-arch={arch}", ("cubin" if match[1] == "sm" else "ptx")


def cupy_nvrtc_options(arch: str, options: Sequence[str] = CUPY_OPTIONS) -> tuple[str, ...]:
    """The full NVRTC option list CuPy's RawModule would use for ``options`` on ``arch``."""
    arch_option, _ = _arch_option(arch)
    return (*_assembled_options(options), "-ftz=true", arch_option, "--device-as-default-execution-space")


def compile_source(
    source: str,
    name: str,
    arch: str,
    options: Sequence[str] = CUPY_OPTIONS,
    warnings_as_errors: bool = False,
) -> bytes:
    """Compile ``source`` (its file name ``name`` is used in diagnostics) for ``arch``:
    ``"sm_XY"`` gives a cubin, ``"compute_XY"`` PTX, as CuPy would load them.

    Raises:
      CudaCompileError: NVRTC failed (or warned, with ``warnings_as_errors``).
    """
    nvrtc = _nvrtc()
    all_options = cupy_nvrtc_options(arch, options)
    output = _arch_option(arch)[1]
    program = nvrtc.createProgram(source, name, [], [])
    try:
        try:
            nvrtc.compileProgram(program, list(all_options))
        except nvrtc.NVRTCError as error:
            raise CudaCompileError(name, arch, all_options, nvrtc.getProgramLog(program), str(error)) from None
        log = nvrtc.getProgramLog(program)
        if warnings_as_errors and "warning" in log:
            raise CudaCompileError(name, arch, all_options, log, "warnings are errors")
        binary = nvrtc.getCUBIN(program) if output == "cubin" else nvrtc.getPTX(program)
    finally:
        nvrtc.destroyProgram(program)
    return binary if isinstance(binary, bytes) else bytes(binary, "utf-8")


def check_all_sources(
    archs: Iterable[str] = ("sm_75", "sm_80", "sm_90"), warnings_as_errors: bool = True
) -> dict[tuple[str, str], int]:
    """Compile every shipped ``.cu`` for every arch; ``{(source, arch): binary size}``.

    Raises:
      CudaCompileError: for the first source that fails (its message has NVRTC's log).
    """
    sizes = {}
    for source in SOURCES:
        text = read_source(source)
        for arch in archs:
            sizes[(source, arch)] = len(compile_source(text, source, arch, warnings_as_errors=warnings_as_errors))
    return sizes
