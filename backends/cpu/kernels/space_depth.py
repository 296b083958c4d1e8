"""DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND: move blocks of
pixels between the spatial axes and the depth or batch axis (NHWC).

Each kernel is one or two copies between strided views; the views of the arena's
input and output buffers are made once per allocation (``Copies``)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import record_pair
from backends.cpu.kernels.reshape import (
    MOVABLE_TYPES,
    QUANTIZED_TYPES,
    checked_bytes,
    inputs_pending,
    quantization_params,
    require_int16_zero_point_0,
    require_same_quantization,
)
from schema.enums import BuiltinOperator, TensorType

T = TensorType


class Copies:
    """``target[...] = source`` for a list of view pairs built by ``make(x, out)`` from the
    input and output arrays, rebuilt only when those arrays change (a new allocation),
    copied as records of their contiguous runs (``_window.record_pair``)."""

    def __init__(self, make) -> None:
        self.make = make
        self.bound = (None, None)

    def __call__(self, x: np.ndarray, out: np.ndarray) -> None:
        if self.bound[0] is not x or self.bound[1] is not out:
            self.pairs = [record_pair(target, source) for target, source in self.make(x, out)]
            # (a reshape of a non-contiguous array is a copy: then make them again next time)
            self.bound = (x, out) if x.flags.c_contiguous and out.flags.c_contiguous else (None, None)
        for target, source in self.pairs:
            target[...] = source

    def bind(self, x: np.ndarray, out: np.ndarray) -> Callable[[], None] | None:
        """The copies as a function of no argument, for these two arrays (None when they
        are not both contiguous: then ``__call__`` remakes the views every time)."""
        if not (x.flags.c_contiguous and out.flags.c_contiguous):
            return None
        self(x, out)  # (makes the pairs; the copy itself is harmless)
        pairs = self.pairs
        if len(pairs) == 1:
            ((target, source),) = pairs

            def copy_once() -> None:
                target[...] = source

            return copy_once
        if len(pairs) == 2:
            (target_1, source_1), (target_2, source_2) = pairs

            def copy_twice() -> None:
                target_1[...] = source_1
                target_2[...] = source_2

            return copy_twice

        def copy() -> None:
            for target, source in pairs:
                target[...] = source

        return copy


def bind_copies(kernel: CpuKernel) -> Callable[[], None]:
    """A kernel whose invoke is ``kernel.copies(input, output)``: that, bound to this
    allocation's buffers (``kernel.invoke`` when a buffer may change)."""
    if getattr(kernel, "copies", None) is None or not kernel.buffers_are_fixed():  # (not prepared: inputs pending)
        return kernel.invoke
    return kernel.copies.bind(kernel.inputs[0].data, kernel.outputs[0].data) or kernel.invoke


DEPTH_TYPES = (T.FLOAT32, T.UINT8, T.INT8, T.INT32, T.INT64)


class _BlockKernel(CpuKernel):
    def check_4d(self) -> tuple[int, int, int, int]:
        x = self.inputs[0]
        self.require_types(x, *DEPTH_TYPES)
        self.require_types(self.outputs[0], x.type, role="output")
        if len(x.shape) != 4:
            raise self.unsupported(f"the input must be 4-D (NHWC), it has shape {list(x.shape)}")
        self.block = self.params.block_size
        if self.block <= 0:
            raise self.unsupported(f"block_size {self.block} must be positive")
        return x.shape


