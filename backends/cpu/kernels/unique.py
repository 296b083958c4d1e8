"""UNIQUE: the distinct values of a vector in order of first appearance, and for each
element the position of its value among them.

TFLite (``kernels/unique.cc``) walks the vector with a ``std::map`` from value to position:

    y = [x[i] for the first i of each distinct value]     (dynamic shape [len(y)])
    idx[i] = position in y of x[i]                        (shape of x)

Equal means neither is smaller, so -0.0 and 0.0 are one value (the first one seen is
kept). NaN, smaller than nothing and larger than nothing, finds in a ``std::map`` the
smallest key there: a NaN at the start becomes the only value (every element maps to it);
a later NaN maps to the smallest value seen before it. This kernel gives the same.

Version 1 (the only one): x int8, int16, int32, int64, float32 or uint8 (LiteRT 2.3
refuses uint16, which newer TFLite sources add); ``idx`` int64 when ``idx_out_type`` is
INT64, else int32 (TFLite's option parser reads any other type as INT32).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import inputs_pending
from schema.enums import BuiltinOperator, TensorType

T = TensorType

VALUE_TYPES = (T.INT8, T.INT16, T.INT32, T.INT64, T.FLOAT32, T.UINT8)


def first_appearance_unique(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values in order of first appearance, position of each element's value): what
    TFLite's ``std::map`` walk gives, NaN included (see the module docstring)."""
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    if nan.size and nan[0]:
        return x[:1].copy(), np.zeros(x.shape, np.int64)
    numbers = np.flatnonzero(~nan)
    _, first, inverse = np.unique(x[numbers], return_index=True, return_inverse=True)
    order = np.argsort(first)  # distinct values by first appearance
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    positions = np.empty(x.shape, np.int64)
    positions[numbers] = position[inverse.reshape(-1)]
    if nan.any():
        # A NaN maps to the smallest value seen before it (x[0] is a number here).
        smallest_so_far = np.fmin.accumulate(x)
        sorted_values = np.sort(x[numbers][first])
        positions[nan] = position[np.searchsorted(sorted_values, smallest_so_far[nan])]
    return x[numbers[first[order]]], positions


@register(BuiltinOperator.UNIQUE, 1, 1)
class Unique(CpuKernel):
    """UNIQUE version 1."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        if len(self.outputs) != 2:
            raise self.unsupported(f"expected 2 outputs (values, idx), got {len(self.outputs)}")
        if inputs_pending(self):
            return
        x = self.inputs[0]
        values, positions = self.outputs
        self.require_types(x, *VALUE_TYPES)
        self.require_types(values, x.type, role="values output")
        index_type = T.INT64 if getattr(self.params, "idx_out_type", T.INT32) == T.INT64 else T.INT32
        self.require_types(positions, index_type, role="idx output")
        if len(x.shape) != 1:
            raise self.unsupported(f"the input must be a vector, it has shape {list(x.shape)}")
        values.set_dynamic()
        positions.resize(x.shape)

    def invoke(self) -> None:
        values, positions = self.outputs
        distinct, where = first_appearance_unique(self.inputs[0].data)
        values.set_data(distinct)
        positions.data[...] = where
