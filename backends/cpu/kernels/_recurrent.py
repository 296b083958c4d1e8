"""Pieces the recurrent kernels share (RNN, SVDF, the LSTM family).

- :class:`Dense`: one weight matrix of a cell, float32 or int8 (hybrid), adding its
  product with a batch of rows to an accumulator as TFLite's
  ``MatrixBatchVectorMultiplyAccumulate`` does (float: ``out += rows @ W.T``; hybrid:
  rows quantized on the fly, once for all the matrices that read them (:func:`operand`),
  ``_hybrid.HybridMatrix``).
- :func:`state_tensor`: the state input of a node, which must be a variable tensor
  (LiteRT's ``GetVariableInput``), checked with a clear message.
- :func:`weights_kind`: "float" or "hybrid" from the weights' type.
- :func:`time_major_view`: a sequence as ``[time, batch, ...]``.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernels._hybrid import HybridMatrix, quantize_rows
from backends.cpu.quantization import legacy_params
from schema.enums import TensorType


def operand(rows: np.ndarray, hybrid: bool, asymmetric: bool = False):
    """``rows`` (float32 ``[batch, depth]``) ready for :meth:`Dense.add`: the rows
    themselves for float weights; for int8 weights the rows quantized on the fly
    (``quantize_rows``), or None when they are all zero (TFLite skips the product then:
    ``IsZeroVector``). One operand serves every matrix that multiplies the same rows."""
    if not hybrid:
        return rows
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    return quantize_rows(rows, asymmetric) if rows.any() else None


class Dense:
    """A cell's weights ``[rows, depth]`` (float32, or int8 with a per-tensor scale); or
    several such matrices of the same depth stacked row-wise (one product for all the
    gates that read the same rows; each keeps its own scale, applied per row as TFLite's
    ``scaling_factor * weights_scale``, the same float32 product)."""

    def __init__(self, tensor, asymmetric: bool = False) -> None:
        self.tensors = list(tensor) if isinstance(tensor, (list, tuple)) else [tensor]
        self.hybrid = self.tensors[0].type == TensorType.INT8
        self.asymmetric = asymmetric
        self.rows = sum(int(t.shape[0]) for t in self.tensors)
        self._matrix = None

    def _prepared(self):
        if self._matrix is None or not all(t.is_constant for t in self.tensors):
            data = np.concatenate([t.data.reshape(int(t.shape[0]), -1) for t in self.tensors])
            if self.hybrid:
                scales = [legacy_params(t)[0] for t in self.tensors]
                if len(self.tensors) == 1:
                    self._matrix = HybridMatrix(data, scales[0])
                else:
                    per_row = np.concatenate([np.full(int(t.shape[0]), s, np.float32) for t, s in zip(self.tensors, scales)])
                    self._matrix = HybridMatrix(data, 1.0, per_row)
            else:
                self._matrix = np.ascontiguousarray(data.T, dtype=np.float32)
        return self._matrix

    def add(self, out: np.ndarray, rows_operand) -> None:
        """``out[b, r] += sum_d W[r, d] * rows[b, d]`` (float32 ``out`` of ``[batch, rows]``)
        for an :func:`operand` of the rows."""
        if rows_operand is None:
            return
        matrix = self._prepared()
        if self.hybrid:
            out += matrix.term(*rows_operand)
        else:
            out += rows_operand @ matrix

    def accumulate(self, out: np.ndarray, rows: np.ndarray) -> None:
        """:meth:`add` for rows used by this matrix alone."""
        self.add(out, operand(rows, self.hybrid, self.asymmetric))


def time_major_view(x: np.ndarray, time_major: bool) -> np.ndarray:
    """A sequence tensor's data as ``[time, batch, ...]`` (a view): batch-major data
    swapped, time-major data as it is."""
    return x if time_major else np.swapaxes(x, 0, 1)


def weights_kind(kernel, weights) -> str:
    """"float" (float32 weights) or "hybrid" (int8 weights on float32 activations)."""
    if weights is None:
        raise kernel.unsupported("the weights are missing")
    if weights.type == TensorType.FLOAT32:
        return "float"
    if weights.type == TensorType.INT8:
        if legacy_params(weights)[0] == 0.0:
            raise kernel.unsupported(f"int8 weights {weights.name!r} need one (per-tensor) scale")
        return "hybrid"
    raise kernel.unsupported(
        f"weights {weights.name!r} have type {weights.type_name}; float32 (float) or int8 (hybrid) are supported"
    )


def state_tensor(kernel, index: int, shape=None, role: str = "state", variable: bool = True):
    """The node's input ``index``, a variable tensor holding state across invokes (with
    ``variable=False``, as LiteRT's RNN allows, any tensor the op may write: not a constant)."""
    tensor = kernel.inputs[index] if index < len(kernel.inputs) else None
    if tensor is None:
        raise kernel.unsupported(f"the {role} (input {index}) is missing")
    if tensor.is_constant:
        raise kernel.unsupported(f"the {role} (input {index}, {tensor.name!r}) is a constant; the op writes its state there")
    if variable and not tensor.is_variable:
        raise kernel.unsupported(
            f"the {role} (input {index}, {tensor.name!r}) must be a variable tensor (is_variable): "
            "the op keeps its state there across invokes"
        )
    if shape is not None and tuple(tensor.shape) != tuple(shape):
        raise kernel.unsupported(f"the {role} {tensor.name!r} has shape {list(tensor.shape)}, expected {list(shape)}")
    return tensor
