"""RESHAPE on the GPU: float32, and int8 / uint8 whose input and output quantization are
equal.

Semantics are the CPU kernel's (``backends/cpu/kernels/reshape.py``): the output's
static shape (set by the CPU kernel's prepare from the constant shape tensor or the
params); a shape tensor known only at run time is rejected.

How: no launch, a view of the input (see ``Reshape``).

Versions claimed: 1, the op's only version.
"""

from __future__ import annotations

from backends.gpu.ops.base import FloatOp, input_tensor
from backends.gpu.ops.moving_base import INT8_TYPES, MovingOp, quantization_differs
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


def reshape_inputs_reason(node, tensors) -> str | None:
    """Why a RESHAPE's inputs cannot run (any type): the input missing, or a shape tensor
    known only at run time. As TFLite (and the CPU kernel), the shape tensor is read only
    when it is an int32 vector; otherwise the params give the new shape."""
    if not node.inputs or node.inputs[0] < 0:
        return "the input is missing"
    shape = input_tensor(node, tensors, 1)
    if shape is not None and len(shape.shape) == 1 and shape.type == T.INT32 and not shape.is_constant:
        return "the shape tensor must be constant (a shape known only at run time is not supported)"
    return None


class Reshape(FloatOp):
    """RESHAPE version 1 (float32): the values under the output's static shape."""

    ops = {B.RESHAPE: 1}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        return reshape_inputs_reason(node, tensors)

    def prepare(self) -> None:
        self.out_shape = tuple(self.outputs[0].shape)

    def run(self, args):
        # A view of the input: no launch (a copy only if the input is not contiguous). The
        # output may share the input's device buffer because nothing in a partition writes
        # into a value after the op that made it: every op writes only arrays it allocated
        # (the in-place epilogues too), the partition's input buffers are refilled only
        # before the ops run, and hand-offs and downloads copy out of the values. So the
        # view always holds the input's current values, eagerly and in a replayed CUDA
        # graph (tests/gpu/test_layout_kernels.py checks those cases).
        return [self.store(args[0]).reshape(self.out_shape)]


class QuantizedReshape(MovingOp):
    """RESHAPE v1 of int8/uint8 tensors with equal input and output quantization."""

    ops = {B.RESHAPE: 1}
    index_inputs = (1,)
    data_types = INT8_TYPES

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        return reshape_inputs_reason(node, tensors) or quantization_differs(tensors[node.inputs[0]], tensors[node.outputs[0]])

    def prepare(self) -> None:
        self.out_shape = tuple(self.outputs[0].shape)

    def run(self, args):
        # A view, no launch: as the float ``Reshape`` explains, nothing in a
        # partition writes into a value after the op that made it, so the view always
        # holds the input's current values (eagerly and in a replayed CUDA graph).
        return [args[0].reshape(self.out_shape)]
