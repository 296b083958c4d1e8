"""Launchers, launch shapes and numpy twins of the float DEPTHWISE_CONV_2D kernels:
``depthwise_conv2d.cu`` (the direct kernel, and its fused entry points with a PAD folded in
front and a residual ADD / PRELU / RELU after it) and ``depthwise_conv2d_tiled.cu`` (the
input patch of each tile of outputs staged in shared memory), one launch each; and the
depthwise window arithmetic the quantized kernel shares (``DepthwiseGeometry``,
``depthwise_tap_sums``).

Each launcher (a ``sources._Launcher``) computes the grid and the arguments of one launch
and calls ``launch``: on a device the ``.cu`` kernel runs, in host emulation its twin runs
as one launch of the emulated machine. The twins compute what the kernels compute, in the
same float32 operations and order.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from backends.cpu.common import compute_padding
from backends.cpu.kernels._window import taps_inside_input
from backends.gpu.cuda.conv2d import Epilogue, epilogue_twin
from backends.gpu.cuda.sources import (
    _Launcher,
    _as_float32,
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

F32 = np.float32


def depthwise_launch_config(out_shape: Sequence[int]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` for the depthwise kernels: one thread per output element."""
    total = math.prod(int(d) for d in out_shape)
    if total <= 0:
        raise ValueError(f"nothing to launch for the empty output shape {list(out_shape)}")
    return elementwise_launch_config(total)


@dataclass(frozen=True)
class DepthwiseGeometry:
    """The integer arguments of the depthwise kernels, computed on the host with TFLite's
    padding rule (``backends.cpu.common.compute_padding``, as the CPU kernel does)."""

    batches: int
    in_h: int
    in_w: int
    in_channels: int
    out_h: int
    out_w: int
    multiplier: int
    filter_h: int
    filter_w: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_left: int

    @classmethod
    def of(
        cls,
        input_shape: Sequence[int],
        filter_shape: Sequence[int],
        stride: int | Sequence[int],
        dilation: int | Sequence[int],
        padding: int | str,
        multiplier: int | None = None,
    ) -> "DepthwiseGeometry":
        """From an NHWC input shape and a ``[1, KH, KW, C*M]`` filter shape. ``multiplier``
        is checked against the shapes when given (TFLite takes it from the shapes)."""
        if len(input_shape) != 4 or len(filter_shape) != 4 or filter_shape[0] != 1:
            raise ValueError(
                f"input must be [N, H, W, C] and filter [1, KH, KW, C*M], got {list(input_shape)} and {list(filter_shape)}"
            )
        batches, in_h, in_w, in_channels = (int(d) for d in input_shape)
        _, filter_h, filter_w, out_channels = (int(d) for d in filter_shape)
        if in_channels <= 0 or out_channels % in_channels:
            raise ValueError(f"filter channels ({out_channels}) must be a multiple of the input channels ({in_channels})")
        if multiplier is not None and out_channels != in_channels * int(multiplier):
            raise ValueError(
                f"depth multiplier {multiplier} does not match the shapes: {in_channels} input channels, "
                f"{out_channels} filter channels"
            )
        (stride_h, stride_w), (dilation_h, dilation_w) = _pair(stride, "stride"), _pair(dilation, "dilation")
        padding = _padding(padding)
        rows = compute_padding(padding, in_h, filter_h, stride_h, dilation_h)
        cols = compute_padding(padding, in_w, filter_w, stride_w, dilation_w)
        if rows.out_size <= 0 or cols.out_size <= 0:
            raise ValueError(
                f"the {filter_h}x{filter_w} filter with dilation {dilation_h}x{dilation_w} does not fit the "
                f"{in_h}x{in_w} input with {padding.name} padding"
            )
        return cls(
            batches, in_h, in_w, in_channels, rows.out_size, cols.out_size, out_channels // in_channels,
            filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, rows.before, cols.before,
        )

    @property
    def out_channels(self) -> int:
        return self.in_channels * self.multiplier

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return (self.batches, self.out_h, self.out_w, self.out_channels)

    def scalar_args(self) -> tuple[np.int32, ...]:
        """The int parameters of the kernels, in their order."""
        return tuple(
            np.int32(v)
            for v in (
                self.batches, self.in_h, self.in_w, self.in_channels, self.out_h, self.out_w, self.multiplier,
                self.filter_h, self.filter_w, self.stride_h, self.stride_w, self.dilation_h, self.dilation_w,
                self.pad_top, self.pad_left,
            )
        )


