"""More data movement on the GPU: SLICE, UNPACK, TRANSPOSE, DEPTH_TO_SPACE,
SPACE_TO_DEPTH, GATHER, TILE, MIRROR_PAD and ONE_HOT, for float32 (in the storage dtype), int8, uint8 and int32 tensors, bit-exact
(values are moved, never computed).

Semantics are the CPU kernels' (``backends/cpu/kernels/slice.py``, ``concat_split.py``,
``transpose.py``, ``space_depth.py``, ``gather.py``, ``tile_broadcast.py``, ``pad.py``),
i.e. TFLite's reference kernels:

- SLICE: ``size`` elements from ``begin`` along each axis (size -1: to the end); begin
  and size constant (the output shape depends on them).
- UNPACK: ``num`` pieces along ``axis``, each of one rank less.
- TRANSPOSE: ``output.shape[i] = input.shape[perm[i]]``, constant int32 perm, rank <= 4
  (an int64 perm is refused: LiteRT's reference kernel reads it as int32 values).
- DEPTH_TO_SPACE: ``out[n, h*b+i, w*b+j, c] = in[n, h, w, (i*b+j)*C' + c]`` (NHWC);
  SPACE_TO_DEPTH its inverse; the block size from the params.
- GATHER: ``input[:axis] x indices x input[axis+1:]`` (``batch_dims`` 0). Constant
  indices are checked at prepare (an index out of range is refused, as TFLite refuses it)
  and uploaded once; runtime int32/int64 indices are read on the device, clamped to the
  axis (TFLite and the CPU kernel raise an error for an index out of range; a device
  cannot, inside a CUDA graph: such an index reads the nearest row instead).
- TILE: ``multiples[i]`` copies along each axis (constant multiples).
- MIRROR_PAD: REFLECT (edge not repeated) or SYMMETRIC (edge repeated) by constant
  paddings, each at most the axis size (minus 1 for REFLECT), as TFLite requires. The
  source index of every output position of each axis is computed on the host at prepare;
  run is one launch of ``cuda/layout.cu``'s gather along every axis (any element type;
  its numpy twin in host emulation).
- ONE_HOT: ``on`` where ``indices == d`` along the new axis, else ``off`` (an index out
  of ``[0, depth)`` gives a row of ``off``).

How: each op is slicing, ``transpose``/``reshape`` and a copy, ``take`` with index
arrays laid out at prepare, slice assignment into a preallocated output, or (MIRROR_PAD)
a hand-written kernel; every output is a new array (never a view of an input).

Versions claimed (``schema/versioning/op_version.py``):

- SLICE 1 (float32, uint8, int32) and 2 (int8); not 3 (string), 4 (int16), 5 (rank 5),
  6 (uint32).
- UNPACK 1 (float32, int32) and 2 (int8, uint8); not 3 (bool), 4 (int16), 5 (float16).
- TRANSPOSE 1 (float32, uint8, int32, rank <= 4) and 2 (int8); not 3 (bool), 4 (rank 5)
  or later.
- DEPTH_TO_SPACE, SPACE_TO_DEPTH 1 (float32, uint8, int32) and 2 (int8).
- GATHER 1 (float32, uint8, int32) and 2 (int8); not 3 (bool), 4 (int16), 5
  (batch_dims), 6 (int16 indices).
- TILE 1 (float32, uint8, int32) and 3 (int8); not 2 (string).
- MIRROR_PAD 1 (float32, uint8, int32) and 2 (int8); not 3 (int16).
- ONE_HOT 1 (int32/int64 indices, constant depth, constant float32 on/off values).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from backends.gpu.cuda.layout import GatherAxesCuda, gather_tables
from backends.gpu.ops.base import MAX_RANK, GpuOp
from backends.gpu.ops.layout_quantized import (
    MovingOp,
    constant_int_reason,
    int_list,
    quantization_differs,
    type_names,
)
from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import BuiltinOperator, MirrorPadMode, TensorType

B = BuiltinOperator
T = TensorType

#: The element types these ops move: float32 (in the storage dtype), int8, uint8, int32.
LAYOUT_TYPES = (T.FLOAT32, T.INT8, T.UINT8, T.INT32)
INDEX_TYPES = (T.INT32, T.INT64)


def _axis_reason(axis: int, rank: int) -> str | None:
    if not -rank <= axis < rank:
        return f"axis {axis} is out of range for rank {rank}"
    return None


def _inputs_reason(node: Node, names: Sequence[str]) -> str | None:
    """A reason when the node does not have exactly the inputs ``names``, all present."""
    if len(node.inputs) != len(names) or min(node.inputs, default=0) < 0:
        return f"expected inputs ({', '.join(names)}), got {len(node.inputs)} inputs"
    return None


class _LayoutOp(MovingOp):
    """A MovingOp over :data:`LAYOUT_TYPES`."""

    data_types = LAYOUT_TYPES


# --------------------------------------------------------------------------------------
# SLICE
# --------------------------------------------------------------------------------------


def slice_plan(shape: Sequence[int], begins: Sequence[int], sizes: Sequence[int]) -> tuple[tuple[slice, ...], list[int]]:
    """The CPU kernel's SLICE plan: (index, output shape); ValueError when it does not fit."""
    index, out_shape = [], []
    for axis, (dim, b, s) in enumerate(zip(shape, begins, sizes)):
        if b < 0 or b > dim:
            raise ValueError(f"begin {list(begins)} is out of range for input shape {list(shape)} (axis {axis})")
        if s == -1:
            s = dim - b
        elif s < 0 or b + s > dim:
            raise ValueError(f"begin {list(begins)} and size {list(sizes)} do not fit input shape {list(shape)}")
        index.append(slice(b, b + s))
        out_shape.append(s)
    return tuple(index), out_shape


