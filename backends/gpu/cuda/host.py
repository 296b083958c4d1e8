"""Run the delegate's ``.cu`` kernels on the CPU: g++ builds each source together with the
host shim (``host_shim/cuda_host.h``) into a shared library, loaded with ctypes.

    module = HostModule(read_source("depthwise_conv2d.cu"), "depthwise_conv2d.cu")
    module.get_function("depthwise_conv2d_f32")(grid, block, args)   # like cupy.RawKernel

This is for tests and for checking kernels without a GPU; it is never used to pretend a
GPU is present. The execution model is described in ``cuda_host.h``: the blocks of a launch
run in a shuffled order, concurrently on several worker threads (default mode) or one at
a time with one std::thread per thread of the block (``cooperative=True``, for
``__syncthreads`` and ``__shared__``); ``__shared__`` memory is poisoned (0xFF bytes) at
each block start; atomics are real atomics. So a kernel that races, depends on the block
order, or reads shared memory it did not write fails here as it would on a GPU. Two
environment variables, read at each launch:

- ``CUDA_HOST_SEED``: the seed of the block order (a decimal unsigned integer); unset, each
  launch takes the process's next launch number (0, 1, 2, ...). ``HostKernel.last_seed`` is
  the seed of the last launch: set ``CUDA_HOST_SEED`` to it to replay that order.
- ``CUDA_HOST_WORKERS``: the worker threads of the default mode (1 to 1024; default the
  hardware threads clamped to 2..8). ``1`` runs one block at a time.

Every source goes through :func:`host_source` before g++ sees it: it rewrites each
``__shared__`` declaration so that the shim can find (and poison) the variable.

Builds are cached in ``$LITEDELEGATE_HOST_SHIM_CACHE``, else
``$XDG_CACHE_HOME/litedelegate/host_shim`` (``~/.cache/...``), else a temp directory, in
a directory named by a hash of the compiler, the flags, the header and the sources.

Sanitized mode: ``LITEDELEGATE_SHIM_SANITIZE=1`` builds every host library with
AddressSanitizer and UBSan, float-cast-overflow included (:data:`SANITIZE_FLAGS`, so a
cache entry of its own), each report fatal; the emulated device then gives every device
buffer exactly the bytes asked for, with no rounding slack (``emulation.py``), so that a
kernel reading one byte past a buffer reads ASan's redzone. A library built with ASan
loads only into a process whose first library is ASan's runtime: run Python under
``LD_PRELOAD`` of it, with leak detection off (Python keeps its objects to the end);
:func:`sanitized_environment` is that environment (``tests/gpu/test_sanitized_shim.py``
runs kernel tests in it, in a subprocess). Loading a sanitized library without it raises
:class:`HostShimError`, saying so.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from backends.gpu.cuda.depthwise import DepthwiseGeometry, depthwise_args, depthwise_kernel_name, depthwise_launch_config
from backends.gpu.cuda.sources import (
    bias_activation_args,
    bias_activation_kernel_name,
    elementwise_launch_config,
    kernels_in,
    read_source,
)
from schema.enums import ActivationFunctionType, Padding

SHIM_DIR = pathlib.Path(__file__).parent / "host_shim"
HEADER = SHIM_DIR / "cuda_host.h"
#: Flags of every host build (shared libraries add ``-fPIC -shared``). ``-pthread``: every
#: launch runs on worker threads. ``-Wno-unknown-pragmas``: the kernels' ``#pragma unroll``
#: is NVRTC's (g++ before 13 cannot silence it in the header).
BASE_FLAGS: tuple[str, ...] = ("-O2", "-std=c++20", "-Wall", "-Wno-unused-function", "-Wno-unknown-pragmas", "-pthread")
SHARED_FLAGS: tuple[str, ...] = ("-fPIC", "-shared")
COOPERATIVE_FLAGS: tuple[str, ...] = ("-DCUDA_HOST_COOPERATIVE",)
_MAX_PARAMS = 64

#: The environment variable of sanitized mode (any value but empty or ``0`` turns it on).
SANITIZE_ENVIRONMENT = "LITEDELEGATE_SHIM_SANITIZE"
#: What sanitized mode adds to every build: ASan and UBSan (float-to-int conversions out of
#: range included, which ``-fsanitize=undefined`` leaves out), every report fatal, frames
#: and line numbers for the reports (``-g1``: line tables only), at ``-O1`` (ASan's advice;
#: it also halves the build time of ``-O2 -g``).
SANITIZE_FLAGS: tuple[str, ...] = (
    "-fsanitize=address,undefined,float-cast-overflow",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-O1",
    "-g1",
)
#: The sanitizers' settings in a sanitized process: Python keeps objects alive to its end
#: (no leak report); a report ends the process with its stack.
SANITIZER_OPTIONS = {
    "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:halt_on_error=1:exitcode=86:print_summary=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87",
}
# The launcher's error for a malformed CUDA_HOST_SEED or CUDA_HOST_WORKERS
# (cudaErrorInvalidValue; a launch configuration a GPU would refuse is 9).
_INVALID_VALUE = 1


class HostShimError(RuntimeError):
    """No C++ compiler, a source the shim cannot compile (the message has g++'s output),
    or a bad launch."""


def compiler() -> str:
    """The C++ compiler: ``$CXX`` or ``g++``."""
    name = os.environ.get("CXX", "g++")
    path = shutil.which(name)
    if path is None:
        raise HostShimError(f"no C++ compiler {name!r} on PATH: install g++ (>= 10, for C++20) or set CXX")
    return path


@functools.lru_cache(maxsize=None)
def _compiler_identity(path: str) -> str:
    result = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return f"{path}\n{result.stdout}"


def sanitizing() -> bool:
    """Whether host builds are sanitized now (``LITEDELEGATE_SHIM_SANITIZE``, read at each call)."""
    return os.environ.get(SANITIZE_ENVIRONMENT, "") not in ("", "0")


def sanitizer_preload() -> list[str]:
    """What a process must load first to load sanitized libraries: the compiler's
    AddressSanitizer runtime, then its C++ runtime (ASan intercepts ``__cxa_throw``, and
    finds nothing to forward to when libstdc++ comes later, with a C++ extension such as
    LiteRT's: the first exception thrown then aborts the process)."""
    cxx = compiler()
    paths = []
    for library in ("libasan.so", "libstdc++.so"):
        result = subprocess.run([cxx, f"-print-file-name={library}"], capture_output=True, text=True, check=False)
        path = result.stdout.strip()
        if result.returncode != 0 or not os.path.isabs(path) or not os.path.exists(path):
            raise HostShimError(f"{cxx} has no {library}; sanitized mode needs gcc's AddressSanitizer runtime (libasan)")
        paths.append(os.path.realpath(path))
    return paths


def sanitized_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) for a process in sanitized mode: the
    switch on, :func:`sanitizer_preload` first in ``LD_PRELOAD``, :data:`SANITIZER_OPTIONS`."""
    environment = dict(os.environ if base is None else base)
    preload = [*sanitizer_preload(), *filter(None, environment.get("LD_PRELOAD", "").split(":"))]
    environment.update(SANITIZER_OPTIONS)
    environment.update({SANITIZE_ENVIRONMENT: "1", "LD_PRELOAD": ":".join(dict.fromkeys(preload))})
    return environment


def _require_sanitizer_runtime() -> None:
    """Sanitized libraries need ASan's runtime loaded first (else dlopen aborts the process
    with "ASan runtime does not come first"): refuse clearly instead."""
    if not hasattr(ctypes.CDLL(None), "__asan_init"):
        raise HostShimError(
            f"{SANITIZE_ENVIRONMENT}=1 builds the host shim with AddressSanitizer, whose runtime this process did "
            f"not load first: run it with LD_PRELOAD={':'.join(sanitizer_preload())} and ASAN_OPTIONS=detect_leaks=0 "
            "(backends.gpu.cuda.host.sanitized_environment() is that environment), or unset the variable"
        )


def cache_dir() -> pathlib.Path:
    """Where builds are cached (created if needed)."""
    candidates = []
    if os.environ.get("LITEDELEGATE_HOST_SHIM_CACHE"):
        candidates.append(pathlib.Path(os.environ["LITEDELEGATE_HOST_SHIM_CACHE"]))
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    candidates.append(pathlib.Path(xdg) / "litedelegate" / "host_shim")
    candidates.append(pathlib.Path(tempfile.gettempdir()) / f"litedelegate-host-shim-{os.getuid()}")
    for directory in candidates:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            if os.access(directory, os.W_OK):
                return directory
        except OSError:
            continue
    raise HostShimError(f"no writable cache directory among {[str(c) for c in candidates]}")


# -- the __shared__ rewrite --------------------------------------------------------------------

_SHARED = re.compile(r"\b(?:(?P<storage>extern|static)\s+)?__shared__\b")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_NOT_A_NAME = frozenset(
    "bool char short int long float double signed unsigned void const volatile struct typename".split()
)


def host_source(text: str, name: str = "source") -> str:
    """``text`` with each ``__shared__`` declaration rewritten for the host shim, on the
    same line (so that compiler messages keep their line numbers)::

        __shared__ float tile[16][17], total;
        CUDA_HOST_SHARED float tile[16][17], total; CUDA_HOST_SHARED_REGISTER(tile) CUDA_HOST_SHARED_REGISTER(total)

    ``CUDA_HOST_SHARED`` makes the variable a static; each registration tells the launcher
    where it is, so that it is poisoned at every block start (``cuda_host.h`` says why a
    macro in front of the declaration cannot do this alone). ``static __shared__`` loses
    its ``static`` (``CUDA_HOST_SHARED`` has it). Comments, literals and preprocessor lines
    are left alone: a ``__shared__`` inside a ``#define`` stays as it is and does not
    compile. ``name`` (the file name) is for error messages.

    Raises:
      HostShimError: dynamic shared memory (``extern __shared__``), which the shim does not
        support, or a declaration whose variable names cannot be found.
    """
    code = _code_only(text)
    pieces: list[str] = []
    done = 0
    for match in _SHARED.finditer(code):
        where = f"{name}:{code.count(chr(10), 0, match.start()) + 1}"
        if match["storage"] == "extern":
            raise HostShimError(f"{where}: dynamic shared memory (extern __shared__) is not supported by the host shim")
        end = code.find(";", match.end())
        names = _declarator_names(code[match.end() : end]) if end >= 0 else []
        if not names:
            declaration = text[match.start() : end + 1 if end >= 0 else match.end() + 80]
            raise HostShimError(f"{where}: cannot find the variable(s) declared by {declaration!r}")
        newlines = "\n" * text.count("\n", match.start(), match.end())  # "static\n__shared__"
        registrations = "".join(f" CUDA_HOST_SHARED_REGISTER({variable})" for variable in names)
        pieces += [text[done : match.start()], "CUDA_HOST_SHARED", newlines, text[match.end() : end + 1], registrations]
        done = end + 1
    pieces.append(text[done:])
    return "".join(pieces)


def _declarator_names(declaration: str) -> list[str]:
    """The variables of a declaration without its storage class, e.g. ``float a[4], *b``
    -> ``[a, b]``: per top-level comma, the last identifier before any ``[`` or ``=`` that
    is not inside parentheses nor followed by ``(`` (``__align__(16)``, attributes)."""
    names = []
    for declarator in _split_top_level(declaration):
        depth, cut = 0, len(declarator)
        outside = []  # the declarator outside parentheses, parenthesized text blanked
        for i, char in enumerate(declarator):
            if depth == 0 and char in "[=":
                cut = i
                break
            depth += (char == "(") - (char == ")")
            outside.append(char if depth == 0 and char != ")" else " ")
        head = "".join(outside)[:cut]
        candidates = [
            m.group() for m in _IDENTIFIER.finditer(head)
            if not declarator[m.end() :].lstrip().startswith("(")
        ]
        if not candidates or candidates[-1] in _NOT_A_NAME:
            return []
        names.append(candidates[-1])
    return names


def _split_top_level(declaration: str) -> list[str]:
    """``declaration`` split at the commas outside brackets and template arguments."""
    parts, depth, angle, start = [], 0, 0, 0
    for i, char in enumerate(declaration):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and char == "<":
            angle += 1
        elif depth == 0 and char == ">":
            angle -= 1
        elif depth == 0 and angle == 0 and char == ",":
            parts.append(declaration[start:i])
            start = i + 1
    parts.append(declaration[start:])
    return parts


def _code_only(text: str) -> str:
    """``text`` with comments, string and character literals and preprocessor lines blanked
    (same length, newlines kept), so that a search in it finds only code."""
    out = list(text)
    n = len(text)

    def blank(begin: int, end: int) -> None:
        for k in range(begin, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    def word_before(i: int, chars: str = "_") -> str:
        j = i
        while j > 0 and (text[j - 1].isalnum() or text[j - 1] in chars):
            j -= 1
        return text[j:i]

    i, line_start = 0, True
    while i < n:
        char = text[i]
        if char == "\n" or (line_start and char in " \t\r\f\v"):
            line_start = line_start or char == "\n"
            i += 1
        elif line_start and char == "#":  # a directive, with its backslash-continued lines
            end = i
            while end < n and not (text[end] == "\n" and not text.endswith(("\\", "\\\r"), 0, end)):
                end += 1
            blank(i, end)
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(i, end)
            i, line_start = end, False
        elif char == '"' and word_before(i) in ("R", "u8R", "uR", "UR", "LR"):  # R"delim(...)delim"
            open_paren = text.find("(", i)
            delimiter = text[i + 1 : open_paren] if open_paren >= 0 else ""
            end = text.find(")" + delimiter + '"', max(open_paren, i))
            end = n if open_paren < 0 or end < 0 else end + len(delimiter) + 2
            blank(i, end)
            i, line_start = end, False
        elif char == "'" and word_before(i, "_.")[:1].isdigit():  # a digit separator: 1'000
            i, line_start = i + 1, False
        elif char in "\"'":
            end = i + 1
            while end < n and text[end] not in (char, "\n"):
                end += 2 if text[end] == "\\" else 1
            blank(i, end + 1)
            i, line_start = end + 1, False
        else:
            i, line_start = i + 1, False
    return "".join(out)


def build(
    unit: str,
    name: str,
    files: Mapping[str, str] | None = None,
    flags: Sequence[str] = (),
    executable: bool = False,
) -> pathlib.Path:
    """Compile the C++ translation unit ``unit`` (which may ``#include "cuda_host.h"`` and
    any of ``files``, written next to it) into a shared library, or an executable with
    ``executable=True``; returns its path. Cached by content. ``unit`` and ``files`` go
    through :func:`host_source` first.

    Raises:
      HostShimError: no compiler, or the compiler failed (its output is in the message).
    """
    unit = host_source(unit, f"{name}.cpp")
    files = {filename: host_source(text, filename) for filename, text in (files or {}).items()}
    if not HEADER.is_file():
        raise HostShimError(f"the host shim header {HEADER} is missing (not installed as package data?)")
    cxx = compiler()
    all_flags = (*BASE_FLAGS, *(() if executable else SHARED_FLAGS), *flags, *(SANITIZE_FLAGS if sanitizing() else ()))
    digest = hashlib.sha256()
    for part in (_compiler_identity(cxx), "\0".join(all_flags), HEADER.read_text(), unit, *sorted(files.items())):
        digest.update(str(part).encode() + b"\0\1")
    root = cache_dir()
    final = root / f"{name}-{digest.hexdigest()[:24]}"
    output_name = name if executable else f"lib{name}.so"
    if (final / output_name).exists():
        return final / output_name

    work = pathlib.Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        for filename, text in files.items():
            (work / filename).write_text(text)
        (work / f"{name}.cpp").write_text(unit)
        command = [cxx, *all_flags, "-I", str(SHIM_DIR), "-I", str(work), f"{name}.cpp", "-o", output_name]
        result = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise HostShimError(f"{name}: {' '.join(command)} failed:\n{result.stderr.strip()}")
        try:
            os.rename(work, final)  # atomic publish; another process may have won the race
        except OSError:
            if not (final / output_name).exists():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return final / output_name


def kernel_unit(source_file: str, kernels: Iterable[str]) -> str:
    """The translation unit of a host library: the shim, the source, one export per kernel."""
    exports = "\n".join(f"CUDA_HOST_EXPORT_KERNEL({kernel})" for kernel in kernels)
    return f'#include "cuda_host.h"\n#include "{source_file}"\n\n{exports}\n'


class HostKernel:
    """One kernel of a :class:`HostModule`, called like ``cupy.RawKernel``:
    ``kernel(grid, block, args)`` with numpy arrays for pointers (the array's data),
    numpy scalars for values (their exact bytes), and None for a null pointer.
    ``last_seed`` is the block-order seed of this kernel's last launch from this thread
    (None before one): ``CUDA_HOST_SEED=<last_seed>`` replays its block order."""

    def __init__(self, library: ctypes.CDLL, name: str) -> None:
        self.name = name
        self._launch = getattr(library, f"cuda_host_launch_{name}")
        self._launch.restype = ctypes.c_int
        self._launch.argtypes = [ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_void_p)]
        params = getattr(library, f"cuda_host_params_{name}")
        params.restype = ctypes.c_int
        sizes = (ctypes.c_ulonglong * _MAX_PARAMS)()
        count = params(sizes, _MAX_PARAMS)
        self.param_sizes: tuple[int, ...] = tuple(sizes[:count])
        self._last_seed = library.cuda_host_last_seed
        self._last_seed.restype = ctypes.c_ulonglong
        self._last_seed.argtypes = []
        self.last_seed: int | None = None

    def __call__(self, grid: Sequence[int] | int, block: Sequence[int] | int, args: Sequence[Any]) -> None:
        if len(args) != len(self.param_sizes):
            raise HostShimError(f"{self.name} takes {len(self.param_sizes)} arguments, {len(args)} given")
        keep = []  # the buffers args[i] point at, alive until the launch returns
        pointers = (ctypes.c_void_p * max(len(args), 1))()
        for i, (arg, size) in enumerate(zip(args, self.param_sizes)):
            if arg is None or isinstance(arg, np.ndarray):
                if arg is not None and not arg.flags.c_contiguous:
                    raise HostShimError(f"{self.name}: argument {i} must be a C-contiguous array")
                holder = ctypes.c_void_p(None if arg is None else arg.ctypes.data)
                given = ctypes.sizeof(holder)
            elif isinstance(arg, np.generic):
                holder = np.array(arg)  # 0-d copy: its bytes are the value
                given = holder.itemsize
            else:
                raise HostShimError(
                    f"{self.name}: argument {i} is a {type(arg).__name__}; pass numpy arrays, numpy scalars "
                    "(np.int32, np.float32...) or None"
                )
            if given != size:
                raise HostShimError(f"{self.name}: argument {i} has {given} bytes, the parameter has {size}")
            keep.append((arg, holder))
            pointers[i] = ctypes.addressof(holder) if isinstance(holder, ctypes.c_void_p) else holder.ctypes.data
        grid3, block3 = _dim3(grid), _dim3(block)
        status = self._launch((ctypes.c_uint * 3)(*grid3), (ctypes.c_uint * 3)(*block3), pointers)
        del keep
        if status == 0:
            self.last_seed = int(self._last_seed())  # thread_local in the library: this thread's launch
        elif status == _INVALID_VALUE:
            settings = {key: os.environ.get(key) for key in ("CUDA_HOST_SEED", "CUDA_HOST_WORKERS")}
            raise HostShimError(
                f"{self.name}: CUDA_HOST_SEED must be a decimal unsigned integer and CUDA_HOST_WORKERS one "
                f"from 1 to 1024; the environment has {settings}"
            )
        else:
            raise HostShimError(f"{self.name}: invalid launch configuration grid={grid3} block={block3} (error {status})")


def _dim3(value: Sequence[int] | int) -> tuple[int, int, int]:
    dims = (int(value),) if np.ndim(value) == 0 else tuple(int(v) for v in value)  # type: ignore[arg-type]
    if not 1 <= len(dims) <= 3 or min(dims) < 0:
        raise HostShimError(f"a launch dimension must be 1 to 3 non-negative ints, got {value!r}")
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


class HostModule:
    """A ``.cu`` source built for the host, with its kernels (``get_function``), like
    ``cupy.RawModule``. ``kernels`` defaults to those ``sources.KERNELS`` lists for
    ``filename``; ``cooperative=True`` builds the cooperative mode (``__syncthreads``,
    ``__shared__``: one std::thread per thread of a block, blocks one at a time)."""

    def __init__(
        self,
        source: str,
        filename: str,
        kernels: Sequence[str] | None = None,
        cooperative: bool = False,
        flags: Sequence[str] = (),
    ) -> None:
        self.kernel_names = tuple(kernels if kernels is not None else kernels_in(filename))
        if not self.kernel_names:
            raise HostShimError(f"no kernels to export from {filename}")
        stem = pathlib.Path(filename).stem
        all_flags = (*(COOPERATIVE_FLAGS if cooperative else ()), *flags)
        self.path = build(kernel_unit(filename, self.kernel_names), stem, {filename: source}, all_flags)
        if sanitizing():
            _require_sanitizer_runtime()
        self.library = ctypes.CDLL(str(self.path))
        self._kernels: dict[str, HostKernel] = {}

    def get_function(self, name: str) -> HostKernel:
        if name not in self.kernel_names:
            raise HostShimError(f"no kernel {name!r} in this module; it exports {list(self.kernel_names)}")
        if name not in self._kernels:
            self._kernels[name] = HostKernel(self.library, name)
        return self._kernels[name]


@functools.lru_cache(maxsize=None)
def shipped_module(source: str) -> HostModule:
    """The host build of a shipped ``.cu`` file (built once per process, cached on disk), in
    the cooperative mode when it uses ``__syncthreads`` or ``__shared__``."""
    text = read_source(source)
    return HostModule(text, source, cooperative="__syncthreads" in text or "__shared__" in text)


def run_depthwise_conv2d_host(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    stride: int | Sequence[int] = 1,
    dilation: int | Sequence[int] = 1,
    padding: int | str = Padding.SAME,
    activation: int = ActivationFunctionType.NONE,
    multiplier: int | None = None,
) -> np.ndarray:
    """DEPTHWISE_CONV_2D by ``depthwise_conv2d.cu`` run on the CPU: NHWC input ``x``, filter
    ``w`` ``[1, KH, KW, C*M]``, optional bias ``b`` ``[C*M]``, all float32 (or all float16:
    the float16-storage kernel). Padding by TFLite's rule, as the CPU kernel computes it.
    ``stride``/``dilation`` are ints or (h, w); ``multiplier`` is checked against the shapes.
    """
    storage = np.asarray(x).dtype
    name = depthwise_kernel_name(storage)
    x = np.ascontiguousarray(x, dtype=storage)
    w = np.ascontiguousarray(w, dtype=storage)
    if b is not None:
        b = np.ascontiguousarray(b, dtype=storage).reshape(-1)
    geometry = DepthwiseGeometry.of(x.shape, w.shape, stride, dilation, padding, multiplier)
    if b is not None and b.size != geometry.out_channels:
        raise ValueError(f"bias has {b.size} elements, expected {geometry.out_channels}")
    out = np.empty(geometry.out_shape, dtype=storage)
    if out.size == 0:
        return out
    grid, block = depthwise_launch_config(geometry.out_shape)
    args = depthwise_args(x, w, b, out, geometry, activation, null=None)
    shipped_module("depthwise_conv2d.cu").get_function(name)(grid, block, args)
    return out


def run_bias_activation_host(
    values: np.ndarray, bias: np.ndarray | None, activation: int = ActivationFunctionType.NONE
) -> np.ndarray:
    """``bias_activation.cu`` on the CPU: a new array ``clamp(values + bias)`` (bias along the
    last axis, optional), in the storage dtype of ``values`` (float32 or float16)."""
    storage = np.asarray(values).dtype
    name = bias_activation_kernel_name(storage)
    out = np.array(values, dtype=storage, order="C", copy=True)
    if bias is not None:
        bias = np.ascontiguousarray(bias, dtype=storage).reshape(-1)
    if out.size == 0:
        return out
    grid, block = elementwise_launch_config(out.size)
    args = bias_activation_args(out, bias, activation, null=None)
    shipped_module("bias_activation.cu").get_function(name)(grid, block, args)
    return out
