"""Launchers, launch shapes and numpy twins of the float CONV_2D kernels: ``conv2d.cu`` (one
direct convolution kernel), ``conv2d_tiled.cu`` (an implicit GEMM over shared-memory tiles)
and ``conv2d_mma.cu`` (its tensor-core form), one launch each; and the fused epilogue
(``epilogue.cuh``) the convolutions share.

The launchers follow ``sources._Launcher``: on a device they launch the ``.cu`` kernel,
in host emulation (``host_device=...``) their numpy twin, as one launch of the emulated
machine. The twins compute what the kernels compute, in float32, except for the order
of the float sums (numpy/BLAS order against the kernels' sequential fused multiply-adds):
``tests/gpu/test_conv_kernels.py`` compares them within a few float32 ulps of the terms.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from backends.cpu.kernels._window import WindowGeometry, taps_inside_input, window_view
from backends.gpu.cuda.cublas import CublasConv2DCuda, cublas_reason, gemm_conv_reason
from backends.gpu.cuda.sources import (
    _Launcher,
    _MAX_GRID_YZ,
    _check_out,
    _clamp_into,
    _contiguous,
    _pair,
    _padding,
    _storage_kernel,
    activation_range,
    elementwise_launch_config,
)
from backends.gpu.tactics import Tactic, emptier_reason
from schema.enums import ActivationFunctionType, Padding

#: Output pixels each thread of ``conv2d.cu`` computes (its CONV2D_PIXELS).
CONV2D_PIXELS = 4

_NULL = np.uint64(0)  # an absent pointer argument, passed by value: 8 zero bytes

#: A clamp that clamps nothing (NaN passes too).
NO_CLAMP = (-math.inf, math.inf)


# -- the fused epilogue (epilogue.cuh) ------------------------------------------------------------


@dataclass(frozen=True)
class Epilogue:
    """What a convolution kernel does after its own bias and clamp, for the nodes that
    ``backends/gpu/fusion.py`` folds into it (``epilogue.cuh``), in this order:

    - ``residual_channels`` > 0: ADD of a residual ``[N, OH, OW, residual_channels]``
      (fewer channels than the output: a zero PAD of its last channels folded in), then the
      ADD's own clamp ``add_bounds``;
    - ``prelu``: PRELU with a per-channel alpha ``[out_channels]``;
    - ``post_bounds``: a RELU-family clamp (``NO_CLAMP``: none).
    """

    residual_channels: int = 0
    add_bounds: tuple[float, float] = NO_CLAMP
    prelu: bool = False
    post_bounds: tuple[float, float] = NO_CLAMP

    def scalar_args(self, residual: Any, alpha: Any, null: Any) -> tuple:
        """The epilogue's parameters of a ``*_fused_*`` kernel, in order."""
        return (
            null if residual is None else residual, np.int32(self.residual_channels),
            np.float32(self.add_bounds[0]), np.float32(self.add_bounds[1]),
            null if alpha is None else alpha, np.float32(self.post_bounds[0]), np.float32(self.post_bounds[1]),
        )

    def check(self, residual: Any, alpha: Any, out_shape: Sequence[int], storage: np.dtype) -> None:
        """ValueError unless ``residual`` / ``alpha`` are what this epilogue reads."""
        if (residual is not None) != (self.residual_channels > 0) or (alpha is not None) != self.prelu:
            raise ValueError("the residual and alpha arrays must match the epilogue")
        if residual is not None:
            expected = (*out_shape[:3], self.residual_channels)
            if tuple(residual.shape) != expected or residual.dtype != storage:
                raise ValueError(f"residual must be a {storage} array of shape {list(expected)}, got {list(residual.shape)}")
            if self.residual_channels > out_shape[3]:
                raise ValueError(f"the residual has {self.residual_channels} channels, more than the output's {out_shape[3]}")
        if alpha is not None and (alpha.size != out_shape[3] or alpha.dtype != storage):
            raise ValueError(f"alpha must be {out_shape[3]} {storage} values, got {alpha.size} {alpha.dtype}")