def depthwise_kernel_name(storage: Any) -> str:
    """The kernel for a storage dtype: float32 or float16."""
    return _storage_kernel("depthwise_conv2d", storage)


def depthwise_args(x: Any, w: Any, b: Any, out: Any, geometry: DepthwiseGeometry, activation: int, null: Any) -> tuple:
    """The argument tuple of a depthwise kernel launch, in parameter order. ``null`` is what
    the caller passes for an absent bias (a null pointer)."""
    act_min, act_max = activation_range(activation)
    return (x, w, null if b is None else b, out, *geometry.scalar_args(), np.float32(act_min), np.float32(act_max))


class DepthwiseConv2DCuda(_Launcher):
    """DEPTHWISE_CONV_2D (versions 1-2) on a CUDA device through CuPy: cupy arrays in and
    out, NHWC, stored as ``storage`` (float32 or float16), computed in float32. Nothing
    folded in: ``epilogue`` None and no ``pre_padding`` (``DepthwiseConv2DFusedCuda`` runs
    those).

    ``xp`` and ``module`` as in ``_Launcher``.
    """

    source = "depthwise_conv2d.cu"

    def __init__(
        self,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        padding: int | str = Padding.SAME,
        activation: int = ActivationFunctionType.NONE,
        storage: Any = np.float32,
        *,
        epilogue: Any = None,
        pre_padding: Sequence[int] = (0, 0, 0, 0),
        xp: Any = None,
        module: Any = None,
        host_device: Any = None,
    ) -> None:
        if epilogue is not None or any(pre_padding):
            raise ValueError("depthwise_conv2d_f32/_f16 fold nothing in: DepthwiseConv2DFusedCuda runs a PAD or an epilogue")
        self.stride = _pair(stride, "stride")
        self.dilation = _pair(dilation, "dilation")
        self.padding = _padding(padding)
        self.activation = ActivationFunctionType(activation)
        self.storage = np.dtype(storage)
        self.kernel_name = depthwise_kernel_name(self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, w: Any, b: Any = None, out: Any = None) -> Any:
        xp = self.xp
        geometry = DepthwiseGeometry.of(x.shape, w.shape, self.stride, self.dilation, self.padding)
        arrays = [x, w] + ([] if b is None else [b])
        for array in arrays:
            if array.dtype != self.storage:
                raise TypeError(f"expected {self.storage} arrays, got {array.dtype}")
        if b is not None and b.size != geometry.out_channels:
            raise ValueError(f"bias has {b.size} elements, expected {geometry.out_channels}")
        x, w = xp.ascontiguousarray(x), xp.ascontiguousarray(w)
        b = None if b is None else xp.ascontiguousarray(b)
        if out is None:
            out = xp.empty(geometry.out_shape, dtype=self.storage)
        elif out.shape != geometry.out_shape or out.dtype != self.storage or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous {self.storage} array of shape {geometry.out_shape}")
        if out.size == 0:
            return out
        grid, block = depthwise_launch_config(geometry.out_shape)
        # An absent bias is a null pointer passed by value: 8 zero bytes.
        args = depthwise_args(x, w, b, out, geometry, self.activation, null=np.uint64(0))
        twin = functools.partial(depthwise_conv2d_twin, geometry=geometry, activation=self.activation)
        self.launch(self.kernel_name, grid, block, args, twin, (x, w, b), (out,))
        return out


# -- numpy twins ----------------------------------------------------------------------------------

