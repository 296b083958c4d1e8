"""More elementwise ops on the GPU: MAXIMUM MINIMUM SQUARED_DIFFERENCE POW, the comparisons
LESS LESS_EQUAL GREATER GREATER_EQUAL EQUAL NOT_EQUAL, SELECT SELECT_V2, LOGICAL_AND
LOGICAL_OR LOGICAL_NOT, the unary math ABS EXP LOG SQRT RSQRT SIN COS NEG SQUARE FLOOR
CEIL, and CAST.

Semantics are the CPU kernels' (``backends/cpu/kernels/binary.py``, ``comparison.py``,
``compare_quantized.py``, ``binary_quantized.py``, ``unary.py``, ``cast.py``), i.e.
TFLite's reference kernels:

- MAXIMUM is ``x > y ? x : y`` and MINIMUM ``x < y ? x : y`` (a NaN x gives y), on raw
  values for every type (TFLite compares int8/uint8 raw, whatever their quantization).
  Pure selection: bit-exact, also in float16 storage.
- SQUARED_DIFFERENCE ``d = x - y; d * d`` and POW ``pow(x, y)`` in float32.
- Comparisons of float32, int32 (and bool for EQUAL/NOT_EQUAL) compare the values as
  they are (float16 storage compares the stored values). Quantized uint8/int8 inputs are
  rescaled to a common scale first, as TFLite's ``ComparisonWithScaling``: the GPU op
  configures the CPU kernel's own class (``compare_quantized.QuantizedComparison``:
  TFLite's Prepare-time multipliers and shifts, its refusals) and calls its
  array-namespace ``compute`` on device arrays; bit-exact.
- SELECT: x and y of one shape; the condition of that shape, a scalar, or 1-D with one
  entry per row of x. SELECT_V2 broadcasts condition, x and y together. When every
  tensor holds one element the output keeps its declared shape. Values are copied bit
  for bit; quantized values are refused, as the CPU kernel refuses them.
- Unary math in float32 with the C library's rules (LOG(0) = -inf, SQRT(-1) = NaN);
  RSQRT is ``1 / sqrt(x)`` (two correctly rounded steps, as the CPU kernel: not the
  ``rsqrt`` intrinsic). Where the GPU may differ in the last bits: EXP, LOG, SIN, COS
  and POW use CUDA's ``expf``/``logf``/``sinf``/``cosf``/``powf`` (within 1-4 ulp of
  glibc's), far inside the 1e-5 relative tolerance; ABS NEG SQUARE FLOOR CEIL SQRT
  RSQRT, SQUARED_DIFFERENCE are correctly rounded IEEE operations on both.
- CAST: float -> integer saturates (NaN -> the type's max, below -> min, above -> max,
  otherwise truncation toward zero; ``cast.saturation_bounds`` gives the bounds);
  -> bool is ``x != 0``; integer -> integer wraps; bool/integer -> float32 rounds to
  nearest. int8/uint8 are raw values (their quantization is ignored, as TFLite does).

Broadcasting is numpy's, up to rank 4 (the delegate's rank limit).

How: the float ops take one launch per node, the hand-written kernels of
``cuda/elementwise.cu`` (``cuda/elementwise.py``): MAXIMUM/MINIMUM on float tensors,
SQUARED_DIFFERENCE and POW through ``ElementwiseBinaryCuda`` (broadcasting in the kernel,
no clamp), the unary math through ``ElementwiseUnaryCuda``; they load the storage dtype
(float32 or float16), compute in float32 and store the storage dtype; in host emulation
their numpy twins run, one launch each. The integer, bool and quantized ops (MAXIMUM and
MINIMUM on integers, the comparisons, SELECT, the logical ops, CAST) are CuPy/numpy
calls on device arrays.

Versions claimed (``schema/versioning/op_version.py``):

- MAXIMUM, MINIMUM 1 (float32, int32, uint8) and 2 (int8); not 3 (broadcasting above
  rank 4), 4 (int16). int64 v1 nodes are refused by type.
- SQUARED_DIFFERENCE 1 and POW 1 (float32; int32 v1 nodes are refused by type); not
  SQUARED_DIFFERENCE 2 (int8, requantized).
- LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, EQUAL, NOT_EQUAL 1 (float32, int32, bool
  for the equalities, quantized uint8) and 2 (quantized int8); not int16 (LESS and
  GREATER_EQUAL v3, NOT_EQUAL v4, EQUAL v5) nor strings (EQUAL/NOT_EQUAL v3).
- SELECT 1 and SELECT_V2 1 (float32, int32, int8, uint8, bool values); not SELECT 3
  (rank 5) or 4 / SELECT_V2 2 (uint32).
- LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT 1 (bool; the ops have one version).
- ABS EXP LOG SQRT RSQRT SIN COS NEG SQUARE FLOOR CEIL 1 (float32; the later versions of
  ABS EXP LOG SQRT RSQRT are int8/int16/int32; int32/int64 NEG v1 nodes are refused by
  type).
- CAST 1 (float32, int32, uint8, bool) and 3 (int8); not 2 (uint32), 4 (uint16), 5
  (float64/float16), 6-8 (int4, bfloat16, int2/uint4). int64/int16/complex64 v1 nodes
  are refused by type.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernels.binary_quantized import pair_table
from backends.cpu.kernels.cast import saturation_bounds
from backends.cpu.kernels.compare_quantized import QuantizedComparison as CpuQuantizedComparison
from backends.cpu.quantization import is_quantized
from backends.gpu.cuda.elementwise import ElementwiseBinaryCuda, ElementwiseUnaryCuda
from backends.gpu.cuda.int8_elementwise import PairLookupCuda
from backends.gpu.ops.base import MAX_RANK, GpuOp
from backends.gpu.ops.elementwise import FloatOp
from backends.gpu.ops.elementwise_quantized import configured_cpu_kernel, cpu_kernel_reason, node_tensors
from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import BuiltinOperator, TensorType, builtin_operator_name

B = BuiltinOperator
T = TensorType

COMPARISONS = (B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL, B.EQUAL, B.NOT_EQUAL)


def type_names(types: Sequence[int]) -> str:
    return "/".join(TensorType(t).name for t in types)


def tensor_reason(role: str, tensor: RuntimeTensor, types: Sequence[int], op: int) -> str | None:
    """Why ``tensor`` cannot be one of the op's data tensors: its type, rank, or a shape
    known only at run time. None when it can."""
    if tensor.type not in types:
        return (
            f"{role} {tensor.name!r} is {tensor.type_name}; the GPU delegate runs "
            f"{builtin_operator_name(op)} on {type_names(types)} tensors"
        )
    if len(tensor.shape) > MAX_RANK:
        return f"{role} {tensor.name!r} has rank {len(tensor.shape)}; at most {MAX_RANK} is supported"
    if tensor.is_dynamic:
        return f"{role} {tensor.name!r} has a shape known only at run time (dynamic tensor)"
    return None


def inputs_reason(node: Node, count: int, what: str) -> str | None:
    """A reason when the node does not have exactly ``count`` present inputs."""
    if len(node.inputs) != count or (count and min(node.inputs) < 0):
        return f"expected {count} input{'s' if count != 1 else ''} ({what}), got {len(node.inputs)}"
    return None


def broadcast_reason(*tensors: RuntimeTensor) -> str | None:
    """A reason when the shapes do not broadcast together, or broadcast above rank 4."""
    shapes = [tuple(t.shape) for t in tensors]
    try:
        shape = broadcast_shape(*shapes)
    except ValueError as error:
        return str(error)
    if len(shape) > MAX_RANK:
        listed = " with ".join(str(list(s)) for s in shapes)
        return f"broadcasting {listed} has rank {len(shape)}; at most {MAX_RANK} is supported"
    return None


class TypedOp(GpuOp):
    """A GPU op whose tensors are checked against the types the class lists.

    ``input_types`` / ``output_types`` are the types the data inputs (every input not in
    ``index_inputs``) and the outputs may have; with ``same_type`` every data input and
    output must share one type. Subclasses add their conditions in :meth:`node_reason`.
    Float tensors are held in the storage dtype, the others as they are.
    """

    input_types: ClassVar[tuple[int, ...]] = (T.FLOAT32,)
    output_types: ClassVar[tuple[int, ...]] = (T.FLOAT32,)
    same_type: ClassVar[bool] = True

    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        checked = [(f"input {p}", i, cls.input_types) for p, i in enumerate(node.inputs) if p not in cls.index_inputs]
        checked += [(f"output {p}", i, cls.output_types) for p, i in enumerate(node.outputs)]
        kinds = set()
        for role, index, types in checked:
            if index < 0:
                continue
            reason = tensor_reason(role, tensors[index], types, op)
            if reason:
                return reason
            kinds.add(tensors[index].type)
        if cls.same_type and len(kinds) > 1:
            return f"{builtin_operator_name(op)} mixes {type_names(sorted(kinds))} tensors; they must share one type"
        return cls.node_reason(node, op, version, tensors)

    @classmethod
    def node_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        """Per-op conditions (after the type checks). Default: none."""
        return None

    def compute(self, array: Any) -> Any:
        """A float ``array`` in the compute dtype, float32 (no copy when it already is)."""
        return array.astype(self.compute_dtype, copy=False)


# --------------------------------------------------------------------------------------
# MAXIMUM MINIMUM
# --------------------------------------------------------------------------------------


class MaximumMinimum(TypedOp):
    """MAXIMUM, MINIMUM v1 (float32, int32, uint8) and v2 (int8): ``x > y ? x : y``
    (resp. ``<``) on the values as stored, broadcasting up to rank 4."""

    ops = {B.MAXIMUM: 2, B.MINIMUM: 2}
    input_types = output_types = (T.FLOAT32, T.INT32, T.INT8, T.UINT8)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = inputs_reason(node, 2, "x, y")
        if reason:
            return reason
        x, y = (tensors[i] for i in node.inputs)
        return broadcast_reason(x, y)

    def prepare(self) -> None:
        xp = self.xp
        self.out_shape = tuple(self.outputs[0].shape)
        self.kernel = None
        if self.outputs[0].type == T.FLOAT32:
            # Float (float32 or float16 storage): one launch of elementwise_binary.
            self.kernel = ElementwiseBinaryCuda(
                builtin_operator_name(self.op), storage=self.storage, **self.device.launcher_arguments("elementwise.cu")
            )
        self.compare = xp.greater if self.op == B.MAXIMUM else xp.less
        self.table = None
        if self.outputs[0].type in (T.INT8, T.UINT8):
            # 8-bit: one launch of pair_lookup_b8 over the 65536 pairs (issue 23).
            dtype = self.outputs[0].dtype
            select = np.maximum if self.op == B.MAXIMUM else np.minimum
            self.table = self.upload(pair_table(select, dtype, dtype), dtype)
            self.pairs = PairLookupCuda(**self.device.launcher_arguments(PairLookupCuda.source))

    def run(self, args):
        x, y = args[0], args[1]
        # A selection, never arithmetic: exact in any storage dtype; NaN in x gives y.
        if self.kernel is not None:
            x, y = x.astype(self.storage, copy=False), y.astype(self.storage, copy=False)
            return [self.kernel(x, y).reshape(self.out_shape)]
        if self.table is not None:
            return [self.pairs(x, y, self.table).reshape(self.out_shape)]
        return [self.xp.where(self.compare(x, y), x, y).reshape(self.out_shape)]


# --------------------------------------------------------------------------------------
# SQUARED_DIFFERENCE POW
# --------------------------------------------------------------------------------------


class FloatBinaryMath(FloatOp):
    """SQUARED_DIFFERENCE v1 and POW v1 on float32, broadcasting up to rank 4."""

    ops = {B.SQUARED_DIFFERENCE: 1, B.POW: 1}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = inputs_reason(node, 2, "x, y")
        if reason:
            return reason
        x, y = (tensors[i] for i in node.inputs)
        return broadcast_reason(x, y)

    def prepare(self) -> None:
        self.out_shape = tuple(self.outputs[0].shape)
        # One launch of elementwise_binary (no clamp: TFLite's kernels have none). POW is
        # CUDA's powf on a device: within a few ulp of the C library's.
        self.kernel = ElementwiseBinaryCuda(
            builtin_operator_name(self.op), storage=self.storage, **self.device.launcher_arguments("elementwise.cu")
        )

    def run(self, args):
        return [self.kernel(self.store(args[0]), self.store(args[1])).reshape(self.out_shape)]


# --------------------------------------------------------------------------------------
# Comparisons
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# SELECT SELECT_V2
# --------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------
# LOGICAL_AND LOGICAL_OR LOGICAL_NOT
# --------------------------------------------------------------------------------------


class Logical(TypedOp):
    """LOGICAL_AND, LOGICAL_OR (broadcasting up to rank 4) and LOGICAL_NOT v1 on bool."""

    ops = {B.LOGICAL_AND: 1, B.LOGICAL_OR: 1, B.LOGICAL_NOT: 1}
    input_types = output_types = (T.BOOL,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if op == B.LOGICAL_NOT:
            return inputs_reason(node, 1, "x")
        reason = inputs_reason(node, 2, "x, y")
        return reason or broadcast_reason(*(tensors[i] for i in node.inputs))

    def prepare(self) -> None:
        xp = self.xp
        self.function = {B.LOGICAL_AND: xp.logical_and, B.LOGICAL_OR: xp.logical_or, B.LOGICAL_NOT: xp.logical_not}[self.op]
        self.out_shape = tuple(self.outputs[0].shape)

    def run(self, args):
        return [self.function(*(a for a in args if a is not None)).reshape(self.out_shape)]


# --------------------------------------------------------------------------------------
# Unary math
# --------------------------------------------------------------------------------------

UNARY_OPS = (B.ABS, B.EXP, B.LOG, B.SQRT, B.RSQRT, B.SIN, B.COS, B.NEG, B.SQUARE, B.FLOOR, B.CEIL)


class UnaryMath(FloatOp):
    """ABS EXP LOG SQRT RSQRT SIN COS NEG SQUARE FLOOR CEIL v1 (float32)."""

    ops = {op: 1 for op in UNARY_OPS}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        return inputs_reason(node, 1, "x")

    def prepare(self) -> None:
        # One launch of elementwise_unary; the op's name is the kernel's op (RSQRT is
        # 1 / sqrt(x), each step correctly rounded, as the CPU kernel: RSQRT(-0) = -inf).
        self.kernel = ElementwiseUnaryCuda(
            builtin_operator_name(self.op), storage=self.storage, **self.device.launcher_arguments("elementwise.cu")
        )

    def run(self, args):
        return [self.kernel(self.store(args[0]))]


# --------------------------------------------------------------------------------------
# CAST
# --------------------------------------------------------------------------------------

CAST_TYPES = (T.FLOAT32, T.INT32, T.INT8, T.UINT8, T.BOOL)


class Cast(TypedOp):
    """CAST v1 (float32, int32, uint8, bool) and v3 (int8): the CPU kernel's conversions
    (saturating float -> integer, wrapping integer -> integer, ``!= 0`` to bool)."""

    ops = {B.CAST: frozenset({1, 3})}  # v2 uint32, v4 uint16, v5 float64/float16: not here
    input_types = output_types = CAST_TYPES
    same_type = False

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = inputs_reason(node, 1, "x")
        if reason:
            return reason
        x, out = tensors[node.inputs[0]], tensors[node.outputs[0]]
        if tuple(x.shape) != tuple(out.shape):
            return f"the output shape {list(out.shape)} differs from the input's {list(x.shape)}"
        return None

    def prepare(self) -> None:
        source = np.dtype(self.inputs[0].dtype)
        self.target = np.dtype(self.outputs[0].dtype)
        self.from_float = source.kind == "f"
        self.saturate = self.from_float and self.target.kind in "iu"
        if self.saturate:
            self.low, self.high = saturation_bounds(self.compute_dtype, self.target)
            self.target_max = self.target.type(np.iinfo(self.target).max)

    def run(self, args):
        xp, target = self.xp, self.target
        x = self.compute(args[0]) if self.from_float else args[0]
        if target == np.bool_:
            return [x != 0]  # NaN != 0: true, as C++'s static_cast<bool>
        if target.kind == "f":
            # astype(copy=True): a new array even when nothing converts
            return [x.astype(self.compute_dtype).astype(self.storage, copy=False)]
        if not self.saturate:
            return [x.astype(target)]  # integer/bool -> integer: wraps, as a C++ static_cast
        inside = x <= self.high  # false for NaN and above the range: those give the max
        clamped = xp.maximum(xp.where(inside, x, self.low), self.low)  # in [low, high], no NaN
        return [xp.where(inside, clamped.astype(target), self.target_max)]
