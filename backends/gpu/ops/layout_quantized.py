"""Data movement on int8 / uint8 tensors on the GPU (RESHAPE, PAD, PADV2, CONCATENATION,
and SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND of float32 and 8-bit tensors),
bit-exact with TFLite's reference kernels, and the base class of the GPU ops that move
values without arithmetic (:class:`MovingOp`, also used by ``slicing.py``).

Semantics are the CPU kernels' (``backends/cpu/kernels/reshape.py``, ``pad.py``,
``concat_split.py``, ``concat_quantized.py``), and so are the Prepare-time parameters:

- RESHAPE (v1; the op has one version) of int8/uint8 tensors whose input and output
  quantization are equal: the values under the output's static shape. Float32 RESHAPE is
  ``layout.Reshape``.
- PAD (v1 float32/uint8, v2 int8) and PADV2 (the same versions; v1 float32 included):
  constant paddings; the fill value is PADV2's value input, or else the output's zero
  point for quantized tensors and 0 otherwise (``pad.default_pad_value``, the CPU
  kernel's own). PADV2's value must share the output's quantization (TFLite's rule). A
  constant value is read at prepare; a runtime one is read on the device. Versions 3+
  (int16, rank 5, bool) are not claimed.
- CONCATENATION (v1 uint8, v2 int8): int8 inputs must have the output's scale and zero
  point (TFLite's Prepare requires it); uint8 inputs whose (scale, zero point) differ are
  rescaled as the reference's ``ConcatenationWithScaling`` does, through the CPU kernel's
  own 256-entry tables (``concat_quantized.rescale_tables``: TFLite's float32 steps,
  evaluated once per value at prepare), read in the concatenation's launch.
  TFLite rejects a fused activation on these types, and so does this class. Float32
  CONCATENATION is ``layout.Concatenation``; int16 (v3), uint32 (v4), int4 (v5) are not
  claimed.
- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND (v1 float32 / uint8, v2 int8, v3 3-D inputs):
  constant block_shape and paddings / crops; SPACE_TO_BATCH_ND pads with 0, or the
  output's zero point for 8-bit tensors (the CPU kernel's rule, TFLite's memset). One
  launch of ``cuda/space_batch.cu``.

How: RESHAPE is a view (no launch). PAD / PADV2 of 8-bit tensors with a known fill and
CONCATENATION are one launch of ``cuda/int8_layout.cu`` (CONCATENATION: one per 8 inputs,
each input's rescale table read in the launch; no ``xp.concatenate``, whose pointer table
for more than 8 arrays a CUDA graph cannot capture); a float32 PADV2 with a constant value
is one launch of ``cuda/layout.cu``'s pad. A PADV2 whose value is a runtime tensor fills a
new array and assigns the input into it (two operations).
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from backends.cpu.kernels.concat_quantized import rescale_tables
from backends.cpu.kernels.pad import default_pad_value, pads_quantized
from backends.cpu.kernels.reshape import quantization_params
from backends.gpu.cuda.int8_layout import ByteConcatenationCuda, BytePadCuda
from backends.gpu.cuda.layout import PadCuda
from backends.gpu.cuda.space_batch import SpaceBatchCuda, SpaceBatchGeometry
from backends.gpu.ops.base import MAX_RANK, GpuOp, TypeReason
from backends.gpu.ops.elementwise import activation_name, fused_activation, input_tensor
from backends.gpu.ops.layout import concatenation_shape_reason
from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType, builtin_operator_name

B = BuiltinOperator
T = TensorType

#: The element types the data-movement ops take: float32 (held in the storage dtype),
#: int8 and uint8 (as they are).
MOVED_TYPES = (T.FLOAT32, T.INT8, T.UINT8)
INT8_TYPES = (T.INT8, T.UINT8)


def type_names(types: Sequence[int]) -> str:
    return "/".join(TensorType(t).name for t in types)


def constant_int_reason(tensor: RuntimeTensor | None, what: str, types: Sequence[int] = (T.INT32, T.INT64)) -> str | None:
    """A reason when ``tensor`` is not a constant integer tensor of ``types``."""
    if tensor is None:
        return f"the {what} input is missing"
    if tensor.type not in types:
        return f"{what} {tensor.name!r} is {tensor.type_name}; it must be {' or '.join(TensorType(t).name for t in types)}"
    if not tensor.is_constant:
        return f"the {what} must be a constant tensor (the GPU kernel reads it at prepare)"
    return None


def int_list(tensor: RuntimeTensor) -> list[int]:
    """The values of a constant integer tensor as Python ints."""
    if tensor.data is None:
        return []
    return [int(v) for v in np.asarray(tensor.data).reshape(-1)]


def quantization_differs(source: RuntimeTensor, target: RuntimeTensor) -> str | None:
    """A reason when (scale, zero point) differ, as the CPU's ``require_same_quantization`` says."""
    a, b = quantization_params(source), quantization_params(target)
    if a != b:
        return (
            f"{source.name!r} has (scale, zero_point) {a} but {target.name!r} has {b}; "
            "TFLite requires them equal for this op"
        )
    return None


