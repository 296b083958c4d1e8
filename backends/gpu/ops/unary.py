"""Unary math on the GPU: ABS EXP LOG SQRT RSQRT SIN COS NEG SQUARE FLOOR CEIL (float32).

Semantics are the CPU kernel's (``backends/cpu/kernels/unary.py``), in float32 with the C
library's rules (LOG(0) = -inf, SQRT(-1) = NaN); RSQRT is ``1 / sqrt(x)`` (two correctly
rounded steps, as the CPU kernel: not the ``rsqrt`` intrinsic). Where the GPU may differ
in the last bits: EXP, LOG, SIN and COS use CUDA's ``expf``/``logf``/``sinf``/``cosf``
(within 1-4 ulp of glibc's), far inside the 1e-5 relative tolerance; ABS NEG SQUARE
FLOOR CEIL SQRT RSQRT are correctly rounded IEEE operations on both.

How: one launch per node of ``elementwise_unary`` (``cuda/elementwise.cu``,
``ElementwiseUnaryCuda``): load the storage dtype (float32 or float16), compute in
float32, store; its numpy twin in host emulation.

Versions claimed: 1 for each (float32; the later versions of ABS EXP LOG SQRT RSQRT are
int8/int16/int32; int32/int64 NEG v1 nodes are refused by type).
"""

from __future__ import annotations

from backends.gpu.cuda.elementwise import ElementwiseUnaryCuda
from backends.gpu.ops.base import FloatOp, inputs_reason
from schema.enums import BuiltinOperator, builtin_operator_name

B = BuiltinOperator


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
