"""EMBEDDING_LOOKUP_SPARSE: weighted sums of table rows, one per row of a sparse tensor.

TFLite (``kernels/embedding_lookup_sparse.cc``). The inputs are a sparse tensor of ids
(``ids``: int32 values; ``indices``: int32 ``[n, rank]`` coordinates; ``dense_shape``: int32
``[rank]``), float32 ``weights`` (one per id) and a float32 table of rank 2 or more. Output
``dense_shape[:-1] + table.shape[1:]`` (float32): the bucket of id ``i`` is its coordinates
without the last one, and each bucket holds ``sum(table[id] * weight)``, then, with the
MEAN combiner, divided by the sum of the weights, with SQRTN by the square root of the sum
of their squares (SUM: not divided). Buckets without ids are zero.

TFLite walks the ids in order and closes a bucket when the next id falls in another one
(``FinalizeAggregation``); the ids are meant to be sorted by bucket. This kernel keeps that
walk, so unsorted ids give TFLite's numbers too: a bucket met twice gets its second run
added to its already divided first one, and is divided again by the second run's weights.
Every product and sum is float32 in TFLite's order. An id outside the table, or a
coordinate outside ``dense_shape``, is an error (as in TFLite).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.gather import check_indices
from backends.cpu.kernels.reshape import inputs_pending
from schema.enums import BuiltinOperator, CombinerType, TensorType

T = TensorType


@register(BuiltinOperator.EMBEDDING_LOOKUP_SPARSE, 1, 1)  # v1: float32 (the only version)
class EmbeddingLookupSparse(CpuKernel):
    """EMBEDDING_LOOKUP_SPARSE v1: combined weighted embeddings of each sparse row."""

    def prepare(self) -> None:
        self.require_num_inputs(5)
        if inputs_pending(self):
            return
        ids, indices, dense_shape, weights, table = self.inputs
        for tensor, rank, role in ((ids, 1, "ids"), (indices, 2, "indices"), (dense_shape, 1, "dense_shape")):
            self.require_types(tensor, T.INT32, role=f"{role} input")
            if len(tensor.shape) != rank:
                raise self.unsupported(f"the {role} {tensor.name!r} must have rank {rank}, it has shape {list(tensor.shape)}")
        self.require_types(weights, T.FLOAT32, role="weights input")
        if len(weights.shape) != 1:
            raise self.unsupported(f"the weights {weights.name!r} must be a vector, they have shape {list(weights.shape)}")
        if not indices.shape[0] == ids.shape[0] == weights.shape[0]:
            raise self.unsupported(
                f"ids {list(ids.shape)}, indices {list(indices.shape)} and weights {list(weights.shape)} must have "
                "as many entries each"
            )
        self.require_types(table, T.FLOAT32, role="table")
        if len(table.shape) < 2:
            raise self.unsupported(f"the table {table.name!r} must have rank 2 or more, it has shape {list(table.shape)}")
        if dense_shape.shape[0] != indices.shape[1]:
            raise self.unsupported(
                f"dense_shape {dense_shape.name!r} has {dense_shape.shape[0]} entries for indices of rank "
                f"{indices.shape[1]}; they must be equal"
            )
        self.require_types(self.outputs[0], T.FLOAT32, role="output")
        if int(self.params.combiner) not in CombinerType._value2member_map_:
            raise self.unsupported(f"unknown combiner {int(self.params.combiner)} (SUM 0, MEAN 1, SQRTN 2)")
        self.combiner = CombinerType(self.params.combiner)
        self.outputs[0].set_dynamic()  # its shape is dense_shape's values

    def invoke(self) -> None:
        ids, indices, dense_shape, weights, table = (t.data for t in self.inputs)
        lookup_rank = indices.shape[1]
        buckets_shape = [int(d) for d in dense_shape[: lookup_rank - 1]]
        if any(d < 0 for d in buckets_shape):
            raise ValueError(f"{self.op_name}: dense_shape {dense_shape.tolist()} has a negative dimension")
        embedding_shape = table.shape[1:]
        check_indices(self.op_name, ids, table.shape[0], f"of the table's {table.shape[0]} rows")
        for k, size in enumerate(buckets_shape):
            check_indices(self.op_name, indices[:, k], size, f"(coordinate {k} of dense_shape {dense_shape.tolist()})")
        buckets = np.ravel_multi_index(indices[:, : lookup_rank - 1].T, buckets_shape) if buckets_shape else np.zeros(
            ids.shape[0], np.int64)
        out = np.zeros((int(np.prod(buckets_shape, dtype=np.int64)), int(np.prod(embedding_shape, dtype=np.int64))),
                       np.float32)
        products = table.reshape(table.shape[0], -1)[ids] * weights[:, None]
        # Runs of consecutive ids in the same bucket: TFLite closes a bucket where the run ends.
        starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]]) if ids.size else np.zeros(0, np.int64)
        for start, end in zip(starts, np.r_[starts[1:], ids.size]):
            row = buckets[start]
            out[row] = np.add.accumulate(np.concatenate([out[row][None], products[start:end]]), axis=0)[-1]
            divisor = self.divisor(weights[start:end])
            if divisor is not None:
                with np.errstate(divide="ignore", invalid="ignore"):  # weights summing to 0: inf or NaN, as in C++
                    out[row] /= divisor
        self.outputs[0].set_data(out.reshape(*buckets_shape, *embedding_shape))

    def divisor(self, weights: np.ndarray) -> np.float32 | None:
        """What TFLite divides a closed bucket by (None: SUM), its sums float32 in order."""
        if self.combiner == CombinerType.SUM:
            return None
        if self.combiner == CombinerType.MEAN:
            return np.add.accumulate(weights, dtype=np.float32)[-1]
        return np.sqrt(np.add.accumulate(weights * weights, dtype=np.float32)[-1])