class MovingOp(GpuOp):
    """A GPU op that moves values without arithmetic, for every type in ``data_types``:
    float32 (in the storage dtype), int8, uint8 (as they are; per-tensor quantized or
    not quantized). The data tensors (every input not in ``index_inputs``, and the
    outputs) must share one type. Subclasses add their conditions in :meth:`node_reason`."""

    ops: ClassVar[dict[int, Any]] = {}
    data_types: ClassVar[tuple[int, ...]] = MOVED_TYPES

    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        name = builtin_operator_name(op)
        checked = [(f"input {p}", i) for p, i in enumerate(node.inputs) if p not in cls.index_inputs]
        checked += [(f"output {p}", i) for p, i in enumerate(node.outputs)]
        kinds = set()
        for role, index in checked:
            if index < 0:
                continue
            tensor = tensors[index]
            if tensor.type not in cls.data_types:
                return TypeReason(f"{role} {tensor.name!r} is {tensor.type_name}; the GPU delegate runs {name} on {type_names(cls.data_types)} tensors")
            if len(tensor.shape) > MAX_RANK:
                return f"{role} {tensor.name!r} has rank {len(tensor.shape)}; at most {MAX_RANK} is supported"
            if tensor.is_dynamic:
                return f"{role} {tensor.name!r} has a shape known only at run time (dynamic tensor)"
            q = tensor.quantization
            if tensor.type in INT8_TYPES and q is not None and q.is_per_channel:
                return f"{role} {tensor.name!r} is quantized per channel; only per-tensor quantization is supported"
            kinds.add(tensor.type)
        if len(kinds) > 1:
            return TypeReason(f"{name} mixes {type_names(sorted(kinds))} tensors")
        return cls.node_reason(node, op, version, tensors)

    @classmethod
    def node_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        """Per-op conditions (after the type checks). Default: none."""
        return None

    def output_dtype(self, position: int = 0) -> np.dtype:
        """The device dtype of output ``position``: the storage dtype for float tensors."""
        tensor = self.outputs[position]
        return self.storage if tensor.dtype.kind == "f" else np.dtype(tensor.dtype)


# --------------------------------------------------------------------------------------
# RESHAPE
# --------------------------------------------------------------------------------------


class QuantizedReshape(MovingOp):
    """RESHAPE v1 of int8/uint8 tensors with equal input and output quantization."""

    ops = {B.RESHAPE: 1}
    index_inputs = (1,)
    data_types = INT8_TYPES

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if not node.inputs or node.inputs[0] < 0:
            return "the input is missing"
        shape = input_tensor(node, tensors, 1)
        # As TFLite (and the CPU kernel), the shape tensor is read only when it is an int32
        # vector; otherwise the params give the new shape.
        if shape is not None and len(shape.shape) == 1 and shape.type == T.INT32 and not shape.is_constant:
            return "the shape tensor must be constant (a shape known only at run time is not supported)"
        return quantization_differs(tensors[node.inputs[0]], tensors[node.outputs[0]])

    def prepare(self) -> None:
        self.out_shape = tuple(self.outputs[0].shape)

    def run(self, args):
        # A view, no launch: as the float ``layout.Reshape`` explains, nothing in a
        # partition writes into a value after the op that made it, so the view always
        # holds the input's current values (eagerly and in a replayed CUDA graph).
        return [args[0].reshape(self.out_shape)]


