"""HASHTABLE_LOOKUP: values of the keys found in a sorted key vector (the legacy text op).

TFLite (``kernels/hashtable_lookup.cc``): inputs ``lookup`` (int32 vector), ``keys`` (int32
vector, meant to be sorted ascending) and ``values`` (``keys``' length rows, of any type; a
STRING ``values`` must be a vector). Outputs ``values[where lookup[i] is found]`` (a row of
zeros, or an empty string, where it is not) and ``hits`` (uint8: 1 found, 0 not).

TFLite finds each key with C's ``bsearch`` and the comparator ``a - b`` (int32 arithmetic,
wrapping). This kernel runs glibc's ``bsearch`` step for step, vectorized over the lookups,
with the same wrapping comparator, so that unsorted keys, repeated keys (which of them is
found) and differences past the int32 range (``2**31 - 1`` against ``-1``) give TFLite's
answers too.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.bitcast import FIXED_SIZE_TYPES
from schema.enums import BuiltinOperator, TensorType

T = TensorType


def glibc_bsearch(needles: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The index glibc's ``bsearch`` returns for each needle among ``keys`` with the
    comparator ``(int32)(needle - key)``, or -1 where it returns NULL."""
    needles = needles.astype(np.int64)
    keys = keys.astype(np.int64)
    low = np.zeros(needles.shape, np.int64)
    high = np.full(needles.shape, keys.size, np.int64)
    found = np.full(needles.shape, -1, np.int64)
    active = low < high
    while active.any():
        middle = (low + high) // 2
        difference = needles - keys[np.where(active, middle, 0)]
        sign = np.sign(((difference + 2**31) % 2**32) - 2**31)  # the int32 subtraction wraps
        hit = active & (sign == 0)
        found[hit] = middle[hit]
        high = np.where(active & (sign < 0), middle, high)
        low = np.where(active & (sign > 0), middle + 1, low)
        active &= ~hit & (low < high)
    return found


@register(BuiltinOperator.HASHTABLE_LOOKUP, 1, 1)  # v1: int32 keys, values of any type (the only version)
class HashtableLookup(CpuKernel):
    """HASHTABLE_LOOKUP v1: ``(values[found], hits)`` for each int32 lookup key."""

    def prepare(self) -> None:
        self.require_num_inputs(3)
        if len(self.outputs) != 2:
            raise self.unsupported(f"expected 2 outputs (values, hits), got {len(self.outputs)}")
        lookup, keys, values = self.inputs
        out, hits = self.outputs
        self.require_types(lookup, T.INT32, role="lookup input")
        self.require_types(keys, T.INT32, role="keys input")
        self.require_types(values, *FIXED_SIZE_TYPES, T.STRING, role="values input")
        if len(lookup.shape) != 1 or len(keys.shape) != 1:
            raise self.unsupported(
                f"lookup {list(lookup.shape)} and keys {list(keys.shape)} must be vectors"
            )
        if len(values.shape) < 1 or values.shape[0] != keys.shape[0]:
            raise self.unsupported(f"values {list(values.shape)} must have a row per key ({keys.shape[0]})")
        if values.type == T.STRING and len(values.shape) != 1:
            raise self.unsupported(f"STRING values must be a vector, {values.name!r} has shape {list(values.shape)}")
        self.require_types(out, values.type, role="output")
        self.require_types(hits, T.UINT8, role="hits output")
        out.resize([lookup.shape[0], *values.shape[1:]])
        hits.resize([lookup.shape[0]])

    def invoke(self) -> None:
        lookup, keys, values = (t.data for t in self.inputs)
        out, hits = self.outputs[0].data, self.outputs[1].data
        if keys.shape[0] == 0:
            raise ValueError(f"{self.op_name}: the table is empty (TFLite requires at least one key)")
        found = glibc_bsearch(lookup, keys)
        hit = found >= 0
        hits[...] = hit
        out[hit] = values[found[hit]]
        out[~hit] = b"" if values.dtype == object else 0
