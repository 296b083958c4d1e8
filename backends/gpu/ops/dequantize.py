"""DEQUANTIZE of a constant float16 tensor to float32 on the GPU, done once at prepare.

Models stored with float16 weights carry ``DEQUANTIZE(constant float16) -> float32``
nodes; widening float16 to float32 is exact. The result is uploaded once (in the
storage dtype: with float16 storage that is the float16 value itself, still exact) and
``run`` hands out that array.

Version claimed: 3, the one exception to "every version up to the claim is implemented".
For DEQUANTIZE the version says only which input type the node has (v1 uint8, v2 int8,
v3 int16/float16), and TFLite runs all of them with one kernel that looks at the type;
real float16 models are stamped v2 by older converters (MediaPipe's face detector:
74 float16 DEQUANTIZE nodes at v2) and v3 by current ones (``op_version.py``). So this
op takes v1-v3 and decides by type: uint8/int8/int16 inputs are rejected per node with
a reason naming the type; v4+ (per-channel int8, int4, int2, uint4) are not claimed.
"""

from __future__ import annotations

import numpy as np

from backends.gpu.ops.elementwise import FloatOp
from schema.enums import BuiltinOperator, TensorType


class Dequantize(FloatOp):
    """DEQUANTIZE versions 1-3 for a constant FLOAT16 input (other input types rejected)."""

    ops = {BuiltinOperator.DEQUANTIZE: 3}

    @classmethod
    def input_type(cls, position: int) -> int:
        return TensorType.FLOAT16

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        if not tensors[node.inputs[0]].is_constant:
            return "the input must be a constant float16 tensor (the GPU dequantizes weights once, at prepare)"
        return None

    def prepare(self) -> None:
        self.value = self.upload(np.asarray(self.inputs[0].data, dtype=np.float16).astype(np.float32))
        self.prepared_inputs.add(0)

    def run(self, args):
        return [self.value]