def epilogue_twin(values: np.ndarray, residual: np.ndarray | None, alpha: np.ndarray | None, epilogue: Epilogue | None) -> np.ndarray:
    """``apply_epilogue`` of ``epilogue.cuh`` in numpy on float32 ``values`` ``[N, OH, OW, C]``
    (after the convolution's bias and clamp): each step the unfused op's float32 arithmetic.
    May write into ``values``."""
    if epilogue is None:
        return values
    f32 = np.float32
    if residual is not None:
        rc = epilogue.residual_channels
        values[..., :rc] += residual.astype(f32, copy=False)
        values[..., rc:] += f32(0)  # the PAD's zeros: -0.0 + 0.0 = +0.0 as in the unfused ADD
        values = np.clip(values, f32(epilogue.add_bounds[0]), f32(epilogue.add_bounds[1]), out=values)
    if alpha is not None:
        values = np.where(values >= 0, values, values * alpha.astype(f32, copy=False).reshape(-1))
    low, high = epilogue.post_bounds
    if (low, high) != NO_CLAMP:
        values = np.clip(values, f32(low), f32(high), out=values)
    return values


# -- CONV_2D ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conv2DGeometry:
    """The integer arguments of ``conv2d.cu``: the window (TFLite's output size and padding,
    ``WindowGeometry``, the CPU kernel's own) and the channel split into groups."""

    window: WindowGeometry
    out_channels: int
    groups: int

    @classmethod
    def of(
        cls,
        input_shape: Sequence[int],
        filter_shape: Sequence[int],
        stride: int | Sequence[int],
        dilation: int | Sequence[int],
        padding: int | str,
        pre_padding: Sequence[int] = (0, 0, 0, 0),
    ) -> "Conv2DGeometry":
        """From an NHWC input shape and the kernel's filter shape ``[groups, KH, KW, I, O]``
        (``conv2d_filter_layout``). ``pre_padding`` (top, bottom, left, right): the zeros of
        a PAD folded in front of the convolution (``fused_window``)."""
        if len(input_shape) != 4 or len(filter_shape) != 5:
            raise ValueError(
                f"input must be [N, H, W, C] and filter [groups, KH, KW, I, O], got {list(input_shape)} "
                f"and {list(filter_shape)}"
            )
        groups, kh, kw, group_in, group_out = (int(d) for d in filter_shape)
        channels = int(input_shape[3])
        if min(groups, group_in, group_out) <= 0 or channels != groups * group_in:
            raise ValueError(
                f"the input's {channels} channels must be the filter's {groups} groups of {group_in} channels"
            )
        window = fused_window(input_shape, (kh, kw), padding, stride, dilation, pre_padding)
        return cls(window, groups * group_out, groups)

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return (*self.window.output_shape, self.out_channels)

    @property
    def group_in(self) -> int:
        return self.window.channels // self.groups

    @property
    def group_out(self) -> int:
        return self.out_channels // self.groups

    def scalar_args(self) -> tuple[np.int32, ...]:
        """The int parameters of the kernels, in their order."""
        g = self.window
        return tuple(
            np.int32(v)
            for v in (
                g.batch, g.in_h, g.in_w, g.channels, g.out_h, g.out_w, self.out_channels, self.groups,
                g.filter_h, g.filter_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, g.pad_top, g.pad_left,
            )
        )


def fused_window(
    input_shape: Sequence[int], filter_hw: Sequence[int], padding: int | str, stride: Any, dilation: Any,
    pre_padding: Sequence[int] = (0, 0, 0, 0),
) -> WindowGeometry:
    """The window of a convolution over ``input_shape`` padded first with ``pre_padding``
    zeros (top, bottom, left, right: a PAD folded into the kernel): TFLite's geometry over
    the padded shape, its rows and columns of zeros moved into the convolution's own
    padding. The kernels skip taps in the padding, which equals reading the PAD's zeros
    for a finite filter (``fusion.py`` folds a PAD only then)."""
    top, bottom, left, right = (int(p) for p in pre_padding)
    batch, in_h, in_w, channels = (int(d) for d in input_shape)
    padded = (batch, in_h + top + bottom, in_w + left + right, channels)
    window = WindowGeometry.of(padded, tuple(filter_hw), _padding(padding), _pair(stride, "stride"), _pair(dilation, "dilation"))
    if not (top or bottom or left or right):
        return window
    return dataclasses.replace(
        window, in_h=in_h, in_w=in_w, pad_top=window.pad_top + top, pad_bottom=window.pad_bottom + bottom,
        pad_left=window.pad_left + left, pad_right=window.pad_right + right,
    )


