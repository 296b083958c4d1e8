"""Joining and splitting on the GPU: CONCATENATION (float32, int8/uint8), PACK, UNPACK,
SPLIT, SPLIT_V, bit-exact (values are moved, never computed; except CONCATENATION's
fused clamp and uint8 rescaling).

Semantics are the CPU kernels' (``backends/cpu/kernels/concat_split.py``,
``concat_quantized.py``), i.e. TFLite's reference kernels:

- CONCATENATION joins along ``axis`` (negative counts from the end). Float32: then the
  fused activation as a clamp (RELU, RELU6, RELU_N1_TO_1; NONE and TANH move the values
  unchanged, as the CPU kernel). int8 inputs must have the output's scale and zero point
  (TFLite's Prepare requires it); uint8 inputs whose (scale, zero point) differ are
  rescaled as the reference's ``ConcatenationWithScaling`` does, through the CPU
  kernel's own 256-entry tables (``concat_quantized.rescale_tables``: TFLite's float32
  steps, evaluated once per value at prepare), read in the concatenation's launch.
  TFLite rejects a fused activation on these 8-bit types, and so does this class.
- PACK stacks its inputs along a new axis; every input must have the output's
  quantization (TFLite's rule).
- UNPACK: ``num`` pieces along ``axis``, each of one rank less.
- SPLIT / SPLIT_V: the pieces are ``concat_split.split_sizes`` / ``split_v_sizes`` /
  ``split_slices``, computed once at prepare from the constant axis and sizes.

How: float32 CONCATENATION is one launch of ``cuda/layout.cu``'s concatenation kernel,
8-bit CONCATENATION one of ``cuda/int8_layout.cu``'s; both take up to 8 input pointers by
value (more inputs: one launch per 8; no ``xp.concatenate``, whose pointer table for
more than 8 arrays a CUDA graph cannot capture). In host emulation each launch runs its
kernel's numpy twin. PACK is one slice assignment per input into a preallocated output
(no ``xp.stack``, for the same reason); UNPACK, SPLIT and SPLIT_V one slice (and a copy)
per output.

Versions claimed (``schema/versioning/op_version.py``):

- CONCATENATION 1 (float32, uint8) and 2 (int8); int16 (v3), uint32 (v4), int4 (v5) are
  not claimed.
- PACK 1 (float32, uint8) and 2 (int8); not 3 (int16), 4 (uint32); int32/int64 v1 nodes
  are refused by type.
- UNPACK 1 (float32, int32) and 2 (int8, uint8); not 3 (bool), 4 (int16), 5 (float16).
- SPLIT 1 (float32, uint8) and 2 (int8); not 3 (int32), 4 (int16).
- SPLIT_V 1 (float32, uint8) and 2 (int8); int16/int32/int64 v1 nodes are refused by type.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels.concat_quantized import rescale_tables
from backends.cpu.kernels.concat_split import split_sizes, split_slices, split_v_sizes
from backends.cpu.kernels.reshape import quantization_params
from backends.gpu.cuda.int8_layout import ByteConcatenationCuda
from backends.gpu.cuda.layout import ConcatenationCuda
from backends.gpu.ops.base import FloatOp, activation_name, fused_activation, fused_activation_reason
from backends.gpu.ops.moving_base import (
    INT8_TYPES,
    LayoutOp,
    MovingOp,
    axis_reason,
    constant_int_reason,
    int_list,
    named_inputs_reason,
    quantization_differs,
)
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


def concatenation_shape_reason(node, tensors) -> str | None:
    """Why a CONCATENATION's inputs cannot be joined (any element type), or None."""
    if not node.inputs or min(node.inputs) < 0:
        return "every input must be present"
    inputs = [tensors[i] for i in node.inputs]
    rank = len(inputs[0].shape)
    if rank == 0:
        return "scalars cannot be concatenated on the GPU"
    axis = int(getattr(node.params, "axis", 0))
    if not -rank <= axis < rank:
        return f"axis {axis} is out of range for rank {rank}"
    axis %= rank
    for t in inputs:
        if len(t.shape) != rank or any(d != e for i, (d, e) in enumerate(zip(t.shape, inputs[0].shape)) if i != axis):
            return f"input shapes {[list(t.shape) for t in inputs]} differ outside axis {axis}"
    return None


class Concatenation(FloatOp):
    """CONCATENATION version 1 (float32, any number of inputs, constant or not)."""

    ops = {B.CONCATENATION: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        return concatenation_shape_reason(node, tensors) or fused_activation_reason(node.params)

    def prepare(self) -> None:
        self.launcher = ConcatenationCuda(
            int(self.params.axis), fused_activation(self.params), self.storage, **self.device.launcher_arguments("layout.cu")
        )

    def run(self, args):
        # Not xp.concatenate: for more than 8 arrays CuPy uploads a table of their addresses
        # from host memory (a copy a CUDA graph cannot capture); the kernel takes the
        # pointers as arguments.
        return [self.launcher(args)]


class QuantizedConcatenation(MovingOp):
    """CONCATENATION v1 (uint8, inputs rescaled to the output's quantization where theirs
    differ) and v2 (int8, every input with the output's quantization)."""

    ops = {B.CONCATENATION: 2}
    data_types = INT8_TYPES

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = concatenation_shape_reason(node, tensors)
        if reason:
            return reason
        inputs = [tensors[i] for i in node.inputs]
        out = tensors[node.outputs[0]]
        activation = fused_activation(node.params)
        if activation != ActivationFunctionType.NONE:
            return f"fused activation {activation_name(activation)} on {out.type_name} is not supported (TFLite rejects it)"
        if out.type == T.INT8:
            for t in inputs:
                reason = quantization_differs(t, out)
                if reason:
                    return reason
        elif any(quantization_params(t) != quantization_params(out) for t in inputs) and quantization_params(out)[0] == 0.0:
            return f"output {out.name!r} has no quantization scale to rescale the inputs to"
        return None

    def prepare(self) -> None:
        out = self.outputs[0]
        self.axis = int(self.params.axis) % len(out.shape)
        self.out_shape = tuple(out.shape)
        self.dtype = self.output_dtype()
        tables = rescale_tables(self.inputs, out) if out.type == T.UINT8 else [None] * len(self.inputs)
        self.tables = None
        if any(table is not None for table in tables):
            identity = np.arange(256, dtype=np.uint8).view(self.dtype)
            rows = [identity if table is None else np.asarray(table, self.dtype) for table in tables]
            self.tables = self.upload(np.stack(rows).view(np.uint8), np.uint8)
        self.launcher = ByteConcatenationCuda(self.axis, **self.device.launcher_arguments(ByteConcatenationCuda.source))

    def run(self, args):
        return [self.launcher(list(args), self.tables)]


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


class Unpack(LayoutOp):
    """UNPACK v1 (float32, int32) and v2 (int8, uint8): ``num`` pieces along ``axis``."""

    ops = {B.UNPACK: 2}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = named_inputs_reason(node, ("input",))
        if reason:
            return reason
        x = tensors[node.inputs[0]]
        if x.num_elements == 0:
            return "the input is empty"
        rank = len(x.shape)
        axis = int(node.params.axis)
        reason = axis_reason(axis, rank)
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