# --------------------------------------------------------------------------------------
# PAD / PADV2
# --------------------------------------------------------------------------------------


class ConstantPad(MovingOp):
    """PAD and PADV2 v1 (float32, uint8) and v2 (int8): constant paddings, filled with
    PADV2's value or the quantized zero."""

    ops = {B.PAD: 2, B.PADV2: 2}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) not in (2, 3) or node.inputs[0] < 0 or node.inputs[1] < 0:
            return f"expected inputs (input, paddings[, constant value]), got {len(node.inputs)} inputs"
        x, paddings, out = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
        reason = constant_int_reason(paddings, "paddings")
        if reason:
            return reason
        rank = len(x.shape)
        if rank == 0:
            return "a scalar input cannot be padded on the GPU"
        if paddings.shape != (rank, 2):
            return f"paddings has shape {list(paddings.shape)}; it must be [{rank}, 2]"
        pads = np.asarray(paddings.data).astype(np.int64)
        if (pads < 0).any():
            return f"paddings {pads.reshape(rank, 2).tolist()} has a negative entry"
        value = input_tensor(node, tensors, 2)
        if value is not None:
            if value.num_elements != 1:
                return f"the constant value must be a single value, it has shape {list(value.shape)}"
            if pads_quantized(x):
                return quantization_differs(value, out)
            return None
        try:
            default_pad_value(x, out)
        except ValueError as error:
            return str(error)
        return None

    def prepare(self) -> None:
        x, out = self.inputs[0], self.outputs[0]
        rank = len(x.shape)
        pads = np.asarray(self.inputs[1].data).astype(np.int64).reshape(rank, 2)
        self.inner = tuple(slice(int(a), int(a) + d) for d, (a, _) in zip(x.shape, pads))
        self.out_shape = tuple(out.shape)
        self.dtype = self.output_dtype()
        value = self.inputs[2] if len(self.inputs) > 2 else None
        if value is None:
            self.fill: Any = default_pad_value(x, out)
        elif value.is_constant:
            self.fill = np.asarray(value.data).reshape(()).item()  # a Python scalar: no host array at run
            self.prepared_inputs.add(2)
        else:
            self.fill = None  # read on the device at each run
        self.launcher = self.float_launcher = None
        if self.dtype.itemsize == 1 and self.fill is not None:
            after = [int(o) - int(d) - int(b) for o, d, b in zip(out.shape, x.shape, pads[:, 0])]
            self.launcher = BytePadCuda(
                pads[:, 0].tolist(), after, int(self.fill), self.dtype, **self.device.launcher_arguments(BytePadCuda.source)
            )
        elif self.dtype.kind == "f" and self.fill is not None:
            self.pads = pads.tolist()
            self.float_launcher = PadCuda(self.dtype, **self.device.launcher_arguments(PadCuda.source))

    def run(self, args):
        xp = self.xp
        if self.launcher is not None:
            return [self.launcher(args[0])]
        if self.float_launcher is not None:
            return [self.float_launcher(args[0], self.pads, float(self.fill))]
        if self.fill is not None:
            out = xp.full(self.out_shape, self.fill, dtype=self.dtype)
        else:
            out = xp.empty(self.out_shape, dtype=self.dtype)
            out[...] = args[2].reshape(())
        out[self.inner] = args[0]
        return [out]


# --------------------------------------------------------------------------------------
# CONCATENATION
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND
# --------------------------------------------------------------------------------------


