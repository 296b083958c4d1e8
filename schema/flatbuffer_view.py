"""A lean read view of flatbuffer tables, for loading models fast.

The generated accessors (``schema_generated``) cost several Python calls per field
read (vtable lookup, flag checks, ``encode.Get``): on a 300-node model they made
loading take 30-300 ms. ``TableView`` reads a table's vtable once, with one
``struct.unpack_from``, and each field with one more. It reads the same bytes by the
same rules (a field absent from a short vtable has its default; offsets are little
endian, unsigned, relative to where they are stored), and never reads outside the
buffer: a position before its start or a read past its end raises ``IndexError`` or
``struct.error``, which ``schema.model`` turns into a ``ModelError`` naming the table
and field.

A field is named by its slot: the vtable offset of field ``k`` (the generated code's
``self._tab.Offset(4 + 2 * k)``) is slot ``k``.
"""

from __future__ import annotations

import struct
from functools import lru_cache

import numpy as np

_I32 = struct.Struct("<i").unpack_from
_U32 = struct.Struct("<I").unpack_from
_U16 = struct.Struct("<H").unpack_from

#: struct formats of the scalar types, by the schema's name
INT8, UINT8, BOOL = struct.Struct("<b"), struct.Struct("<B"), struct.Struct("<?")
INT32, UINT32 = struct.Struct("<i"), struct.Struct("<I")
UINT64 = struct.Struct("<Q")


@lru_cache(maxsize=None)
def _vector_format(count: int, code: str) -> struct.Struct:
    return struct.Struct(f"<{count}{code}")


class TableView:
    """One table of a flatbuffer: ``data`` (the whole buffer), ``pos`` (the table's
    start) and ``slots`` (its vtable's field offsets, 0 for an absent field)."""

    __slots__ = ("data", "pos", "slots")

    def __init__(self, data: bytes, pos: int) -> None:
        if pos < 0:
            raise IndexError(f"table position {pos} lies before the buffer")
        vtable = pos - _I32(data, pos)[0]
        if vtable < 0:
            raise IndexError(f"vtable position {vtable} lies before the buffer")
        count = (_U16(data, vtable)[0] - 4) >> 1
        self.data = data
        self.pos = pos
        self.slots = _vector_format(count, "H").unpack_from(data, vtable + 4) if count > 0 else ()

    def fields(self, count: int) -> tuple[int, ...]:
        """The offsets of the first ``count`` fields (0 for each absent one): for a reader
        that takes several fields of one table (then ``*_at(data, pos + offset)``)."""
        slots = self.slots
        if len(slots) >= count:
            return slots[:count]
        return slots + (0,) * (count - len(slots))

    def offset(self, slot: int) -> int:
        """The field's offset in the table, 0 when absent."""
        slots = self.slots
        return slots[slot] if slot < len(slots) else 0

    def scalar(self, slot: int, kind: struct.Struct, default):
        o = self.offset(slot)
        return kind.unpack_from(self.data, self.pos + o)[0] if o else default

    def table(self, slot: int) -> "TableView | None":
        o = self.offset(slot)
        if not o:
            return None
        at = self.pos + o
        return TableView(self.data, at + _U32(self.data, at)[0])

    def vector(self, slot: int, element_size: int) -> tuple[int, int] | None:
        """``(start, length)`` of a vector field, None when absent; the vector must fit
        in the buffer (IndexError otherwise)."""
        o = self.offset(slot)
        if not o:
            return None
        at = self.pos + o
        at += _U32(self.data, at)[0]
        length = _U32(self.data, at)[0]
        if at + 4 + length * element_size > len(self.data):
            raise IndexError(f"a vector of {length} entries at byte {at} runs past the end of the buffer")
        return at + 4, length

    def int_tuple(self, slot: int, code: str = "i") -> tuple[int, ...] | None:
        """An integer vector field as a tuple (``code``: its struct code), None when absent."""
        found = self.vector(slot, struct.calcsize(code))
        if found is None:
            return None
        start, length = found
        return _vector_format(length, code).unpack_from(self.data, start) if length else ()

    def numpy(self, slot: int, dtype: np.dtype) -> np.ndarray | None:
        """A vector field as a read-only numpy view of the buffer, None when absent."""
        dtype = np.dtype(dtype)
        found = self.vector(slot, dtype.itemsize)
        if found is None:
            return None
        start, length = found
        return np.frombuffer(self.data, dtype=dtype, count=length, offset=start)

    def string(self, slot: int) -> bytes | None:
        found = self.vector(slot, 1)
        if found is None:
            return None
        start, length = found
        return self.data[start : start + length]

    def tables(self, slot: int) -> list["TableView"]:
        """A vector of tables (every entry read now)."""
        found = self.vector(slot, 4)
        if found is None:
            return []
        start, length = found
        data = self.data
        offsets = _vector_format(length, "I").unpack_from(data, start) if length else ()
        return [TableView(data, start + 4 * i + offset) for i, offset in enumerate(offsets)]

    def table_count(self, slot: int) -> int:
        found = self.vector(slot, 4)
        return 0 if found is None else found[1]

    def union_table_position(self, slot: int) -> int | None:
        """The position of a union member's table (its type is another field)."""
        o = self.offset(slot)
        if not o:
            return None
        at = self.pos + o
        return at + _U32(self.data, at)[0]