def depthwise_tap_sums(x: np.ndarray, weights: np.ndarray, geometry: DepthwiseGeometry, dtype: Any) -> np.ndarray:
    """``sum_{ky, kx} x * weights`` of every depthwise output ``[N, OH, OW, C*M]``, summed
    in ``dtype`` (float32 for the float kernels, int64 for the quantized one, whose ``x``
    and ``weights`` come with their zero points added): each tap in the kernels' order (ky, then kx),
    skipped where it falls outside the input, added to the block of outputs where it falls
    inside (vectorized over that block; ``taps_inside_input``). ``x`` is the NHWC input,
    ``weights`` the ``[KH, KW, C*M]`` filter."""
    if geometry.multiplier > 1:
        x = np.repeat(x, geometry.multiplier, axis=3)  # input channel c feeds outputs c*M .. c*M + M-1
    acc = np.zeros(geometry.out_shape, dtype)
    for ky, kx, out_index, in_index in taps_inside_input(geometry):
        acc[out_index] += x[in_index] * weights[ky, kx]
    return acc


def depthwise_conv2d_twin(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, out: np.ndarray, *, geometry: DepthwiseGeometry, activation: int
) -> None:
    """``depthwise_conv2d_f32/_f16`` in numpy: the taps in the kernel's order (ky, then
    kx), taps outside the input skipped, float32 sums, then bias and the clamp. Each tap
    adds the strided block of input it reads to the block of outputs where it falls inside."""
    acc = depthwise_tap_sums(_as_float32(x), _as_float32(w)[0], geometry, np.float32)
    if b is not None:
        acc += _as_float32(b)
    _clamp_into(out, acc, *activation_range(activation))


# -- DEPTHWISE_CONV_2D with a fused prologue / epilogue (depthwise_conv2d.cu: *_fused_*) -------------


def depthwise_geometry(
    input_shape: Sequence[int], filter_shape: Sequence[int], stride: Any, dilation: Any, padding: int | str,
    pre_padding: Sequence[int] = (0, 0, 0, 0),
) -> DepthwiseGeometry:
    """``DepthwiseGeometry.of`` over ``input_shape`` padded first with ``pre_padding`` zeros
    (top, bottom, left, right: a PAD folded in front), its zeros moved into the kernel's
    own padding (as ``conv2d.fused_window``)."""
    top, bottom, left, right = (int(p) for p in pre_padding)
    batch, in_h, in_w, channels = (int(d) for d in input_shape)
    padded = (batch, in_h + top + bottom, in_w + left + right, channels)
    geometry = DepthwiseGeometry.of(padded, filter_shape, stride, dilation, padding)
    if not (top or bottom or left or right):
        return geometry
    return dataclasses.replace(geometry, in_h=in_h, in_w=in_w, pad_top=geometry.pad_top + top, pad_left=geometry.pad_left + left)


