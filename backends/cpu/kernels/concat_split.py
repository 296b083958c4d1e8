"""CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V: join tensors along an axis or cut one apart.

The pieces are copied with slice assignments between views made once per allocation
(``out[..., a:b, ...]`` for each input or output): the same copies as
``np.concatenate`` / ``np.copyto``, at a fraction of the call cost on small tensors.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.common import activation_range, check_activation
from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import make_clamp, record_pair, same_arrays
from backends.cpu.kernels.reshape import (
    INDEX_TYPES,
    inputs_pending,
    int_values,
    normalize_axis,
    quantization_params,
    require_int16_zero_point_0,
    require_same_quantization,
)
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType

T = TensorType


# --------------------------------------------------------------------------------------
# CONCATENATION
# --------------------------------------------------------------------------------------

CONCAT_TYPES = (T.FLOAT32, T.UINT8, T.INT8, T.INT16, T.INT32, T.INT64, T.BOOL, T.UINT32, T.INT4, T.FLOAT16, T.BFLOAT16)


# v1: float32, uint8, int32, int64, bool; v2: int8; v3: int16; v4: uint32; v5: int4 (one
# value an element here). v6, v7: LiteRT 2.3 registers them (TFLite's tables predate them);
# its kernel adds float16 and bfloat16 to v5's types, and so does this one at every version.
@register(BuiltinOperator.CONCATENATION, 1, 7)
class Concatenation(CpuKernel):
    """CONCATENATION v1-v7: join along ``axis`` (negative counts from the end), then the
    fused activation (float32 only)."""

    blas_work = 0

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        inputs, out = self.inputs, self.outputs[0]
        first = inputs[0]
        self.require_types(first, *CONCAT_TYPES)
        for t in inputs[1:]:
            self.require_types(t, first.type)
        self.require_types(out, first.type, role="output")
        self.activation = self.params.fused_activation_function
        if self.activation != ActivationFunctionType.NONE:
            # TFLite's kernel rejects any fused activation; the schema's meaning
            # (activation of the joined tensor) is implemented here for float32.
            if first.type != T.FLOAT32:
                raise self.unsupported("a fused activation needs float32 tensors")
            check_activation(self.activation, self.op_name)
        rank = len(first.shape)
        if rank == 0:
            if not all(t.is_constant for t in inputs) or self.params.axis != 0:
                raise self.unsupported("scalars can only be concatenated when they are constants (axis 0)")
            self.axis = None
            out.resize([len(inputs)])
            return
        self.axis = normalize_axis(self, self.params.axis, rank)
        total = 0
        for t in inputs:
            others = [d for i, d in enumerate(t.shape) if i != self.axis]
            if len(t.shape) != rank or others != [d for i, d in enumerate(first.shape) if i != self.axis]:
                raise self.unsupported(
                    f"input shapes {[list(t.shape) for t in inputs]} differ outside axis {self.axis}"
                )
            total += t.shape[self.axis]
        if first.type == T.INT8:
            for t in inputs:
                require_same_quantization(self, t, out)
        if first.type == T.INT16:
            require_int16_zero_point_0(self, *inputs, out)
        if first.type == T.UINT8 and any(quantization_params(t) != quantization_params(out) for t in inputs):
            raise self.unsupported(
                "uint8 inputs whose scale/zero point differ from the output's need requantizing, "
                "which is not supported"
            )
        out.resize([total if i == self.axis else d for i, d in enumerate(first.shape)])
        # Where each input goes along the axis.
        offsets = np.cumsum([0] + [t.shape[self.axis] for t in inputs]).tolist()
        self.blocks = [(slice(None),) * self.axis + (slice(a, b),) for a, b in zip(offsets[:-1], offsets[1:])]
        low, high = activation_range(self.activation)
        self.bounds = None if low is None else (low, np.inf if high is None else high)
        self._bound = None

    def _bind(self, out: np.ndarray) -> None:
        """Views of this allocation's buffers (fixed until the next one): each input and
        its block of the output, as records of their contiguous runs (``record_pair``),
        with the input array they were made from."""
        self.pieces = []
        for block, tensor in zip(self.blocks, self.inputs):
            target, source = record_pair(out[block], tensor.data)
            self.pieces.append((target, source, tensor, tensor.data))
        self.clamp = make_clamp(self.bounds, out) if out.dtype == np.float32 else None
        self._bound = out

    def bind(self) -> Callable[[], None]:
        """``invoke`` as a function of no argument on this allocation's buffers."""
        if getattr(self, "axis", None) is None or not self.buffers_are_fixed():  # (not prepared, or scalars)
            return self.invoke
        self._bind(self.outputs[0].data)
        copies = [(target, source) for target, source, _, _ in self.pieces]
        clamp = self.clamp
        if len(copies) == 2 and clamp is None:
            (target_1, source_1), (target_2, source_2) = copies

            def concatenate_two() -> None:
                target_1[...] = source_1
                target_2[...] = source_2

            return concatenate_two

        def concatenate() -> None:
            for target, source in copies:
                target[...] = source
            if clamp is not None:
                clamp()

        return concatenate

    def invoke(self) -> None:
        out = self.outputs[0].data
        if self.axis is None:
            out[...] = [t.data for t in self.inputs]
            return
        if self._bound is not out:
            self._bind(out)
        for target, source, tensor, data in self.pieces:
            if tensor.data is not data:  # an input array replaced (a dynamic tensor): views again
                self._bind(out)
                return self.invoke()
            target[...] = source
        if self.clamp is not None:
            self.clamp()