def fields_at(data: bytes, pos: int, count: int) -> tuple[int, ...]:
    """``TableView(data, pos).fields(count)`` without the view: the offsets of the first
    ``count`` fields of the table at ``pos`` (0 for each absent one), read by the same
    rules (IndexError or struct.error outside the buffer)."""
    if pos < 0:
        raise IndexError(f"table position {pos} lies before the buffer")
    vtable = pos - _I32(data, pos)[0]
    if vtable < 0:
        raise IndexError(f"vtable position {vtable} lies before the buffer")
    present = (_U16(data, vtable)[0] - 4) >> 1
    if vtable + 4 + 2 * present > len(data):  # (the whole vtable must fit, as TableView reads it)
        raise IndexError(f"a vtable of {present} fields at byte {vtable} runs past the end of the buffer")
    if present >= count:
        return _vector_format(count, "H").unpack_from(data, vtable + 4)
    slots = _vector_format(present, "H").unpack_from(data, vtable + 4) if present > 0 else ()
    return slots + (0,) * (count - len(slots))


def table_positions(data: bytes, start: int, length: int) -> list[int]:
    """The positions of the tables of a vector of ``length`` table offsets at ``start``
    (what ``TableView.tables`` makes views of), which must fit."""
    if start + 4 * length > len(data):
        raise IndexError(f"a vector of {length} entries at byte {start} runs past the end of the buffer")
    offsets = _vector_format(length, "I").unpack_from(data, start) if length else ()
    return [start + 4 * i + offset for i, offset in enumerate(offsets)]


def vector_at(data: bytes, at: int, element_size: int) -> tuple[int, int]:
    """``(start, length)`` of the vector whose offset is stored at ``at``, which must fit."""
    at += _U32(data, at)[0]
    length = _U32(data, at)[0]
    if at + 4 + length * element_size > len(data):
        raise IndexError(f"a vector of {length} entries at byte {at} runs past the end of the buffer")
    return at + 4, length


def int32_tuple_at(data: bytes, at: int) -> tuple[int, ...]:
    """The int32 vector whose offset is stored at ``at``, as a tuple."""
    at += _U32(data, at)[0]
    length = _U32(data, at)[0]
    if at + 4 + 4 * length > len(data):
        raise IndexError(f"a vector of {length} entries at byte {at} runs past the end of the buffer")
    return _vector_format(length, "i").unpack_from(data, at + 4) if length else ()


def string_at(data: bytes, at: int) -> bytes:
    """The string whose offset is stored at ``at``."""
    start, length = vector_at(data, at, 1)
    return data[start : start + length]


def table_position_at(data: bytes, at: int) -> int:
    """The position of the table whose offset is stored at ``at``."""
    return at + _U32(data, at)[0]


def table_at(data: bytes, at: int) -> TableView:
    """The table whose offset is stored at ``at``."""
    return TableView(data, at + _U32(data, at)[0])


def root_table(data: bytes) -> TableView:
    """The root table of a finished buffer."""
    return TableView(data, _U32(data, 0)[0])
