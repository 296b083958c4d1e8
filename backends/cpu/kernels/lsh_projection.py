"""LSH_PROJECTION: locality-sensitive hashing of an input into bits.

TFLite (``kernels/lsh_projection.cc``). Inputs: ``hash`` (float32 ``[num_hash, num_bits]``,
``num_bits <= 32``: one seed per output bit), ``input`` (rank >= 1, any fixed-size type: its
rows along dimension 0 are hashed as bytes) and an optional float32 ``weight`` (one per
row, else 1). Each bit is the sign of a weighted sum::

    bit(seed) = sum_i weight[i] * double(int64(Fingerprint64(seed's 4 bytes + row i's bytes)))) > 0

summed in double, row by row. DENSE outputs the bits (int32 ``[num_hash * num_bits]``);
SPARSE packs each hash function's bits into one int32, first bit highest, plus
``k << num_bits`` for the ``k``-th function (int32 arithmetic that wraps as C's does: with
``num_bits`` 32 the shift is by 0 on x86, as there).

The hash is FarmHash's ``Fingerprint64`` (``_farmhash``), bit for bit.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._farmhash import fingerprint64
from backends.cpu.kernels.bitcast import FIXED_SIZE_TYPES
from schema.enums import BuiltinOperator, LSHProjectionType, TensorType

T = TensorType


def wrap_int32(values: np.ndarray) -> np.ndarray:
    """int64 values reduced to int32 as two's complement arithmetic does."""
    return ((values.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


@register(BuiltinOperator.LSH_PROJECTION, 1, 1)  # v1: the only version
class LshProjection(CpuKernel):
    """LSH_PROJECTION v1: SPARSE or DENSE sign bits of FarmHash projections."""

    def prepare(self) -> None:
        self.require_num_inputs(2, 3)
        seeds, x = self.inputs[0], self.inputs[1]
        weight = self.inputs[2] if len(self.inputs) == 3 else None
        self.require_types(seeds, T.FLOAT32, role="hash input")
        if len(seeds.shape) != 2 or seeds.shape[1] > 32:
            raise self.unsupported(
                f"the hash {seeds.name!r} must be [num_hash, num_bits] with num_bits <= 32, it has shape {list(seeds.shape)}"
            )
        if x.type == T.STRING:
            raise self.unsupported(f"the input {x.name!r} is STRING; this kernel hashes rows of fixed-size values")
        self.require_types(x, *FIXED_SIZE_TYPES)
        if len(x.shape) < 1 or x.shape[0] < 1:
            raise self.unsupported(f"the input {x.name!r} must have at least one row, it has shape {list(x.shape)}")
        if weight is not None:
            self.require_types(weight, T.FLOAT32, role="weight input")
            if list(weight.shape) != [x.shape[0]]:
                raise self.unsupported(
                    f"the weight {weight.name!r} has shape {list(weight.shape)}; it must be [{x.shape[0]}] (one per input row)"
                )
        kind = int(self.params.type) if self.params is not None else 0
        if kind not in (LSHProjectionType.SPARSE, LSHProjectionType.DENSE):
            raise self.unsupported(f"the projection type is {kind}; it must be SPARSE (1) or DENSE (2)")
        self.sparse = kind == LSHProjectionType.SPARSE
        self.require_types(self.outputs[0], T.INT32, role="output")
        num_hash, num_bits = seeds.shape
        self.outputs[0].resize([num_hash if self.sparse else num_hash * num_bits])

    def invoke(self) -> None:
        seeds, x = self.inputs[0].data, self.inputs[1].data
        weight = self.inputs[2].data if len(self.inputs) == 3 and self.inputs[2] is not None else None
        num_hash, num_bits = seeds.shape
        bits = self.sign_bits(seeds.reshape(-1), x, weight).reshape(num_hash, num_bits)
        out = self.outputs[0].data
        if not self.sparse:
            out[...] = bits.reshape(-1)
            return
        packed = (bits.astype(np.int64) << np.arange(num_bits - 1, -1, -1, dtype=np.int64)).sum(axis=1)
        offsets = np.arange(num_hash, dtype=np.int64) * int(wrap_int32(np.array(1 << (num_bits & 31))))
        out[...] = wrap_int32(wrap_int32(packed).astype(np.int64) + wrap_int32(offsets))

    @staticmethod
    def sign_bits(seeds: np.ndarray, x: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        """For each float32 seed, 1 where its running double sum over the rows is > 0."""
        rows = np.ascontiguousarray(x).reshape(x.shape[0], -1).view(np.uint8)
        seed_bytes = np.ascontiguousarray(seeds, np.float32).view(np.uint8).reshape(-1, 4)
        keys = np.concatenate(
            [np.repeat(seed_bytes, rows.shape[0], axis=0), np.tile(rows, (seeds.size, 1))], axis=1
        )
        values = fingerprint64(keys).view(np.int64).astype(np.float64).reshape(seeds.size, rows.shape[0])
        if weight is not None:
            values = weight.astype(np.float64) * values
        scores = np.add.accumulate(values, axis=1)[:, -1]  # in row order, as TFLite adds them
        return (scores > 0).astype(np.int32)
