"""FULLY_CONNECTED v8: weights stored sparse (a constant in TFLite's sparse format, as DENSIFY
reads it), expanded once at prepare into the dense ``[units, depth]`` matrix; then the
dense kernels run (``fully_connected.py`` for float32, ``fully_connected_quantized.py`` for
integer and hybrid weights).

TFLite's kernels read the sparse weights as they are stored: its reference kernel takes
float32 weights in every format (dense or CSR levels, blocks), its int8 kernel only 1x16
blocks. The products are the same, zeros skipped or not: float32 outputs within float
rounding of LiteRT's (the sums in another order), int8 outputs bit for bit (exact integer
sums). Formats LiteRT refuses for int8 weights run here too, by the same arithmetic.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import register
from backends.cpu.kernels.densify import dense_positions
from backends.cpu.kernels.fully_connected import FullyConnected
from backends.cpu.kernels.fully_connected_quantized import FullyConnectedQuantized
from delegate_sdk.tensor import Allocation, RuntimeTensor
from schema.enums import BuiltinOperator, TensorType


def densified(kernel, weights: RuntimeTensor) -> RuntimeTensor:
    """``weights`` as a dense constant (the tensor itself when it is not sparse)."""
    if weights.sparsity is None:
        return weights
    if not weights.is_constant:
        raise kernel.unsupported(f"sparse weights {weights.name!r} must be a constant")
    try:
        positions = dense_positions(weights.sparsity, weights.shape)
    except ValueError as error:
        raise kernel.unsupported(f"sparse weights {weights.name!r}: {error}") from None
    stored = np.asarray(weights.data).reshape(-1)
    if positions.size > stored.size:
        raise kernel.unsupported(
            f"the sparsity of {weights.name!r} describes {positions.size} values but the buffer holds {stored.size}"
        )
    dense = np.zeros(weights.shape, weights.dtype)
    dense.reshape(-1)[positions] = stored[: positions.size]
    return RuntimeTensor(
        weights.index, weights.name, weights.type, weights.shape, quantization=weights.quantization, data=dense,
        allocation=Allocation.CONSTANT,
    )


def _weights(context, node):
    return context.tensors[node.inputs[1]] if len(node.inputs) > 1 and node.inputs[1] >= 0 else None


@register(BuiltinOperator.FULLY_CONNECTED, 8, 8)
class SparseFullyConnected(FullyConnected):
    """FULLY_CONNECTED v8 on float32 (sparse or dense weights)."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        weights = _weights(context, node)
        return weights is not None and weights.type == TensorType.FLOAT32

    def prepare(self) -> None:
        if len(self.inputs) > 1 and self.inputs[1] is not None:
            self.inputs[1] = densified(self, self.inputs[1])
        super().prepare()


@register(BuiltinOperator.FULLY_CONNECTED, 8, 8)
class SparseFullyConnectedQuantized(FullyConnectedQuantized):
    """FULLY_CONNECTED v8 on integer and hybrid weights (sparse or dense)."""

    def prepare(self) -> None:
        if len(self.inputs) > 1 and self.inputs[1] is not None:
            self.inputs[1] = densified(self, self.inputs[1])
        super().prepare()
