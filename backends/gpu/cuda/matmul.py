"""Launchers, launch shapes and numpy twins of the float matrix products: ``matmul.cu``'s
``matmul_bias_act_f32/_f16`` (a product with its bias and clamp: FULLY_CONNECTED,
BATCH_MATMUL, the patches product of TRANSPOSE_CONV), ``matmul_tiled.cu`` (shared-memory
tiles) and ``matmul_mma.cu`` (tensor cores, float16 storage), one launch each.

The launchers follow ``sources._Launcher``: on a device they launch the ``.cu`` kernel, in
host emulation (``host_device=...``) their numpy twin, as one launch of the emulated
machine. The twin computes what the kernels compute, in float32, except for the order of
the float sums (numpy/BLAS order against the kernels' sequential fused multiply-adds).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from backends.gpu.cuda.conv2d import MMA_MIN_COMPUTE_CAPABILITY, NO_CLAMP
from backends.gpu.cuda.cublas import CublasMatmulCuda, cublas_reason
from backends.gpu.cuda.sources import (
    _Launcher,
    _MAX_GRID_YZ,
    _check_out,
    _clamp_into,
    _contiguous,
    _storage_kernel,
    activation_range,
)
from backends.gpu.tactics import Tactic

_NULL = np.uint64(0)  # an absent pointer argument, passed by value: 8 zero bytes

#: Rows of the output each thread of ``matmul.cu`` computes (its MATMUL_ROWS).
MATMUL_ROWS = 4


#: Threads per block of ``matmul_bias_act_*``.
MATMUL_THREADS = 256


def matmul_bias_act_kernel_name(storage: Any) -> str:
    """``matmul_bias_act_f32`` or ``matmul_bias_act_f16``."""
    return _storage_kernel("matmul_bias_act", storage)


def matmul_bias_act_launch_config(batch: int, m: int, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` of ``matmul_bias_act_*``: x over the columns, y over groups of
    MATMUL_ROWS rows, z over the batch; blocks of 256 threads, 32 x 8 or, for a product
    of fewer rows, wider in x (a FULLY_CONNECTED of one row: 256 x 1, no idle rows)."""
    row_groups = -(-m // MATMUL_ROWS)
    by = 1
    while by < 8 and by < row_groups:
        by *= 2
    bx = MATMUL_THREADS // by
    grid = (-(-n // bx), -(-row_groups // by), batch)
    if min(grid) <= 0:
        raise ValueError(f"nothing to launch for a [{batch}, {m}, {n}] product")
    if grid[1] > _MAX_GRID_YZ or grid[2] > _MAX_GRID_YZ:
        raise ValueError(f"a [{batch}, {m}, {n}] product needs a grid of {grid}, more than CUDA allows")
    return grid, (bx, by, 1)


def matmul_launch_reason(batch: int, m: int, n: int) -> str | None:
    """Why a ``[batch, m, n]`` product does not fit one ``matmul_bias_act`` launch, or None."""
    if batch * m * n == 0:
        return None  # nothing to launch
    try:
        matmul_bias_act_launch_config(batch, m, n)
    except ValueError as error:
        return str(error)
    return None


@dataclass(frozen=True)
class MatmulShape:
    """One ``matmul_bias_act`` product: ``batch`` products of ``[m, k] @ [k, n]``, and the
    element strides of each operand (an operand of one batch shared by all: batch stride
    0; a transposed operand: its row and column strides swapped)."""

    batch: int
    m: int
    n: int
    k: int
    a_strides: tuple[int, int, int]  # batch, row, column
    b_strides: tuple[int, int, int]
    c_batch_stride: int

    @classmethod
    def of(cls, a_shape: Sequence[int], b_shape: Sequence[int], adjoint_a: bool = False, adjoint_b: bool = False) -> "MatmulShape":
        """From C-contiguous operands ``a`` ``[M, K]`` or ``[Ba, M, K]`` (``[.., K, M]``
        when ``adjoint_a``) and ``b`` ``[K, N]`` or ``[Bb, K, N]`` (``[.., N, K]`` when
        ``adjoint_b``); Ba and Bb are 1 or the batch."""
        if len(a_shape) not in (2, 3) or len(b_shape) not in (2, 3):
            raise ValueError(f"operands must be 2-D or 3-D, got {list(a_shape)} and {list(b_shape)}")
        a_batch = int(a_shape[0]) if len(a_shape) == 3 else 1
        b_batch = int(b_shape[0]) if len(b_shape) == 3 else 1
        batch = max(a_batch, b_batch)
        if min(a_batch, b_batch) not in (1, batch):
            raise ValueError(f"the batches of {list(a_shape)} and {list(b_shape)} differ")
        a_rows, a_cols = (int(d) for d in a_shape[-2:])
        b_rows, b_cols = (int(d) for d in b_shape[-2:])
        m, k = (a_cols, a_rows) if adjoint_a else (a_rows, a_cols)
        k_b, n = (b_cols, b_rows) if adjoint_b else (b_rows, b_cols)
        if k != k_b:
            raise ValueError(
                f"cannot multiply {list(a_shape)} (adjoint {adjoint_a}) by {list(b_shape)} (adjoint {adjoint_b})"
            )
        a_strides = (a_rows * a_cols if a_batch > 1 else 0, *((1, m) if adjoint_a else (k, 1)))
        b_strides = (b_rows * b_cols if b_batch > 1 else 0, *((1, k) if adjoint_b else (n, 1)))
        return cls(batch, m, n, k, a_strides, b_strides, m * n)

    def scalar_args(self) -> tuple[Any, ...]:
        """m, n, k (int32) and the strides (int64), in the kernel's order."""
        return (
            np.int32(self.m), np.int32(self.n), np.int32(self.k),
            *(np.int64(s) for s in self.a_strides), *(np.int64(s) for s in self.b_strides), np.int64(self.c_batch_stride),
        )


def matmul_bias_act_args(a: Any, b: Any, bias: Any, c: Any, shape: MatmulShape, bounds: tuple[float, float], null: Any) -> tuple:
    """The argument tuple of a ``matmul_bias_act`` launch, in parameter order."""
    act_min, act_max = bounds
    return (a, b, null if bias is None else bias, c, *shape.scalar_args(), np.float32(act_min), np.float32(act_max))


def matmul_operands(
    xp: Any, storage: Any, a: Any, b: Any, bias: Any, out: Any, adjoint_a: bool, adjoint_b: bool
) -> tuple[MatmulShape, Any, Any, Any, Any]:
    """A float product's operands checked and made contiguous, as every product launcher takes
    them (the hand-written kernels and cuBLAS): ``(shape, a, b, bias flat or None, out)``,
    ``out`` allocated (``[M, N]``, or ``[batch, M, N]`` when an operand is 3-D) unless given."""
    for array in (a, b) if bias is None else (a, b, bias):
        if array.dtype != storage:
            raise TypeError(f"expected {storage} arrays, got {array.dtype}")
    shape = MatmulShape.of(a.shape, b.shape, adjoint_a, adjoint_b)
    if bias is not None and bias.size != shape.n:
        raise ValueError(f"bias has {bias.size} elements, expected {shape.n}")
    a, b = _contiguous(xp, a), _contiguous(xp, b)
    bias = None if bias is None else _contiguous(xp, bias).reshape(-1)
    out_shape = (shape.m, shape.n) if a.ndim == 2 and b.ndim == 2 else (shape.batch, shape.m, shape.n)
    return shape, a, b, bias, _check_out(xp, out, out_shape, storage)


class MatmulBiasActivationCuda(_Launcher):
    """``clamp(a @ b + bias)`` in one launch of ``matmul.cu``'s ``matmul_bias_act_f32/_f16``:
    operands, bias and result stored as ``storage`` (float32 or float16), products and sums
    in float32.

    ``activation``: a fused activation (its ``sources.activation_range``: NONE saturates at
    +-FLT_MAX, as TFLite's FULLY_CONNECTED), or None for no clamp at all (BATCH_MATMUL).
    ``a`` is ``[M, K]`` or ``[B or 1, M, K]``, ``b`` ``[K, N]`` or ``[B or 1, K, N]`` (a
    leading 1 or a 2-D operand is shared by every batch); ``adjoint_a`` / ``adjoint_b``:
    the operand is stored transposed (``[.., K, M]`` / ``[.., N, K]``) and read so, with no
    copy. The result is ``[M, N]`` when both operands are 2-D, else ``[B, M, N]``.
    ``xp``, ``module`` and ``host_device`` as in ``_Launcher``."""

    source = "matmul.cu"

    def __init__(
        self,
        activation: int | None = None,
        storage: Any = np.float32,
        *,
        xp: Any = None,
        module: Any = None,
        host_device: Any = None,
    ) -> None:
        self.bounds = NO_CLAMP if activation is None else activation_range(activation)
        self.storage = np.dtype(storage)
        self.kernel_name = matmul_bias_act_kernel_name(self.storage)
        super().__init__(xp, module, host_device)

    def __call__(
        self, a: Any, b: Any, bias: Any = None, out: Any = None, *, adjoint_a: bool = False, adjoint_b: bool = False
    ) -> Any:
        shape, a, b, bias, out = matmul_operands(self.xp, self.storage, a, b, bias, out, adjoint_a, adjoint_b)
        if out.size == 0:
            return out
        grid, block = self.launch_config(shape)
        args = matmul_bias_act_args(a, b, bias, out, shape, self.bounds, null=_NULL)
        twin = functools.partial(matmul_bias_act_twin, adjoint_a=adjoint_a, adjoint_b=adjoint_b, bounds=self.bounds)
        self.launch(self.kernel_name, grid, block, args, twin, (a, b, bias), (out,))
        return out


    def launch_config(self, shape: MatmulShape) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return matmul_bias_act_launch_config(shape.batch, shape.m, shape.n)


# -- the tiled products (matmul_tiled.cu, matmul_mma.cu) ----------------------------------------------

#: The tiles of ``matmul_tiled.cu`` (rows, columns of the output per block) and of ``matmul_mma.cu``.
MATMUL_TILES = ((64, 64), (32, 32))
MATMUL_MMA_TILE = (64, 64)


def matmul_tiled_launch_config(
    batch: int, m: int, n: int, tile: Sequence[int] = (64, 64)
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` of ``matmul_bias_act_tiled_*`` and ``matmul_bias_act_mma_f16`` with tiles
    of ``tile`` = (rows, columns): x over tiles of columns, y over tiles of rows, z over the
    batch; 256 threads."""
    tile_m, tile_n = (int(t) for t in tile)
    grid = (-(-n // tile_n), -(-m // tile_m), batch)
    if min(grid) <= 0:
        raise ValueError(f"nothing to launch for a [{batch}, {m}, {n}] product")
    if grid[1] > _MAX_GRID_YZ or grid[2] > _MAX_GRID_YZ:
        raise ValueError(f"a [{batch}, {m}, {n}] product needs a grid of {grid}, more than CUDA allows")
    return grid, (256, 1, 1)


class MatmulBiasActivationTiledCuda(MatmulBiasActivationCuda):
    """``MatmulBiasActivationCuda`` run by ``matmul_tiled.cu`` (shared-memory tiles of ``tile`` =
    (rows, columns) outputs, one of ``MATMUL_TILES``: a register block of (rows / 16) x
    (columns / 16) per thread): the same arguments, results (the same sums in the same order)
    and twin."""

    source = "matmul_tiled.cu"

    def __init__(self, *args: Any, tile: Sequence[int] = (64, 64), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tile = tuple(int(t) for t in tile)
        self.kernel_name = self.kernel_for(self.tile)

    def kernel_for(self, tile: tuple[int, ...]) -> str:
        if tile not in MATMUL_TILES:
            raise ValueError(f"matmul_tiled.cu has tiles of {list(MATMUL_TILES)}, not {tile}")
        return _storage_kernel(f"matmul_bias_act_tiled_{tile[0]}x{tile[1]}", self.storage)

    def launch_config(self, shape: MatmulShape) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return matmul_tiled_launch_config(shape.batch, shape.m, shape.n, self.tile)


class MatmulBiasActivationMmaCuda(MatmulBiasActivationTiledCuda):
    """``MatmulBiasActivationCuda`` in float16 storage on tensor cores (``matmul_mma.cu``:
    tiles of 64 x 64, mma.sync m16n8k16, float32 accumulation; sm_80+): the same arguments,
    results within float16's bound (each step's 16 products added in the tensor core's order),
    the same twin."""

    source = "matmul_mma.cu"

    def __init__(self, *args: Any, tile: Sequence[int] = MATMUL_MMA_TILE, **kwargs: Any) -> None:
        super().__init__(*args, tile=tile, **kwargs)
        if self.storage != np.float16:
            raise TypeError("the tensor-core product stores float16")

    def kernel_for(self, tile: tuple[int, ...]) -> str:
        if tile != MATMUL_MMA_TILE:
            raise ValueError(f"matmul_mma.cu has tiles of {MATMUL_MMA_TILE}, not {tile}")
        return "matmul_bias_act_mma_f16"


def matmul_bias_act_twin(
    a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, out: np.ndarray, *,
    adjoint_a: bool, adjoint_b: bool, bounds: tuple[float, float],
) -> None:
    """``matmul_bias_act_f32/_f16`` in numpy: the float32 product (BLAS's order of the sum;
    a shared operand broadcast), plus the bias, clamped, stored in ``out``'s dtype. A
    product over k = 0 is 0, as the kernel's empty loop."""
    a = a.astype(np.float32, copy=False)
    b = b.astype(np.float32, copy=False)
    if adjoint_a:
        a = np.swapaxes(a, -1, -2)
    if adjoint_b:
        b = np.swapaxes(b, -1, -2)
    acc = np.matmul(a, b).reshape(out.shape)
    if bias is not None:
        acc = acc + bias.astype(np.float32, copy=False).reshape(-1)
    _clamp_into(out, acc, *bounds)


# -- the candidates (backends/gpu/tactics.py) --------------------------------------------------------


@dataclass(frozen=True)
class MatmulProblem:
    """What the product's candidates are chosen for: its shape (``MatmulShape``: batch, rows,
    columns, depth, the operands' strides), whether it adds a bias, its clamp, the storage
    dtype, the device's compute capability, and the delegate's options for the vendor GEMM
    (``vendor_gemm``, ``allow_tf32``: ``GpuDelegate``'s)."""

    shape: MatmulShape
    bias: bool
    bounds: tuple[float, float]
    storage: str
    compute_capability: int
    vendor_gemm: bool = False
    allow_tf32: bool = False


def mma_reason(problem: MatmulProblem) -> str | None:
    """The tensor-core product: float16 storage, sm_80 or newer."""
    if problem.storage != "float16":
        return "the tensor-core product stores float16"
    if problem.compute_capability < MMA_MIN_COMPUTE_CAPABILITY:
        return f"the tensor-core product needs sm_{MMA_MIN_COMPUTE_CAPABILITY} or newer, the device is sm_{problem.compute_capability}"
    return None


def _tiles(tile: tuple[int, int]) -> Any:
    return lambda p: matmul_tiled_launch_config(p.shape.batch, p.shape.m, p.shape.n, tile)


#: The float products' candidates (FULLY_CONNECTED, BATCH_MATMUL), one row each: name,
#: launcher, when it applies, launch shape, options. The direct kernel first: the reference.
#: The tiles: 64x64 (4,096 outputs a block) and 32x32 (1,024: as many blocks as the direct
#: kernel, for the products a 64x64 tile would run on few blocks).
MATMUL_TACTICS: tuple[Tactic, ...] = (
    Tactic("direct", MatmulBiasActivationCuda,
           launch_shape=lambda p: matmul_bias_act_launch_config(p.shape.batch, p.shape.m, p.shape.n)),
    Tactic("tiled 64x64", MatmulBiasActivationTiledCuda, launch_shape=_tiles((64, 64)), options={"tile": (64, 64)}),
    Tactic("tiled 32x32", MatmulBiasActivationTiledCuda, launch_shape=_tiles((32, 32)), options={"tile": (32, 32)}),
    Tactic("mma 64x64", MatmulBiasActivationMmaCuda, mma_reason, _tiles(MATMUL_MMA_TILE)),
    Tactic("cuBLAS float32", CublasMatmulCuda, cublas_reason("float32"), options={"compute": "float32"}, vendor=True),
    Tactic("cuBLAS TF32", CublasMatmulCuda, cublas_reason("tf32"), options={"compute": "tf32"}, vendor=True),
    Tactic("cuBLAS float16", CublasMatmulCuda, cublas_reason("float16"), options={"compute": "float16"}, vendor=True),
)
