"""A typed, validated read view of a ``.tflite`` model.

``Model.from_path`` / ``Model.from_bytes`` parse the flatbuffer once, check every
index and every size against the file, and expose plain Python objects:
subgraphs, tensors (shape, dtype, quantization, constant data as numpy views into
the file without copying), operators (effective builtin code, version, parsed
params) and signature defs.

Anything wrong with the file raises :class:`schema.errors.ModelError` with a
message naming what is wrong and where; no ``IndexError``, ``struct.error`` or
``AttributeError`` escapes from the flatbuffer accessors.
"""

from __future__ import annotations

import contextlib
import math
import os
import struct
from dataclasses import dataclass, field, fields
from typing import Iterator, Mapping, Sequence

import numpy as np

from schema import schema_generated as fb
from schema.enums import (
    BuiltinOperator,
    NUMPY_DTYPE_OF_TENSOR_TYPE,
    TensorType,
    builtin_operator_name,
    tensor_type_name,
    value_dtype,
)
from schema.errors import ModelError
from schema.packed import BITS_OF_PACKED_TYPE, packed_size, unpack
from schema.flatbuffer_view import (
    BOOL,
    INT8,
    INT32,
    UINT8,
    UINT32,
    UINT64,
    TableView,
    fields_at,
    int32_tuple_at,
    root_table,
    table_position_at,
    table_positions,
    vector_at,
    string_at,
    table_at,
)
from schema.option_parsers import SECOND_UNION_OPS, parse_builtin_options_at
from schema.operator_tables import operator_fields, read_operators
from schema.tensor_tables import read_tensors

#: The schema version this runtime reads (TFLite's ``TFLITE_SCHEMA_VERSION``).
SCHEMA_VERSION = 3
FILE_IDENTIFIER = b"TFL3"
#: A tensor larger than this is refused as absurd rather than allocated.
MAX_TENSOR_BYTES = 1 << 32
#: Rank above this is refused (TFLite kernels support at most 6 dims; allow slack).
MAX_RANK = 16
#: The deprecated_builtin_code field is a byte; codes at or above this value
#: live only in ``builtin_code``.
PLACEHOLDER_FOR_GREATER_OP_CODES = 127

_LOW_LEVEL_ERRORS = (
    IndexError,
    struct.error,
    AttributeError,
    TypeError,
    ValueError,
    OverflowError,
    UnicodeDecodeError,
    RecursionError,
    MemoryError,
)


@contextlib.contextmanager
def _reading(where: str) -> Iterator[None]:
    """Turn a low-level parse failure into a ModelError saying where it happened."""
    try:
        yield
    except ModelError:
        raise
    except _LOW_LEVEL_ERRORS as error:
        raise ModelError(
            f"malformed model: cannot read {where} ({type(error).__name__}: {error})"
        ) from error


@dataclass(frozen=True)
class Quantization:
    """Quantization parameters of a tensor (per-tensor when ``scale`` has one entry).

    ``real_value = scale * (quantized_value - zero_point)``, along
    ``quantized_dimension`` when per-channel.
    """

    scale: np.ndarray  # float32, shape [num_channels]
    zero_point: np.ndarray  # int64, shape [num_channels]
    quantized_dimension: int = 0
    min: np.ndarray | None = None
    max: np.ndarray | None = None

    @property
    def is_per_channel(self) -> bool:
        return self.scale.size > 1

    @property
    def is_quantized(self) -> bool:
        return self.scale.size > 0


def _new_quantization(*values) -> Quantization:
    """``Quantization(*values)`` without the frozen dataclass's ``__init__`` (as ``_new_tensor``)."""
    quantization = _NEW(Quantization)
    quantization.__dict__.update(zip(_QUANTIZATION_FIELDS, values))
    return quantization


@dataclass(frozen=True)
class DimensionMetadata:
    """One dimension of a sparse tensor (``DimensionMetadata`` in the schema)."""

    format: int  # 0 DENSE, 1 SPARSE_CSR
    dense_size: int
    array_segments: np.ndarray | None
    array_indices: np.ndarray | None


@dataclass(frozen=True)
class Sparsity:
    """Sparsity parameters of a constant tensor (TACO-style encoding)."""

    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    dim_metadata: tuple[DimensionMetadata, ...]


@dataclass(frozen=True)
class Tensor:
    """A tensor of a subgraph as the file declares it.

    ``data`` is the constant value (a read-only numpy view into the model bytes)
    or ``None`` for activations and variables.
    """

    index: int
    name: str
    type: int
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None
    buffer: int
    data: np.ndarray | None
    quantization: Quantization | None
    sparsity: Sparsity | None
    is_variable: bool
    has_rank: bool

    @property
    def dtype(self) -> np.dtype | None:
        """numpy dtype of the values (int8 / uint8 for the packed sub-byte types, one value an
        element), or None for types this runtime cannot hold."""
        return value_dtype(self.type)

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def type_name(self) -> str:
        return tensor_type_name(self.type)


def _new_tensor(index, name, type, shape, shape_signature, buffer, data, quantization, sparsity, is_variable,
                has_rank) -> Tensor:
    """``Tensor(...)`` without the frozen dataclass's ``__init__`` (one
    ``object.__setattr__`` per field: a model's hundreds of tensors paid ~1 us each); the
    same fields (checked below), so the same equality, hash and repr."""
    tensor = _NEW(Tensor)
    _SET(tensor, "__dict__", {
        "index": index, "name": name, "type": type, "shape": shape, "shape_signature": shape_signature,
        "buffer": buffer, "data": data, "quantization": quantization, "sparsity": sparsity,
        "is_variable": is_variable, "has_rank": has_rank,
    })
    return tensor


_NEW, _SET = object.__new__, object.__setattr__


