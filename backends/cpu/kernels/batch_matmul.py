"""BATCH_MATMUL on float32: a matrix product over the last two axes, batched over the rest.

``out[..., i, j] = sum_k x'[..., i, k] * y'[..., k, j]`` where ``x' = x`` transposed in
its last two axes when ``adj_x`` (likewise ``y'`` with ``adj_y``). Inputs have rank
2 to 5; their batch axes (all but the last two) broadcast numpy-style, right-aligned
(TFLite's reference ``BatchMatMul``). One ``numpy.matmul`` (BLAS per matrix) into
the output; a constant right-hand side is transposed once at prepare.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

MIN_RANK, MAX_RANK = 2, 5


# v1: float32. Not here: v2 (int8), v3 (int16), v4 (hybrid with asymmetric_quantize_inputs).
@register(BuiltinOperator.BATCH_MATMUL, 1, 1)
class BatchMatMul(CpuKernel):
    """BATCH_MATMUL version 1 (float32; adj_x/adj_y, broadcast batch axes)."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, y = self.inputs
        self.require_types(x, TensorType.FLOAT32, role="lhs")
        self.require_types(y, TensorType.FLOAT32, role="rhs")
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        for role, tensor in (("lhs", x), ("rhs", y)):
            if not MIN_RANK <= len(tensor.shape) <= MAX_RANK:
                raise self.unsupported(
                    f"{role} must have rank {MIN_RANK} to {MAX_RANK}, got shape {list(tensor.shape)}"
                )
        self.adj_x, self.adj_y = bool(self.params.adj_x), bool(self.params.adj_y)
        rows, depth_x = x.shape[-2:][::-1] if self.adj_x else x.shape[-2:]
        depth_y, cols = y.shape[-2:][::-1] if self.adj_y else y.shape[-2:]
        if depth_x != depth_y:
            raise self.unsupported(
                f"inner dimensions differ: lhs {list(x.shape)} (adj_x={self.adj_x}) and "
                f"rhs {list(y.shape)} (adj_y={self.adj_y})"
            )
        try:
            batch = broadcast_shape(x.shape[:-2], y.shape[:-2])
        except ValueError as error:
            raise self.unsupported(f"batch axes do not broadcast: {error}") from None
        self.outputs[0].resize((*batch, rows, cols))
        self.rhs = self.operand(y.data, self.adj_y) if y.is_constant else None

    @staticmethod
    def operand(value: np.ndarray, adjoint: bool) -> np.ndarray:
        """The matrix as it enters the product (last two axes swapped for an adjoint)."""
        return np.ascontiguousarray(np.swapaxes(value, -1, -2)) if adjoint else value

    def invoke(self) -> None:
        lhs = self.inputs[0].data
        lhs = np.swapaxes(lhs, -1, -2) if self.adj_x else lhs
        rhs = self.rhs
        if rhs is None:
            rhs = np.swapaxes(self.inputs[1].data, -1, -2) if self.adj_y else self.inputs[1].data
        np.matmul(lhs, rhs, out=self.outputs[0].data)