# --------------------------------------------------------------------------------------
# PACK / UNPACK
# --------------------------------------------------------------------------------------

PACK_TYPES = (T.FLOAT32, T.INT32, T.UINT8, T.UINT32, T.INT8, T.INT16, T.INT64)
UNPACK_TYPES = (T.FLOAT32, T.INT32, T.UINT8, T.INT8, T.INT16, T.BOOL, T.FLOAT16, T.BFLOAT16)


# v1: float32, int32, int64, uint8; v2: int8; v3: int16; v4: uint32. v5: LiteRT 2.3 registers
# it (TFLite's tables predate it) and its kernel takes the types above and no other
# (tests/cpu/test_concat_split.py), so v5 here too.
@register(BuiltinOperator.PACK, 1, 5)
class Pack(CpuKernel):
    """PACK v1-v5: stack ``values_count`` same-shaped tensors along a new axis."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        inputs, out = self.inputs, self.outputs[0]
        if len(inputs) != self.params.values_count:
            raise self.unsupported(f"values_count is {self.params.values_count} but the node has {len(inputs)} inputs")
        first = inputs[0]
        self.require_types(first, *PACK_TYPES)
        for t in inputs[1:]:
            self.require_types(t, first.type)
            if t.shape != first.shape:
                raise self.unsupported(f"input shapes {[list(t.shape) for t in inputs]} differ")
        self.require_types(out, first.type, role="output")
        for t in inputs:
            require_same_quantization(self, t, out)
        self.axis = normalize_axis(self, self.params.axis, len(first.shape) + 1)
        shape = list(first.shape)
        shape.insert(self.axis, len(inputs))
        out.resize(shape)

    def invoke(self) -> None:
        np.stack([t.data for t in self.inputs], axis=self.axis, out=self.outputs[0].data)


# v1: float32, int32; v2: int8, uint8; v3: bool; v4: int16; v5: float16, bfloat16. v6: LiteRT
# 2.3 registers it (TFLite's tables predate it) and its kernel takes the types above and no
# other (tests/cpu/test_concat_split.py), so v6 here too.
@register(BuiltinOperator.UNPACK, 1, 6)
class Unpack(CpuKernel):
    """UNPACK v1-v6: split along ``axis`` into ``num`` tensors of one rank less."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x = self.inputs[0]
        self.require_types(x, *UNPACK_TYPES)
        if x.num_elements == 0:
            raise self.unsupported("the input is empty")
        self.axis = normalize_axis(self, self.params.axis, len(x.shape))
        if self.params.num != x.shape[self.axis] or len(self.outputs) != self.params.num:
            raise self.unsupported(
                f"num is {self.params.num}, the node has {len(self.outputs)} outputs and the input "
                f"has {x.shape[self.axis]} along axis {self.axis}; all three must be equal"
            )
        shape = [d for i, d in enumerate(x.shape) if i != self.axis]
        for out in self.outputs:
            self.require_types(out, x.type, role="output")
            require_same_quantization(self, x, out)
            out.resize(shape)

    def invoke(self) -> None:
        x = np.moveaxis(self.inputs[0].data, self.axis, 0)
        for part, out in zip(x, self.outputs):
            np.copyto(out.data, part)


# --------------------------------------------------------------------------------------
# SPLIT / SPLIT_V
# --------------------------------------------------------------------------------------

SPLIT_TYPES = (T.FLOAT32, T.UINT8, T.INT8, T.INT16, T.INT32, T.INT64)