class DepthwiseConv2DFusedCuda(DepthwiseConv2DCuda):
    """DEPTHWISE_CONV_2D (versions 1-2) with what ``backends/gpu/fusion.py`` folds into it:
    a PAD of rows and columns in front (``pre_padding``: top, bottom, left, right) and an
    ``Epilogue`` (residual ADD, PRELU, RELU) after the bias and clamp, in one launch of
    ``depthwise_conv2d_fused_f32/_f16``. NHWC, TFLite's ``[1, KH, KW, C*M]`` filter, stored
    as ``storage``, computed in float32. The window, activation and storage are
    ``DepthwiseConv2DCuda``'s; ``xp``, ``module`` and ``host_device`` as in
    ``sources._Launcher``."""

    def __init__(
        self,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        padding: int | str = Padding.SAME,
        activation: int = ActivationFunctionType.NONE,
        storage: Any = np.float32,
        *,
        epilogue: Any = None,
        pre_padding: Sequence[int] = (0, 0, 0, 0),
        xp: Any = None,
        module: Any = None,
        host_device: Any = None,
    ) -> None:
        super().__init__(stride, dilation, padding, activation, storage, xp=xp, module=module, host_device=host_device)
        self.bounds = activation_range(activation)
        self.epilogue = epilogue if epilogue is not None else Epilogue()
        self.pre_padding = tuple(int(p) for p in pre_padding)
        self.kernel_name = _storage_kernel("depthwise_conv2d_fused", self.storage)

    def __call__(self, x: Any, w: Any, b: Any = None, out: Any = None, *, residual: Any = None, alpha: Any = None) -> Any:
        xp = self.xp
        geometry = depthwise_geometry(x.shape, w.shape, self.stride, self.dilation, self.padding, self.pre_padding)
        for array in (a for a in (x, w, b) if a is not None):
            if array.dtype != self.storage:
                raise TypeError(f"expected {self.storage} arrays, got {array.dtype}")
        if b is not None and b.size != geometry.out_channels:
            raise ValueError(f"bias has {b.size} elements, expected {geometry.out_channels}")
        self.epilogue.check(residual, alpha, geometry.out_shape, self.storage)
        x, w = _contiguous(xp, x), _contiguous(xp, w)
        b = None if b is None else _contiguous(xp, b).reshape(-1)
        residual = None if residual is None else _contiguous(xp, residual)
        alpha = None if alpha is None else _contiguous(xp, alpha).reshape(-1)
        out = _check_out(xp, out, geometry.out_shape, self.storage)
        if out.size == 0:
            return out
        null = np.uint64(0)
        grid, block = self.launch_config(geometry)
        act_min, act_max = self.bounds
        args = (
            x, w, null if b is None else b, out, *geometry.scalar_args(), np.float32(act_min), np.float32(act_max),
            *self.epilogue.scalar_args(residual, alpha, null),
        )
        twin = functools.partial(depthwise_conv2d_fused_twin, geometry=geometry, bounds=self.bounds, epilogue=self.epilogue)
        self.launch(self.kernel_name, grid, block, args, twin, (x, w, b, residual, alpha), (out,))
        return out

    def launch_config(self, geometry: DepthwiseGeometry) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return depthwise_launch_config(geometry.out_shape)


#: ``depthwise_conv2d_tiled.cu``'s tiles: output pixels per block side -> the largest input patch
#: (rows and columns) a block stages; and the output channels per block.
DW_PATCHES = {8: 20, 4: 12}
DW_CHANNELS = 16


def depthwise_patch(geometry: DepthwiseGeometry, tile: int = 8) -> tuple[int, int]:
    """The input rows and columns a tile of ``tile`` x ``tile`` outputs reads."""
    g = geometry
    return ((tile - 1) * g.stride_h + (g.filter_h - 1) * g.dilation_h + 1,
            (tile - 1) * g.stride_w + (g.filter_w - 1) * g.dilation_w + 1)