class Slice(_LayoutOp):
    """SLICE v1 (float32, uint8, int32) and v2 (int8) with constant begin and size."""

    ops = {B.SLICE: 2}
    index_inputs = (1, 2)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = _inputs_reason(node, ("input", "begin", "size"))
        if reason:
            return reason
        x, begin, size = (tensors[i] for i in node.inputs)
        for tensor, role in ((begin, "begin"), (size, "size")):
            reason = constant_int_reason(tensor, role, INDEX_TYPES)
            if reason:
                return reason
            if tensor.shape != (len(x.shape),):
                return f"{role} has shape {list(tensor.shape)}; it must be [{len(x.shape)}]"
        if begin.type != size.type:
            return f"begin is {begin.type_name} but size is {size.type_name}; they must have one type"
        try:
            slice_plan(x.shape, int_list(begin), int_list(size))
        except ValueError as error:
            return str(error)
        return None

    def prepare(self) -> None:
        x, begin, size = self.inputs
        self.index, _ = slice_plan(x.shape, int_list(begin), int_list(size))

    def run(self, args):
        return [args[0][self.index].copy()]  # a copy: a slice is a view of the input


# --------------------------------------------------------------------------------------
# UNPACK
# --------------------------------------------------------------------------------------


class Unpack(_LayoutOp):
    """UNPACK v1 (float32, int32) and v2 (int8, uint8): ``num`` pieces along ``axis``."""

    ops = {B.UNPACK: 2}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = _inputs_reason(node, ("input",))
        if reason:
            return reason
        x = tensors[node.inputs[0]]
        if x.num_elements == 0:
            return "the input is empty"
        rank = len(x.shape)
        axis = int(node.params.axis)
        reason = _axis_reason(axis, rank)
        if reason:
            return reason
        axis %= rank
        num = int(node.params.num)
        if num != x.shape[axis] or len(node.outputs) != num:
            return (
                f"num is {num}, the node has {len(node.outputs)} outputs and the input has {x.shape[axis]} "
                f"along axis {axis}; all three must be equal"
            )
        for index in node.outputs:
            reason = quantization_differs(x, tensors[index])
            if reason:
                return reason
        return None

    def prepare(self) -> None:
        axis = int(self.params.axis) % len(self.inputs[0].shape)
        self.places = [(slice(None),) * axis + (i,) for i in range(len(self.outputs))]

    def run(self, args):
        x = args[0]
        return [x[place].copy() for place in self.places]


# --------------------------------------------------------------------------------------
# TRANSPOSE
# --------------------------------------------------------------------------------------


def permutation(values: Sequence[int], rank: int) -> tuple[int, ...]:
    """The CPU kernel's check of a perm (negative entries wrap); ValueError if invalid."""
    if len(values) != rank:
        raise ValueError(f"perm {list(values)} has {len(values)} entries for a rank-{rank} input")
    if any(not -rank <= p < rank for p in values):
        raise ValueError(f"perm {list(values)} is out of bounds for rank {rank}")
    perm = tuple(p + rank if p < 0 else p for p in values)
    if len(set(perm)) != rank:
        raise ValueError(f"perm {list(values)} has duplicate entries")
    return perm


