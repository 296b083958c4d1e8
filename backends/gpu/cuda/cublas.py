"""The vendor GEMM among the candidates of the products: cuBLAS's ``cublasGemmStridedBatchedEx``
for the float products (FULLY_CONNECTED, BATCH_MATMUL, CONV_2D 1x1 with stride 1), then one
launch of ``gemm_epilogue.cu`` for the bias, the clamp and the convolution's epilogue; and its
int8 x int8 -> int32 GEMM for the int8 FULLY_CONNECTED, then ``gemm_requantize_int8`` (the
input's zero point through the weights' column sums, the bias, TFLite's double rescale from
``fixed_point.cuh``): bit for bit what ``fully_connected_int8.cu`` stores.

Why cuBLAS is called here through ctypes, not through CuPy
-----------------------------------------------------------
The delegate replays each partition as a captured CUDA graph, and cuBLAS itself can be
captured ("cuBLAS routines can be captured in CUDA Graph stream capture without restrictions in
most situations": those that return results to host memory cannot). CuPy refuses it: its
``cupy_backends.cuda.libs.cublas.setStream`` raises ``NotImplementedError("calling cuBLAS API
during stream capture is currently unsupported")`` when the stream is capturing, and every one of
its cuBLAS bindings (``sgemm``, ``gemmEx``, ``gemmStridedBatchedEx``...) calls it first, so the
low-level bindings cannot be captured either, whatever handle and stream they are given
(``cupy.matmul`` goes through them too). So this module calls ``libcublas.so.12`` (the library
CuPy loads: ``nvidia-cublas-cu12``) directly, with a handle of the delegate's own:

- ``cublasSetStream`` to the delegate's stream before every call: the GEMM must run on the stream
  being captured (cuBLAS launches on its handle's stream, not on CuPy's current one);
- ``cublasSetWorkspace`` after it, every time (``cublasSetStream`` resets the workspace to
  cuBLAS's default pool): a workspace the handle owns, allocated once from the delegate's memory
  pool, alive as long as the graphs that replay into it. Without one, cuBLAS 12.2+ allocates its
  workspace with ``cudaMallocAsync`` inside the capture (memory nodes, one more workspace per
  captured graph: PyTorch's #83461 and #113994), which the emulated device refuses;
- host pointer mode: alpha = 1 and beta = 0 are read when the call is made (captured by value);
  nothing is returned to the host.

Each candidate is checked on the device before its first use (``backends/gpu/tactics.py``):
eagerly, and captured in a graph then replayed, against the node's twin. A cuBLAS that cannot be
loaded, refuses a type, or cannot be captured fails that check with the reason and is never
chosen. The emulated device models the library (``emulation.EmulatedCublas``): the column-major
arithmetic of ``cublasGemmStridedBatchedEx`` on the memory its pointers name, the handle's stream
(ordered and race-checked like any launch), the reset of the workspace by ``cublasSetStream``, and
the capture rule above.

Numerics: float32 operands are multiplied in float32 (``CUBLAS_COMPUTE_32F``: no TF32), or, only
when the user allows it (``GpuDelegate(allow_tf32=True)``), rounded to TF32 on tensor cores
(``CUBLAS_COMPUTE_32F_FAST_TF32``); float16 operands are multiplied with float32 accumulation into
float32 (``CUDA_R_16F`` inputs, ``CUDA_R_32F`` output), and ``gemm_epilogue.cu`` stores the half,
as the hand-written kernels round once at their store.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from backends.gpu.cuda.sources import (
    _Launcher,
    _check_out,
    _contiguous,
    _pair,
    _padding,
    _storage_kernel,
    activation_range,
    elementwise_launch_config,
)
from schema.enums import ActivationFunctionType, Padding

# (conv2d.py and matmul.py list these launchers among their candidates: what this module uses of
# theirs, Epilogue, Conv2DGeometry, MatmulShape, is imported where it is used.)

# -- cuBLAS's constants (cublas_api.h, library_types.h) ----------------------------------------------

CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUDA_R_32F, CUDA_R_16F, CUDA_R_8I, CUDA_R_32I = 0, 2, 3, 10
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32I, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 72, 77
CUBLAS_GEMM_DEFAULT = -1
CUBLAS_STATUS = {
    0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
    13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
}

#: The compute of each kind of candidate: (operand type, result type, compute type).
COMPUTE = {
    "float32": (CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F),
    "tf32": (CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32),
    "float16": (CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F),
    "int8": (CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I),
}


def workspace_bytes(compute_capability: int) -> int:
    """The workspace a handle owns: 32 MiB from sm_90 (Hopper's kernels want it), 4 MiB before."""
    return (32 if compute_capability >= 90 else 4) << 20


class CublasError(RuntimeError):
    """A cuBLAS call returned an error status (or the library could not be loaded)."""


class CublasLibrary:
    """``libcublas.so.12`` through ctypes: the calls the candidates make, each checked."""

    def __init__(self, library: Any) -> None:
        self.library = library
        for name, arguments in _SIGNATURES.items():
            function = getattr(library, name)
            function.argtypes = arguments
            function.restype = ctypes.c_int

    def _call(self, name: str, *arguments: Any) -> None:
        status = getattr(self.library, name)(*arguments)
        if status != 0:
            raise CublasError(f"{name}: {CUBLAS_STATUS.get(status, status)}")

    def create(self) -> int:
        handle = ctypes.c_void_p()
        self._call("cublasCreate_v2", ctypes.byref(handle))
        return int(handle.value or 0)

    def destroy(self, handle: int) -> None:
        self._call("cublasDestroy_v2", ctypes.c_void_p(handle))

    def set_stream(self, handle: int, stream: int) -> None:
        self._call("cublasSetStream_v2", ctypes.c_void_p(handle), ctypes.c_void_p(stream))

    def set_workspace(self, handle: int, pointer: int, nbytes: int) -> None:
        self._call("cublasSetWorkspace_v2", ctypes.c_void_p(handle), ctypes.c_void_p(pointer), ctypes.c_size_t(nbytes))

    def gemm_strided_batched(
        self, handle: int, transa: int, transb: int, m: int, n: int, k: int,
        a: int, a_type: int, lda: int, stride_a: int, b: int, b_type: int, ldb: int, stride_b: int,
        c: int, c_type: int, ldc: int, stride_c: int, batch: int, compute: int,
    ) -> None:
        """``C = 1 * op(A) @ op(B) + 0 * C`` for each of ``batch`` column-major products (alpha and
        beta in host pointer mode: int32 for ``CUBLAS_COMPUTE_32I``, else float32)."""
        scalar = ctypes.c_int32 if compute == CUBLAS_COMPUTE_32I else ctypes.c_float
        one, zero = scalar(1), scalar(0)
        self._call(
            "cublasGemmStridedBatchedEx", ctypes.c_void_p(handle), transa, transb, m, n, k, ctypes.byref(one),
            ctypes.c_void_p(a), a_type, lda, ctypes.c_longlong(stride_a), ctypes.c_void_p(b), b_type, ldb,
            ctypes.c_longlong(stride_b), ctypes.byref(zero), ctypes.c_void_p(c), c_type, ldc, ctypes.c_longlong(stride_c),
            batch, compute, CUBLAS_GEMM_DEFAULT,
        )


_P, _I, _LL = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
_SIGNATURES = {
    "cublasCreate_v2": [ctypes.POINTER(ctypes.c_void_p)],
    "cublasDestroy_v2": [_P],
    "cublasSetStream_v2": [_P, _P],
    "cublasSetWorkspace_v2": [_P, _P, ctypes.c_size_t],
    "cublasGemmStridedBatchedEx": [
        _P, _I, _I, _I, _I, _I, _P, _P, _I, _I, _LL, _P, _I, _I, _LL, _P, _P, _I, _I, _LL, _I, _I, _I,
    ],
}


@functools.lru_cache(maxsize=1)
def load_cublas() -> CublasLibrary:
    """The cuBLAS CuPy uses (importing CuPy's binding loads it; the same soname then names the
    same library), else the pip wheel's or the system's. CublasError when there is none."""
    try:
        import cupy_backends.cuda.libs.cublas  # noqa: F401  (loads libcublas.so.12 as CuPy does)
    except ImportError:
        pass
    candidates = ["libcublas.so.12", ctypes.util.find_library("cublas")]
    try:
        import nvidia.cublas  # the pip wheel nvidia-cublas-cu12

        candidates += [str(path / "lib" / "libcublas.so.12") for path in map(_path, nvidia.cublas.__path__)]
    except ImportError:
        pass
    errors = []
    for name in filter(None, candidates):
        try:
            return CublasLibrary(ctypes.CDLL(name))
        except (OSError, AttributeError) as error:
            errors.append(f"{name}: {error}")
    raise CublasError("cannot load cuBLAS (pip install nvidia-cublas-cu12, as cupy-cuda12x[ctk] does): " + "; ".join(errors))


def _path(entry: str) -> Any:
    import pathlib

    return pathlib.Path(entry)


class CublasHandle:
    """One device's cuBLAS handle, its workspace (from the delegate's pool, kept as long as the
    handle), and the one call the candidates make, on the current stream."""

    def __init__(self, library: Any, device: Any) -> None:
        self.library = library
        self.device = device
        with device.active():
            self.handle = library.create()
            self.workspace = device.xp.empty(workspace_bytes(device.compute_capability), dtype=np.uint8)

    def gemm(self, transa: int, transb: int, m: int, n: int, k: int, a: Any, lda: int, stride_a: int,
             b: Any, ldb: int, stride_b: int, c: Any, ldc: int, stride_c: int, batch: int, compute: str) -> None:
        """One ``cublasGemmStridedBatchedEx`` into ``c`` (float32, int32 for ``"int8"``), on the
        current stream."""
        operand_type, result_type, compute_type = COMPUTE[compute]
        library, handle = self.library, self.handle
        library.set_stream(handle, self.device.xp.cuda.get_current_stream().ptr)
        library.set_workspace(handle, self.workspace.data.ptr, self.workspace.nbytes)  # (set_stream reset it)
        library.gemm_strided_batched(
            handle, transa, transb, m, n, k, a.data.ptr, operand_type, lda, stride_a, b.data.ptr, operand_type, ldb,
            stride_b, c.data.ptr, result_type, ldc, stride_c, batch, compute_type,
        )


# -- the launchers ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnMajorProduct:
    """A row-major ``C[batch, M, N] = A @ B`` as cuBLAS's column-major ``C^T = B^T @ A^T``: the
    arguments of ``cublasGemmStridedBatchedEx`` for operands stored as ``MatmulShape`` reads them
    (an adjoint operand stored transposed, a shared one with batch stride 0)."""

    transa: int
    transb: int
    m: int
    n: int
    k: int
    lda: int
    stride_a: int
    ldb: int
    stride_b: int
    ldc: int
    stride_c: int
    batch: int

    @classmethod
    def of(cls, shape: Any, adjoint_a: bool = False, adjoint_b: bool = False) -> "ColumnMajorProduct":
        """cuBLAS's A is our B: stored ``[K, N]`` it reads, column-major, B^T (op N, ld N); stored
        ``[N, K]`` (adjoint) B, so op T (ld K). Its B is our A: ``[M, K]`` reads A^T (op N, ld K),
        ``[K, M]`` (adjoint) A (op T, ld M)."""
        m, n, k = shape.m, shape.n, shape.k
        transa, lda = (CUBLAS_OP_T, k) if adjoint_b else (CUBLAS_OP_N, n)
        transb, ldb = (CUBLAS_OP_T, m) if adjoint_a else (CUBLAS_OP_N, k)
        return cls(transa, transb, n, m, k, lda, shape.b_strides[0], ldb, shape.a_strides[0], n, shape.c_batch_stride,
                   shape.batch)


def gemm_epilogue_args(acc: Any, bias: Any, out: Any, channels: int, bounds: tuple[float, float], epilogue: Any,
                       residual: Any, alpha: Any, null: Any) -> tuple:
    """The argument tuple of a ``gemm_epilogue_*`` launch, in parameter order."""
    act_min, act_max = bounds
    return (acc, null if bias is None else bias, out, np.int64(out.size), np.int32(channels), np.float32(act_min),
            np.float32(act_max), *epilogue.scalar_args(residual, alpha, null))


class CublasGemmCuda(_Launcher):
    """The vendor GEMM with its output stage: ``cublasGemmStridedBatchedEx`` into a float32
    scratch (``compute``: ``"float32"``, ``"tf32"`` or ``"float16"``, see the module
    docstring), then one launch of ``gemm_epilogue.cu`` (bias, clamp, epilogue, store). ``blas``:
    the device's ``CublasHandle``; ``xp``, ``module`` (``gemm_epilogue.cu``) and ``host_device``
    as in ``_Launcher`` (host emulation runs the twins: the float32 product, then the output
    stage, two launches as on a device)."""

    source = "gemm_epilogue.cu"

    def __init__(self, storage: Any, compute: str, *, xp: Any = None, module: Any = None, host_device: Any = None,
                 blas: Any = None) -> None:
        self.storage = np.dtype(storage)
        if compute not in COMPUTE or compute == "int8" or (compute == "float16") != (self.storage == np.float16):
            raise ValueError(f"compute {compute!r} does not multiply {self.storage} operands")
        self.compute = compute
        self.blas = blas
        self.kernel_name = _storage_kernel("gemm_epilogue", self.storage)
        super().__init__(xp, module, host_device)

    def product(self, a: Any, b: Any, shape: Any, out: Any, bias: Any, bounds: tuple[float, float],
                epilogue: Any, residual: Any = None, alpha: Any = None, *, adjoint_a: bool = False,
                adjoint_b: bool = False) -> Any:
        """``out = epilogue(clamp(a @ b + bias))``, ``out`` C-contiguous ``[batch * m, n]`` elements."""
        xp = self.xp
        acc = xp.empty((shape.batch, shape.m, shape.n), dtype=np.float32)
        gemm = ColumnMajorProduct.of(shape, adjoint_a, adjoint_b)
        if self.host_device is not None:
            twin = functools.partial(gemm_twin, adjoint_a=adjoint_a, adjoint_b=adjoint_b, tf32=self.compute == "tf32")
            self.host_device.launch_twin("cublasGemmStridedBatchedEx", twin, (a, b), (acc,))
        else:
            self.blas.gemm(gemm.transa, gemm.transb, gemm.m, gemm.n, gemm.k, b, gemm.lda, gemm.stride_a, a, gemm.ldb,
                           gemm.stride_b, acc, gemm.ldc, gemm.stride_c, gemm.batch, self.compute)
        grid, block = elementwise_launch_config(out.size)
        args = gemm_epilogue_args(acc, bias, out, shape.n, bounds, epilogue, residual, alpha, np.uint64(0))
        twin = functools.partial(gemm_epilogue_twin, bounds=bounds, epilogue=epilogue)
        self.launch(self.kernel_name, grid, block, args, twin, (acc, bias, residual, alpha), (out,))
        return out


class CublasMatmulCuda(CublasGemmCuda):
    """``MatmulBiasActivationCuda``'s product (its arguments and results) by the vendor GEMM."""

    def __init__(self, activation: int | None = None, storage: Any = np.float32, compute: str = "float32", **kwargs: Any) -> None:
        from backends.gpu.cuda.conv2d import NO_CLAMP

        super().__init__(storage, compute, **kwargs)
        self.bounds = NO_CLAMP if activation is None else activation_range(activation)

    def __call__(self, a: Any, b: Any, bias: Any = None, out: Any = None, *, adjoint_a: bool = False,
                 adjoint_b: bool = False) -> Any:
        from backends.gpu.cuda.conv2d import Epilogue
        from backends.gpu.cuda.matmul import matmul_operands

        shape, a, b, bias, out = matmul_operands(self.xp, self.storage, a, b, bias, out, adjoint_a, adjoint_b)
        if out.size == 0:
            return out
        return self.product(a, b, shape, out, bias, self.bounds, Epilogue(), adjoint_a=adjoint_a, adjoint_b=adjoint_b)


class CublasConv2DCuda(CublasGemmCuda):
    """``Conv2DCuda``'s CONV_2D (its arguments and results) for a 1x1 filter with stride 1, one
    group and no PAD folded in: one product of the pixels ``[N*H*W, C]`` by the filter ``[C, O]``
    by the vendor GEMM, then the bias, clamp and epilogue."""

    def __init__(self, stride: int | Sequence[int] = 1, dilation: int | Sequence[int] = 1, padding: int | str = Padding.SAME,
                 activation: int = ActivationFunctionType.NONE, storage: Any = np.float32, compute: str = "float32", *,
                 epilogue: Any = None, pre_padding: Sequence[int] = (0, 0, 0, 0), **kwargs: Any) -> None:
        super().__init__(storage, compute, **kwargs)
        self.stride, self.dilation, self.padding = _pair(stride, "stride"), _pair(dilation, "dilation"), _padding(padding)
        self.bounds = activation_range(activation)
        self.epilogue = epilogue
        self.pre_padding = tuple(int(p) for p in pre_padding)

    def __call__(self, x: Any, w: Any, b: Any = None, out: Any = None, *, residual: Any = None, alpha: Any = None) -> Any:
        from backends.gpu.cuda.conv2d import Conv2DGeometry, Epilogue
        from backends.gpu.cuda.matmul import MatmulShape

        geometry = Conv2DGeometry.of(x.shape, w.shape, self.stride, self.dilation, self.padding, self.pre_padding)
        reason = gemm_conv_reason(geometry, self.pre_padding)
        if reason:
            raise ValueError(f"the vendor GEMM runs a convolution that is one product, not this one: {reason}")
        xp = self.xp
        epilogue = self.epilogue if self.epilogue is not None else Epilogue()
        epilogue.check(residual, alpha, geometry.out_shape, self.storage)
        out = _check_out(xp, out, geometry.out_shape, self.storage)
        if out.size == 0:
            return out
        pixels, channels = out.size // geometry.out_channels, geometry.window.channels
        a = _contiguous(xp, x).reshape(pixels, channels)
        weights = _contiguous(xp, w).reshape(channels, geometry.out_channels)
        shape = MatmulShape.of(a.shape, weights.shape)
        residual = None if residual is None else _contiguous(xp, residual)
        alpha = None if alpha is None else _contiguous(xp, alpha).reshape(-1)
        bias = None if b is None else _contiguous(xp, b).reshape(-1)
        self.product(a, weights, shape, out.reshape(pixels, geometry.out_channels), bias, self.bounds, epilogue, residual, alpha)
        return out


def cublas_reason(compute: str) -> Any:
    """When the vendor GEMM multiplying as ``compute`` applies to a product (a problem of
    ``matmul.py`` or ``conv2d.py``): the delegate lets it (``vendor_gemm``; TF32 only with ``allow_tf32``) and the storage is its operands'."""
    def reason(problem: Any) -> str | None:
        if not problem.vendor_gemm:
            return "the vendor GEMM is off (GpuDelegate(vendor_gemm=False))"
        if compute == "tf32" and not problem.allow_tf32:
            return "TF32 rounds float32 operands: only with GpuDelegate(allow_tf32=True)"
        if (problem.storage == "float16") != (compute == "float16"):
            return f"it multiplies {'float16' if compute == 'float16' else 'float32'} operands, the storage is {problem.storage}"
        return None

    return reason


def gemm_conv_reason(geometry: Any, pre_padding: Sequence[int]) -> str | None:
    """Why a convolution is not one product of its pixels by its filter, or None."""
    g = geometry.window
    if (g.filter_h, g.filter_w) != (1, 1) or (g.stride_h, g.stride_w) != (1, 1):
        return f"a {g.filter_h}x{g.filter_w} filter with stride {g.stride_h}x{g.stride_w} (a GEMM needs 1x1, stride 1)"
    if geometry.groups != 1:
        return f"{geometry.groups} groups"
    if any(pre_padding) or g.is_padded:
        return "a padded input"
    return None


# -- int8 FULLY_CONNECTED -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FullyConnectedInt8Problem:
    """What the quantized FULLY_CONNECTED's candidates are chosen for: ``rows`` x ``depth`` by
    ``depth`` x ``units``, the tensors' type, the weights' offset (``-z_w``, 0 for int8), whether
    the vendor GEMM's int32 sums (without the zero points) and the corrected ones stay in int32
    (``exact``), and the delegate's ``vendor_gemm``."""

    rows: int
    depth: int
    units: int
    dtype: str
    filter_offset: int
    exact: bool
    vendor_gemm: bool = False


def int8_gemm_reason(problem: FullyConnectedInt8Problem) -> str | None:
    """When cuBLAS's int8 x int8 -> int32 GEMM applies to a quantized FULLY_CONNECTED."""
    if not problem.vendor_gemm:
        return "the vendor GEMM is off (GpuDelegate(vendor_gemm=False))"
    if problem.dtype != "int8":
        return f"cuBLAS multiplies signed int8 (CUDA_R_8I), the tensors are {problem.dtype}"
    if problem.filter_offset:
        return "the weights have a zero point (the int8 GEMM takes it as 0)"
    if problem.depth % 4 or problem.units % 4:
        return f"cuBLAS's int8 GEMM wants leading dimensions that are multiples of 4 (depth {problem.depth}, units {problem.units})"
    if not problem.exact:
        return "its int32 sums could wrap where TFLite's would not"
    return None


class CublasFullyConnectedInt8Cuda(_Launcher):
    """``conv_int8.FullyConnectedInt8Cuda``'s quantized FULLY_CONNECTED (its arguments and its
    bits) by cuBLAS's int8 x int8 -> int32 GEMM (``CUBLAS_COMPUTE_32I``), then
    ``gemm_requantize_int8`` (the input's zero point through the weights' column sums, the bias,
    ``fixed_point.cuh``'s ``rescale_double``, the clamp). The column sums are computed once per
    weights array (one reduction at its first call, before any capture)."""

    source = "gemm_epilogue.cu"

    def __init__(self, stage: Any, *, xp: Any = None, module: Any = None, host_device: Any = None, blas: Any = None) -> None:
        if stage.filter_offset:
            raise ValueError("the int8 GEMM takes the weights' zero point as 0")
        self.stage = stage
        self.blas = blas
        self._sums: tuple[Any, Any] | None = None  # (weights, their column sums)
        super().__init__(xp, module, host_device)

    def column_sums(self, w: Any) -> Any:
        if self._sums is None or self._sums[0] is not w:
            self._sums = (w, w.astype(np.int32).sum(axis=0, dtype=np.int32))
        return self._sums[1]

    def __call__(self, x: Any, w: Any, bias: Any, scales: Any, out: Any = None) -> Any:
        from backends.gpu.cuda.matmul import MatmulShape

        xp = self.xp
        if x.dtype != np.int8 or w.dtype != np.int8 or x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[0]:
            raise ValueError(f"expected int8 x [rows, depth] and weights [depth, units], got {x.dtype}{list(x.shape)} and "
                             f"{w.dtype}{list(w.shape)}")
        x, w = _contiguous(xp, x), _contiguous(xp, w)
        out = _check_out(xp, out, (int(x.shape[0]), int(w.shape[1])), np.dtype(np.int8))
        if out.size == 0:
            return out
        shape = MatmulShape.of(x.shape, w.shape)
        sums = self.column_sums(w)
        acc = xp.empty(out.shape, dtype=np.int32)
        if self.host_device is not None:
            self.host_device.launch_twin("cublasGemmStridedBatchedEx", int8_gemm_twin, (x, w), (acc,))
        else:
            gemm = ColumnMajorProduct.of(shape)
            self.blas.gemm(gemm.transa, gemm.transb, gemm.m, gemm.n, gemm.k, w, gemm.lda, gemm.stride_a, x, gemm.ldb,
                           gemm.stride_b, acc, gemm.ldc, gemm.stride_c, gemm.batch, "int8")
        s = self.stage
        null = np.uint64(0)
        args = (acc, null if bias is None else bias, sums, scales, out, np.int64(out.size), np.int32(out.shape[1]),
                np.int32(s.input_offset), np.int32(s.output_offset), np.int32(s.act_min), np.int32(s.act_max))
        grid, block = elementwise_launch_config(out.size)
        twin = functools.partial(requantize_int8_twin, stage=s)
        self.launch("gemm_requantize_int8", grid, block, args, twin, (acc, bias, sums, scales), (out,))
        return out


@functools.lru_cache(maxsize=1)
def fully_connected_int8_tactics() -> tuple:
    """The quantized FULLY_CONNECTED's candidates, one row each: the hand-written kernel
    (``conv_int8.FullyConnectedInt8Cuda``, ``fully_connected_int8.cu``: a block per row and
    tile of units; the reference) and cuBLAS's int8 GEMM. (A function:
    ``conv_int8.py`` imports ``conv2d.py``, which imports this module.)"""
    from backends.gpu.cuda.conv_int8 import FullyConnectedInt8Cuda, fully_connected_int8_launch_config
    from backends.gpu.tactics import Tactic

    return (
        Tactic("direct", FullyConnectedInt8Cuda,
               launch_shape=lambda p: fully_connected_int8_launch_config(p.rows, p.units, p.depth)),
        Tactic("cuBLAS int8", CublasFullyConnectedInt8Cuda, int8_gemm_reason, vendor=True),
    )


# -- numpy twins (host emulation runs these; see _Launcher) -------------------------------------------


def round_to_tf32(values: np.ndarray) -> np.ndarray:
    """float32 ``values`` rounded to TF32 (10 mantissa bits, to nearest; cuBLAS does not say how
    its conversion rounds: the emulated device rounds to nearest, ties away from zero)."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    finite = np.isfinite(values)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(finite, rounded, values).astype(np.float32)


def gemm_twin(a: np.ndarray, b: np.ndarray, acc: np.ndarray, *, adjoint_a: bool, adjoint_b: bool, tf32: bool) -> None:
    """The float32 product into ``acc`` ``[batch, m, n]`` (float16 operands are exact in
    float32; with ``tf32`` the operands rounded to TF32 first, ``round_to_tf32``)."""
    a, b = a.astype(np.float32), b.astype(np.float32)
    if adjoint_a:
        a = np.swapaxes(a, -1, -2)
    if adjoint_b:
        b = np.swapaxes(b, -1, -2)
    if tf32:
        a, b = round_to_tf32(a), round_to_tf32(b)
    acc[...] = np.matmul(a, b).reshape(acc.shape)


def gemm_epilogue_twin(acc: np.ndarray, bias: np.ndarray | None, residual: np.ndarray | None, alpha: np.ndarray | None,
                       out: np.ndarray, *, bounds: tuple[float, float], epilogue: Any) -> None:
    """``gemm_epilogue_*`` in numpy: bias, clamp, epilogue (``conv2d.epilogue_twin``), stored."""
    from backends.gpu.cuda.conv2d import epilogue_twin

    channels = out.shape[-1]
    values = acc.reshape(-1, channels).astype(np.float32)
    if bias is not None:
        values += bias.astype(np.float32).reshape(-1)
    values = np.clip(values, np.float32(bounds[0]), np.float32(bounds[1]), out=values)
    pixels = values.reshape(1, 1, -1, channels)
    out.reshape(-1, channels)[...] = epilogue_twin(pixels, None if residual is None else residual.reshape(1, 1, -1, residual.shape[-1]),
                                                   alpha, epilogue).reshape(-1, channels)


def int8_gemm_twin(x: np.ndarray, w: np.ndarray, acc: np.ndarray) -> None:
    """The int8 GEMM: exact int64 sums, wrapped to int32 (the candidate applies where none wraps)."""
    acc[...] = np.matmul(x.astype(np.int64), w.astype(np.int64)).astype(np.int32)


def requantize_int8_twin(acc: np.ndarray, bias: np.ndarray | None, sums: np.ndarray, scales: np.ndarray,
                         out: np.ndarray, *, stage: Any) -> None:
    """``gemm_requantize_int8`` in numpy: the zero point through the column sums, the bias (int32
    wrap), then the CPU kernel's ``rescale_double``."""
    from backends.cpu.kernels.fully_connected_quantized import rescale_double
    from backends.cpu.quantization import wrap_int32

    values = acc.astype(np.int64) + np.int64(stage.input_offset) * sums.astype(np.int64).reshape(-1)
    if bias is not None:
        values += bias.astype(np.int64).reshape(-1)
    out[...] = rescale_double(wrap_int32(values), scales.reshape(-1), stage.output_offset, stage.act_min, stage.act_max,
                              check_int32_conversion=True)
