"""CAST on the GPU, between float32, int32, int8, uint8 and bool.

Semantics are the CPU kernel's (``backends/cpu/kernels/cast.py``), i.e. TFLite's: float
-> integer saturates (NaN -> the type's max, below -> min, above -> max, otherwise
truncation toward zero; ``cast.saturation_bounds`` gives the bounds); -> bool is
``x != 0``; integer -> integer wraps; bool/integer -> float32 rounds to nearest.
int8/uint8 are raw values (their quantization is ignored, as TFLite does).

How: CuPy/numpy calls on device arrays.

Versions claimed: 1 (float32, int32, uint8, bool) and 3 (int8); not 2 (uint32), 4
(uint16), 5 (float64/float16), 6-8 (int4, bfloat16, int2/uint4). int64/int16/complex64
v1 nodes are refused by type.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels.cast import saturation_bounds
from backends.gpu.ops.base import TypedOp, inputs_reason
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


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
