"""Run the delegate's ``.cu`` kernels on the CPU: g++ builds each source together with the
host shim (``host_shim/cuda_host.h``) into a shared library, loaded with ctypes.

    module = HostModule(read_source("depthwise_conv2d.cu"), "depthwise_conv2d.cu")
    module.get_function("depthwise_conv2d_f32")(grid, block, args)   # like cupy.RawKernel

This is for tests and for checking kernels without a GPU; it is never used to pretend a
GPU is present. How blocks execute (sequentially, or cooperatively with one std::thread
per thread of a block) is described in ``cuda_host.h``.

Builds are cached in ``$LITEDELEGATE_HOST_SHIM_CACHE``, else
``$XDG_CACHE_HOME/litedelegate/host_shim`` (``~/.cache/...``), else a temp directory, in
a directory named by a hash of the compiler, the flags, the header and the sources.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from backends.gpu.cuda.sources import (
    DepthwiseGeometry,
    bias_activation_args,
    bias_activation_kernel_name,
    elementwise_launch_config,
    depthwise_args,
    depthwise_kernel_name,
    depthwise_launch_config,
    kernels_in,
    read_source,
)
from schema.enums import ActivationFunctionType, Padding

SHIM_DIR = pathlib.Path(__file__).parent / "host_shim"
HEADER = SHIM_DIR / "cuda_host.h"
#: Flags of every host build (shared libraries add ``-fPIC -shared``).
BASE_FLAGS: tuple[str, ...] = ("-O2", "-std=c++20", "-Wall", "-Wno-unused-function")
SHARED_FLAGS: tuple[str, ...] = ("-fPIC", "-shared")
COOPERATIVE_FLAGS: tuple[str, ...] = ("-DCUDA_HOST_COOPERATIVE", "-pthread")
_MAX_PARAMS = 64


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


def build(
    unit: str,
    name: str,
    files: Mapping[str, str] | None = None,
    flags: Sequence[str] = (),
    executable: bool = False,
) -> pathlib.Path:
    """Compile the C++ translation unit ``unit`` (which may ``#include "cuda_host.h"`` and
    any of ``files``, written next to it) into a shared library, or an executable with
    ``executable=True``; returns its path. Cached by content.

    Raises:
      HostShimError: no compiler, or the compiler failed (its output is in the message).
    """
    files = dict(files or {})
    if not HEADER.is_file():
        raise HostShimError(f"the host shim header {HEADER} is missing (not installed as package data?)")
    cxx = compiler()
    all_flags = (*BASE_FLAGS, *(() if executable else SHARED_FLAGS), *flags)
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
    numpy scalars for values (their exact bytes), and None for a null pointer."""

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
        if status != 0:
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
    ``__shared__``)."""

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
    """The host build of a shipped ``.cu`` file (built once per process, cached on disk)."""
    return HostModule(read_source(source), source)


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