class _SpaceBatch(MovingOp):
    """Shared by SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND: v1 (float32, uint8, 4-D), v2
    (int8), v3 (a 3-D input [N, H, C]); constant int32 block_shape and paddings / crops.
    One launch of ``cuda/space_batch.cu``. Not claimed: v4 (int16), and int32 / int64
    tensors (also v1)."""

    index_inputs = (1, 2)
    pairs_name: ClassVar[str]

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 3 or min(node.inputs) < 0:
            return f"expected inputs (input, block_shape, {cls.pairs_name}), got {len(node.inputs)} inputs"
        x, block, pairs, out = (tensors[i] for i in (*node.inputs, node.outputs[0]))
        for tensor, what in ((block, "block_shape"), (pairs, cls.pairs_name)):
            reason = constant_int_reason(tensor, what, (T.INT32,))
            if reason:
                return reason
        if len(x.shape) not in (3, 4):
            return f"the input must be 3-D or 4-D, it has shape {list(x.shape)}"
        spatial = len(x.shape) - 2
        if block.shape != (spatial,) or pairs.shape != (spatial, 2):
            return f"block_shape {list(block.shape)} and {cls.pairs_name} {list(pairs.shape)} must be [{spatial}] and [{spatial}, 2]"
        blocks, amounts = int_list(block), int_list(pairs)
        if min(blocks) <= 0 or min(amounts) < 0:
            return f"block_shape {blocks} must be positive and {cls.pairs_name} {amounts} not negative"
        if x.type in INT8_TYPES:
            reason = quantization_differs(x, out)
            if reason:
                return reason
        return cls.shape_reason(list(x.shape), blocks, np.reshape(amounts, (spatial, 2)).tolist())

    @classmethod
    def shape_reason(cls, shape: list[int], blocks: list[int], amounts: list[list[int]]) -> str | None:
        raise NotImplementedError

    def prepare(self) -> None:
        x, block, pairs = self.inputs
        spatial = len(x.shape) - 2
        amounts = np.reshape(int_list(pairs), (spatial, 2)).tolist()
        geometry = self.geometry(x.shape, int_list(block), amounts)
        out = self.outputs[0]
        fill = quantization_params(out)[1] if out.type in INT8_TYPES else 0
        self.out_shape = tuple(out.shape)
        self.launcher = SpaceBatchCuda(
            geometry, self.to_batch, fill, **self.device.launcher_arguments(SpaceBatchCuda.source)
        )

    def run(self, args):
        return [self.launcher(args[0], self.out_shape)]


class SpaceToBatchNd(_SpaceBatch):
    """SPACE_TO_BATCH_ND v1-v3: H and W padded (with 0, or the output's zero point), then
    each block offset moved to the batch."""

    ops = {B.SPACE_TO_BATCH_ND: 3}
    pairs_name = "paddings"
    to_batch = True
    geometry = staticmethod(SpaceBatchGeometry.space_to_batch)

    @classmethod
    def shape_reason(cls, shape, blocks, amounts):
        for size, b, (before, after) in zip(shape[1:-1], blocks, amounts):
            if (size + before + after) % b:
                return f"a padded size {size + before + after} is not a multiple of its block {b}"
        return None


class BatchToSpaceNd(_SpaceBatch):
    """BATCH_TO_SPACE_ND v1-v3: the batch's blocks moved back into H and W, then cropped."""

    ops = {B.BATCH_TO_SPACE_ND: 3}
    pairs_name = "crops"
    to_batch = False
    geometry = staticmethod(SpaceBatchGeometry.batch_to_space)

    @classmethod
    def shape_reason(cls, shape, blocks, amounts):
        block_size = int(np.prod(blocks))
        if shape[0] % block_size:
            return f"batch {shape[0]} is not a multiple of the block size {block_size}"
        for size, b, (before, after) in zip(shape[1:-1], blocks, amounts):
            if size * b - before - after < 0:
                return f"crops {amounts} are larger than the output"
        return None
