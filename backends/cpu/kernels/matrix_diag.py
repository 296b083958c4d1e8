"""MATRIX_DIAG and MATRIX_SET_DIAG: batches of diagonal matrices.

TFLite (``kernels/matrix_diag.cc``, ``kernels/matrix_set_diag.cc``):

- MATRIX_DIAG: input [..., n] -> output [..., n, n] with the input on the main diagonal
  and 0 elsewhere (the stored value 0, also for a quantized tensor);
- MATRIX_SET_DIAG: input [..., r, c] and diagonal [..., min(r, c)] -> the input with its
  main diagonal replaced.

Version 1 (the only one of each): float32, int64, int32, int16, int8, uint8 (TFLite
treats every other type as float32; refused here). TFLite does not check the diagonal's
size and reads it flat: here it must hold ``batch * min(r, c)`` values.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator

DIAG_TYPES = (T.FLOAT32, T.INT64, T.INT32, T.INT16, T.INT8, T.UINT8)


def main_diagonal(matrices: np.ndarray) -> np.ndarray:
    """A writable view of the main diagonals of ``[..., r, c]``: shape [..., min(r, c)]."""
    rows, columns = matrices.shape[-2:]
    count = min(rows, columns)
    strides = (*matrices.strides[:-2], matrices.strides[-2] + matrices.strides[-1])
    return np.lib.stride_tricks.as_strided(matrices, (*matrices.shape[:-2], count), strides, writeable=True)


@register(B.MATRIX_DIAG, 1, 1)  # v1 (the only version)
class MatrixDiag(CpuKernel):
    """MATRIX_DIAG v1."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x = self.inputs[0]
        self.require_types(x, *DIAG_TYPES)
        self.require_types(self.outputs[0], x.type, role="output")
        if len(x.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        self.outputs[0].resize([*x.shape, x.shape[-1]])

    def invoke(self) -> None:
        out = self.outputs[0].data
        out[...] = 0
        main_diagonal(out)[...] = self.inputs[0].data


@register(B.MATRIX_SET_DIAG, 1, 1)  # v1 (the only version)
class MatrixSetDiag(CpuKernel):
    """MATRIX_SET_DIAG v1."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, diagonal = self.inputs
        self.require_types(x, *DIAG_TYPES)
        self.require_types(diagonal, x.type, role="diagonal")
        self.require_types(self.outputs[0], x.type, role="output")
        if len(x.shape) < 2:
            raise self.unsupported(f"the input must have at least two dimensions, it has shape {list(x.shape)}")
        self.diagonal_shape = (*x.shape[:-2], min(x.shape[-2:]))
        if diagonal.num_elements != int(np.prod(self.diagonal_shape, dtype=np.int64)):
            raise self.unsupported(
                f"the diagonal {diagonal.name!r} has shape {list(diagonal.shape)}; an input of shape "
                f"{list(x.shape)} needs {list(self.diagonal_shape)}"
            )
        self.outputs[0].resize(x.shape)

    def invoke(self) -> None:
        out = self.outputs[0].data
        out[...] = self.inputs[0].data
        main_diagonal(out)[...] = self.inputs[1].data.reshape(self.diagonal_shape)