def conv2d_filter_layout(filters: np.ndarray, groups: int) -> np.ndarray:
    """TFLite's OHWI filter ``[groups * O, KH, KW, I]`` as ``conv2d.cu`` reads it:
    ``[groups, KH, KW, I, O]`` (C-contiguous), so that consecutive output channels of a
    group, a warp's threads, read consecutive values."""
    filters = np.asarray(filters)
    out_channels, kh, kw, group_in = filters.shape
    if groups <= 0 or out_channels % groups:
        raise ValueError(f"{out_channels} output channels do not split into {groups} groups")
    per_group = filters.reshape(groups, out_channels // groups, kh, kw, group_in)
    return np.ascontiguousarray(per_group.transpose(0, 2, 3, 4, 1))


def conv2d_kernel_name(storage: Any, fused: bool = False) -> str:
    """The kernel for a storage dtype: ``conv2d_f32`` or ``conv2d_f16`` (``conv2d_fused_*``
    with an epilogue)."""
    return _storage_kernel("conv2d_fused" if fused else "conv2d", storage)


def conv2d_launch_config(geometry: Conv2DGeometry) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` of ``conv2d.cu``: 1-D blocks of 256 threads, one thread per
    (group of CONV2D_PIXELS output pixels, output channel)."""
    pixels = math.prod(geometry.window.output_shape)
    return elementwise_launch_config(-(-pixels // CONV2D_PIXELS) * geometry.out_channels)


# -- the tiles (conv2d_tiled.cu, conv2d_mma.cu) --------------------------------------------------------

#: The tensor-core kernels (``conv2d_mma.cu``, float16 storage, mma.sync m16n8k16): sm_80 and newer.
MMA_MIN_COMPUTE_CAPABILITY = 80


def conv2d_tiled_kernel_name(kind: str, tile: Sequence[int], storage: Any) -> str:
    """``conv2d_tiled_64x64_f32`` ... ``conv2d_mma_64x64_f16``: the kernel of a ``kind``
    (``"tiled"`` or ``"mma"``) of tiles of ``tile`` = (TILE_M output pixels, TILE_N output
    channels), for a storage dtype."""
    tile_m, tile_n = (int(t) for t in tile)
    if kind == "mma" and np.dtype(storage) != np.float16:
        raise TypeError("the tensor-core kernels store float16")
    return _storage_kernel(f"conv2d_{kind}_{tile_m}x{tile_n}", storage)


def conv2d_tiled_launch_config(geometry: "Conv2DGeometry", tile: Sequence[int]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` of a tiled kernel of ``tile`` = (TILE_M, TILE_N): blocks of 256
    threads, x over the tiles of TILE_M output pixels, y over the groups' tiles of TILE_N
    output channels."""
    tile_m, tile_n = (int(t) for t in tile)
    pixels = math.prod(geometry.window.output_shape)
    grid = (-(-pixels // tile_m), geometry.groups * -(-geometry.group_out // tile_n), 1)
    if min(grid) <= 0:
        raise ValueError("nothing to launch for an empty output")
    if grid[0] > 2**31 - 1 or grid[1] > _MAX_GRID_YZ:
        raise ValueError(f"the {tile_m}x{tile_n} tiles of a {list(geometry.out_shape)} output need a grid of {grid}")
    return grid, (256, 1, 1)


def conv2d_args(x: Any, w: Any, b: Any, out: Any, geometry: Conv2DGeometry, bounds: tuple[float, float], null: Any) -> tuple:
    """The argument tuple of a conv2d launch, in parameter order; ``null`` stands for an
    absent bias (a null pointer)."""
    act_min, act_max = bounds
    return (x, w, null if b is None else b, out, *geometry.scalar_args(), np.float32(act_min), np.float32(act_max))


class Conv2DCuda(_Launcher):
    """CONV_2D (versions 1 and 6) in one launch of ``conv2d.cu``: NHWC input, the filter
    laid out by ``conv2d_filter_layout`` (``[groups, KH, KW, I, O]``), optional bias
    ``[groups * O]``, all stored as ``storage`` (float32 or float16), computed in float32,
    with the fused activation's clamp (``sources.activation_range``: NONE saturates at
    +-FLT_MAX as TFLite), then the ``epilogue`` and the ``pre_padding`` that ``fusion.py``
    folded in (``conv2d_fused_*``). ``xp``, ``module`` and ``host_device`` as in
    ``_Launcher``."""

    source = "conv2d.cu"

    def __init__(
        self,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        padding: int | str = Padding.SAME,
        activation: int = ActivationFunctionType.NONE,
        storage: Any = np.float32,
        *,
        epilogue: Epilogue | None = None,
        pre_padding: Sequence[int] = (0, 0, 0, 0),
        xp: Any = None,
        module: Any = None,
        host_device: Any = None,
    ) -> None:
        self.stride = _pair(stride, "stride")
        self.dilation = _pair(dilation, "dilation")
        self.padding = _padding(padding)
        self.bounds = activation_range(activation)
        self.storage = np.dtype(storage)
        self.epilogue = epilogue
        self.pre_padding = tuple(int(p) for p in pre_padding)
        self.kernel_name = self.kernel_for(self.storage)
        super().__init__(xp, module, host_device)

    def kernel_for(self, storage: np.dtype) -> str:
        return conv2d_kernel_name(storage, fused=self.epilogue is not None)

    def launch_config(self, geometry: Conv2DGeometry) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return conv2d_launch_config(geometry)

    def __call__(self, x: Any, w: Any, b: Any = None, out: Any = None, *, residual: Any = None, alpha: Any = None) -> Any:
        """``x`` NHWC, ``w`` laid out by ``conv2d_filter_layout``, ``b`` or None; with an
        epilogue, its ``residual`` and ``alpha`` (``Epilogue``)."""
        xp = self.xp
        geometry = Conv2DGeometry.of(x.shape, w.shape, self.stride, self.dilation, self.padding, self.pre_padding)
        for array in (x, w) if b is None else (x, w, b):
            if array.dtype != self.storage:
                raise TypeError(f"expected {self.storage} arrays, got {array.dtype}")
        if b is not None and b.size != geometry.out_channels:
            raise ValueError(f"bias has {b.size} elements, expected {geometry.out_channels}")
        x, w = _contiguous(xp, x), _contiguous(xp, w)
        b = None if b is None else _contiguous(xp, b).reshape(-1)
        out = _check_out(xp, out, geometry.out_shape, self.storage)
        epilogue = self.epilogue
        if epilogue is None:
            if residual is not None or alpha is not None:
                raise ValueError("a residual or alpha needs an epilogue")
        else:
            epilogue.check(residual, alpha, geometry.out_shape, self.storage)
            residual = None if residual is None else _contiguous(xp, residual)
            alpha = None if alpha is None else _contiguous(xp, alpha).reshape(-1)
        if out.size == 0:
            return out
        grid, block = self.launch_config(geometry)
        args = conv2d_args(x, w, b, out, geometry, self.bounds, null=_NULL)
        twin = functools.partial(conv2d_twin, geometry=geometry, bounds=self.bounds)
        inputs: tuple = (x, w, b)
        if epilogue is not None:
            args += epilogue.scalar_args(residual, alpha, null=_NULL)
            twin = functools.partial(conv2d_fused_twin, geometry=geometry, bounds=self.bounds, epilogue=epilogue)
            inputs = (x, w, b, residual, alpha)
        self.launch(self.kernel_name, grid, block, args, twin, inputs, (out,))
        return out


class Conv2DTiledCuda(Conv2DCuda):
    """CONV_2D in one launch of ``conv2d_tiled.cu`` (an implicit GEMM over shared-memory
    tiles of ``tile`` = (TILE_M output pixels, TILE_N output channels) per block):
    ``Conv2DCuda``'s arguments and results. For a finite filter only. Its twin is the direct
    kernel's (the same sums, in the same order, up to the sign of a zero)."""

    source = "conv2d_tiled.cu"
    kind = "tiled"

    def __init__(self, *args: Any, tile: Sequence[int] = (64, 64), **kwargs: Any) -> None:
        self.tile = tuple(int(t) for t in tile)
        super().__init__(*args, **kwargs)
        self.epilogue = self.epilogue if self.epilogue is not None else Epilogue()  # the tiles always take one

    def kernel_for(self, storage: np.dtype) -> str:
        return conv2d_tiled_kernel_name(self.kind, self.tile, storage)

    def launch_config(self, geometry: Conv2DGeometry) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return conv2d_tiled_launch_config(geometry, self.tile)


