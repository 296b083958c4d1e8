"""EMBEDDING_LOOKUP: rows of a table picked by id, copied or dequantized.

TFLite (``kernels/embedding_lookup.cc``): ``output[i] = table[ids[i]]`` for int32 ids
(a vector) and a table of rank 2 or more; an id outside ``[0, rows)`` is an error at invoke.

- When the output has the table's type the rows are copied unchanged (any type: float32,
  float16, the integer types, bool...).
- A *hybrid* lookup, an int8 or uint8 table with a float32 or float16 output, dequantizes:
  ``output = value * scale`` (a float32 product, rounded to float16 for a float16 output),
  with one scale for the table or one per row (per-channel, ``quantized_dimension`` 0,
  version 4). The zero point is not applied: TFLite requires the first one to be 0 and
  ignores the others. TFLite reads a uint8 table's bytes as int8 (its kernel takes
  ``int8_t`` data whatever the table's type), and so does this kernel: byte 200 is -56.
  A table without quantization has scale 0 (all outputs 0), as in TFLite.

Versions: 1 (float32, uint8/int8 copies and hybrid), 2 and 3 (the same kernel; TOCO-era
converters stamped them, today's rules give 1 or 4), 4 (per-channel tables, and int4 tables),
5 (int2 tables). An int4 or int2 table (held one value an element here) is dequantized as an
int8 one is; LiteRT keeps it packed and reads whole bytes, right only for rows of whole
bytes (tests/cpu/test_embedding_lookup_sub_byte.py shows where it is not).

Refused with a clear error where LiteRT does something else than the above: STRING tables
(LiteRT crashes on them), an output type that is neither the table's nor a hybrid one
(LiteRT copies raw bytes into it, or reads an int16/float16 table as int8 bytes).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.bitcast import FIXED_SIZE_TYPES
from backends.cpu.kernels.gather import check_indices
from schema.enums import BuiltinOperator, TensorType

T = TensorType

#: Table types a hybrid lookup dequantizes, and the output types it writes.
HYBRID_TABLE_TYPES = (T.INT8, T.UINT8, T.INT4, T.INT2)
#: Tables that are only ever dequantized (never copied: LiteRT copies their packed bytes).
SUB_BYTE_TABLE_TYPES = (T.INT4, T.INT2)
HYBRID_OUTPUT_TYPES = (T.FLOAT32, T.FLOAT16)


# v1: float32, uint8/int8 (copied or hybrid); v2, v3: the same; v4: per-channel tables, int4
# tables; v5: int2 tables.
@register(BuiltinOperator.EMBEDDING_LOOKUP, 1, 5)
class EmbeddingLookup(CpuKernel):
    """EMBEDDING_LOOKUP v1-v5: ``output[i] = table[ids[i]]``, dequantized when hybrid."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        ids, table = self.inputs
        out = self.outputs[0]
        self.require_types(ids, T.INT32, role="ids input")
        if len(ids.shape) != 1:
            raise self.unsupported(f"the ids {ids.name!r} must be a vector, they have shape {list(ids.shape)}")
        if table.type == T.STRING:
            raise self.unsupported(f"the table {table.name!r} is STRING; TFLite's kernel copies only fixed-size values")
        self.require_types(table, *FIXED_SIZE_TYPES, *SUB_BYTE_TABLE_TYPES, role="table")
        if len(table.shape) < 2:
            raise self.unsupported(f"the table {table.name!r} must have rank 2 or more, it has shape {list(table.shape)}")
        self.hybrid = table.type in HYBRID_TABLE_TYPES and out.type in HYBRID_OUTPUT_TYPES
        if table.type in SUB_BYTE_TABLE_TYPES and not self.hybrid:
            raise self.unsupported(
                f"the {table.type_name} table {table.name!r} must be dequantized: the output must be float32 or "
                f"float16, not {out.type_name}"
            )
        if not self.hybrid and out.type != table.type:
            raise self.unsupported(
                f"output {out.name!r} is {out.type_name} and the table {table.type_name}: the output must have the "
                "table's type (a copy), or be float32 or float16 for an int8 or uint8 table (dequantized)"
            )
        q = table.quantization
        if not self.hybrid and q is not None and q.scale.size > 1:
            raise self.unsupported(
                f"the table {table.name!r} has per-channel scales; TFLite dequantizes those (to a float32 or float16 "
                f"output) but does not copy them to {out.type_name}"
            )
        self.scales = self.table_scales(table) if self.hybrid else None
        out.resize([ids.shape[0], *table.shape[1:]])

    def table_scales(self, table) -> np.ndarray:
        """The float32 scale of each row (one entry: the whole table's), TFLite's checks included."""
        q = table.quantization
        if q is None or not q.is_quantized:
            return np.zeros(1, np.float32)  # TFLite reads the missing scale as 0
        if int(q.zero_point[0]) != 0:
            raise self.unsupported(
                f"the table {table.name!r} has zero point {int(q.zero_point[0])}; a hybrid lookup needs 0 (symmetric "
                "quantization)"
            )
        if q.scale.size > 1:
            rows = table.shape[0]
            if q.quantized_dimension != 0 or q.scale.size != rows:
                raise self.unsupported(
                    f"the table {table.name!r} has {q.scale.size} scales along dimension {q.quantized_dimension}; "
                    f"per-channel scales must be one per row ({rows}) along dimension 0"
                )
            return np.asarray(q.scale, np.float32)
        return np.asarray(q.scale[:1], np.float32)

    def invoke(self) -> None:
        ids, table, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        check_indices(self.op_name, ids, table.shape[0], f"of the table's {table.shape[0]} rows")
        if not self.hybrid:
            np.take(table, ids, axis=0, out=out)
            return
        rows = table[ids].view(np.int8).astype(np.float32)  # uint8 bytes read as int8, as TFLite does (int4/int2: values)
        scales = self.scales if self.scales.size == 1 else self.scales[ids]
        out[...] = rows * scales.reshape(-1, *([1] * (rows.ndim - 1)))
