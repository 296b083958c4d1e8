"""Launchers and numpy twins of ``space_batch.cu``: SPACE_TO_BATCH_ND and
BATCH_TO_SPACE_ND, one launch per node, for any 1-, 2- or 4-byte element (int8 / uint8,
float16 or float32 storage): values are moved, never computed.

``tests/gpu/test_int8_layout_kernels.py`` checks each twin against its kernel (built by the
host shim), and the ops against the CPU path and BUILTIN_REF.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from backends.gpu.cuda.int8_elementwise import _contiguous
from backends.gpu.cuda.sources import _Launcher, elementwise_launch_config

_SIZES = {1: ("b8", np.uint8), 2: ("b16", np.uint16), 4: ("b32", np.uint32)}


@dataclass(frozen=True)
class SpaceBatchGeometry:
    """A SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND on 4-D views (a 3-D input [N, H, C] as
    [N, H, 1, C], block width 1): the input and output shapes, the block, and the paddings
    (or crops) before H and W."""

    in_shape: tuple[int, int, int, int]
    out_shape: tuple[int, int, int, int]
    block: tuple[int, int]
    before: tuple[int, int]

    @classmethod
    def space_to_batch(cls, shape: Sequence[int], block: Sequence[int], paddings: Sequence[Sequence[int]]) -> "SpaceBatchGeometry":
        (n, h, w, c), (bh, bw), ((top, bottom), (left, right)) = _as_4d(shape, block, paddings)
        return cls((n, h, w, c), (n * bh * bw, (h + top + bottom) // bh, (w + left + right) // bw, c), (bh, bw), (top, left))

    @classmethod
    def batch_to_space(cls, shape: Sequence[int], block: Sequence[int], crops: Sequence[Sequence[int]]) -> "SpaceBatchGeometry":
        (n, h, w, c), (bh, bw), ((top, bottom), (left, right)) = _as_4d(shape, block, crops)
        return cls((n, h, w, c), (n // (bh * bw), h * bh - top - bottom, w * bw - left - right, c), (bh, bw), (top, left))

    def scalar_args(self) -> tuple[np.int32, ...]:
        n = self.out_shape[0] if self.in_shape[0] > self.out_shape[0] else self.in_shape[0]  # the smaller batch
        _, in_h, in_w, c = self.in_shape
        _, out_h, out_w, _ = self.out_shape
        return tuple(np.int32(v) for v in (n, in_h, in_w, c, out_h, out_w, *self.block, *self.before))


def _as_4d(shape, block, pairs):
    shape = [int(d) for d in shape]
    block = [int(b) for b in block]
    pairs = [(int(a), int(b)) for a, b in pairs]
    if len(shape) == 3:
        return [shape[0], shape[1], 1, shape[2]], block + [1], pairs + [(0, 0)]
    return shape, block, pairs


class SpaceBatchCuda(_Launcher):
    """SPACE_TO_BATCH_ND (``to_batch`` True, ``fill`` the padding's raw value) or
    BATCH_TO_SPACE_ND (False) of an array whose elements have 1, 2 or 4 bytes; the output
    has ``out_shape`` (the op's, 3-D or 4-D). One launch."""

    source = "space_batch.cu"

    def __init__(self, geometry: SpaceBatchGeometry, to_batch: bool, fill: Any = 0, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.geometry = geometry
        self.to_batch = bool(to_batch)
        self.fill = fill
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, out_shape: Sequence[int]) -> Any:
        if x.dtype.itemsize not in _SIZES:
            raise TypeError(f"elements of {x.dtype.itemsize} bytes are not moved by space_batch.cu")
        code, bits = _SIZES[x.dtype.itemsize]
        x = _contiguous(self.xp, x)
        out = self.xp.empty(tuple(out_shape), dtype=x.dtype)
        if out.size == 0:
            return out
        name = f"{'space_to_batch' if self.to_batch else 'batch_to_space'}_{code}"
        args = (x, out, *self.geometry.scalar_args())
        if self.to_batch:
            args += (np.array(self.fill, dtype=x.dtype).view(bits)[()],)
        grid, block = elementwise_launch_config(out.size)
        twin = functools.partial(space_batch_twin, geometry=self.geometry, to_batch=self.to_batch, fill=self.fill)
        self.launch(name, grid, block, args, twin, (x,), (out,))
        return out


def space_batch_twin(x: np.ndarray, out: np.ndarray, *, geometry: SpaceBatchGeometry, to_batch: bool, fill: Any) -> None:
    """The kernels in numpy, as the CPU kernel's views: a padded copy split into blocks
    moved to the batch (SPACE_TO_BATCH_ND), or the batch's blocks moved back into space,
    then cropped (BATCH_TO_SPACE_ND)."""
    bh, bw = geometry.block
    top, left = geometry.before
    if to_batch:
        n, h, w, c = geometry.in_shape
        _, ho, wo, _ = geometry.out_shape
        padded = np.full((n, ho * bh, wo * bw, c), fill, dtype=x.dtype)
        padded[:, top:top + h, left:left + w] = x.reshape(geometry.in_shape)
        blocks = padded.reshape(n, ho, bh, wo, bw, c).transpose(2, 4, 0, 1, 3, 5)
        out.reshape(bh, bw, n, ho, wo, c)[...] = blocks
    else:
        _, h, w, c = geometry.in_shape
        n, ho, wo, _ = geometry.out_shape
        full = x.reshape(bh, bw, n, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(n, h * bh, w * bw, c)
        out.reshape(geometry.out_shape)[...] = full[:, top:top + ho, left:left + wo]
