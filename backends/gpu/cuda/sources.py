"""The hand-written CUDA kernels of the GPU delegate: which ``.cu`` files ship, how to read
them, how each kernel is launched, and a thin launcher for real devices.

The same sources are compiled three ways: by CuPy (``cupy.RawModule``) on a machine with
a GPU; by NVRTC alone in CI (``nvrtc.check_all_sources``, no device needed); and by g++
through the host shim (``host.py``), which runs them on the CPU for the tests. The
argument lists below are shared by the CuPy launcher and the host shim, so the host tests
also check what a GPU launch would pass.

Every source compiles with no system ``#include`` at all: the NVRTC of the pip wheel ships
no CUDA headers (so no ``cuda_fp16.h``: float16 travels as its bit pattern, see
``storage.cuh``). The project's own headers, ``storage.cuh`` (float storage),
``fixed_point.cuh`` (TFLite's integer requantization arithmetic), ``epilogue.cuh``,
``mma.cuh`` (the tensor-core tiles and step), ``conv2d_window.cuh`` (the direct convolutions'
window walk), ``pooling.cuh`` (the pools' and MEAN's window walks), ``coordinates.cuh`` (a flat
index's coordinates, the broadcast inputs' offsets), ``depthwise_window.cuh`` (the depthwise
convolutions' window walk), ``conv_int8.cuh`` (the quantized convolutions' arguments,
multiply-add and output stage), ``layout_index.cuh`` (PAD's and CONCATENATION's source
elements), ``conv2d_gemm.cuh`` (the tiled convolutions' implicit GEMM), ``matmul.cuh`` (the
float products' arguments and output stage) and ``tiled_products.cuh`` (the register-blocked
step of the float tiles), are spliced into the text by ``read_source``. A header needs no
``#include`` of its own (the splice is one level deep): a ``.cu`` includes the headers a header
needs before it.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Sequence

import numpy as np

from backends.cpu.common import calculate_activation_range, compute_padding
from schema.enums import ActivationFunctionType, Padding

#: The ``.cu`` files shipped as package data (pyproject: ``"*" = ["*.cu", ...]``): every
#: ``.cu`` file in this package.
SOURCES: tuple[str, ...] = tuple(
    sorted(entry.name for entry in resources.files(__package__).iterdir() if entry.name.endswith(".cu"))
)

#: Options the delegate passes to ``cupy.RawModule``. The standard is explicit so that CuPy
#: does not pick its own default (CuPy 14 adds ``--std=c++17`` when none is given, older
#: releases ``--std=c++11``); ``nvrtc.py`` adds what CuPy adds on top of these.
CUPY_OPTIONS: tuple[str, ...] = ("--std=c++17",)


@dataclass(frozen=True)
class KernelInfo:
    """One ``extern "C" __global__`` function: its source file and name."""

    source: str
    name: str


_KERNEL_DEFINITION = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')


def _kernels_defined() -> dict[str, KernelInfo]:
    kernels: dict[str, KernelInfo] = {}
    for source in SOURCES:
        text = resources.files(__package__).joinpath(source).read_text(encoding="utf-8")
        for name in _KERNEL_DEFINITION.findall(text):
            if name in kernels:
                raise RuntimeError(f"kernel {name} is defined in {kernels[name].source} and in {source}")
            kernels[name] = KernelInfo(source, name)
    return kernels


#: Every kernel, by name: each ``extern "C" __global__`` function of the shipped sources.
KERNELS: dict[str, KernelInfo] = _kernels_defined()


def kernels_in(source: str) -> list[str]:
    """Names of the kernels defined in the ``.cu`` file ``source``."""
    return [info.name for info in KERNELS.values() if info.source == source]


def read_source(name: str) -> str:
    """The text of the shipped ``.cu`` file ``name`` (e.g. ``"depthwise_conv2d.cu"``)."""
    if name not in SOURCES:
        raise ValueError(f"unknown CUDA source {name!r}; the shipped sources are {list(SOURCES)}")
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return splice_headers(text)


def splice_headers(text: str) -> str:
    """``text`` with each ``#include "x.cuh"`` of a header shipped here (``storage.cuh``,
    ``fixed_point.cuh``, ``epilogue.cuh``, ``mma.cuh``, ``conv2d_window.cuh``, ``pooling.cuh``,
    ``coordinates.cuh``, ``depthwise_window.cuh``, ``conv_int8.cuh``, ``layout_index.cuh``,
    ``conv2d_gemm.cuh``, ``matmul.cuh``, ``tiled_products.cuh``) replaced by the header's text:
    one self-contained source, as NVRTC, CuPy and the host shim read it (tests splice their own
    kernels this way)."""
    return _INCLUDE.sub(lambda match: _header(match.group(1)), text)


#: ``#include "x.cuh"`` of a header shipped here: spliced in by ``read_source``, so that
#: every compiler (NVRTC, CuPy, g++ through the host shim) gets one self-contained text.
_INCLUDE = re.compile(r'^#include "(\w+\.cuh)".*$', re.MULTILINE)


def _header(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8").rstrip("\n")


# -- fused activations ------------------------------------------------------------------------

FLT_MAX = float(np.finfo(np.float32).max)


def activation_range(activation: int) -> tuple[float, float]:
    """The clamp ``(act_min, act_max)`` of a fused activation, TFLite's
    ``CalculateActivationRange`` for float kernels (``backends.cpu.common``): RELU, RELU6
    and RELU_N1_TO_1 clamp; NONE (and TANH / SIGN_BIT, which these float kernels ignore)
    give -FLT_MAX..FLT_MAX. The bounds are kernel arguments because NVRTC has neither
    FLT_MAX nor INFINITY."""
    return calculate_activation_range(ActivationFunctionType(activation), np.float32)


# -- launch configurations ---------------------------------------------------------------------

BLOCK = 256
_MAX_GRID_X = 2**31 - 1


def elementwise_launch_config(total: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` for one thread per element: 1-D blocks of 256 threads, the last
    block partial (the kernels check their index)."""
    total = int(total)
    if total <= 0:
        raise ValueError("nothing to launch for an empty output")
    blocks = -(-total // BLOCK)
    if blocks > _MAX_GRID_X:
        raise ValueError(f"{total} elements need {blocks} blocks, more than a grid holds")
    return (blocks, 1, 1), (BLOCK, 1, 1)


def _storage_kernel(prefix: str, storage: Any) -> str:
    storage = np.dtype(storage)
    if storage == np.float32:
        return f"{prefix}_f32"
    if storage == np.float16:
        return f"{prefix}_f16"
    raise TypeError(f"the {prefix} CUDA kernels store float32 or float16, not {storage}")


# -- window arguments -----------------------------------------------------------------------

def _pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    pair = (int(value), int(value)) if np.ndim(value) == 0 else tuple(int(v) for v in value)
    if len(pair) != 2 or min(pair) <= 0:
        raise ValueError(f"{what} must be a positive int or (h, w) pair, got {value!r}")
    return pair  # type: ignore[return-value]


def _padding(padding: int | str) -> Padding:
    return Padding[padding.upper()] if isinstance(padding, str) else Padding(padding)


class _Launcher:
    """What the CuPy launchers share: the cupy module (``xp``, default ``import cupy``)
    and one kernel of a compiled ``.cu`` (``module``, default: compiled at the first call
    on the current device; the delegate passes ``Device.module(source)``, compiled once
    per device). Launches go to the current stream.

    ``host_device``: a host-emulation ``Device``. Each launch then runs the kernel's numpy
    twin (the ``*_twin`` function beside the launcher) as one launch of the emulated
    machine instead of the ``.cu`` kernel, so host emulation launches what a device
    launches; ``tests/gpu/test_kernel_twins.py`` checks each twin against its kernel
    (built for the CPU by the host shim)."""

    source: str

    def __init__(self, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self._xp = host_device.xp if host_device is not None else xp
        self._module = module
        self._kernels: dict[str, Any] = {}
        self.host_device = host_device

    @property
    def xp(self) -> Any:
        if self._xp is None:
            import cupy

            self._xp = cupy
        return self._xp

    def kernel(self, name: str) -> Any:
        if name not in self._kernels:
            module = self._module or self.xp.RawModule(code=read_source(self.source), options=CUPY_OPTIONS)
            self._kernels[name] = module.get_function(name)
        return self._kernels[name]

    def launch(
        self, name: str, grid: Any, block: Any, args: Sequence[Any], twin: Any, inputs: Sequence[Any], outputs: Sequence[Any]
    ) -> None:
        """Launch kernel ``name`` with ``args``; in host emulation run ``twin(*inputs, *outputs)``."""
        if self.host_device is not None:
            self.host_device.launch_twin(name, twin, inputs, outputs)
        else:
            self.kernel(name)(grid, block, args)


# -- fused bias + activation epilogue -------------------------------------------------------------

def bias_activation_kernel_name(storage: Any) -> str:
    return _storage_kernel("bias_activation", storage)


def bias_activation_args(values: Any, bias: Any, activation: int, null: Any) -> tuple:
    """Arguments of a bias_activation launch on ``values`` (last axis = channels), in place."""
    channels = int(values.shape[-1]) if values.ndim else 1
    if bias is not None and int(bias.size) != channels:
        raise ValueError(f"bias has {bias.size} elements, expected {channels} (the last axis)")
    act_min, act_max = activation_range(activation)
    return (values, null if bias is None else bias, np.int64(values.size), np.int32(channels),
            np.float32(act_min), np.float32(act_max))


class BiasActivationCuda(_Launcher):
    """In place on a C-contiguous cupy array ``values[..., C]``: add ``bias[C]`` (optional),
    then clamp to the fused activation's range, in one kernel. (It was the epilogue of the
    matmul-based CONV_2D and FULLY_CONNECTED; those now fuse it into their own kernels,
    ``conv2d.cu`` and ``matmul.cu``'s ``matmul_bias_act``.) ``xp`` and ``module`` as in
    ``_Launcher``."""

    source = "bias_activation.cu"

    def __init__(
        self,
        activation: int = ActivationFunctionType.NONE,
        storage: Any = np.float32,
        *,
        xp: Any = None,
        module: Any = None,
        host_device: Any = None,
    ) -> None:
        self.activation = ActivationFunctionType(activation)
        self.storage = np.dtype(storage)
        self.kernel_name = bias_activation_kernel_name(self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, values: Any, bias: Any = None) -> Any:
        if values.dtype != self.storage or not values.flags.c_contiguous:
            raise ValueError(f"values must be a C-contiguous {self.storage} array")
        if bias is not None and bias.dtype != self.storage:
            raise TypeError(f"expected a {self.storage} bias, got {bias.dtype}")
        if values.size == 0:
            return values
        if bias is not None:
            bias = self.xp.ascontiguousarray(bias)
        grid, block = elementwise_launch_config(values.size)
        args = bias_activation_args(values, bias, self.activation, null=np.uint64(0))
        twin = functools.partial(bias_activation_twin, activation=self.activation)
        self.launch(self.kernel_name, grid, block, args, twin, (bias,), (values,))
        return values


#: The largest grid y and z CUDA launches.
_MAX_GRID_YZ = 65535


# -- numpy twins (host emulation runs these, one launch each; see _Launcher) -----------------------

def _contiguous(xp: Any, array: Any) -> Any:
    """``array`` itself when C-contiguous (the kernels read pointers), else a C-contiguous
    copy (one launch)."""
    return array if array.flags.c_contiguous else xp.ascontiguousarray(array)


def _check_out(xp: Any, out: Any, shape: tuple[int, ...], storage: np.dtype) -> Any:
    """``out``, checked to be a C-contiguous ``storage`` array of ``shape``, or a new one."""
    if out is None:
        return xp.empty(shape, dtype=storage)
    if tuple(out.shape) != tuple(shape) or out.dtype != storage or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {storage} array of shape {list(shape)}")
    return out


def _as_float32(array: np.ndarray | None) -> np.ndarray | None:
    return None if array is None else array.astype(np.float32, copy=False)


def _clamp_into(out: np.ndarray, values: np.ndarray, act_min: float, act_max: float) -> None:
    """``out = min(max(values, act_min), act_max)`` in the storage dtype, NaN kept (as the
    kernels' comparisons keep it; so does ``np.clip``)."""
    if out.dtype == values.dtype:
        np.clip(values, np.float32(act_min), np.float32(act_max), out=out)
    else:
        out[...] = np.clip(values, np.float32(act_min), np.float32(act_max))


def bias_activation_twin(bias: np.ndarray | None, values: np.ndarray, *, activation: int) -> None:
    """``bias_activation_f32/_f16`` in numpy: in place, ``clamp(values + bias)`` in float32."""
    acc = _as_float32(values)
    if bias is not None:
        acc = acc + _as_float32(bias).reshape(-1)
    _clamp_into(values, acc, *activation_range(activation))