class Conv2DMmaCuda(Conv2DTiledCuda):
    """CONV_2D in float16 storage on tensor cores: ``conv2d_mma.cu`` (``conv2d_tiled.cu``'s
    tiles, products by mma.sync m16n8k16 with float32 accumulation), sm_80 or newer, a
    finite filter. ``Conv2DCuda``'s arguments and results; its twin is the direct
    kernel's (half inputs, float32 sums: the tensor core's order of each step's 16
    products differs, within float16's bound)."""

    source = "conv2d_mma.cu"
    kind = "mma"


# -- the candidates (backends/gpu/tactics.py) --------------------------------------------------------


@dataclass(frozen=True)
class Conv2DProblem:
    """What the CONV_2D candidates are chosen for: the window and channels (``pre_padding``
    folded in), the storage dtype, whether the filter is finite, what ``fusion.py`` folded
    in (``epilogue``), the device's compute capability and the threads it holds at once
    (``Device.resident_threads``, for the fill rule; 0: unknown)."""

    geometry: Conv2DGeometry
    storage: str
    finite_filter: bool
    epilogue: Epilogue | None
    compute_capability: int
    pre_padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    vendor_gemm: bool = False
    allow_tf32: bool = False
    resident_threads: int = 0


def finite_filter_reason(problem: Conv2DProblem) -> str | None:
    """The tiles add ``0 * w`` for a tap in the padding, NaN for an infinite ``w``; the direct
    kernel skips such taps."""
    return None if problem.finite_filter else "the filter holds inf or NaN (the tiles would add 0 * inf for a tap in the padding)"