def _require_same_fields(names: tuple[str, ...], maker) -> None:
    """At import (not an ``assert``: ``python -O`` drops those): ``maker`` takes the dataclass's
    fields, in order, so the objects it makes without ``__init__`` are whole."""
    if maker.__code__.co_varnames[: len(names)] != names:
        raise TypeError(f"{maker.__name__} takes {maker.__code__.co_varnames[: len(names)]}, the fields are {names}")


_TENSOR_FIELDS = tuple(f.name for f in fields(Tensor))
_require_same_fields(_TENSOR_FIELDS, _new_tensor)


@dataclass(frozen=True)
class Operator:
    """One node of a subgraph: what to run (code, version, params) on which tensors.

    ``inputs`` may contain -1 for an omitted optional input.
    """

    index: int
    opcode_index: int
    builtin_code: int
    custom_name: str | None
    version: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...]
    params: object | None
    custom_options: bytes | None

    @property
    def op_name(self) -> str:
        """``BuiltinOperator`` name, or the custom op's name."""
        if self.builtin_code == BuiltinOperator.CUSTOM:
            return self.custom_name or "CUSTOM"
        return builtin_operator_name(self.builtin_code)


def _new_operator(index, opcode_index, builtin_code, custom_name, version, inputs, outputs, intermediates, params,
                  custom_options) -> Operator:
    """``Operator(...)`` without the frozen dataclass's ``__init__`` (as ``_new_tensor``)."""
    operator = _NEW(Operator)
    _SET(operator, "__dict__", {
        "index": index, "opcode_index": opcode_index, "builtin_code": builtin_code, "custom_name": custom_name,
        "version": version, "inputs": inputs, "outputs": outputs, "intermediates": intermediates, "params": params,
        "custom_options": custom_options,
    })
    return operator


_OPERATOR_FIELDS = tuple(f.name for f in fields(Operator))
_require_same_fields(_OPERATOR_FIELDS, _new_operator)
_QUANTIZATION_FIELDS = tuple(f.name for f in fields(Quantization))
_DIMENSION_METADATA_FIELDS = tuple(f.name for f in fields(DimensionMetadata))


def _new_dimension_metadata(*values) -> DimensionMetadata:
    """``DimensionMetadata(*values)`` without the frozen dataclass's ``__init__``."""
    dimension = _NEW(DimensionMetadata)
    dimension.__dict__.update(zip(_DIMENSION_METADATA_FIELDS, values))
    return dimension


@dataclass(frozen=True)
class OperatorCode:
    """An entry of the model's operator code table."""

    builtin_code: int
    custom_name: str | None
    version: int


