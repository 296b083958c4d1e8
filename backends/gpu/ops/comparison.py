"""Comparisons and selection on the GPU: LESS LESS_EQUAL GREATER GREATER_EQUAL EQUAL
NOT_EQUAL (float32, int32, bool, and quantized int8/uint8), SELECT SELECT_V2, LOGICAL_AND
LOGICAL_OR LOGICAL_NOT.

Semantics are the CPU kernels' (``backends/cpu/kernels/comparison.py``,
``compare_quantized.py``, ``binary_quantized.py``), i.e. TFLite's reference kernels:

- Comparisons of float32, int32 (and bool for EQUAL/NOT_EQUAL) compare the values as
  they are (float16 storage compares the stored values). Quantized uint8/int8 inputs are
  rescaled to a common scale first, as TFLite's ``ComparisonWithScaling``: the GPU op
  configures the CPU kernel's own class (``compare_quantized.QuantizedComparison``:
  TFLite's Prepare-time multipliers and shifts, its refusals) and tabulates its
  array-namespace ``compute`` over every pair of 8-bit values at prepare; each run is
  one launch of ``pair_lookup_b8``; bit-exact.
- SELECT: x and y of one shape; the condition of that shape, a scalar, or 1-D with one
  entry per row of x. SELECT_V2 broadcasts condition, x and y together. When every
  tensor holds one element the output keeps its declared shape. Values are copied bit
  for bit; quantized values are refused, as the CPU kernel refuses them.
- LOGICAL_AND, LOGICAL_OR broadcast (numpy's rules, up to rank 4); LOGICAL_NOT.

How: the float/int32/bool comparisons, SELECT and the logical ops are CuPy/numpy calls
on device arrays.

Versions claimed (``schema/versioning/op_version.py``):

- LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, EQUAL, NOT_EQUAL 1 (float32, int32, bool
  for the equalities, quantized uint8) and 2 (quantized int8); not int16 (LESS and
  GREATER_EQUAL v3, NOT_EQUAL v4, EQUAL v5) nor strings (EQUAL/NOT_EQUAL v3).
- SELECT 1 and SELECT_V2 1 (float32, int32, int8, uint8, bool values); not SELECT 3
  (rank 5) or 4 / SELECT_V2 2 (uint32).
- LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT 1 (bool; the ops have one version).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernels.binary_quantized import pair_table
from backends.cpu.kernels.compare_quantized import QuantizedComparison as CpuQuantizedComparison
from backends.cpu.quantization import is_quantized
from backends.gpu.cuda.int8_elementwise import PairLookupCuda
from backends.gpu.ops.base import (
    MAX_RANK,
    TypedOp,
    binary_inputs_reason,
    broadcast_reason,
    inputs_reason,
    tensor_reason,
)
from backends.gpu.ops.quantized_base import configured_cpu_kernel, cpu_kernel_reason, node_tensors
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


COMPARISONS = (B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL, B.EQUAL, B.NOT_EQUAL)


ORDERING_TYPES = (T.FLOAT32, T.INT32)


EQUALITY_TYPES = (T.FLOAT32, T.INT32, T.BOOL)


class Comparison(TypedOp):
    """LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, EQUAL, NOT_EQUAL v1 on float32 and int32
    (and bool for EQUAL / NOT_EQUAL), not quantized: the values compared as they are."""

    ops = {op: 1 for op in COMPARISONS}
    input_types = EQUALITY_TYPES
    output_types = (T.BOOL,)
    same_type = False

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = inputs_reason(node, 2, "x, y")
        if reason:
            return reason
        x, y = (tensors[i] for i in node.inputs)
        types = EQUALITY_TYPES if op in (B.EQUAL, B.NOT_EQUAL) else ORDERING_TYPES
        for role, tensor in (("input 0", x), ("input 1", y)):
            reason = tensor_reason(role, tensor, types, op)
            if reason:
                return reason
        if x.type != y.type:
            return f"inputs are {x.type_name} and {y.type_name}; both must have one type"
        return broadcast_reason(x, y)

    def prepare(self) -> None:
        xp = self.xp
        self.function = {
            B.LESS: xp.less, B.LESS_EQUAL: xp.less_equal, B.GREATER: xp.greater,
            B.GREATER_EQUAL: xp.greater_equal, B.EQUAL: xp.equal, B.NOT_EQUAL: xp.not_equal,
        }[self.op]
        self.out_shape = tuple(self.outputs[0].shape)

    def run(self, args):
        return [self.function(args[0], args[1]).reshape(self.out_shape)]


class QuantizedComparison(TypedOp):
    """LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, EQUAL, NOT_EQUAL v1 (uint8) and v2 (int8)
    on per-tensor quantized inputs: both sides rescaled to a common scale (TFLite's
    ``ComparisonWithScaling``, the CPU kernel's own arithmetic), broadcasting up to rank 4."""

    ops = {op: 2 for op in COMPARISONS}
    input_types = (T.INT8, T.UINT8)
    output_types = (T.BOOL,)
    same_type = False

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = inputs_reason(node, 2, "x, y")
        if reason:
            return reason
        x, y = (tensors[i] for i in node.inputs)
        if x.type != y.type:
            return f"inputs are {x.type_name} and {y.type_name}; both must have one type"
        for tensor in (x, y):
            if not is_quantized(tensor):
                return (
                    f"input {tensor.name!r} ({tensor.type_name}) has no quantization scale; "
                    "only quantized int8/uint8 comparisons run on the GPU"
                )
        return broadcast_reason(x, y) or cpu_kernel_reason(CpuQuantizedComparison, node, op, version, tensors)

    def prepare(self) -> None:
        kernel = configured_cpu_kernel(CpuQuantizedComparison, self.node, self.op, self.version, node_tensors(self))
        self.out_shape = tuple(self.outputs[0].shape)
        # The CPU kernel's arithmetic over every pair of 8-bit values (issue 23: one launch).
        self.table = self.upload(pair_table(kernel.compute, self.inputs[0].dtype, np.bool_), np.bool_)
        self.launcher = PairLookupCuda(**self.device.launcher_arguments(PairLookupCuda.source))

    def run(self, args):
        return [self.launcher(args[0], args[1], self.table).reshape(self.out_shape)]


SELECT_TYPES = (T.FLOAT32, T.INT32, T.INT8, T.UINT8, T.BOOL)


def select_views(op: int, condition, x, y, out) -> tuple[tuple | None, tuple[int, ...]]:
    """(shapes to view condition, x and y with, or None; the output shape), the CPU
    kernel's rules (``comparison.Select`` / ``SelectV2``). ValueError for shapes SELECT
    does not take."""
    shapes = [tuple(t.shape) for t in (condition, x, y)]
    if all(int(np.prod(s, dtype=np.int64)) == 1 for s in (*shapes, tuple(out.shape))):
        return ((), (), ()), tuple(out.shape)  # one element each: the declared output shape
    c_shape, x_shape, y_shape = shapes
    if op == B.SELECT_V2:
        return None, broadcast_shape(c_shape, x_shape, y_shape)
    if x_shape != y_shape:
        raise ValueError(f"x {list(x_shape)} and y {list(y_shape)} must have the same shape (SELECT_V2 broadcasts)")
    if c_shape == x_shape:
        return None, x_shape
    one_per_row = len(c_shape) == 1 and len(x_shape) >= 1 and c_shape[0] == x_shape[0]
    if not (len(c_shape) == 0 or one_per_row):
        raise ValueError(
            f"condition shape {list(c_shape)} must equal x's {list(x_shape)}, be a scalar, "
            "or be 1-D with one entry per row of x (SELECT_V2 broadcasts)"
        )
    return (c_shape + (1,) * (len(x_shape) - len(c_shape)), x_shape, y_shape), x_shape


class Select(TypedOp):
    """SELECT v1 and SELECT_V2 v1: ``condition ? x : y`` with a bool condition and
    float32, int32, int8, uint8 or bool values (not quantized), copied bit for bit."""

    ops = {B.SELECT: 1, B.SELECT_V2: 1}
    input_types = (T.BOOL, *SELECT_TYPES)
    output_types = SELECT_TYPES
    same_type = False

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = inputs_reason(node, 3, "condition, x, y")
        if reason:
            return reason
        condition, x, y = (tensors[i] for i in node.inputs)
        out = tensors[node.outputs[0]]
        if condition.type != T.BOOL:
            return f"condition {condition.name!r} is {condition.type_name}; it must be BOOL"
        if not (x.type == y.type == out.type):
            return f"x, y and the output are {x.type_name}, {y.type_name} and {out.type_name}; they must have one type"
        for tensor in (x, y, out):
            if is_quantized(tensor):
                return (
                    f"tensor {tensor.name!r} is quantized ({tensor.type_name} with a scale); "
                    "only plain values are selected, as on the CPU"
                )
        try:
            _, shape = select_views(op, condition, x, y, out)
        except ValueError as error:
            return str(error)
        if len(shape) > MAX_RANK:
            return f"the output has rank {len(shape)}; at most {MAX_RANK} is supported"
        return None

    def prepare(self) -> None:
        self.views, _ = select_views(self.op, *self.inputs, self.outputs[0])
        self.out_shape = tuple(self.outputs[0].shape)

    def run(self, args):
        condition, x, y = args[0], args[1], args[2]
        if self.views is not None:
            condition, x, y = (a.reshape(shape) for a, shape in zip((condition, x, y), self.views))
        return [self.xp.where(condition, x, y).reshape(self.out_shape)]


class Logical(TypedOp):
    """LOGICAL_AND, LOGICAL_OR (broadcasting up to rank 4) and LOGICAL_NOT v1 on bool."""

    ops = {B.LOGICAL_AND: 1, B.LOGICAL_OR: 1, B.LOGICAL_NOT: 1}
    input_types = output_types = (T.BOOL,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if op == B.LOGICAL_NOT:
            return inputs_reason(node, 1, "x")
        return binary_inputs_reason(node, tensors)

    def prepare(self) -> None:
        xp = self.xp
        self.function = {B.LOGICAL_AND: xp.logical_and, B.LOGICAL_OR: xp.logical_or, B.LOGICAL_NOT: xp.logical_not}[self.op]
        self.out_shape = tuple(self.outputs[0].shape)

    def run(self, args):
        return [self.function(*(a for a in args if a is not None)).reshape(self.out_shape)]
