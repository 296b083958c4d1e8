"""SEGMENT_SUM and UNSORTED_SEGMENT_{SUM, PROD, MAX, MIN}: reductions of a tensor's
slices grouped by segment id.

TFLite (``kernels/segment_sum.cc``, ``kernels/unsorted_segment.cc``,
``reference_ops::SegmentSum`` / ``UnsortedSegmentRef``), data float32 or int32, ids int32:

- SEGMENT_SUM (data, segment_ids): ids are 1-D, one per row of data, starting at 0 and
  growing by 0 or 1 from one row to the next ([0, 0, 1, 2, 2]); the output has
  ``last_id + 1`` rows, each the sum of its rows. Other ids are an error at invoke.
- UNSORTED_SEGMENT_* (data, segment_ids, num_segments): ids have the shape of a prefix of
  data's shape; ``num_segments`` is one int32 (shape [] or [1]) above every id; the output
  is ``[num_segments] + data.shape[ids.rank:]``. Each output row starts at the reduction's
  initial value (SUM 0, PROD 1, MAX the type's lowest, MIN its highest: -FLT_MAX / FLT_MAX
  for float32, not infinities) and takes the slices of its id in order; negative ids are
  skipped. MAX/MIN are ``std::max`` / ``std::min``, which ignore a NaN coming in (so does
  ``np.fmax`` / ``np.fmin`` here); integer SUM/PROD wrap.

The output shape depends on values (the ids, num_segments): it is set at prepare when they
are constant, else the output is dynamic and sized at invoke. Version 1 (the only one of each).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator

DATA_TYPES = (T.FLOAT32, T.INT32)


class SegmentKernel(CpuKernel):
    """Shared checks; subclasses give ``output_shape(ids)`` and ``reduce(ids, out)``."""

    def prepare_segments(self, *shape_inputs) -> None:
        """Types; the output sized now when the inputs its shape depends on are constant."""
        data, ids = self.inputs[0], self.inputs[1]
        self.require_types(data, *DATA_TYPES, role="data")
        self.require_types(ids, T.INT32, role="segment_ids")
        self.require_types(self.outputs[0], data.type, role="output")
        self.shape_from_values = not all(tensor.is_constant for tensor in shape_inputs)
        if self.shape_from_values:
            self.outputs[0].set_dynamic()
        else:
            self.outputs[0].resize(self.output_shape(ids.data.reshape(-1) if ids.is_constant else None))

    def invoke(self) -> None:
        ids = self.inputs[1].data.reshape(-1)
        out = self.outputs[0]
        shape = self.output_shape(ids)  # (checks the ids)
        if self.shape_from_values:
            out.set_data(np.empty(shape, out.dtype))
        slice_size = int(np.prod(shape[1:], dtype=np.int64))
        rows = out.data.reshape(shape[0], slice_size)
        self.reduce(ids, self.inputs[0].data.reshape(ids.size, slice_size), rows)

    def output_shape(self, ids: np.ndarray | None) -> list[int]:
        """The output's shape, after checking the ids (None: not known yet)."""
        raise NotImplementedError

    def reduce(self, ids: np.ndarray, data: np.ndarray, rows: np.ndarray) -> None:
        """``rows`` (one per segment) from the ``data`` rows (one per id)."""
        raise NotImplementedError


@register(B.SEGMENT_SUM, 1, 1)  # v1: float32, int32 (the only version)
class SegmentSum(SegmentKernel):
    """SEGMENT_SUM v1."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        if inputs_pending(self):
            return
        data, ids = self.inputs
        if len(data.shape) < 1 or len(ids.shape) != 1 or ids.shape[0] != data.shape[0]:
            raise self.unsupported(
                f"segment_ids {list(ids.shape)} must be 1-D with one id per row of data {list(data.shape)}"
            )
        self.prepare_segments(ids)

    def output_shape(self, ids: np.ndarray) -> list[int]:
        if ids.size:
            steps = np.diff(ids.astype(np.int64))
            if ids[0] != 0 or np.any((steps != 0) & (steps != 1)):
                raise ValueError(
                    f"{self.op_name}: segment_ids must start at 0 and grow by 0 or 1 from one row to the next "
                    f"(sorted, no gaps), they are {ids.tolist()}"
                )
        last = int(ids[-1]) if ids.size else -1
        return [last + 1, *self.inputs[0].shape[1:]]

    def reduce(self, ids: np.ndarray, data: np.ndarray, rows: np.ndarray) -> None:
        rows[...] = 0
        np.add.at(rows, ids, data)


#: op -> (the ufunc that accumulates, the initial value of an output row for a dtype)
UNSORTED_REDUCTIONS = {
    B.UNSORTED_SEGMENT_SUM: (np.add, lambda dtype: 0),
    B.UNSORTED_SEGMENT_PROD: (np.multiply, lambda dtype: 1),
    B.UNSORTED_SEGMENT_MAX: (np.fmax, lambda dtype: _limits(dtype).min),
    B.UNSORTED_SEGMENT_MIN: (np.fmin, lambda dtype: _limits(dtype).max),
}


def _limits(dtype: np.dtype):
    return np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)


@register(B.UNSORTED_SEGMENT_SUM, 1, 1)  # v1: float32, int32 (each op's only version)
@register(B.UNSORTED_SEGMENT_PROD, 1, 1)
@register(B.UNSORTED_SEGMENT_MAX, 1, 1)
@register(B.UNSORTED_SEGMENT_MIN, 1, 1)
class UnsortedSegment(SegmentKernel):
    """UNSORTED_SEGMENT_SUM / PROD / MAX / MIN v1."""

    def prepare(self) -> None:
        self.require_num_inputs(3)
        if inputs_pending(self):
            return
        data, ids, count = self.inputs
        self.require_types(count, T.INT32, role="num_segments")
        if count.shape not in ((), (1,)):
            raise self.unsupported(f"num_segments {count.name!r} must hold one value (shape [] or [1]), it has shape {list(count.shape)}")
        if len(ids.shape) > len(data.shape) or tuple(data.shape[: len(ids.shape)]) != tuple(ids.shape):
            raise self.unsupported(
                f"the shape of segment_ids {list(ids.shape)} must be a prefix of the data's shape {list(data.shape)}"
            )
        self.accumulate, initial = UNSORTED_REDUCTIONS[self.op]
        self.initial = initial(data.dtype)
        self.prepare_segments(count)

    def output_shape(self, ids: np.ndarray) -> list[int]:
        count = int_values(self.inputs[2])[0]
        highest = int(ids.max()) if ids is not None and ids.size else -1
        if count < 0 or highest >= count:
            raise ValueError(
                f"{self.op_name}: num_segments is {count}; it must be at least 0 and above every segment id "
                f"(the largest is {highest})"
            )
        data, ids_rank = self.inputs[0].shape, len(self.inputs[1].shape)
        return [count, *data[ids_rank:]]

    def reduce(self, ids: np.ndarray, data: np.ndarray, rows: np.ndarray) -> None:
        rows[...] = self.initial
        kept = ids >= 0
        if not kept.all():
            ids, data = ids[kept], data[kept]
        self.accumulate.at(rows, ids, data)
