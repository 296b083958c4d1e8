"""HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND, HASHTABLE_SIZE: TFLite's static hash tables
(what ``tf.lookup.StaticHashTable`` converts to).

As in TFLite (``kernels/hashtable*.cc``, ``experimental/resource/static_hashtable.cc``):

- HASHTABLE writes the resource id ``table_id`` (its option) into a RESOURCE tensor of
  shape [1], and creates the table, at invoke, if no table has that id yet. A table maps
  STRING keys to INT64 values or INT64 keys to STRING values, nothing else.
- HASHTABLE_IMPORT fills the table from a key and a value tensor of the same shape, once:
  later imports do nothing (the converter leaves the initializer in the graph). A key given
  twice keeps its first value.
- HASHTABLE_FIND outputs, for each key (any shape), its value, or the first element of the
  default value tensor. Finding in a table not imported yet is an error.
- HASHTABLE_SIZE outputs the number of keys (int64, shape [1]), 0 before the import.

Tables live in ``context.resources`` under ``("hashtable", table_id)``, shared by the
interpreter's subgraphs and kept across invokes, like resource variables. TFLite keeps
both kinds of resource in one map by id: a table whose id a resource variable already
has is an error here (TFLite's lookups find no table there).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.variables import variable_key
from schema.enums import BuiltinOperator, TensorType, tensor_type_name

T = TensorType

#: The (key type, value type) pairs TFLite's static hash table holds.
TABLE_TYPES = ((T.STRING, T.INT64), (T.INT64, T.STRING))


def table_key(table_id: int) -> tuple[str, int]:
    return ("hashtable", int(table_id))


@dataclass
class StaticHashtable:
    """One table: its types, its entries once imported."""

    key_type: int
    value_type: int
    entries: dict = field(default_factory=dict)
    imported: bool = False

    def types(self) -> str:
        return f"{tensor_type_name(self.key_type)} -> {tensor_type_name(self.value_type)}"


def _items(values: np.ndarray) -> list:
    """Python keys/values: bytes for STRING, int for INT64."""
    flat = values.reshape(-1)
    return [bytes(v) for v in flat] if flat.dtype == object else flat.tolist()


def _pair_problem(key_type: int, value_type: int) -> str | None:
    if (key_type, value_type) in TABLE_TYPES:
        return None
    return (f"keys {tensor_type_name(key_type)} and values {tensor_type_name(value_type)}: a hash table maps "
            "STRING to INT64 or INT64 to STRING")


class _UsesTable(CpuKernel):
    foldable = False

    def require_handle(self) -> None:
        """Input 0 holds one table id (RESOURCE)."""
        handle = self.inputs[0]
        self.require_types(handle, T.RESOURCE, role="resource input")
        if handle.num_elements != 1:
            raise self.unsupported(f"the resource input {handle.name!r} has shape {list(handle.shape)}; it must hold one id")

    def table(self) -> StaticHashtable:
        table_id = int(self.inputs[0].data.reshape(-1)[0])
        table = self.context.resources.get(table_key(table_id))
        if table is None:
            raise ValueError(f"{self.op_name}: no hash table has id {table_id} (a HASHTABLE node creates it)")
        return table

    def check_types(self, table: StaticHashtable, keys, values) -> None:
        if (keys.type, values.type) != (table.key_type, table.value_type):
            raise ValueError(
                f"{self.op_name}: the table is {table.types()}, the node gives {keys.type_name} -> {values.type_name}"
            )


# v1: the only version
@register(BuiltinOperator.HASHTABLE, 1, 1)
class Hashtable(_UsesTable):
    """HASHTABLE v1: the resource id ``table_id``, and the table (created at invoke)."""

    def prepare(self) -> None:
        if self.inputs or len(self.outputs) != 1:
            raise self.unsupported(f"takes no inputs and one output, has {len(self.inputs)} and {len(self.outputs)}")
        p = self.params
        problem = _pair_problem(p.key_dtype, p.value_dtype)
        if problem is not None:
            raise self.unsupported(f"the options give {problem}")
        self.require_types(self.outputs[0], T.RESOURCE, role="output")
        self.outputs[0].resize([1])

    def invoke(self) -> None:
        p = self.params
        self.outputs[0].data[0] = p.table_id
        if variable_key(p.table_id) in self.context.resources:
            raise ValueError(f"{self.op_name}: resource id {p.table_id} is a resource variable's, not a hash table's")
        self.context.resources.setdefault(table_key(p.table_id), StaticHashtable(p.key_dtype, p.value_dtype))


# v1: the only version
@register(BuiltinOperator.HASHTABLE_IMPORT, 1, 1)
class HashtableImport(_UsesTable):
    """HASHTABLE_IMPORT v1: fills the table once (a repeated key keeps its first value)."""

    def prepare(self) -> None:
        if len(self.inputs) != 3 or self.outputs:
            raise self.unsupported(f"takes three inputs and no output, has {len(self.inputs)} and {len(self.outputs)}")
        self.require_handle()
        keys, values = self.inputs[1], self.inputs[2]
        problem = _pair_problem(keys.type, values.type)
        if problem is not None:
            raise self.unsupported(f"the node gives {problem}")
        if keys.shape != values.shape:
            raise self.unsupported(f"keys {list(keys.shape)} and values {list(values.shape)} must have the same shape")

    def invoke(self) -> None:
        table = self.table()
        keys, values = self.inputs[1], self.inputs[2]
        self.check_types(table, keys, values)
        if table.imported:
            return  # TFLite imports once
        for key, value in zip(_items(keys.data), _items(values.data)):
            table.entries.setdefault(key, value)
        table.imported = True


# v1: the only version
@register(BuiltinOperator.HASHTABLE_FIND, 1, 1)
class HashtableFind(_UsesTable):
    """HASHTABLE_FIND v1: ``table.get(key, default[0])`` for each key."""

    def prepare(self) -> None:
        self.require_num_inputs(3)
        self.require_handle()
        keys, default, out = self.inputs[1], self.inputs[2], self.outputs[0]
        self.require_types(out, default.type, role="output (the default value's type)")
        problem = _pair_problem(keys.type, out.type)
        if problem is not None:
            raise self.unsupported(f"the node gives {problem}")
        if default.num_elements == 0:
            raise self.unsupported(f"the default value {default.name!r} is empty; its first element is used")
        out.resize(keys.shape)

    def invoke(self) -> None:
        table = self.table()
        keys, default, out = self.inputs[1], self.inputs[2], self.outputs[0]
        self.check_types(table, keys, out)
        if not table.imported:
            raise ValueError(f"{self.op_name}: the hash table is empty: HASHTABLE_IMPORT must run before it")
        fallback = _items(default.data)[0]
        found = [table.entries.get(key, fallback) for key in _items(keys.data)]
        out.data.reshape(-1)[:] = found


# v1: the only version
@register(BuiltinOperator.HASHTABLE_SIZE, 1, 1)
class HashtableSize(_UsesTable):
    """HASHTABLE_SIZE v1: the number of keys (int64 [1])."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        self.require_handle()
        self.require_types(self.outputs[0], T.INT64, role="output")
        self.outputs[0].resize([1])

    def invoke(self) -> None:
        self.outputs[0].data[0] = len(self.table().entries)
