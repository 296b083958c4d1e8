"""Cutting and stacking on the GPU: STRIDED_SLICE, SPLIT, SPLIT_V, PACK, for float32 (in
the storage dtype), int8 and uint8 tensors, bit-exact (values are moved, never computed).

Semantics are the CPU kernels' (``backends/cpu/kernels/slice.py``, ``concat_split.py``),
and so is the host arithmetic: the index of a STRIDED_SLICE (masks, ellipsis, new axes,
shrink, ``offset``) is ``slice.strided_slice_plan``, the pieces of SPLIT / SPLIT_V are
``concat_split.split_sizes`` / ``split_v_sizes`` / ``split_slices``, all computed once at
prepare from constant begin/end/strides, axes and sizes; at run time each op is one
slice (and a copy) per output, or for PACK one slice assignment per input into a
preallocated output (no ``xp.stack``: CuPy uploads a pointer table for more than 8
arrays, which a CUDA graph cannot capture).

Versions claimed (``schema/versioning/op_version.py``):

- STRIDED_SLICE 1 (float32, uint8), 2 (int8), 6 (ellipsis / new-axis masks) and 8
  (``offset``); not 3 (bool), 4 (rank 5), 5 (string), 7 (uint32).
- SPLIT 1 (float32, uint8) and 2 (int8); not 3 (int32), 4 (int16).
- SPLIT_V 1 (float32, uint8) and 2 (int8); int16/int32/int64 v1 nodes are refused by type.
- PACK 1 (float32, uint8) and 2 (int8); not 3 (int16), 4 (uint32); int32/int64 v1 nodes
  are refused by type. Every input must have the output's quantization (TFLite's rule).
"""

from __future__ import annotations

from backends.cpu.kernels.concat_split import split_sizes, split_slices, split_v_sizes
from backends.cpu.kernels.slice import strided_slice_plan
from backends.gpu.ops.layout_quantized import MovingOp, constant_int_reason, int_list, quantization_differs
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


class StridedSlice(MovingOp):
    """STRIDED_SLICE v1, v2, v6, v8 with constant begin/end/strides."""

    ops = {B.STRIDED_SLICE: frozenset({1, 2, 6, 8})}
    index_inputs = (1, 2, 3)

    @staticmethod
    def plan(x, begin, end, strides, params):
        """The CPU kernel's plan: (effective shape, index, output shape); ValueError if invalid."""
        return strided_slice_plan(x.shape, int_list(begin), int_list(end), int_list(strides), params)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 4 or min(node.inputs) < 0:
            return f"expected inputs (input, begin, end, strides), got {len(node.inputs)} inputs"
        _, begin, end, strides = (tensors[i] for i in node.inputs)
        for tensor, role in ((begin, "begin"), (end, "end"), (strides, "strides")):
            reason = constant_int_reason(tensor, role, (T.INT32,))
            if reason:
                return reason
            if len(tensor.shape) != 1:
                return f"{role} must be a vector, it has shape {list(tensor.shape)}"
        if begin.shape != end.shape or begin.shape != strides.shape:
            return f"begin {list(begin.shape)}, end {list(end.shape)} and strides {list(strides.shape)} differ in length"
        if begin.shape[0] > 31:
            return "at most 31 indices are supported"
        try:
            cls.plan(*(tensors[i] for i in node.inputs), node.params)
        except ValueError as error:
            return str(error)
        return None

    def prepare(self) -> None:
        self.shape, self.index, out_shape = self.plan(*self.inputs, self.params)
        self.out_shape = tuple(out_shape)

    def run(self, args):
        # copy(): a new contiguous array (a strided view would alias the input's buffer).
        return [args[0].reshape(self.shape)[self.index].copy().reshape(self.out_shape)]


class _Split(MovingOp):
    """Shared by SPLIT and SPLIT_V: pieces of the data input along an axis."""

    data_position: int

    def pieces(self, sizes: list[int], axis: int) -> None:
        self.slices = split_slices(sizes, axis)

    def run(self, args):
        x = args[self.data_position]
        return [x[index].copy() for index in self.slices]