class Transpose(_LayoutOp):
    """TRANSPOSE v1 (float32, uint8, int32, rank <= 4) and v2 (int8), constant int32 perm."""

    ops = {B.TRANSPOSE: 2}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = _inputs_reason(node, ("input", "perm"))
        if reason:
            return reason
        x, perm = (tensors[i] for i in node.inputs)
        reason = constant_int_reason(perm, "perm", (T.INT32,))
        if reason:
            return reason
        try:
            permutation(int_list(perm), len(x.shape))
        except ValueError as error:
            return str(error)
        return None

    def prepare(self) -> None:
        self.perm = permutation(int_list(self.inputs[1]), len(self.inputs[0].shape))

    def run(self, args):
        return [args[0].transpose(self.perm).copy()]  # copy(): C-contiguous, never the input


# --------------------------------------------------------------------------------------
# DEPTH_TO_SPACE / SPACE_TO_DEPTH
# --------------------------------------------------------------------------------------


class _Blocks(_LayoutOp):
    """Shared by DEPTH_TO_SPACE and SPACE_TO_DEPTH: a 4-D NHWC input, ``block_size`` >= 1."""

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = _inputs_reason(node, ("input",))
        if reason:
            return reason
        x = tensors[node.inputs[0]]
        if len(x.shape) != 4:
            return f"the input must be 4-D (NHWC), it has shape {list(x.shape)}"
        block = int(getattr(node.params, "block_size", 0) or 0)
        if block < 1:
            return f"block_size {block} must be positive"
        return cls.shape_reason(x.shape, block) or quantization_differs(x, tensors[node.outputs[0]])

    @classmethod
    def shape_reason(cls, shape, block: int) -> str | None:
        raise NotImplementedError

    def run(self, args):
        # The 6-D view of the input, its axes swapped, copied (C order), seen as the output.
        return [args[0].reshape(self.split).transpose(0, 1, 3, 2, 4, 5).copy().reshape(self.out_shape)]


