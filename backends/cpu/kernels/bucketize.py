"""BUCKETIZE: the index of the bucket each value falls in, given sorted boundaries.

TFLite (``kernels/bucketize.cc``): ``out[i] = upper_bound(boundaries, x[i])``, the number
of boundaries ``<= x[i]`` (int32, the input's shape). The boundaries are float32 (the
op's options) and must be sorted. C++ compares ``x < boundary`` in the usual arithmetic
conversions: int32 and int64 values become float32 (large ones round), float64
boundaries widen to float64. A NaN value is in the last bucket (every ``NaN < b`` is
false). Version 1 (the only one): float32, float64, int32, int64 inputs.

Boundaries holding NaN are refused here (TFLite's binary search over them gives an
order-dependent answer).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

T = TensorType


@register(BuiltinOperator.BUCKETIZE, 1, 1)  # v1: float32, float64, int32, int64 (the only version)
class Bucketize(CpuKernel):
    """BUCKETIZE v1."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x = self.inputs[0]
        self.require_types(x, T.FLOAT32, T.FLOAT64, T.INT32, T.INT64)
        self.require_types(self.outputs[0], T.INT32, role="output")
        boundaries = getattr(self.params, "boundaries", None)
        if boundaries is None:
            raise self.unsupported("the node has no boundaries (BucketizeOptions.boundaries is required)")
        boundaries = np.asarray(boundaries, np.float32)
        if np.isnan(boundaries).any():
            raise self.unsupported("the boundaries hold NaN")
        if np.any(boundaries[1:] < boundaries[:-1]):
            raise self.unsupported(f"the boundaries must be sorted, they are {boundaries.tolist()}")
        # the type both sides of `x < boundary` have in C++
        compare_type = np.float64 if x.type == T.FLOAT64 else np.float32
        self.boundaries = boundaries.astype(compare_type)
        self.compare_type = compare_type
        self.outputs[0].resize(x.shape)

    def invoke(self) -> None:
        x = self.inputs[0].data.astype(self.compare_type, copy=False)
        self.outputs[0].data[...] = np.searchsorted(self.boundaries, x, side="right")
