"""TILE, BROADCAST_TO, REVERSE_V2: repeat, broadcast or mirror a tensor."""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import (
    COMPLEX_TYPES,
    INDEX_TYPES,
    MOVABLE_TYPES,
    checked_bytes,
    inputs_pending,
    int_values,
    normalize_axis,
)
from schema.enums import BuiltinOperator, TensorType

T = TensorType


# v1: float32, int32, int64, uint8, int16, bool; v2: string; v3: int8.
@register(BuiltinOperator.TILE, 1, 3)
class Tile(CpuKernel):
    """TILE v1-v3: repeat the input ``multiples[i]`` times along each axis."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, multiples = self.inputs
        self.require_types(x, *MOVABLE_TYPES, T.STRING, T.COMPLEX64)
        self.require_types(multiples, *INDEX_TYPES, role="multiples")
        self.require_types(self.outputs[0], x.type, role="output")
        if multiples.num_elements != len(x.shape):
            raise self.unsupported(f"multiples has {multiples.num_elements} values for a rank-{len(x.shape)} input")
        self.from_values = not multiples.is_constant
        if self.from_values:
            self.outputs[0].set_dynamic()
            return
        self.outputs[0].resize(self.tiled_shape(x.shape, int_values(multiples)))

    def tiled_shape(self, shape, multiples) -> list[int]:
        if any(m < 0 for m in multiples):
            raise self.unsupported(f"multiples {multiples} has a negative entry")
        self.multiples = multiples
        return [d * m for d, m in zip(shape, multiples)]

    def fill(self, out: np.ndarray, x: np.ndarray) -> None:
        # The output seen as [m0, d0, m1, d1, ...] is the input [1, d0, 1, d1, ...] broadcast.
        interleaved = [n for pair in zip(self.multiples, x.shape) for n in pair]
        np.copyto(out.reshape(interleaved), x.reshape([n for d in x.shape for n in (1, d)]))

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0]
        if self.from_values:
            shape = self.tiled_shape(x.shape, int_values(self.inputs[1]))
            checked_bytes(self, shape, x.dtype, f"output {out.name!r}")
            out.set_data(np.empty(shape, x.dtype))
        self.fill(out.data, x)


#: The types BROADCAST_TO moves beyond MOVABLE_TYPES and the complex ones.
BROADCAST_EXTRA_TYPES = (T.FLOAT16, T.BFLOAT16, T.UINT16, T.UINT32, T.FLOAT64, T.INT4, T.INT2, T.UINT4)


def broadcast_target(kernel: CpuKernel, input_shape, target) -> list[int]:
    if len(target) < len(input_shape):
        raise kernel.unsupported(f"cannot broadcast shape {list(input_shape)} to fewer dimensions {target}")
    if any(d < 0 for d in target):
        raise kernel.unsupported(f"target shape {target} has a negative dimension")
    for d, t in zip(input_shape[::-1], target[::-1]):
        if d != 1 and d != t:
            raise kernel.unsupported(f"shape {list(input_shape)} cannot be broadcast to {target}")
    return target


# v2: every type, complex included (its version 1 was rolled back, so the op starts at 2); v3: int8, int16.
# v4: LiteRT 2.3 registers it (TFLite's tables predate it); its kernel copies elements by size,
# every type it holds: float16, bfloat16, uint16, uint32, float64 and the sub-byte types too
# (one value an element here), at every version here.
@register(BuiltinOperator.BROADCAST_TO, 2, 4)
class BroadcastTo(CpuKernel):
    """BROADCAST_TO v2-v3: numpy broadcasting of the input to the shape in input 1."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, shape = self.inputs
        self.require_types(x, *MOVABLE_TYPES, *COMPLEX_TYPES, *BROADCAST_EXTRA_TYPES)
        self.require_types(shape, *INDEX_TYPES, role="shape")
        self.require_types(self.outputs[0], x.type, role="output")
        if len(shape.shape) != 1:
            raise self.unsupported(f"the shape input must be a vector, it has shape {list(shape.shape)}")
        self.from_values = not shape.is_constant
        if self.from_values:
            self.outputs[0].set_dynamic()
            return
        self.outputs[0].resize(broadcast_target(self, x.shape, int_values(shape)))

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0]
        if self.from_values:
            target = broadcast_target(self, x.shape, int_values(self.inputs[1]))
            checked_bytes(self, target, x.dtype, f"output {out.name!r}")
            out.set_data(np.broadcast_to(x, target).copy())
        else:
            np.copyto(out.data, x)


# v1: float32, int32, int64, uint8, int16; v2: bool; v3: int8. v4: LiteRT 2.3 registers it
# (TFLite's tables predate it); its kernel adds float16 and bfloat16, and so does this one at
# every version.
@register(BuiltinOperator.REVERSE_V2, 1, 4)
class ReverseV2(CpuKernel):
    """REVERSE_V2 v1-v4: reverse the order of elements along the listed axes."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, axes = self.inputs
        self.require_types(x, *MOVABLE_TYPES, T.FLOAT16, T.BFLOAT16)
        self.require_types(axes, T.INT32, role="axis")
        self.require_types(self.outputs[0], x.type, role="output")
        if len(axes.shape) != 1 or axes.shape[0] > len(x.shape):
            raise self.unsupported(
                f"axis must be a vector of at most {len(x.shape)} values, got shape {list(axes.shape)}"
            )
        self.index = self.flip_index(int_values(axes), len(x.shape)) if axes.is_constant else None
        self.outputs[0].resize(x.shape)

    def flip_index(self, axes: list[int], rank: int) -> tuple[slice, ...]:
        axes = [normalize_axis(self, a, rank) for a in axes]
        if len(set(axes)) != len(axes):
            raise self.unsupported(f"axis {axes} has duplicates")
        return tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(rank))

    def invoke(self) -> None:
        x = self.inputs[0].data
        index = self.index if self.index is not None else self.flip_index(int_values(self.inputs[1]), x.ndim)
        np.copyto(self.outputs[0].data, x[index])
