"""REVERSE_SEQUENCE: reverse the first ``seq_lengths[b]`` elements of each batch entry.

TFLite (``kernels/reverse_sequence.cc``, ``reference_ops::ReverseSequence``): inputs
(x, seq_lengths), options ``seq_dim`` and ``batch_dim`` (distinct, both in [0, rank));
``seq_lengths`` is 1-D int32 or int64 with one length per entry of ``batch_dim``, each in
[0, x.shape[seq_dim]]. For entry b the slices 0..len-1 along ``seq_dim`` are reversed,
the rest copied. Version 1 (the only one): float32, uint8, int16, int32, int64 (TFLite
refuses int8 and bool).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import INDEX_TYPES, inputs_pending
from schema.enums import BuiltinOperator, TensorType

T = TensorType


@register(BuiltinOperator.REVERSE_SEQUENCE, 1, 1)  # v1: float32, uint8, int16, int32, int64
class ReverseSequence(CpuKernel):
    """REVERSE_SEQUENCE v1."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        if inputs_pending(self):
            return
        x, lengths = self.inputs
        self.require_types(x, T.FLOAT32, T.UINT8, T.INT16, T.INT32, T.INT64)
        self.require_types(lengths, *INDEX_TYPES, role="seq_lengths")
        self.require_types(self.outputs[0], x.type, role="output")
        rank = len(x.shape)
        seq_dim, batch_dim = (int(getattr(self.params, name, 0)) for name in ("seq_dim", "batch_dim"))
        if not (0 <= seq_dim < rank and 0 <= batch_dim < rank and seq_dim != batch_dim):
            raise self.unsupported(
                f"seq_dim {seq_dim} and batch_dim {batch_dim} must be two different axes of the rank-{rank} input"
            )
        if lengths.shape != (x.shape[batch_dim],):
            raise self.unsupported(
                f"seq_lengths {lengths.name!r} has shape {list(lengths.shape)}; it needs one length per entry "
                f"of batch axis {batch_dim} ({x.shape[batch_dim]})"
            )
        self.seq_dim, self.batch_dim = seq_dim, batch_dim
        self.outputs[0].resize(x.shape)

    def invoke(self) -> None:
        x, lengths = self.inputs[0].data, self.inputs[1].data.astype(np.int64)
        size = x.shape[self.seq_dim]
        bad = (lengths < 0) | (lengths > size)
        if bad.any():
            raise ValueError(
                f"{self.op_name}: seq_lengths {lengths.tolist()} must each be in [0, {size}] "
                f"(the size of seq_dim {self.seq_dim})"
            )
        # source position along seq_dim, per (batch entry, position): reversed below the length
        position = np.arange(size)
        source = np.where(position < lengths[:, None], lengths[:, None] - 1 - position, position)
        index_shape = [1] * x.ndim
        index_shape[self.batch_dim], index_shape[self.seq_dim] = len(lengths), size
        if self.batch_dim > self.seq_dim:
            source = source.T
        index = np.broadcast_to(source.reshape(index_shape), x.shape)
        self.outputs[0].data[...] = np.take_along_axis(x, index, axis=self.seq_dim)
