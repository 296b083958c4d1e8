"""TOPK_V2: the ``k`` largest values of each row (the last axis) and their indices.

TFLite (``kernels/topk_v2.cc``): inputs (x, k); outputs (values, indices) of x's shape with
the last dimension ``max(k, 0)``. Each row is ordered by

    j before i  iff  x[j] > x[i], or x[j] == x[i] and j < i

(TFLite's ``TopContainer`` comparator: a strict total order, so ties keep the lower index
first and the result does not depend on how the heap is built). ``k`` is one int32 or
int16 value; ``k`` larger than the last dimension is an error, ``k <= 0`` gives empty rows.
A ``k`` that is not constant makes both outputs dynamic.

Types (x and values): float32, uint8, int8, int16, int32, int64; indices: int32 or int16.
Versions: v1 float32, uint8, int32, int64; v2 adds int8; v3 adds int16 (x, k or indices).
LiteRT's kernel does not look at the version, nor does this one. (NaN has no place in
TFLite's order: rows holding NaN are ordered here with NaN first, which LiteRT need not do.)
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import inputs_pending, int_values
from schema.enums import BuiltinOperator, TensorType

T = TensorType

VALUE_TYPES = (T.FLOAT32, T.UINT8, T.INT8, T.INT16, T.INT32, T.INT64)
K_TYPES = (T.INT32, T.INT16)
INDEX_TYPES = (T.INT32, T.INT16)


def descending_order(rows: np.ndarray) -> np.ndarray:
    """Per row, the indices ordered by decreasing value, ties by increasing index.

    A stable ascending sort of the reversed row lists equal values by decreasing original
    index; reading it backwards gives decreasing values with increasing indices. (Negating
    the values instead would overflow the smallest integer.)"""
    last = rows.shape[-1] - 1
    ascending_of_reversed = np.argsort(rows[..., ::-1], axis=-1, kind="stable")
    return last - ascending_of_reversed[..., ::-1]


@register(BuiltinOperator.TOPK_V2, 1, 3)
class TopKV2(CpuKernel):
    """TOPK_V2 versions 1 to 3."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        if len(self.outputs) != 2:
            raise self.unsupported(f"expected 2 outputs (values, indices), got {len(self.outputs)}")
        if inputs_pending(self):
            return
        x, k = self.inputs
        values, indices = self.outputs
        self.require_types(x, *VALUE_TYPES)
        self.require_types(values, x.type, role="values output")
        self.require_types(k, *K_TYPES, role="k")
        self.require_types(indices, *INDEX_TYPES, role="indices output")
        if k.num_elements != 1:
            raise self.unsupported(f"k must hold one value, it has shape {list(k.shape)}")
        if len(x.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        self.k_is_constant = k.is_constant
        if not self.k_is_constant:
            values.set_dynamic()
            indices.set_dynamic()
            return
        shape = self.output_shape(int_values(k)[0])
        values.resize(shape)
        indices.resize(shape)

    def output_shape(self, k: int) -> list[int]:
        x = self.inputs[0]
        if k > x.shape[-1]:
            raise ValueError(f"{self.op_name}: k {k} is larger than the last dimension of the input ({x.shape[-1]})")
        return [*x.shape[:-1], max(k, 0)]

    def invoke(self) -> None:
        x = self.inputs[0].data
        values, indices = self.outputs
        k = int_values(self.inputs[1])[0]
        if not self.k_is_constant:
            shape = self.output_shape(k)
            values.set_data(np.empty(shape, values.dtype))
            indices.set_data(np.empty(shape, indices.dtype))
        if k <= 0:
            return
        top = descending_order(x)[..., :k]
        indices.data[...] = top
        values.data[...] = np.take_along_axis(x, top, axis=-1)