def depthwise_tiled_launch_config(geometry: DepthwiseGeometry, tile: int = 8) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` of ``depthwise_conv2d_tiled_<tile>x<tile>_*``: x over the output tiles
    of one image, y over groups of DW_CHANNELS output channels, z over the images; 256 threads."""
    g = geometry
    if tile not in DW_PATCHES:
        raise ValueError(f"depthwise_conv2d_tiled.cu has tiles of {sorted(DW_PATCHES)} pixels a side, not {tile}")
    tiles = -(-g.out_h // tile) * -(-g.out_w // tile)
    grid = (tiles, -(-g.out_channels // DW_CHANNELS), g.batches)
    if min(grid) <= 0:
        raise ValueError("nothing to launch for an empty output")
    if max(depthwise_patch(g, tile)) > DW_PATCHES[tile]:
        raise ValueError(f"a tile's input patch {depthwise_patch(g, tile)} is larger than {DW_PATCHES[tile]}x{DW_PATCHES[tile]}")
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"a {list(g.out_shape)} output needs a grid of {grid}")
    return grid, (256, 1, 1)


class DepthwiseConv2DTiledCuda(DepthwiseConv2DFusedCuda):
    """``DepthwiseConv2DFusedCuda`` run by ``depthwise_conv2d_tiled.cu`` (the input patch of
    each tile of ``tile`` x ``tile`` outputs and DW_CHANNELS channels staged in shared memory
    once): the same arguments and results (the direct kernel's sums, in its order), the same
    twin. For a tile's input patch of at most ``DW_PATCHES[tile]`` rows and columns
    (``depthwise_tiled_launch_config``)."""

    source = "depthwise_conv2d_tiled.cu"

    def __init__(self, *args: Any, tile: int = 8, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tile = int(tile)
        self.kernel_name = _storage_kernel(f"depthwise_conv2d_tiled_{self.tile}x{self.tile}", self.storage)

    def launch_config(self, geometry: DepthwiseGeometry) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return depthwise_tiled_launch_config(geometry, self.tile)


def depthwise_sums(x: np.ndarray, w: np.ndarray, geometry: DepthwiseGeometry) -> np.ndarray:
    """``sum_{ky, kx} in * filter`` of every output, float32 ``[N, OH, OW, C*M]``: each tap
    in the kernel's order (ky, then kx), skipped where it falls outside the input, added
    to the block of outputs where it falls inside (vectorized over that block)."""
    return depthwise_tap_sums(x.astype(F32, copy=False), w.astype(F32, copy=False)[0], geometry, F32)


def depthwise_conv2d_fused_twin(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, residual: np.ndarray | None, alpha: np.ndarray | None,
    out: np.ndarray, *, geometry: DepthwiseGeometry, bounds: tuple[float, float], epilogue: Any,
) -> None:
    """``depthwise_conv2d_fused_*`` in numpy: the sums, the bias and clamp, the epilogue
    (``conv2d.epilogue_twin``), stored in ``out``'s dtype."""
    acc = depthwise_sums(x, w, geometry)
    if b is not None:
        acc += b.astype(F32, copy=False)
    acc = np.clip(acc, F32(bounds[0]), F32(bounds[1]), out=acc)
    out[...] = epilogue_twin(acc, residual, alpha, epilogue)


# -- the candidates (backends/gpu/tactics.py) --------------------------------------------------------


@dataclass(frozen=True)
class DepthwiseProblem:
    """What the DEPTHWISE_CONV_2D candidates are chosen for: the window (``pre_padding``
    folded in), the storage dtype, what ``fusion.py`` folded in (``fused``: a PAD in front
    or an epilogue after), and the threads the device holds at once
    (``Device.resident_threads``, for the fill rule; 0: unknown)."""

    geometry: DepthwiseGeometry
    storage: str
    fused: bool
    epilogue: Epilogue | None
    resident_threads: int = 0


def _unfused(problem: DepthwiseProblem) -> str | None:
    return "a PAD or an epilogue is folded in (the fused entry point runs them)" if problem.fused else None


def _fused(problem: DepthwiseProblem) -> str | None:
    return None if problem.fused else "nothing is folded in (the plain entry point runs it)"


def _direct_shape(problem: DepthwiseProblem) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    return depthwise_launch_config(problem.geometry.out_shape)


def _tiles(tile: int) -> dict[str, Any]:
    """A row of tiles: it applies where its grid keeps the GPU as busy as the direct kernel's
    (``tactics.emptier_reason``) and a tile's input patch fits (its launch shape)."""

    def shape(problem: DepthwiseProblem) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return depthwise_tiled_launch_config(problem.geometry, tile)

    def applies(problem: DepthwiseProblem) -> str | None:
        out_shape = problem.geometry.out_shape
        return emptier_reason(math.prod(out_shape), shape(problem), _direct_shape(problem), problem.resident_threads)

    return {"applies": applies, "launch_shape": shape, "options": {"tile": tile}}


#: DEPTHWISE_CONV_2D's candidates (float32 and float16 storage), one row each: name, launcher,
#: when it applies, launch shape, options. The direct kernel first: the reference. The tiles:
#: 8x8 pixels of 16 channels (1,024 outputs a block, for large batches) and 4x4 (256 outputs a
#: block: as many blocks as the direct kernel, for batch 1).
DEPTHWISE_TACTICS: tuple[Tactic, ...] = (
    Tactic("direct", DepthwiseConv2DCuda, _unfused, _direct_shape),
    Tactic("direct fused", DepthwiseConv2DFusedCuda, _fused, _direct_shape),
    Tactic("tiled 8x8x16", DepthwiseConv2DTiledCuda, **_tiles(8)),
    Tactic("tiled 4x4x16", DepthwiseConv2DTiledCuda, **_tiles(4)),
)