def mma_reason(problem: Conv2DProblem) -> str | None:
    """The tensor-core kernels: float16 storage, sm_80 or newer, a finite filter."""
    if problem.storage != "float16":
        return "the tensor-core kernels store float16"
    if problem.compute_capability < MMA_MIN_COMPUTE_CAPABILITY:
        return f"the tensor-core kernels need sm_{MMA_MIN_COMPUTE_CAPABILITY} or newer, the device is sm_{problem.compute_capability}"
    return finite_filter_reason(problem)


def fit_reason(tile: tuple[int, int], problem: Conv2DProblem) -> str | None:
    """A tile fits a layer whose groups have at least half its TILE_N output channels: past
    that, most of each block's columns would compute nothing (a 64-channel tile on a layer of
    16 channels leaves three quarters of it idle)."""
    group_out = problem.geometry.group_out
    if tile[1] > 2 * group_out:
        return f"its tile of {tile[1]} channels is more than twice the layer's {group_out} per group"
    return None


def tile_reason(kind: str, tile: tuple[int, int]) -> Any:
    """When a row of tiles applies: the kind's own rule (a finite filter; the tensor cores'
    ``mma_reason``), a tile that fits the layer's channels (``fit_reason``), and a grid that
    keeps the GPU as busy as the direct kernel's (``tactics.emptier_reason``)."""
    own = mma_reason if kind == "mma" else finite_filter_reason

    def reason(problem: Conv2DProblem) -> str | None:
        geometry = problem.geometry
        return own(problem) or fit_reason(tile, problem) or emptier_reason(
            math.prod(geometry.out_shape), conv2d_tiled_launch_config(geometry, tile), conv2d_launch_config(geometry),
            problem.resident_threads,
        )

    return reason


def _tiles(kind: str, tile: tuple[int, int]) -> dict[str, Any]:
    """A row of tiles' applies, launch shape and options."""
    return {
        "applies": tile_reason(kind, tile),
        "launch_shape": lambda problem: conv2d_tiled_launch_config(problem.geometry, tile),
        "options": {"tile": tile},
    }


def gemm_reason(compute: str) -> Any:
    """When the vendor GEMM applies to a convolution: a 1x1 filter, stride 1, one group, no
    padding (``cublas.gemm_conv_reason``: one product of its pixels by its filter), and the
    delegate's options (``cublas.cublas_reason``)."""
    options = cublas_reason(compute)
    return lambda problem: gemm_conv_reason(problem.geometry, problem.pre_padding) or options(problem)


