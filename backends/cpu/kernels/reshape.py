"""RESHAPE, SQUEEZE, EXPAND_DIMS: the same values under a new shape.

Also holds the small helpers the other layout kernels of this family share (the
types they move, quantization checks, reading constant integer tensors).

The copy is a slice assignment from a view of the input in the output's shape, made
once per allocation (``CopyInto``): a third of ``np.copyto``'s call cost on small tensors.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import BuiltinOperator, TensorType

T = TensorType

#: Types these data-movement kernels copy without looking at the values.
#: int8/uint8/int16 are quantized data: moved unchanged, scale and zero point included.
MOVABLE_TYPES = (T.FLOAT32, T.INT8, T.UINT8, T.INT16, T.INT32, T.INT64, T.BOOL)
#: ``MOVABLE_TYPES`` and STRING, for the kernels TFLite also runs on strings (held here as
#: object arrays of ``bytes``, which numpy copies, slices and gathers like any array).
MOVABLE_OR_STRING_TYPES = (*MOVABLE_TYPES, T.STRING)
#: Complex types, which LiteRT moves through some of these kernels and not others (one-node
#: models, tests/cpu/test_complex_layout.py): both through RESHAPE, SQUEEZE, EXPAND_DIMS and
#: BROADCAST_TO; complex64 only through TRANSPOSE, SLICE, STRIDED_SLICE, TILE, MIRROR_PAD,
#: FILL, SELECT and SELECT_V2; neither through GATHER, GATHER_ND, CONCATENATION, PACK, UNPACK,
#: SPLIT, SPLIT_V, PAD, REVERSE_V2 or SPACE_TO_DEPTH.
COMPLEX_TYPES = (T.COMPLEX64, T.COMPLEX128)
QUANTIZED_TYPES = (T.INT8, T.UINT8, T.INT16)
INDEX_TYPES = (T.INT32, T.INT64)


def inputs_pending(kernel: CpuKernel) -> bool:
    """True (and every output marked dynamic) while an input is a dynamic tensor not computed yet.

    The interpreter prepares every node at allocate time, also nodes fed by a dynamic
    tensor whose shape is not known until its producer runs; such a node is prepared
    again at invoke. Until then its shapes are unknown, so its prepare checks nothing.
    """
    if any(t is not None and t.is_dynamic and t.data is None for t in kernel.inputs):
        for out in kernel.outputs:
            out.set_dynamic()
        return True
    return False


def require_planned_shapes(kernel: CpuKernel, planned: Sequence[tuple[RuntimeTensor | None, Sequence[int]]]) -> None:
    """A clear error when a tensor's buffer no longer has the shape this node's prepare
    planned for (a later node resized it: two nodes write the tensor, or the node reads a
    tensor before the node that writes it). For ``bind``, once per allocation."""
    for tensor, shape in planned:
        if tensor is None:
            continue
        data = tensor.data
        if data is None or tuple(data.shape) != tuple(shape):
            now = "no data" if data is None else f"shape {list(data.shape)}"
            raise kernel.unsupported(
                f"tensor {tensor.name!r} has {now} when the node runs but shape {list(shape)} when it was "
                "prepared: another node resized it (two nodes write it, or it is read before it is written)"
            )


def _arena_limit(kernel: CpuKernel) -> int:
    """The interpreter's arena limit (``experimental_arena_limit_bytes`` or its default);
    8 GiB for a context that has none."""
    limit = getattr(kernel.context, "arena_limit_bytes", None)
    return limit if isinstance(limit, int) else 8 << 30


def _format_bytes(count: int) -> str:
    for unit, shift in (("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.3g} {unit}"
    return f"{count} bytes"


def checked_bytes(kernel: CpuKernel, shape: Sequence[int], dtype, what: str) -> int:
    """The bytes of an array of ``shape`` and ``dtype`` (exact), or a clear error naming
    them when they exceed the interpreter's arena limit: for the scratch buffers and
    outputs a kernel sizes from parameters (paddings, block shapes, multiples), checked
    before anything is allocated."""
    count = 1
    for d in shape:
        count *= int(d)
    nbytes = count * np.dtype(dtype).itemsize
    limit = _arena_limit(kernel)
    if nbytes > limit:
        raise kernel.unsupported(
            f"{what} of shape {[int(d) for d in shape]} would need {_format_bytes(nbytes)} ({nbytes} bytes), "
            f"more than the arena limit of {_format_bytes(limit)}"
        )
    return nbytes


def quantization_params(tensor: RuntimeTensor) -> tuple[float, int]:
    """Per-tensor (scale, zero_point) as TFLite's ``params`` sees them; (0, 0) when absent."""
    q = tensor.quantization
    if q is None or q.scale is None or q.scale.size == 0:
        return 0.0, 0
    return float(q.scale[0]), int(q.zero_point[0]) if q.zero_point.size else 0