class Split(_Split):
    """SPLIT v1 (float32, uint8) and v2 (int8): ``num_splits`` equal pieces; constant axis."""

    ops = {B.SPLIT: 2}
    index_inputs = (0,)
    data_position = 1

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected inputs (axis, input), got {len(node.inputs)} inputs"
        axis, x = tensors[node.inputs[0]], tensors[node.inputs[1]]
        reason = constant_int_reason(axis, "axis", (T.INT32,))
        if reason:
            return reason
        if axis.num_elements != 1:
            return f"the axis must hold one value, it has shape {list(axis.shape)}"
        if len(node.outputs) != node.params.num_splits:
            return f"num_splits is {node.params.num_splits} but the node has {len(node.outputs)} outputs"
        try:
            split_sizes(x.shape, int_list(axis)[0], node.params.num_splits)
        except ValueError as error:
            return str(error)
        return None

    def prepare(self) -> None:
        self.pieces(*split_sizes(self.inputs[1].shape, int_list(self.inputs[0])[0], self.params.num_splits))


class SplitV(_Split):
    """SPLIT_V v1 (float32, uint8) and v2 (int8): pieces of constant ``size_splits`` (one -1
    takes the rest) along a constant axis."""

    ops = {B.SPLIT_V: 2}
    index_inputs = (1, 2)
    data_position = 0

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 3 or min(node.inputs) < 0:
            return f"expected inputs (input, size_splits, axis), got {len(node.inputs)} inputs"
        x, sizes, axis = (tensors[i] for i in node.inputs)
        reason = constant_int_reason(sizes, "size_splits") or constant_int_reason(axis, "axis", (T.INT32,))
        if reason:
            return reason
        if len(sizes.shape) != 1 or sizes.shape[0] != len(node.outputs):
            return f"size_splits has shape {list(sizes.shape)}; it must be [{len(node.outputs)}]"
        if axis.num_elements != 1:
            return f"the axis must hold one value, it has shape {list(axis.shape)}"
        if len(node.outputs) != node.params.num_splits:
            return f"num_splits is {node.params.num_splits} but the node has {len(node.outputs)} outputs"
        try:
            split_v_sizes(x.shape, int_list(sizes), int_list(axis)[0])
        except ValueError as error:
            return str(error)
        return None

    def prepare(self) -> None:
        self.pieces(*split_v_sizes(self.inputs[0].shape, int_list(self.inputs[1]), int_list(self.inputs[2])[0]))


class Pack(MovingOp):
    """PACK v1 (float32, uint8) and v2 (int8): ``values_count`` same-shaped tensors stacked
    along a new axis."""

    ops = {B.PACK: 2}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if not node.inputs or min(node.inputs) < 0:
            return "every input must be present"
        inputs = [tensors[i] for i in node.inputs]
        out = tensors[node.outputs[0]]
        if len(inputs) != node.params.values_count:
            return f"values_count is {node.params.values_count} but the node has {len(inputs)} inputs"
        if any(t.shape != inputs[0].shape for t in inputs):
            return f"input shapes {[list(t.shape) for t in inputs]} differ"
        rank = len(inputs[0].shape) + 1
        axis = int(node.params.axis)
        if not -rank <= axis < rank:
            return f"axis {axis} is out of range for rank {rank}"
        for t in inputs:
            reason = quantization_differs(t, out)
            if reason:
                return reason
        return None

    def prepare(self) -> None:
        rank = len(self.inputs[0].shape) + 1
        axis = int(self.params.axis) % rank
        self.places = [(slice(None),) * axis + (i,) for i in range(len(self.inputs))]
        self.out_shape = tuple(self.outputs[0].shape)
        self.dtype = self.output_dtype()

    def run(self, args):
        out = self.xp.empty(self.out_shape, dtype=self.dtype)
        for place, a in zip(self.places, args):
            out[place] = a
        return [out]