#: CONV_2D's candidates (float32 and float16 storage), one row each: name, launcher, when it
#: applies, launch shape, the launcher's options. The direct kernel first: the reference. The
#: tiles come in shapes for wide layers at large batches (64x64, 128x32: 4,096 outputs a block),
#: for filling the GPU at batch 1 (32x32, 64x16: as many blocks as the direct kernel; 32x16:
#: twice as many) and for thin layers (TILE_N 16 and 8).
CONV2D_TACTICS: tuple[Tactic, ...] = (
    Tactic("direct", Conv2DCuda, launch_shape=lambda problem: conv2d_launch_config(problem.geometry)),
    Tactic("tiled 64x64", Conv2DTiledCuda, **_tiles("tiled", (64, 64))),
    Tactic("tiled 128x32", Conv2DTiledCuda, **_tiles("tiled", (128, 32))),
    Tactic("tiled 32x32", Conv2DTiledCuda, **_tiles("tiled", (32, 32))),
    Tactic("tiled 64x16", Conv2DTiledCuda, **_tiles("tiled", (64, 16))),
    Tactic("tiled 32x16", Conv2DTiledCuda, **_tiles("tiled", (32, 16))),
    Tactic("mma 64x64", Conv2DMmaCuda, **_tiles("mma", (64, 64))),
    Tactic("mma 64x16", Conv2DMmaCuda, **_tiles("mma", (64, 16))),
    Tactic("mma 128x8", Conv2DMmaCuda, **_tiles("mma", (128, 8))),
    Tactic("cuBLAS float32", CublasConv2DCuda, gemm_reason("float32"), options={"compute": "float32"}, vendor=True),
    Tactic("cuBLAS TF32", CublasConv2DCuda, gemm_reason("tf32"), options={"compute": "tf32"}, vendor=True),
    Tactic("cuBLAS float16", CublasConv2DCuda, gemm_reason("float16"), options={"compute": "float16"}, vendor=True),
)


def conv2d_twin(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, out: np.ndarray, *,
    geometry: Conv2DGeometry, bounds: tuple[float, float],
) -> None:
    """``conv2d_f32/_f16`` in numpy, in float32: the sums (``_window_sums``), then the
    bias and the clamp; stored in ``out``'s dtype."""
    acc = _window_sums(x.astype(np.float32, copy=False), w.astype(np.float32, copy=False), geometry)
    if b is not None:
        acc += b.astype(np.float32, copy=False).reshape(-1)
    _clamp_into(out, acc, *bounds)


def conv2d_fused_twin(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, residual: np.ndarray | None, alpha: np.ndarray | None,
    out: np.ndarray, *, geometry: Conv2DGeometry, bounds: tuple[float, float], epilogue: Epilogue,
) -> None:
    """``conv2d_fused_f32/_f16`` in numpy: ``conv2d_twin``'s float32 values, then the
    epilogue (``epilogue_twin``), stored in ``out``'s dtype."""
    acc = _window_sums(x.astype(np.float32, copy=False), w.astype(np.float32, copy=False), geometry)
    if b is not None:
        acc += b.astype(np.float32, copy=False).reshape(-1)
    acc = np.clip(acc, np.float32(bounds[0]), np.float32(bounds[1]), out=acc)
    out[...] = epilogue_twin(acc, residual, alpha, epilogue)


def _window_sums(x: np.ndarray, w: np.ndarray, geometry: Conv2DGeometry) -> np.ndarray:
    """``sum_{ky, kx, i} in * filter`` for every output, ``[N, OH, OW, groups * O]`` float32.

    With a finite filter: im2col over the zero-padded input and one BLAS product per
    group, as the CPU kernel computes it (a tap in the padding adds 0 * w = 0, which
    changes no sum). A filter holding inf or NaN would turn such a tap into NaN, so then
    each tap that sees the input (ky, then kx) adds its product only where it sees it,
    as the kernel skips the others. Either way the order of the sum is BLAS's, not the
    kernel's sequential one."""
    g, groups = geometry.window, geometry.groups
    group_in, group_out = geometry.group_in, geometry.group_out
    if np.isfinite(w).all():
        padded = np.pad(x, ((0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right), (0, 0)))
        windows = window_view(g, padded)  # [N, OH, OW, KH, KW, groups * I]
        rows = g.batch * g.out_h * g.out_w
        columns = windows.reshape(rows, g.filter_h * g.filter_w, groups, group_in).transpose(2, 0, 1, 3)
        products = np.matmul(columns.reshape(groups, rows, -1), w.reshape(groups, -1, group_out))  # [groups, M, O]
        return np.ascontiguousarray(products.transpose(1, 0, 2)).reshape(geometry.out_shape)
    acc = np.zeros((g.batch, g.out_h, g.out_w, groups, group_out), np.float32)
    for ky, kx, out_index, in_index in taps_inside_input(g):
        taps = x[in_index]  # [N, h, w, groups * I]
        shape = taps.shape[:3]
        per_group = taps.reshape(-1, groups, group_in).transpose(1, 0, 2)  # [groups, M, I]
        products = np.matmul(per_group, w[:, ky, kx])  # [groups, M, O]
        acc[out_index] += products.transpose(1, 0, 2).reshape(*shape, groups, group_out)
    return acc.reshape(geometry.out_shape)