def _split_axis(axis: int, rank: int) -> int:
    """``normalize_axis`` for the pure functions below (a ValueError when out of range)."""
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def split_sizes(shape, axis: int, num_splits: int) -> tuple[list[int], int]:
    """SPLIT's pieces: (sizes along the axis, the axis made non-negative) for an input of
    ``shape`` cut into ``num_splits`` equal pieces. Shared by the CPU kernel and the GPU
    delegate; a ValueError says why a node cannot be split."""
    axis = _split_axis(axis, len(shape))
    n = num_splits
    if n == 0 or shape[axis] % n:
        raise ValueError(f"cannot split {shape[axis]} elements of axis {axis} into {n} equal pieces")
    return [shape[axis] // n] * n, axis


def split_v_sizes(shape, size_splits, axis: int) -> tuple[list[int], int]:
    """SPLIT_V's pieces: (sizes along the axis, one -1 resolved to the rest; the axis made
    non-negative). Shared by the CPU kernel and the GPU delegate; a ValueError says why a
    node cannot be split."""
    axis = _split_axis(axis, len(shape))
    sizes = [int(s) for s in size_splits]
    if sizes.count(-1) > 1:
        raise ValueError(f"size_splits {sizes} has more than one -1")
    known = sum(s for s in sizes if s != -1)
    if -1 in sizes:
        if known > shape[axis]:
            raise ValueError(f"size_splits {sizes} add up to more than {shape[axis]}")
        sizes[sizes.index(-1)] = shape[axis] - known
    elif known != shape[axis]:
        raise ValueError(f"size_splits {sizes} must add up to {shape[axis]} (axis {axis})")
    if any(s < 0 for s in sizes):
        raise ValueError(f"size_splits {sizes} has a negative size")
    return sizes, axis


def split_slices(sizes, axis: int) -> list[tuple[slice, ...]]:
    """The index of each piece in the input: ``x[index]`` along ``axis``."""
    offsets = np.cumsum([0, *sizes])
    return [(slice(None),) * axis + (slice(int(a), int(b)),) for a, b in zip(offsets[:-1], offsets[1:])]


class _SplitBase(CpuKernel):
    """Cut ``input`` along ``axis`` into pieces of the given sizes (static or at invoke)."""

    data_index: int

    def sizes_and_axis(self) -> tuple[list[int], int]:
        raise NotImplementedError

    def plan(self) -> tuple[list[int], int]:
        x = self.inputs[self.data_index]
        sizes, axis = self.sizes_and_axis()
        self.slices = split_slices(sizes, axis)
        return [[s if i == axis else d for i, d in enumerate(x.shape)] for s in sizes], axis

    def prepare_outputs(self, sizes_known: bool) -> None:
        x = self.inputs[self.data_index]
        self.require_types(x, *SPLIT_TYPES)
        for out in self.outputs:
            self.require_types(out, x.type, role="output")
        if len(self.outputs) != self.params.num_splits:
            raise self.unsupported(
                f"num_splits is {self.params.num_splits} but the node has {len(self.outputs)} outputs"
            )
        self.sizes_from_values = not sizes_known
        self._bound = None
        if self.sizes_from_values:
            for out in self.outputs:
                out.set_dynamic()
            return
        shapes, _ = self.plan()
        for out, shape in zip(self.outputs, shapes):
            out.resize(shape)

    def invoke(self) -> None:
        x = self.inputs[self.data_index].data
        if self.sizes_from_values:
            self.plan()
            for out, index in zip(self.outputs, self.slices):
                out.set_data(x[index].copy())
        else:
            arrays = (x, *[out.data for out in self.outputs])
            if not same_arrays(self._bound, arrays):
                self.pieces = [record_pair(out.data, x[index]) for out, index in zip(self.outputs, self.slices)]
                self._bound = arrays
            for target, piece in self.pieces:
                target[...] = piece


# v1: float32, uint8, int64; v2: int8; v3: int32; v4: int16.
# v5: LiteRT 2.3 registers it (TFLite's tables predate it) and its kernel takes SPLIT_TYPES
# and no other (tests/cpu/test_concat_split.py), so v5 here too.
@register(BuiltinOperator.SPLIT, 1, 5)
class Split(_SplitBase):
    """SPLIT v1-v5: ``num_splits`` equal pieces; the axis is input 0, the data input 1."""

    data_index = 1

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        self.require_types(self.inputs[0], T.INT32, role="axis")
        self.prepare_outputs(self.inputs[0].is_constant)

    def sizes_and_axis(self) -> tuple[list[int], int]:
        try:
            return split_sizes(self.inputs[1].shape, int_values(self.inputs[0])[0], self.params.num_splits)
        except ValueError as error:
            raise self.unsupported(str(error)) from None


# v1: float32, uint8, int16, int32, int64; v2: int8.
# v3: as SPLIT v5 (LiteRT 2.3's kernel takes no other type than v1-v2's).
@register(BuiltinOperator.SPLIT_V, 1, 3)
class SplitV(_SplitBase):
    """SPLIT_V v1-v3: pieces of ``size_splits`` (one -1 takes the rest) along ``axis``."""

    data_index = 0

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        sizes, axis = self.inputs[1], self.inputs[2]
        self.require_types(sizes, *INDEX_TYPES, role="size_splits")
        self.require_types(axis, T.INT32, role="axis")
        if len(sizes.shape) != 1 or sizes.shape[0] != len(self.outputs):
            raise self.unsupported(f"size_splits has shape {list(sizes.shape)}; it must be [{len(self.outputs)}]")
        self.prepare_outputs(sizes.is_constant and axis.is_constant)

    def sizes_and_axis(self) -> tuple[list[int], int]:
        try:
            return split_v_sizes(self.inputs[0].shape, int_values(self.inputs[1]), int_values(self.inputs[2])[0])
        except ValueError as error:
            raise self.unsupported(str(error)) from None