def require_same_quantization(kernel: CpuKernel, source: RuntimeTensor, target: RuntimeTensor) -> None:
    """TFLite requires equal scale/zero point here: a value-moving op cannot requantize."""
    if quantization_params(source) != quantization_params(target):
        raise kernel.unsupported(
            f"{source.name!r} has (scale, zero_point) {quantization_params(source)} but "
            f"{target.name!r} has {quantization_params(target)}; TFLite requires them equal "
            "for this op (requantizing is not supported)"
        )


def require_int16_zero_point_0(kernel: CpuKernel, *tensors: RuntimeTensor) -> None:
    for tensor in tensors:
        if tensor.type == T.INT16 and quantization_params(tensor)[1] != 0:
            raise kernel.unsupported(f"int16 tensor {tensor.name!r} must have zero point 0 (symmetric int16)")


def int_values(tensor: RuntimeTensor) -> list[int]:
    """The values of an integer tensor (constant at prepare, or any at invoke) as Python ints."""
    if tensor.data is None and tensor.num_elements == 0:
        return []  # an empty constant has no buffer in the file
    return [int(v) for v in np.asarray(tensor.data).reshape(-1)]


def normalize_axis(kernel: CpuKernel, axis: int, rank: int, what: str = "axis") -> int:
    """A negative axis counts from the end; out of [-rank, rank) is an error."""
    if not -rank <= axis < rank:
        raise kernel.unsupported(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def copy_into(out: np.ndarray, value: np.ndarray) -> None:
    """Write ``value`` into a preallocated output (same number of elements)."""
    np.copyto(out, value.reshape(out.shape), casting="no")


class CopyInto:
    """``copy_into(out, value)`` for arrays that are the same objects from one invoke to the
    next (arena buffers): the reshaped view of ``value`` is made once per pair."""

    __slots__ = ("pair", "target", "source")

    def __init__(self) -> None:
        self.pair = (None, None)

    def __call__(self, out: np.ndarray, value: np.ndarray) -> None:
        if self.pair[0] is not out or self.pair[1] is not value:
            if out.dtype != value.dtype or not value.flags.c_contiguous:
                copy_into(out, value)  # (a reshape of a non-contiguous array copies: not kept)
                return
            self.target, self.source = out, value.reshape(out.shape)
            self.pair = (out, value)
        self.target[...] = self.source


# --------------------------------------------------------------------------------------
# RESHAPE
# --------------------------------------------------------------------------------------


def resolve_new_shape(kernel: CpuKernel, requested: Sequence[int], input_shape: Sequence[int]) -> tuple[int, ...]:
    """TFLite's ``ResizeOutput``: at most one -1 (stretch) dimension; element counts must match."""
    shape = [int(d) for d in requested]
    num_elements = int(np.prod(input_shape, dtype=np.int64))
    stretch = [i for i, d in enumerate(shape) if d == -1]
    if len(stretch) > 1:
        raise kernel.unsupported(f"new shape {shape} has more than one -1 dimension")
    if stretch:
        known = [d for d in shape if d != -1]
        if num_elements == 0 and int(np.prod(known, dtype=np.int64)) != 0:
            shape[stretch[0]] = 0
        else:
            # Products of the non-zero dimensions, as TFLite computes them.
            non_zero_input = int(np.prod([d for d in input_shape if d], dtype=np.int64))
            non_zero_known = int(np.prod([d for d in known if d], dtype=np.int64))
            shape[stretch[0]] = non_zero_input // non_zero_known
    if any(d < 0 for d in shape) or int(np.prod(shape, dtype=np.int64)) != num_elements:
        raise kernel.unsupported(f"cannot reshape {num_elements} elements (shape {list(input_shape)}) into {shape}")
    return tuple(shape)


# v1: every type, strings and complex included (the op has a single version).
@register(BuiltinOperator.RESHAPE, 1, 1)
class Reshape(CpuKernel):
    """RESHAPE v1: new shape from a constant or runtime shape tensor, else from params."""

    blas_work = 0  # (no BLAS call: also SQUEEZE, EXPAND_DIMS)

    def prepare(self) -> None:
        self.output_shares_input = False
        if inputs_pending(self):
            return
        x = self.inputs[0]
        self.require_types(x, *MOVABLE_OR_STRING_TYPES, *COMPLEX_TYPES)
        self.require_types(self.outputs[0], x.type, role="output")
        shape_tensor = self.inputs[1] if len(self.inputs) > 1 else None
        # TFLite reads the shape tensor only when it is an int32 vector; else the params.
        self.shape_tensor = None
        self.shape_from_values = False
        if shape_tensor is not None and len(shape_tensor.shape) == 1 and shape_tensor.type == T.INT32:
            self.shape_tensor = shape_tensor
        if self.shape_tensor is not None and not self.shape_tensor.is_constant:
            self.shape_from_values = True
            self.outputs[0].set_dynamic()
            return
        if self.shape_tensor is not None:
            requested = int_values(self.shape_tensor)
        else:
            requested = self.params.new_shape if self.params is not None and self.params.new_shape else ()
            if list(requested) == [0]:
                requested = ()  # legacy models write [0] for a scalar
        self.outputs[0].resize(resolve_new_shape(self, requested, x.shape))
        self.copy = CopyInto()
        self.output_shares_input = True

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0]
        if self.shape_from_values:
            shape = resolve_new_shape(self, int_values(self.shape_tensor), x.shape)
            out.set_data(x.reshape(shape).copy())
        else:
            self.copy(out.data, x)