# v1: float32, uint8, int32, int64; v2: int8.
@register(BuiltinOperator.DEPTH_TO_SPACE, 1, 2)
class DepthToSpace(_BlockKernel):
    """DEPTH_TO_SPACE v1-v2: ``out[n, h*b+i, w*b+j, c] = in[n, h, w, (i*b+j)*C' + c]``."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        n, h, w, c = self.check_4d()
        b = self.block
        if c % (b * b):
            raise self.unsupported(f"depth {c} is not a multiple of block_size^2 = {b * b}")
        self.split = (n, h, w, b, b, c // (b * b))
        self.outputs[0].resize([n, h * b, w * b, c // (b * b)])
        self.copies = Copies(self.views)

    def views(self, x: np.ndarray, out: np.ndarray) -> list:
        n, h, w, b, _, c = self.split
        return [(out.reshape(n, h, b, w, b, c), x.reshape(self.split).transpose(0, 1, 3, 2, 4, 5))]

    def invoke(self) -> None:
        self.copies(self.inputs[0].data, self.outputs[0].data)

    def bind(self) -> Callable[[], None]:
        return bind_copies(self)


# v1: float32, uint8, int32, int64; v2: int8.
@register(BuiltinOperator.SPACE_TO_DEPTH, 1, 2)
class SpaceToDepth(_BlockKernel):
    """SPACE_TO_DEPTH v1-v2: the inverse of DEPTH_TO_SPACE."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        n, h, w, c = self.check_4d()
        b = self.block
        if h % b or w % b:
            raise self.unsupported(f"height {h} and width {w} must be multiples of block_size {b}")
        self.split = (n, h // b, b, w // b, b, c)
        self.outputs[0].resize([n, h // b, w // b, b * b * c])
        self.copies = Copies(self.views)

    def views(self, x: np.ndarray, out: np.ndarray) -> list:
        n, ho, b, wo, _, c = self.split
        return [(out.reshape(n, ho, wo, b, b, c), x.reshape(self.split).transpose(0, 1, 3, 2, 4, 5))]

    def invoke(self) -> None:
        self.copies(self.inputs[0].data, self.outputs[0].data)

    def bind(self) -> Callable[[], None]:
        return bind_copies(self)


# --------------------------------------------------------------------------------------
# SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND
# --------------------------------------------------------------------------------------


class _BatchSpaceBase(CpuKernel):
    """Shared checks; 3-D inputs [N, H, C] are handled as [N, H, 1, C]."""

    def check(self) -> tuple[list[int], list[int], list[tuple[int, int]]]:
        x, block, pairs, out = self.inputs[0], self.inputs[1], self.inputs[2], self.outputs[0]
        self.require_types(x, *MOVABLE_TYPES)
        self.require_types(block, T.INT32, role="block_shape")
        self.require_types(pairs, T.INT32, role=self.pairs_name)
        self.require_types(out, x.type, role="output")
        if len(x.shape) not in (3, 4):
            raise self.unsupported(f"the input must be 3-D or 4-D, it has shape {list(x.shape)}")
        if x.type in QUANTIZED_TYPES:
            require_same_quantization(self, x, out)
            require_int16_zero_point_0(self, x, out)
        spatial = len(x.shape) - 2
        if block.shape != (spatial,) or pairs.shape != (spatial, 2):
            raise self.unsupported(
                f"block_shape {list(block.shape)} and {self.pairs_name} {list(pairs.shape)} must be "
                f"[{spatial}] and [{spatial}, 2] for a {len(x.shape)}-D input"
            )
        if not (block.is_constant and pairs.is_constant):
            raise self.unsupported(f"block_shape and {self.pairs_name} must be constant tensors")
        blocks = [int(v) for v in block.data.reshape(-1)]
        amounts = [(int(a), int(b)) for a, b in np.asarray(pairs.data).reshape(spatial, 2)]
        if any(v <= 0 for v in blocks):
            raise self.unsupported(f"block_shape {blocks} must be positive")
        if any(a < 0 or b < 0 for a, b in amounts):
            raise self.unsupported(f"{self.pairs_name} {amounts} must not be negative")
        # As 4-D: [N, H, W, C] with W = 1, block 1, no padding for 3-D inputs.
        shape = list(x.shape) if len(x.shape) == 4 else [x.shape[0], x.shape[1], 1, x.shape[2]]
        return shape, blocks + [1] * (2 - spatial), amounts + [(0, 0)] * (2 - spatial)


# v1: float32, int32, int64, uint8 4-D; v2: int8; v3: 3-D input; v4: int16.
@register(BuiltinOperator.SPACE_TO_BATCH_ND, 1, 4)
class SpaceToBatchNd(_BatchSpaceBase):
    """SPACE_TO_BATCH_ND v1-v4: zero-pad H and W, then move each block offset to the batch
    (``out_batch = (i * block_w + j) * N + n``)."""

    pairs_name = "paddings"

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        (n, h, w, c), (bh, bw), ((top, bottom), (left, right)) = self.check()
        hp, wp = h + top + bottom, w + left + right
        if hp % bh or wp % bw:
            raise self.unsupported(f"padded size {[hp, wp]} is not a multiple of block_shape {[bh, bw]}")
        x = self.inputs[0]
        # The padded input (a scratch buffer) is as large as the output: refuse paddings
        # that make it absurd before allocating anything.
        checked_bytes(self, [n, hp, wp, c], x.dtype, f"the padded input {x.name!r} (a scratch buffer)")
        # Padding is the quantized zero for 8-bit types (TFLite memsets the zero point).
        pad_value = quantization_params(self.outputs[0])[1] if x.dtype.itemsize == 1 else 0
        self.padded = np.full([n, hp, wp, c], pad_value, dtype=x.dtype)
        self.inner = (slice(None), slice(top, top + h), slice(left, left + w))
        self.input_4d = (n, h, w, c)
        self.split = (n, hp // bh, bh, wp // bw, bw, c)
        shape = [n * bh * bw, hp // bh, wp // bw, c]
        self.outputs[0].resize(shape if len(x.shape) == 4 else [shape[0], shape[1], c])
        self.copies = Copies(self.views)

    def views(self, x: np.ndarray, out: np.ndarray) -> list:
        n, ho, bh, wo, bw, c = self.split
        return [
            (self.padded[self.inner], x.reshape(self.input_4d)),
            (out.reshape(bh, bw, n, ho, wo, c), self.padded.reshape(self.split).transpose(2, 4, 0, 1, 3, 5)),
        ]

    def invoke(self) -> None:
        self.copies(self.inputs[0].data, self.outputs[0].data)

    def bind(self) -> Callable[[], None]:
        return bind_copies(self)


# v1: float32, int32, int64, uint8 4-D; v2: int8; v3: 3-D input; v4: int16.
@register(BuiltinOperator.BATCH_TO_SPACE_ND, 1, 4)
class BatchToSpaceNd(_BatchSpaceBase):
    """BATCH_TO_SPACE_ND v1-v4: the inverse of SPACE_TO_BATCH_ND, then crop H and W."""

    pairs_name = "crops"

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        (n, h, w, c), (bh, bw), ((top, bottom), (left, right)) = self.check()
        if n % (bh * bw):
            raise self.unsupported(f"batch {n} is not a multiple of the block size {bh * bw}")
        batch = n // (bh * bw)
        ho, wo = h * bh - top - bottom, w * bw - left - right
        if ho < 0 or wo < 0:
            raise self.unsupported(
                f"crops {[[top, bottom], [left, right]]} are larger than the output {[h * bh, w * bw]}"
            )
        x = self.inputs[0]
        self.split = (bh, bw, batch, h, w, c)
        self.full = np.empty([batch, h * bh, w * bw, c], dtype=x.dtype)
        self.crop = (slice(None), slice(top, top + ho), slice(left, left + wo))
        shape = [batch, ho, wo, c]
        self.outputs[0].resize(shape if len(x.shape) == 4 else [batch, ho, c])
        self.copies = Copies(self.views)

    def views(self, x: np.ndarray, out: np.ndarray) -> list:
        bh, bw, batch, h, w, c = self.split
        blocks = x.reshape(self.split).transpose(2, 3, 0, 4, 1, 5)
        cropped = self.full[self.crop]
        return [(self.full.reshape(batch, h, bh, w, bw, c), blocks), (out.reshape(cropped.shape), cropped)]

    def invoke(self) -> None:
        self.copies(self.inputs[0].data, self.outputs[0].data)

    def bind(self) -> Callable[[], None]:
        return bind_copies(self)