@dataclass(frozen=True)
class Subgraph:
    index: int
    name: str
    tensors: tuple[Tensor, ...]
    operators: tuple[Operator, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class SignatureDef:
    """A named entry point: tensor names of the signature -> tensor indices."""

    key: str
    subgraph_index: int
    inputs: Mapping[str, int]
    outputs: Mapping[str, int]


@dataclass(frozen=True)
class Model:
    """A parsed, validated ``.tflite`` model. Build with ``from_path``/``from_bytes``."""

    version: int
    description: str
    operator_codes: tuple[OperatorCode, ...]
    subgraphs: tuple[Subgraph, ...]
    metadata: Mapping[str, bytes]
    signature_defs: tuple[SignatureDef, ...]
    num_buffers: int
    model_bytes: bytes = field(repr=False)

    @classmethod
    def from_path(cls, path: str | os.PathLike) -> "Model":
        """Read and validate the model file at ``path``."""
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as error:
            reason = error.strerror or str(error)
            raise ModelError(f"Could not open '{os.fspath(path)}': {reason}") from error
        return cls.from_bytes(data)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> "Model":
        """Parse and validate a model held in memory (the bytes are not copied if immutable)."""
        return _ModelReader(bytes(data) if not isinstance(data, bytes) else data).read()

    @property
    def min_runtime_version(self) -> str | None:
        """The ``min_runtime_version`` metadata entry, if the file has one."""
        raw = self.metadata.get("min_runtime_version")
        if raw is None:
            return None
        return raw.split(b"\0", 1)[0].decode("ascii", errors="replace")

    def signature(self, key: str) -> SignatureDef:
        for signature in self.signature_defs:
            if signature.key == key:
                return signature
        raise KeyError(f"no signature {key!r}; the model has {[s.key for s in self.signature_defs]}")


class _ModelReader:
    """Walks the flatbuffer once (through ``flatbuffer_view``: one ``struct`` read per
    field), with every index and size checked."""

    def __init__(self, data: bytes):
        self.data = data
        self.buffer_cache: dict[int, np.ndarray | None] = {}
        self.buffers_start = 0  # (the buffer table's entries: read when a tensor asks)

    # -- checks ---------------------------------------------------------------------------
    def check_vector_fits(self, length: int, element_size: int, where: str) -> None:
        if length < 0 or length * element_size > len(self.data):
            raise ModelError(
                f"malformed model: {where} claims {length} entries, more than the "
                f"{len(self.data)}-byte file can hold"
            )

    def check_index(self, value: int, count: int, what: str, where: str, optional: bool = False) -> int:
        if optional and value == -1:
            return value
        if not 0 <= value < count:
            allowed = f"0..{count - 1}" if count else "none (the table is empty)"
            extra = " or -1" if optional else ""
            raise ModelError(f"malformed model: {where} refers to {what} {value}, valid: {allowed}{extra}")
        return value

    def table_vector(self, table: TableView, slot: int, where: str) -> list[TableView]:
        """A vector of tables, its length checked against the file first."""
        with _reading(where):
            found = table.vector(slot, 0)
            if found is None:
                return []
            self.check_vector_fits(found[1], 4, where)
            return table.tables(slot)

    def table_positions(self, table: TableView, slot: int, where: str) -> list[int]:
        """``table_vector``'s tables as positions (no view made: for the many tensors)."""
        with _reading(where):
            found = table.vector(slot, 0)
            if found is None:
                return []
            self.check_vector_fits(found[1], 4, where)
            return table_positions(self.data, *found)

    # -- the model ------------------------------------------------------------------------
    def read(self) -> Model:
        data = self.data
        if len(data) < 8:
            raise ModelError(
                f"The model is not a valid Flatbuffer buffer: not a TFLite model, the file is only {len(data)} bytes long"
            )
        identifier = data[4:8]
        if identifier != FILE_IDENTIFIER:
            raise ModelError(
                f"The model is not a valid Flatbuffer buffer: not a TFLite model, file identifier is "
                f"{identifier!r}, expected {FILE_IDENTIFIER!r}"
            )
        with _reading("the model root table"):
            root_offset = struct.unpack_from("<I", data, 0)[0]
            if root_offset + 4 > len(data):
                raise ModelError(
                    "The model is not a valid Flatbuffer buffer: the root table offset points past the end of the file"
                )
            model = root_table(data)
            version = model.scalar(_MODEL_VERSION, UINT32, 0)
            description = (model.string(_MODEL_DESCRIPTION) or b"").decode("utf-8", errors="replace")
        if version != SCHEMA_VERSION:
            raise ModelError(
                f"unsupported schema version {version}: this runtime reads TFLite schema version "
                f"{SCHEMA_VERSION} (re-convert the model with a current TensorFlow converter)"
            )
        with _reading("the buffer table"):
            found = model.vector(_MODEL_BUFFERS, 0)
            self.buffers_start, self.num_buffers = found if found is not None else (0, 0)
            self.check_vector_fits(self.num_buffers, 4, "the buffer table")
        operator_codes = self.read_operator_codes(model)
        subgraph_tables = self.table_vector(model, _MODEL_SUBGRAPHS, "the subgraph table")
        if not subgraph_tables:
            raise ModelError("malformed model: the model has no subgraph")
        subgraphs = tuple(self.read_subgraph(table, i, operator_codes) for i, table in enumerate(subgraph_tables))
        metadata = self.read_metadata(model)
        signature_defs = self.read_signature_defs(model, subgraphs)
        return Model(
            version=version,
            description=description,
            operator_codes=operator_codes,
            subgraphs=subgraphs,
            metadata=metadata,
            signature_defs=signature_defs,
            num_buffers=self.num_buffers,
            model_bytes=data,
        )

    def read_operator_codes(self, model: TableView) -> tuple[OperatorCode, ...]:
        codes = []
        for i, entry in enumerate(self.table_vector(model, _MODEL_OPERATOR_CODES, "the operator code table")):
            where = f"operator code {i}"
            with _reading(where):
                deprecated = entry.scalar(0, INT8, 0)
                custom = entry.string(1)
                version = entry.scalar(2, INT32, 1)
                builtin = entry.scalar(3, INT32, 0)
            # The effective code is the larger of the two fields: files written
            # before builtin_code existed only have the deprecated byte, and codes
            # >= 127 put the placeholder 127 in the byte.
            code = max(deprecated, builtin)
            custom_name = custom.decode("utf-8", errors="replace") if custom is not None else None
            if code == BuiltinOperator.CUSTOM and custom_name is None:
                raise ModelError(f"malformed model: {where} is CUSTOM but has no custom_code name")
            if version < 1:
                raise ModelError(f"malformed model: {where} ({builtin_operator_name(code)}) has version {version}")
            codes.append(OperatorCode(builtin_code=code, custom_name=custom_name, version=version))
        return tuple(codes)

    def read_subgraph(self, subgraph: TableView, index: int, operator_codes) -> Subgraph:
        where = f"subgraph {index}"
        with _reading(where):
            name = (subgraph.string(_SUBGRAPH_NAME) or b"").decode("utf-8", errors="replace")
        tensor_positions = self.table_positions(subgraph, _SUBGRAPH_TENSORS, f"{where} tensor table")
        # The operators' fields read in bulk now (None: their views are made now, as the
        # table-by-table reader needs, raising what a malformed operator table raises).
        operator_positions = operator_slots = operator_tables = None
        try:
            found = subgraph.vector(_SUBGRAPH_OPERATORS, 4)
        except _LOW_LEVEL_ERRORS:
            found = None
        if found is not None:
            operator_positions = table_positions(self.data, *found)
            operator_slots = operator_fields(self.data, operator_positions)
        if operator_slots is None:
            operator_tables = self.table_vector(subgraph, _SUBGRAPH_OPERATORS, f"{where} operator table")
        num_tensors = len(tensor_positions)
        tensors = read_tensors(self, tensor_positions, where)  # (in bulk; None: table by table)
        if tensors is None:
            tensors = tuple(self.read_tensor(pos, i, where) for i, pos in enumerate(tensor_positions))
        with _reading(f"{where} inputs"):
            inputs = subgraph.int_tuple(_SUBGRAPH_INPUTS) or ()
        with _reading(f"{where} outputs"):
            outputs = subgraph.int_tuple(_SUBGRAPH_OUTPUTS) or ()
        for position, tensor_index in enumerate(inputs):
            self.check_index(tensor_index, num_tensors, "tensor", f"{where} input {position}")
        for position, tensor_index in enumerate(outputs):
            self.check_index(tensor_index, num_tensors, "tensor", f"{where} output {position}")
        operators = None
        if operator_slots is not None:  # (in bulk; None: table by table)
            operators = read_operators(self, operator_positions, operator_slots, where, num_tensors, operator_codes)
            if operators is None:
                operator_tables = self.table_vector(subgraph, _SUBGRAPH_OPERATORS, f"{where} operator table")
        if operators is None:
            operators = tuple(
                self.read_operator(table, i, where, num_tensors, operator_codes) for i, table in enumerate(operator_tables)
            )
        return Subgraph(index, name, tensors, operators, inputs, outputs)

    def read_tensor(self, pos: int, index: int, subgraph_where: str) -> Tensor:
        where = f"{subgraph_where} tensor {index}"
        data = self.data
        try:
            shape_at, type_at, buffer_at, name_at, quantization_at, variable_at, sparsity_at, signature_at, rank_at = (
                fields_at(data, pos, 9)
            )
            name = string_at(data, pos + name_at).decode("utf-8", errors="replace") if name_at else ""
            where = f"{subgraph_where} tensor {index} ({name!r})"
            tensor_type = _INT8(data, pos + type_at)[0] if type_at else 0
            shape = int32_tuple_at(data, pos + shape_at) if shape_at else ()
            shape_signature = int32_tuple_at(data, pos + signature_at) if signature_at else None
            buffer_index = _UINT32(data, pos + buffer_at)[0] if buffer_at else 0
            is_variable = _BOOL(data, pos + variable_at)[0] if variable_at else False
            has_rank = _BOOL(data, pos + rank_at)[0] if rank_at else False
            quantization_table = table_at(data, pos + quantization_at) if quantization_at else None
            sparsity_table = table_at(data, pos + sparsity_at) if sparsity_at else None
        except _LOW_LEVEL_ERRORS as error:
            raise _cannot_read(where, error) from error
        quantization = self.read_quantization(quantization_table, where) if quantization_table is not None else None
        sparsity = self.read_sparsity(sparsity_table, where) if sparsity_table is not None else None
        if len(shape) > MAX_RANK:
            raise ModelError(f"malformed model: {where} has rank {len(shape)}, more than {MAX_RANK}")
        if shape and min(shape) < 0:
            raise ModelError(f"malformed model: {where} has a negative dimension in its shape {list(shape)}")
        if shape_signature is not None and (
            len(shape_signature) != len(shape) or (shape_signature and min(shape_signature) < -1)
        ):
            raise ModelError(
                f"malformed model: {where} shape_signature {list(shape_signature)} does not match shape {list(shape)}"
            )
        itemsize = _ITEMSIZE_OF_TYPE.get(tensor_type)
        if itemsize is None:
            raise ModelError(f"malformed model: {where} has unknown tensor type {tensor_type}")
        num_elements = math.prod(shape)
        if num_elements * itemsize > MAX_TENSOR_BYTES:
            raise ModelError(
                f"malformed model: {where} shape {list(shape)} would need {num_elements * itemsize} bytes, "
                f"more than the {MAX_TENSOR_BYTES}-byte limit"
            )
        if quantization is not None:
            check_quantization(quantization, tensor_type, shape, where)
        if buffer_index >= max(self.num_buffers, 1):
            self.check_index(buffer_index, max(self.num_buffers, 1), "buffer", where)
        raw = self.read_buffer(buffer_index, where)
        data = None
        if raw is not None and (raw.size > 0 or sparsity is not None):
            data = self.constant_data(raw, tensor_type, shape, sparsity, where)
        return _new_tensor(index, name, tensor_type, shape, shape_signature, buffer_index, data, quantization, sparsity,
                           is_variable, has_rank)

    def read_buffer(self, index: int, where: str) -> np.ndarray | None:
        """The raw bytes of buffer ``index`` as a uint8 view, or None when empty."""
        if index in self.buffer_cache:
            return self.buffer_cache[index]
        if index >= self.num_buffers:
            return None
        data = self.data
        try:
            buffer_pos = table_position_at(data, self.buffers_start + 4 * index)
            data_at, offset_at, size_at = fields_at(data, buffer_pos, 3)
            offset = _UINT64(data, buffer_pos + offset_at)[0] if offset_at else 0
            size = _UINT64(data, buffer_pos + size_at)[0] if size_at else 0
        except _LOW_LEVEL_ERRORS as error:
            raise _cannot_read(f"buffer {index} (used by {where})", error) from error
        if offset > 1:
            # Large models keep data after the flatbuffer: offset/size are
            # relative to the start of the file.
            if offset + size > len(self.data):
                raise ModelError(
                    f"malformed model: buffer {index} (used by {where}) spans bytes "
                    f"{offset}..{offset + size}, past the end of the {len(self.data)}-byte file"
                )
            raw = np.frombuffer(self.data, dtype=np.uint8, count=size, offset=offset)
        elif data_at:
            try:
                start, length = vector_at(data, buffer_pos + data_at, 1)
            except _LOW_LEVEL_ERRORS as error:
                raise _cannot_read(f"buffer {index} (used by {where})", error) from error
            raw = np.frombuffer(data, np.uint8, length, start)
        else:
            raw = None
        self.buffer_cache[index] = raw
        return raw

    def constant_data(self, raw: np.ndarray, tensor_type: int, shape, sparsity, where: str) -> np.ndarray:
        if tensor_type == TensorType.STRING:
            return decode_string_tensor(raw.tobytes(), shape, where)
        if tensor_type in BITS_OF_PACKED_TYPE and sparsity is None:
            return self.packed_constant_data(raw, tensor_type, shape, where)
        dtype = NUMPY_DTYPE_OF_TENSOR_TYPE.get(tensor_type)
        if dtype is None or dtype == np.object_:
            raise ModelError(
                f"{where} holds constant data of type {tensor_type_name(tensor_type)}, "
                "which this runtime cannot represent"
            )
        if sparsity is not None:
            # Sparse constants keep their compressed values; DENSIFY expands them.
            count = raw.size // dtype.itemsize
            return raw[: count * dtype.itemsize].view(dtype)
        count = math.prod(shape)
        needed = count * dtype.itemsize
        if raw.size < needed:
            raise ModelError(
                f"malformed model: {where} has shape {list(shape)} of {tensor_type_name(tensor_type)} "
                f"({needed} bytes) but its buffer holds only {raw.size} bytes"
            )
        if raw.size > needed:
            raise ModelError(
                f"malformed model: {where} has shape {list(shape)} of {tensor_type_name(tensor_type)} "
                f"({needed} bytes) but its buffer holds {raw.size} bytes"
            )
        values = raw.view(dtype)
        if not values.flags.aligned:  # (a buffer at an odd place in the file: an aligned copy)
            values = raw.copy().view(dtype)
        values = values.reshape(shape)
        values.flags.writeable = False
        return values

    def packed_constant_data(self, raw: np.ndarray, tensor_type: int, shape, where: str) -> np.ndarray:
        """A constant of a packed sub-byte type (INT4, INT2, UINT4), unpacked: one value an element."""
        count = math.prod(shape)
        needed = packed_size(tensor_type, count)
        if raw.size != needed:
            raise ModelError(
                f"malformed model: {where} has shape {list(shape)} of {tensor_type_name(tensor_type)} "
                f"({needed} bytes packed) but its buffer holds {raw.size} bytes"
            )
        values = unpack(raw, tensor_type, count).reshape(shape)
        values.flags.writeable = False
        return values

    def read_quantization(self, quantization: TableView, where: str) -> Quantization | None:
        data, pos = self.data, quantization.pos
        try:
            min_at, max_at, scale_at, zero_point_at, _, _, dimension_at = quantization.fields(7)
            if not (scale_at or zero_point_at or min_at):
                return None  # (an empty table: no quantization)
            scale = _numpy_at(data, pos + scale_at, _FLOAT32) if scale_at else _EMPTY_FLOATS
            zero_point = _numpy_at(data, pos + zero_point_at, _INT64) if zero_point_at else None
            minimum = _numpy_at(data, pos + min_at, _FLOAT32) if min_at else None
            maximum = _numpy_at(data, pos + max_at, _FLOAT32) if max_at else None
            dimension = _INT32(data, pos + dimension_at)[0] if dimension_at else 0
        except _LOW_LEVEL_ERRORS as error:
            raise _cannot_read(f"{where} quantization", error) from error
        no_zero_point = zero_point is None or zero_point.size == 0
        if scale.size == 0 and no_zero_point and (minimum is None or minimum.size == 0):
            return None
        if not no_zero_point and zero_point.size != scale.size:
            raise ModelError(
                f"malformed model: {where} quantization has {scale.size} scales but {zero_point.size} zero points"
            )
        return Quantization(
            scale,
            np.zeros(scale.size, np.int64) if no_zero_point else zero_point,
            dimension,
            minimum if minimum is not None and minimum.size else None,
            maximum if maximum is not None and maximum.size else None,
        )

    def read_sparsity(self, sparsity: TableView, where: str) -> Sparsity | None:
        """The sparsity parameters: read by ``plain_sparsity``, or where it fails by
        ``checked_sparsity``, which raises the error naming the field."""
        try:
            return self.plain_sparsity(sparsity)
        except (ModelError, *_LOW_LEVEL_ERRORS):
            return self.checked_sparsity(sparsity, where)

    def plain_sparsity(self, sparsity: TableView) -> Sparsity:
        """``checked_sparsity``'s reading, by the same rules, without its views and its
        context for errors (a sparse model has dozens of sparse constants)."""
        data, pos = self.data, sparsity.pos
        order_at, block_at, dims_at = sparsity.fields(3)
        traversal_order = int32_tuple_at(data, pos + order_at) if order_at else ()
        block_map = int32_tuple_at(data, pos + block_at) if block_at else ()
        dims = []
        for entry in table_positions(data, *vector_at(data, pos + dims_at, 4)) if dims_at else ():
            format_at, size_at, segments_type_at, segments_at, indices_type_at, indices_at = fields_at(data, entry, 6)
            dims.append(_new_dimension_metadata(
                _INT8(data, entry + format_at)[0] if format_at else 0,
                _INT32(data, entry + size_at)[0] if size_at else 0,
                self.plain_sparse_index_vector(entry, segments_type_at, segments_at),
                self.plain_sparse_index_vector(entry, indices_type_at, indices_at),
            ))
        return Sparsity(traversal_order, block_map, tuple(dims))

    def plain_sparse_index_vector(self, pos: int, type_at: int, table_at_: int) -> np.ndarray | None:
        """``sparse_index_vector`` without a view of the vector's table."""
        data = self.data
        dtype = _SPARSE_INDEX_DTYPES.get(data[pos + type_at]) if type_at else None
        if dtype is None or not table_at_:
            return None
        vector = table_position_at(data, pos + table_at_)
        values_at = fields_at(data, vector, 1)[0]
        if not values_at:
            return None
        start, length = vector_at(data, vector + values_at, dtype.itemsize)
        return np.frombuffer(data, dtype, length, start).astype(np.int32)

    def checked_sparsity(self, sparsity: TableView, where: str) -> Sparsity | None:
        where = f"{where} sparsity"
        with _reading(where):
            traversal_order = sparsity.int_tuple(0) or ()
            block_map = sparsity.int_tuple(1) or ()
        entries = self.table_vector(sparsity, 2, f"{where} dim_metadata")
        dims = []
        data = self.data
        for i, entry in enumerate(entries):
            try:
                pos = entry.pos
                format_at, size_at, segments_type_at, segments_at, indices_type_at, indices_at = entry.fields(6)
                dims.append(
                    DimensionMetadata(
                        _INT8(data, pos + format_at)[0] if format_at else 0,
                        _INT32(data, pos + size_at)[0] if size_at else 0,
                        self.sparse_index_vector(pos, segments_type_at, segments_at),
                        self.sparse_index_vector(pos, indices_type_at, indices_at),
                    )
                )
            except _LOW_LEVEL_ERRORS as error:
                raise _cannot_read(f"{where} dim_metadata {i}", error) from error
        return Sparsity(traversal_order, block_map, tuple(dims))

    def sparse_index_vector(self, pos: int, type_at: int, table_at_: int) -> np.ndarray | None:
        """The union ``ArraySegments`` / ``ArrayIndices`` (its type's and its table's field
        offsets): an Int32Vector, Uint16Vector or Uint8Vector's values as int32."""
        data = self.data
        dtype = _SPARSE_INDEX_DTYPES.get(_UINT8(data, pos + type_at)[0]) if type_at else None
        if dtype is None or not table_at_:
            return None
        vector = table_at(data, pos + table_at_)
        values_at = vector.fields(1)[0]
        if not values_at:
            return None
        start, length = vector_at(data, vector.pos + values_at, dtype.itemsize)
        return np.frombuffer(data, dtype, length, start).astype(np.int32)

    def read_operator(self, operator: TableView, index: int, subgraph_where: str, num_tensors: int, operator_codes) -> Operator:
        data, pos = self.data, operator.pos
        try:
            (opcode_at, inputs_at, outputs_at, options_type_at, options_at, _, _, _, intermediates_at) = operator.fields(9)
            opcode_index = _UINT32(data, pos + opcode_at)[0] if opcode_at else 0
        except _LOW_LEVEL_ERRORS as error:
            raise _cannot_read(f"{subgraph_where} operator {index}", error) from error
        if opcode_index >= len(operator_codes):
            self.check_index(opcode_index, len(operator_codes), "operator code", f"{subgraph_where} operator {index}")
        code = operator_codes[opcode_index]
        builtin_code = code.builtin_code
        part = "inputs"
        try:
            inputs = int32_tuple_at(data, pos + inputs_at) if inputs_at else ()
            part = "outputs"
            outputs = int32_tuple_at(data, pos + outputs_at) if outputs_at else ()
            part = "intermediates"
            intermediates = int32_tuple_at(data, pos + intermediates_at) if intermediates_at else ()
        except _LOW_LEVEL_ERRORS as error:
            raise _cannot_read(f"{self.operator_where(subgraph_where, index, code)} {part}", error) from error
        if (inputs and (min(inputs) < -1 or max(inputs) >= num_tensors)) or (
            outputs and (min(outputs) < 0 or max(outputs) >= num_tensors)
        ):
            where = self.operator_where(subgraph_where, index, code)
            for position, tensor_index in enumerate(inputs):
                self.check_index(tensor_index, num_tensors, "tensor", f"{where} input {position}", optional=True)
            for position, tensor_index in enumerate(outputs):
                self.check_index(tensor_index, num_tensors, "tensor", f"{where} output {position}")
        for position, tensor_index in enumerate(intermediates):
            where = self.operator_where(subgraph_where, index, code)
            self.check_index(tensor_index, num_tensors, "tensor", f"{where} intermediate {position}")
        if len(set(outputs)) != len(outputs) or not set(outputs).isdisjoint(inputs):
            where = self.operator_where(subgraph_where, index, code)
            for position, tensor_index in enumerate(outputs):
                if tensor_index in inputs:
                    raise ModelError(
                        f"malformed model: {where} output {position} is tensor {tensor_index}, which is also its input "
                        f"{inputs.index(tensor_index)} (a node cannot write the tensor it reads)"
                    )
                if tensor_index in outputs[:position]:
                    raise ModelError(
                        f"malformed model: {where} output {position} is tensor {tensor_index}, which is also its output "
                        f"{outputs.index(tensor_index)}"
                    )
        custom_options = None
        params = None
        options_field = "builtin_options"
        try:
            if builtin_code == BuiltinOperator.CUSTOM:
                custom_options = self.read_custom_options(operator, self.operator_where(subgraph_where, index, code))
            elif builtin_code in _BUILTIN_CODES:
                if builtin_code in SECOND_UNION_OPS:  # (StableHLO ops, DILATE, REDUCE_WINDOW)
                    options_field = "builtin_options_2"
                    options_type_at = operator.offset(_OPERATOR_OPTIONS_2_TYPE)
                    options_at = operator.offset(_OPERATOR_OPTIONS_2)
                present = _UINT8(data, pos + options_type_at)[0] if options_type_at else 0
                position = table_position_at(data, pos + options_at) if present and options_at else None
                params = parse_builtin_options_at(builtin_code, present, data, position)
        except ModelError as error:
            if str(error).startswith("malformed model"):
                raise
            raise ModelError(f"malformed model: {self.operator_where(subgraph_where, index, code)}: {error}") from error
        except _LOW_LEVEL_ERRORS as error:
            raise _cannot_read(f"{self.operator_where(subgraph_where, index, code)} {options_field}", error) from error
        return _new_operator(index, opcode_index, builtin_code, code.custom_name, code.version, inputs, outputs,
                             intermediates, params, custom_options)

    @staticmethod
    def operator_where(subgraph_where: str, index: int, code: OperatorCode) -> str:
        """'subgraph 0 operator 3 (CONV_2D v3)': where an operator's errors happen."""
        op_name = code.custom_name if code.builtin_code == BuiltinOperator.CUSTOM else builtin_operator_name(code.builtin_code)
        return f"{subgraph_where} operator {index} ({op_name} v{code.version})"

    def read_custom_options(self, operator: TableView, where: str) -> bytes | None:
        offset = operator.scalar(_OPERATOR_LARGE_OPTIONS_OFFSET, UINT64, 0)
        size = operator.scalar(_OPERATOR_LARGE_OPTIONS_SIZE, UINT64, 0)
        if offset > 1:
            if offset + size > len(self.data):
                raise ModelError(f"malformed model: {where} custom options lie past the end of the file")
            return bytes(self.data[offset : offset + size])
        found = operator.vector(_OPERATOR_CUSTOM_OPTIONS, 1)
        if found is None:
            return None
        start, length = found
        return bytes(self.data[start : start + length])

    def read_metadata(self, model: TableView) -> dict[str, bytes]:
        metadata = {}
        for i, entry in enumerate(self.table_vector(model, _MODEL_METADATA, "the metadata table")):
            where = f"metadata entry {i}"
            with _reading(where):
                name = (entry.string(0) or b"").decode("utf-8", errors="replace")
                buffer_index = entry.scalar(1, UINT32, 0)
            self.check_index(buffer_index, self.num_buffers, "buffer", f"{where} ({name!r})")
            raw = self.read_buffer(buffer_index, f"{where} ({name!r})")
            metadata[name] = raw.tobytes() if raw is not None else b""
        return metadata

    def read_signature_defs(self, model: TableView, subgraphs: Sequence[Subgraph]) -> tuple[SignatureDef, ...]:
        signatures = []
        for i, entry in enumerate(self.table_vector(model, _MODEL_SIGNATURE_DEFS, "the signature def table")):
            where = f"signature def {i}"
            with _reading(where):
                key = (entry.string(2) or b"").decode("utf-8", errors="replace")
                subgraph_index = entry.scalar(4, UINT32, 0)
            where = f"signature def {i} ({key!r})"
            self.check_index(subgraph_index, len(subgraphs), "subgraph", where)
            num_tensors = len(subgraphs[subgraph_index].tensors)
            maps = []
            for slot, kind in ((0, "inputs"), (1, "outputs")):
                mapping = {}
                for tensor_map in self.table_vector(entry, slot, f"{where} {kind}"):
                    with _reading(f"{where} {kind}"):
                        name = (tensor_map.string(0) or b"").decode("utf-8", errors="replace")
                        tensor_index = tensor_map.scalar(1, UINT32, 0)
                    self.check_index(tensor_index, num_tensors, "tensor", f"{where} {kind[:-1]} {name!r}")
                    mapping[name] = tensor_index
                maps.append(mapping)
            signatures.append(SignatureDef(key, subgraph_index, maps[0], maps[1]))
        return tuple(signatures)


def _cannot_read(where: str, error: BaseException) -> ModelError:
    return ModelError(f"malformed model: cannot read {where} ({type(error).__name__}: {error})")


# Field slots of the tables read (schema.fbs order: slot k is vtable offset 4 + 2k).
_MODEL_VERSION, _MODEL_OPERATOR_CODES, _MODEL_SUBGRAPHS, _MODEL_DESCRIPTION, _MODEL_BUFFERS = 0, 1, 2, 3, 4
_MODEL_METADATA, _MODEL_SIGNATURE_DEFS = 6, 7
_SUBGRAPH_TENSORS, _SUBGRAPH_INPUTS, _SUBGRAPH_OUTPUTS, _SUBGRAPH_OPERATORS, _SUBGRAPH_NAME = 0, 1, 2, 3, 4
_TENSOR_SHAPE, _TENSOR_TYPE, _TENSOR_BUFFER, _TENSOR_NAME, _TENSOR_QUANTIZATION = 0, 1, 2, 3, 4
_TENSOR_IS_VARIABLE, _TENSOR_SPARSITY, _TENSOR_SHAPE_SIGNATURE, _TENSOR_HAS_RANK = 5, 6, 7, 8
_OPERATOR_OPCODE_INDEX, _OPERATOR_INPUTS, _OPERATOR_OUTPUTS, _OPERATOR_OPTIONS_TYPE, _OPERATOR_OPTIONS = 0, 1, 2, 3, 4
_OPERATOR_CUSTOM_OPTIONS, _OPERATOR_INTERMEDIATES = 5, 8
_OPERATOR_LARGE_OPTIONS_OFFSET, _OPERATOR_LARGE_OPTIONS_SIZE = 9, 10
_OPERATOR_OPTIONS_2_TYPE, _OPERATOR_OPTIONS_2 = 11, 12  # (builtin_options_2: BuiltinOptions2Type(), Offset(26) and (28))
_BUFFER_DATA, _BUFFER_OFFSET, _BUFFER_SIZE = 0, 1, 2
_QUANT_MIN, _QUANT_MAX, _QUANT_SCALE, _QUANT_ZERO_POINT, _QUANT_DIMENSION = 0, 1, 2, 3, 6
#: SparseIndexVector union member -> the dtype of its ``values``
_SPARSE_INDEX_DTYPES = {
    fb.SparseIndexVector.Int32Vector: np.dtype("<i4"),
    fb.SparseIndexVector.Uint16Vector: np.dtype("<u2"),
    fb.SparseIndexVector.Uint8Vector: np.dtype(np.uint8),
}
_INT8, _INT32, _UINT32, _BOOL = INT8.unpack_from, INT32.unpack_from, UINT32.unpack_from, BOOL.unpack_from
_UINT8, _UINT64 = UINT8.unpack_from, UINT64.unpack_from
_FLOAT32, _INT64 = np.dtype("<f4"), np.dtype("<i8")


def _numpy_at(data: bytes, at: int, dtype: np.dtype) -> np.ndarray:
    """A copy (aligned, writeable, owned) of the vector whose offset is stored at ``at``."""
    start, length = vector_at(data, at, dtype.itemsize)
    return np.frombuffer(data, dtype, length, start).copy()

_EMPTY_FLOATS = np.zeros(0, np.float32)
_EMPTY_FLOATS.flags.writeable = False
_UNKNOWN_TYPE = object()
#: every known tensor type -> the bytes of one value (1 for the types numpy cannot hold
#: and for strings: what the size limit counts)
_ITEMSIZE_OF_TYPE = {
    int(t): (NUMPY_DTYPE_OF_TENSOR_TYPE[t].itemsize if NUMPY_DTYPE_OF_TENSOR_TYPE.get(t, np.dtype(object)) != np.object_ else 1)
    for t in TensorType
}
_BUILTIN_CODES = frozenset(int(code) for code in BuiltinOperator)
#: the tensor types whose constants are their bytes viewed as one numpy dtype (not the
#: strings, the objects, the packed sub-byte types) -> that dtype
_PLAIN_DTYPE_OF_TYPE = {
    int(t): dtype for t, dtype in NUMPY_DTYPE_OF_TENSOR_TYPE.items() if dtype != np.object_ and t not in BITS_OF_PACKED_TYPE
}


#: The integer types whose quantization parameters the kernels compute with.
_QUANTIZED_VALUES = (TensorType.INT4, TensorType.INT8, TensorType.UINT8, TensorType.INT16)
#: TFLite keeps zero points as int32 (TfLiteQuantizationParams): wider ones cannot be run.
_INT32_RANGE = (-(1 << 31), (1 << 31) - 1)


def check_quantization(quantization: Quantization, tensor_type: int, shape: Sequence[int], where: str) -> None:
    """Quantization parameters a kernel can compute with, or ModelError naming the field:
    scales finite and not negative (and positive on int4/int8/uint8/int16 values), zero
    points that fit in int32, per-channel parameters along a dimension of the
    tensor with one entry per channel."""
    scale = quantization.scale
    if scale.size and scale.size == quantization.zero_point.size:
        # The common case first, on Python numbers: every scale finite and positive, every
        # zero point an int32, per-channel parameters that fit the shape.
        scales, zero_points = scale.tolist(), quantization.zero_point.tolist()
        if (
            math.isfinite(sum(scales))  # (no NaN, no infinity)
            and 0 < min(scales)
            and _INT32_RANGE[0] <= min(zero_points)
            and max(zero_points) <= _INT32_RANGE[1]
            and (
                len(scales) == 1
                or (
                    0 <= quantization.quantized_dimension < len(shape)
                    and shape[quantization.quantized_dimension] == len(scales)
                )
            )
        ):
            return
    if scale.size and not np.all(np.isfinite(scale)):
        raise ModelError(f"malformed model: {where} quantization has a scale that is not finite: {scale[~np.isfinite(scale)][0]}")
    if scale.size and np.any(scale < 0):
        raise ModelError(f"malformed model: {where} quantization has a negative scale: {scale[scale < 0][0]}")
    if tensor_type in _QUANTIZED_VALUES and scale.size and np.any(scale == 0):
        raise ModelError(
            f"malformed model: {where} quantization has scale 0 on {tensor_type_name(tensor_type)} values "
            "(a quantized value must stand for real numbers: scale > 0)"
        )
    low, high = _INT32_RANGE
    zero_point = quantization.zero_point
    outside = zero_point[(zero_point < low) | (zero_point > high)]
    if outside.size:
        raise ModelError(f"malformed model: {where} quantization zero point {int(outside[0])} does not fit in int32")
    if scale.size > 1:
        dimension = quantization.quantized_dimension
        if not 0 <= dimension < len(shape):
            raise ModelError(
                f"malformed model: {where} quantization is per-channel along dimension {dimension}, "
                f"but the tensor has rank {len(shape)}"
            )
        if shape[dimension] != scale.size:
            raise ModelError(
                f"malformed model: {where} quantization has {scale.size} scales for the {shape[dimension]} "
                f"channels of dimension {dimension}"
            )


def decode_string_tensor(raw: bytes, shape: Sequence[int], where: str) -> np.ndarray:
    """Decode TFLite's string buffer layout: int32 count, int32 offsets[count + 1] (from the
    start of the buffer), then the bytes. Returns a read-only object array of ``bytes`` of
    ``shape`` (a 0-d array for a scalar); bytes after the last string are ignored, as in
    TFLite's ``GetString``."""
    if len(raw) < 4:
        raise ModelError(f"malformed model: {where} string buffer is {len(raw)} bytes long")
    count = struct.unpack_from("<i", raw, 0)[0]
    expected = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count != expected or count < 0 or 4 * (count + 2) > len(raw):
        raise ModelError(f"malformed model: {where} string buffer holds {count} strings, the shape needs {expected}")
    offsets = struct.unpack_from(f"<{count + 1}i", raw, 4)
    if any(b < a for a, b in zip(offsets, offsets[1:])) or offsets[-1] > len(raw) or offsets[0] < 4 * (count + 2):
        raise ModelError(f"malformed model: {where} string buffer offsets are out of order or out of range")
    values = np.empty(count, dtype=object)
    for i in range(count):
        values[i] = raw[offsets[i] : offsets[i + 1]]
    values = values.reshape(tuple(shape))
    values.flags.writeable = False
    return values


def string_array(values) -> np.ndarray:
    """``values`` as a STRING tensor holds them: an object array of ``bytes``.

    Accepts bytes / str arrays (``S`` / ``U`` dtypes), object arrays and nested lists of
    ``bytes`` or ``str`` (``str`` is encoded as UTF-8), and a single ``bytes`` / ``str``
    (a 0-d array). Raises TypeError for any other element.
    """
    if isinstance(values, (bytes, str)):
        array = np.empty((), dtype=object)
        array[()] = values
    elif isinstance(values, np.ndarray):
        array = values
    else:
        array = np.asarray(values, dtype=object)
    items = array.reshape(-1).tolist()
    for i, item in enumerate(items):
        if isinstance(item, str):
            items[i] = item.encode("utf-8")
        elif isinstance(item, bytes):
            items[i] = bytes(item)
        else:
            raise TypeError(f"a STRING tensor holds bytes or str, not {type(item).__name__} ({item!r})")
    result = np.empty(len(items), dtype=object)
    result[:] = items
    return result.reshape(array.shape)


def encode_string_tensor(values) -> bytes:
    """Encode strings in TFLite's buffer layout (inverse of ``decode_string_tensor``);
    ``values`` is anything ``string_array`` takes."""
    items = string_array(values).reshape(-1).tolist()
    header = 4 * (len(items) + 2)
    offsets = [header]
    for item in items:
        offsets.append(offsets[-1] + len(item))
    return struct.pack(f"<i{len(offsets)}i", len(items), *offsets) + b"".join(items)