# --------------------------------------------------------------------------------------
# SQUEEZE
# --------------------------------------------------------------------------------------


# v1: numeric, complex and bool types; v2: string (LiteRT's kernel takes strings at v1 too, and
# registers v2 in its BUILTIN resolver, not in BUILTIN_REF).
@register(BuiltinOperator.SQUEEZE, 1, 2)
class Squeeze(CpuKernel):
    """SQUEEZE v1-v2: drop the listed size-1 axes (all size-1 axes when none are listed)."""

    blas_work = 0

    def prepare(self) -> None:
        self.output_shares_input = False
        if inputs_pending(self):
            return
        x = self.inputs[0]
        self.require_types(x, *MOVABLE_OR_STRING_TYPES, *COMPLEX_TYPES)
        self.require_types(self.outputs[0], x.type, role="output")
        rank = len(x.shape)
        if rank > 8:
            raise self.unsupported(f"input rank {rank} is above 8")
        dims = self.params.squeeze_dims if self.params is not None else None
        if not dims:
            squeezed = {i for i, d in enumerate(x.shape) if d == 1}
        else:
            squeezed = set()
            for d in dims:
                axis = normalize_axis(self, int(d), rank, "squeeze dimension")
                if x.shape[axis] != 1:
                    raise self.unsupported(
                        f"cannot squeeze axis {axis} of size {x.shape[axis]} (shape {list(x.shape)})"
                    )
                squeezed.add(axis)
        self.outputs[0].resize([d for i, d in enumerate(x.shape) if i not in squeezed])
        self.copy = CopyInto()
        self.output_shares_input = True

    def invoke(self) -> None:
        self.copy(self.outputs[0].data, self.inputs[0].data)


# --------------------------------------------------------------------------------------
# EXPAND_DIMS
# --------------------------------------------------------------------------------------


def expanded_shape(kernel: CpuKernel, shape: Sequence[int], axis: int) -> tuple[int, ...]:
    rank = len(shape)
    if axis < 0:
        axis += rank + 1
    if not 0 <= axis <= rank:
        raise kernel.unsupported(f"axis is out of range [-{rank + 1}, {rank}] for input shape {list(shape)}")
    return (*shape[:axis], 1, *shape[axis:])


# v1: every type, strings and complex included (the op has a single version).
@register(BuiltinOperator.EXPAND_DIMS, 1, 1)
class ExpandDims(CpuKernel):
    """EXPAND_DIMS v1: insert a size-1 axis; the axis comes from input 1 (int32 or int64)."""

    blas_work = 0

    def prepare(self) -> None:
        self.output_shares_input = False
        if inputs_pending(self):
            return
        x, axis = self.inputs[0], self.inputs[1]
        self.require_types(x, *MOVABLE_OR_STRING_TYPES, *COMPLEX_TYPES)
        self.require_types(axis, *INDEX_TYPES, role="axis")
        self.require_types(self.outputs[0], x.type, role="output")
        require_same_quantization(self, x, self.outputs[0])
        if axis.num_elements != 1:
            raise self.unsupported(f"the axis tensor must hold one value, it has shape {list(axis.shape)}")
        self.axis_from_values = not axis.is_constant
        if self.axis_from_values:
            self.outputs[0].set_dynamic()
            return
        self.outputs[0].resize(expanded_shape(self, x.shape, int_values(axis)[0]))
        self.copy = CopyInto()
        self.output_shares_input = True

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0]
        if self.axis_from_values:
            shape = expanded_shape(self, x.shape, int_values(self.inputs[1])[0])
            out.set_data(x.reshape(shape).copy())
        else:
            self.copy(out.data, x)
