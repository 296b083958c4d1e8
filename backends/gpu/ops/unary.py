"""TODO unary
"""

from __future__ import annotations

from backends.gpu.cuda.elementwise import ElementwiseUnaryCuda
from backends.gpu.ops.elementwise import FloatOp, inputs_reason
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