class DepthToSpace(_Blocks):
    """DEPTH_TO_SPACE v1 (float32, uint8, int32) and v2 (int8)."""

    ops = {B.DEPTH_TO_SPACE: 2}

    @classmethod
    def shape_reason(cls, shape, block):
        if shape[3] % (block * block):
            return f"depth {shape[3]} is not a multiple of block_size^2 = {block * block}"
        return None

    def prepare(self) -> None:
        n, h, w, c = self.inputs[0].shape
        b = int(self.params.block_size)
        self.split = (n, h, w, b, b, c // (b * b))  # -> (n, h, b, w, b, c')
        self.out_shape = (n, h * b, w * b, c // (b * b))


class SpaceToDepth(_Blocks):
    """SPACE_TO_DEPTH v1 (float32, uint8, int32) and v2 (int8)."""

    ops = {B.SPACE_TO_DEPTH: 2}

    @classmethod
    def shape_reason(cls, shape, block):
        if shape[1] % block or shape[2] % block:
            return f"height {shape[1]} and width {shape[2]} must be multiples of block_size {block}"
        return None

    def prepare(self) -> None:
        n, h, w, c = self.inputs[0].shape
        b = int(self.params.block_size)
        self.split = (n, h // b, b, w // b, b, c)  # -> (n, h/b, w/b, b, b, c)
        self.out_shape = (n, h // b, w // b, b * b * c)


# --------------------------------------------------------------------------------------
# GATHER
# --------------------------------------------------------------------------------------


class Gather(_LayoutOp):
    """GATHER v1 (float32, uint8, int32) and v2 (int8): int32/int64 indices, constant or
    read on the device, ``batch_dims`` 0."""

    ops = {B.GATHER: 2}
    #: The indices are never a data tensor; runtime indices are uploaded all the same
    #: (``device_inputs``), constant ones are laid out at prepare.
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = _inputs_reason(node, ("input", "indices"))
        if reason:
            return reason
        x, indices = (tensors[i] for i in node.inputs)
        if indices.type not in INDEX_TYPES:
            return f"indices {indices.name!r} is {indices.type_name}; it must be {type_names(INDEX_TYPES).replace('/', ' or ')}"
        if indices.is_dynamic:
            return f"indices {indices.name!r} has a shape known only at run time (dynamic tensor)"
        batch_dims = int(getattr(node.params, "batch_dims", 0) or 0)
        if batch_dims != 0:
            return f"batch_dims {batch_dims} is not supported (only 0)"
        rank = len(x.shape)
        if rank == 0:
            return "a scalar input cannot be gathered from"
        axis = int(getattr(node.params, "axis", 0) or 0)
        reason = _axis_reason(axis, rank)
        if reason:
            return reason
        axis %= rank
        out_rank = rank - 1 + len(indices.shape)
        if out_rank > MAX_RANK:
            return f"the output would have rank {out_rank}; at most {MAX_RANK} is supported"
        size = x.shape[axis]
        if indices.is_constant:
            values = np.asarray(indices.data)
            if values.size and (values.min() < 0 or values.max() >= size):
                bad = int(values.min()) if values.min() < 0 else int(values.max())
                return f"index {bad} is out of range [0, {size}) for axis {axis} of shape {list(x.shape)}"
        elif size == 0 and indices.num_elements:
            return f"axis {axis} of input shape {list(x.shape)} is empty: no index is in range"
        return None

    def prepare(self) -> None:
        x, indices = self.inputs
        self.axis = int(getattr(self.params, "axis", 0) or 0) % len(x.shape)
        self.limit = max(int(x.shape[self.axis]) - 1, 0)
        self.indices = None
        if indices.is_constant:
            # (reshaped on the device: Device.upload makes a 0-d array 1-d, as np.ascontiguousarray does)
            self.indices = self.upload(np.asarray(indices.data), np.int64).reshape(indices.shape)

    def device_inputs(self) -> list[int]:
        return [0] if self.indices is not None else [0, 1]

    def run(self, args):
        xp = self.xp
        indices = self.indices if self.indices is not None else xp.clip(args[1], 0, self.limit)
        return [xp.take(args[0], indices, axis=self.axis)]


# --------------------------------------------------------------------------------------
# TILE
# --------------------------------------------------------------------------------------


class Tile(_LayoutOp):
    """TILE v1 (float32, uint8, int32) and v3 (int8), constant multiples."""

    ops = {B.TILE: frozenset({1, 3})}  # v2 is string
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = _inputs_reason(node, ("input", "multiples"))
        if reason:
            return reason
        x, multiples = (tensors[i] for i in node.inputs)
        reason = constant_int_reason(multiples, "multiples", INDEX_TYPES)
        if reason:
            return reason
        values = int_list(multiples)
        if len(values) != len(x.shape):
            return f"multiples has {len(values)} values for a rank-{len(x.shape)} input"
        if any(m < 0 for m in values):
            return f"multiples {values} has a negative entry"
        return None

    def prepare(self) -> None:
        x = self.inputs[0]
        multiples = int_list(self.inputs[1])
        # The output seen as [m0, d0, m1, d1, ...] is the input [1, d0, 1, d1, ...] broadcast.
        self.interleaved = tuple(n for pair in zip(multiples, x.shape) for n in pair)
        self.expanded = tuple(n for d in x.shape for n in (1, d))
        self.out_shape = tuple(d * m for d, m in zip(x.shape, multiples))
        self.dtype = self.output_dtype()

    def run(self, args):
        out = self.xp.empty(self.interleaved, dtype=self.dtype)
        out[...] = args[0].reshape(self.expanded)
        return [out.reshape(self.out_shape)]


# --------------------------------------------------------------------------------------
# MIRROR_PAD
# --------------------------------------------------------------------------------------


def mirror_sources(size: int, before: int, after: int, reflect: bool) -> np.ndarray:
    """The input index each output position of a mirror-padded axis reads (REFLECT skips
    the edge element, SYMMETRIC repeats it: numpy's ``reflect`` and ``symmetric``)."""
    return np.pad(np.arange(size, dtype=np.int64), (before, after), mode="reflect" if reflect else "symmetric")


class MirrorPad(_LayoutOp):
    """MIRROR_PAD v1 (float32, uint8, int32) and v2 (int8), REFLECT and SYMMETRIC,
    constant paddings."""

    ops = {B.MIRROR_PAD: 2}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = _inputs_reason(node, ("input", "paddings"))
        if reason:
            return reason
        x, paddings = (tensors[i] for i in node.inputs)
        reason = constant_int_reason(paddings, "paddings", INDEX_TYPES)
        if reason:
            return reason
        rank = len(x.shape)
        if rank == 0:
            return "a scalar input cannot be padded on the GPU"
        if paddings.shape != (rank, 2):
            return f"paddings has shape {list(paddings.shape)}; it must be [{rank}, 2]"
        mode = int(getattr(node.params, "mode", MirrorPadMode.REFLECT))
        if mode not in (MirrorPadMode.REFLECT, MirrorPadMode.SYMMETRIC):
            return f"mirror pad mode {mode} is not REFLECT or SYMMETRIC"
        edge = 1 if mode == MirrorPadMode.REFLECT else 0
        pads = np.asarray(paddings.data).astype(np.int64).reshape(rank, 2)
        if (pads < 0).any():
            return f"paddings {pads.tolist()} has a negative entry"
        for axis, ((before, after), size) in enumerate(zip(pads.tolist(), x.shape)):
            if max(before, after) > size - edge:
                name = MirrorPadMode(mode).name
                return f"{name} padding {[before, after]} of axis {axis} is larger than {size - edge} (size {size})"
        return quantization_differs(x, tensors[node.outputs[0]])

    def prepare(self) -> None:
        x = self.inputs[0]
        reflect = int(self.params.mode) == MirrorPadMode.REFLECT
        pads = np.asarray(self.inputs[1].data).astype(np.int64).reshape(len(x.shape), 2)
        sources = [mirror_sources(size, before, after, reflect) for (before, after), size in zip(pads.tolist(), x.shape)]
        self.out_shape = tuple(len(s) for s in sources)
        self.tables = self.upload(gather_tables(sources), np.int32)
        self.gather = GatherAxesCuda(**self.device.launcher_arguments("layout.cu"))

    def run(self, args):
        return [self.gather(args[0], self.tables, self.out_shape)]


# --------------------------------------------------------------------------------------
# ONE_HOT
# --------------------------------------------------------------------------------------


class OneHot(GpuOp):
    """ONE_HOT v1: int32/int64 indices (rank <= 3) read on the device, constant depth,
    constant float32 scalar on/off values, float32 output."""

    ops = {B.ONE_HOT: 1}
    index_inputs = (1, 2, 3)

    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        reason = _inputs_reason(node, ("indices", "depth", "on_value", "off_value"))
        if reason:
            return reason
        indices, depth, on, off = (tensors[i] for i in node.inputs)
        out = tensors[node.outputs[0]]
        if indices.type not in INDEX_TYPES:
            return f"indices {indices.name!r} is {indices.type_name}; it must be INT32 or INT64"
        if indices.is_dynamic:
            return f"indices {indices.name!r} has a shape known only at run time (dynamic tensor)"
        if out.type != T.FLOAT32:
            return f"output {out.name!r} is {out.type_name}; the GPU delegate runs ONE_HOT with FLOAT32 on/off values only"
        reason = constant_int_reason(depth, "depth", (T.INT32,))
        if reason:
            return reason
        if depth.num_elements != 1 or int_list(depth)[0] < 0:
            return f"depth must be one non-negative value, it is {int_list(depth)}"
        for tensor, role in ((on, "on_value"), (off, "off_value")):
            if tensor.type != T.FLOAT32:
                return f"{role} {tensor.name!r} is {tensor.type_name}; it must be FLOAT32"
            if not tensor.is_constant or tensor.num_elements != 1:
                return f"{role} must be a constant scalar"
        rank = len(indices.shape) + 1
        if rank > MAX_RANK:
            return f"the output would have rank {rank}; at most {MAX_RANK} is supported"
        axis = int(getattr(node.params, "axis", -1))
        if not -1 <= axis < rank:
            return f"axis {axis} is out of range for an output of rank {rank}"
        return None

    def prepare(self) -> None:
        indices, depth, on, off = self.inputs
        rank = len(indices.shape) + 1
        axis = int(getattr(self.params, "axis", -1))
        self.axis = rank - 1 if axis == -1 else axis
        count = int_list(depth)[0]
        # indices with a 1 where the depth axis goes, compared with 0..depth-1 along it
        self.expanded = tuple(indices.shape[: self.axis]) + (1,) + tuple(indices.shape[self.axis :])
        positions = np.arange(count, dtype=np.int64).reshape((1,) * self.axis + (count,) + (1,) * (rank - 1 - self.axis))
        self.positions = self.upload(positions, np.int64)
        self.on = self.upload(np.asarray(on.data, np.float32)).reshape(())
        self.off = self.upload(np.asarray(off.data, np.float32)).reshape(())

    def device_inputs(self) -> list[int]:
        return [0]

    def run(self, args):
        xp = self.xp
        hot = args[0].reshape(self.expanded) == self.positions
        return [xp.where(hot, self.on, self.off).astype(self.storage, copy=False)]
