"""The base of the GPU ops that move values without arithmetic (:class:`MovingOp`, over
float32, int8 and uint8; :class:`LayoutOp`, also over int32), and the reasons those ops
share (constant integer inputs, equal quantization, axes, inputs). The ops themselves
are in ``reshape.py``, ``concat_split.py``, ``pad.py``, ``slicing.py``,
``transpose.py``, ``space_depth.py``, ``gather.py``, ``tile.py`` (and ``reduce.py``'s
integer REDUCE_MAX / REDUCE_MIN).

Moved values are bit-exact: float32 is held in the storage dtype, int8 and uint8 as they
are (per-tensor quantized or not quantized).
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from backends.cpu.kernels.reshape import quantization_params
from backends.gpu.ops.base import GpuOp, TypeReason, shape_reason, type_names
from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import TensorType, builtin_operator_name

T = TensorType


#: The element types the data-movement ops take: float32 (held in the storage dtype),
#: int8 and uint8 (as they are).
MOVED_TYPES = (T.FLOAT32, T.INT8, T.UINT8)


INT8_TYPES = (T.INT8, T.UINT8)


def constant_int_reason(
    tensor: RuntimeTensor | None, what: str, types: Sequence[int] = (T.INT32, T.INT64),
    needed_because: str = "the GPU kernel reads it at prepare",
) -> str | None:
    """A reason when ``tensor`` is not a constant integer tensor of ``types`` (the message
    says why it must be constant: ``needed_because``)."""
    if tensor is None:
        return f"the {what} input is missing"
    if tensor.type not in types:
        return f"{what} {tensor.name!r} is {tensor.type_name}; it must be {' or '.join(TensorType(t).name for t in types)}"
    if not tensor.is_constant:
        return f"the {what} must be a constant tensor ({needed_because})"
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
            reason = shape_reason(role, tensor)
            if reason:
                return reason
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


def constant_shape_int_reason(tensor, what: str, types=(T.INT32, T.INT64)) -> str | None:
    """A reason when ``tensor`` is not a constant integer tensor of ``types`` (an input the
    output shape depends on: PAD's paddings, RESIZE's size)."""
    return constant_int_reason(tensor, what, types, "the output shape depends on it")


#: The element types these ops move: float32 (in the storage dtype), int8, uint8, int32.
LAYOUT_TYPES = (T.FLOAT32, T.INT8, T.UINT8, T.INT32)


INDEX_TYPES = (T.INT32, T.INT64)


def axis_reason(axis: int, rank: int) -> str | None:
    if not -rank <= axis < rank:
        return f"axis {axis} is out of range for rank {rank}"
    return None


def named_inputs_reason(node: Node, names: Sequence[str]) -> str | None:
    """A reason when the node does not have exactly the inputs ``names``, all present."""
    if len(node.inputs) != len(names) or min(node.inputs, default=0) < 0:
        return f"expected inputs ({', '.join(names)}), got {len(node.inputs)} inputs"
    return None


class LayoutOp(MovingOp):
    """A MovingOp over :data:`LAYOUT_TYPES`."""

    data_types = LAYOUT_TYPES
