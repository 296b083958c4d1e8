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
import os
import struct
from dataclasses import dataclass, field
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
from schema.option_parsers import parse_builtin_options

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
    """Walks the flatbuffer once, with every index and size checked."""

    def __init__(self, data: bytes):
        self.data = data
        self.buffer_cache: dict[int, np.ndarray | None] = {}

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

    def int_vector(self, table, name: str, where: str) -> tuple[int, ...]:
        with _reading(where):
            if getattr(table, f"{name}IsNone")():
                return ()
            values = getattr(table, f"{name}AsNumpy")()
        if isinstance(values, int):  # flatbuffers returns 0 for an absent vector
            return ()
        return tuple(int(v) for v in values)

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
            model = fb.Model.GetRootAs(data, 0)
            version = model.Version()
            description = (model.Description() or b"").decode("utf-8", errors="replace")
        if version != SCHEMA_VERSION:
            raise ModelError(
                f"unsupported schema version {version}: this runtime reads TFLite schema version "
                f"{SCHEMA_VERSION} (re-convert the model with a current TensorFlow converter)"
            )
        with _reading("the buffer table"):
            num_buffers = model.BuffersLength()
        self.check_vector_fits(num_buffers, 4, "the buffer table")
        self.model = model
        self.num_buffers = num_buffers
        operator_codes = self.read_operator_codes(model)
        with _reading("the subgraph table"):
            num_subgraphs = model.SubgraphsLength()
        self.check_vector_fits(num_subgraphs, 4, "the subgraph table")
        if num_subgraphs == 0:
            raise ModelError("malformed model: the model has no subgraph")
        subgraphs = tuple(self.read_subgraph(model, i, operator_codes) for i in range(num_subgraphs))
        metadata = self.read_metadata(model)
        signature_defs = self.read_signature_defs(model, subgraphs)
        return Model(
            version=version,
            description=description,
            operator_codes=operator_codes,
            subgraphs=subgraphs,
            metadata=metadata,
            signature_defs=signature_defs,
            num_buffers=num_buffers,
            model_bytes=data,
        )

    def read_operator_codes(self, model) -> tuple[OperatorCode, ...]:
        with _reading("the operator code table"):
            count = model.OperatorCodesLength()
        self.check_vector_fits(count, 4, "the operator code table")
        codes = []
        for i in range(count):
            where = f"operator code {i}"
            with _reading(where):
                entry = model.OperatorCodes(i)
                deprecated = entry.DeprecatedBuiltinCode()
                builtin = entry.BuiltinCode()
                custom = entry.CustomCode()
                version = entry.Version()
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

    def read_subgraph(self, model, index: int, operator_codes) -> Subgraph:
        where = f"subgraph {index}"
        with _reading(where):
            subgraph = model.Subgraphs(index)
            name = (subgraph.Name() or b"").decode("utf-8", errors="replace")
            num_tensors = subgraph.TensorsLength()
            num_operators = subgraph.OperatorsLength()
        self.check_vector_fits(num_tensors, 4, f"{where} tensor table")
        self.check_vector_fits(num_operators, 4, f"{where} operator table")
        tensors = tuple(self.read_tensor(subgraph, i, where) for i in range(num_tensors))
        inputs = self.int_vector(subgraph, "Inputs", f"{where} inputs")
        outputs = self.int_vector(subgraph, "Outputs", f"{where} outputs")
        for position, tensor_index in enumerate(inputs):
            self.check_index(tensor_index, num_tensors, "tensor", f"{where} input {position}")
        for position, tensor_index in enumerate(outputs):
            self.check_index(tensor_index, num_tensors, "tensor", f"{where} output {position}")
        operators = tuple(
            self.read_operator(subgraph, i, where, num_tensors, operator_codes) for i in range(num_operators)
        )
        return Subgraph(index, name, tensors, operators, inputs, outputs)

    def read_tensor(self, subgraph, index: int, subgraph_where: str) -> Tensor:
        where = f"{subgraph_where} tensor {index}"
        with _reading(where):
            tensor = subgraph.Tensors(index)
            raw_name = tensor.Name()
            name = raw_name.decode("utf-8", errors="replace") if raw_name is not None else ""
            where = f"{subgraph_where} tensor {index} ({name!r})"
            tensor_type = tensor.Type()
            shape = self.int_vector(tensor, "Shape", f"{where} shape")
            shape_signature = (
                None if tensor.ShapeSignatureIsNone() else self.int_vector(tensor, "ShapeSignature", f"{where} shape_signature")
            )
            buffer_index = tensor.Buffer()
            is_variable = bool(tensor.IsVariable())
            has_rank = bool(tensor.HasRank())
            quantization = self.read_quantization(tensor.Quantization(), where)
            sparsity = self.read_sparsity(tensor.Sparsity(), where)
        if len(shape) > MAX_RANK:
            raise ModelError(f"malformed model: {where} has rank {len(shape)}, more than {MAX_RANK}")
        if any(dim < 0 for dim in shape):
            raise ModelError(f"malformed model: {where} has a negative dimension in its shape {list(shape)}")
        if shape_signature is not None and (
            len(shape_signature) != len(shape) or any(dim < -1 for dim in shape_signature)
        ):
            raise ModelError(
                f"malformed model: {where} shape_signature {list(shape_signature)} does not match shape {list(shape)}"
            )
        if tensor_type not in TensorType._value2member_map_:
            raise ModelError(f"malformed model: {where} has unknown tensor type {tensor_type}")
        dtype = value_dtype(tensor_type)
        num_elements = int(np.prod(shape, dtype=np.float64)) if shape else 1
        itemsize = dtype.itemsize if dtype is not None and dtype != np.object_ else 1
        if num_elements * itemsize > MAX_TENSOR_BYTES:
            raise ModelError(
                f"malformed model: {where} shape {list(shape)} would need {num_elements * itemsize} bytes, "
                f"more than the {MAX_TENSOR_BYTES}-byte limit"
            )
        if quantization is not None:
            check_quantization(quantization, tensor_type, shape, where)
        self.check_index(buffer_index, max(self.num_buffers, 1), "buffer", where)
        raw = self.read_buffer(buffer_index, where)
        data = None
        if raw is not None and (raw.size > 0 or sparsity is not None):
            data = self.constant_data(raw, tensor_type, shape, sparsity, where)
        return Tensor(
            index=index,
            name=name,
            type=tensor_type,
            shape=shape,
            shape_signature=shape_signature,
            buffer=buffer_index,
            data=data,
            quantization=quantization,
            sparsity=sparsity,
            is_variable=is_variable,
            has_rank=has_rank,
        )

    def read_buffer(self, index: int, where: str) -> np.ndarray | None:
        """The raw bytes of buffer ``index`` as a uint8 view, or None when empty."""
        if index in self.buffer_cache:
            return self.buffer_cache[index]
        if index >= self.num_buffers:
            return None
        with _reading(f"buffer {index} (used by {where})"):
            buffer = self.model.Buffers(index)
            offset = buffer.Offset()
            size = buffer.Size()
            if offset > 1:
                # Large models keep data after the flatbuffer: offset/size are
                # relative to the start of the file.
                if offset + size > len(self.data):
                    raise ModelError(
                        f"malformed model: buffer {index} (used by {where}) spans bytes "
                        f"{offset}..{offset + size}, past the end of the {len(self.data)}-byte file"
                    )
                raw = np.frombuffer(self.data, dtype=np.uint8, count=size, offset=offset)
            elif buffer.DataIsNone():
                raw = None
            else:
                length = buffer.DataLength()
                self.check_vector_fits(length, 1, f"buffer {index}")
                raw = buffer.DataAsNumpy()
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
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
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
        values = raw.view(dtype) if raw.ctypes.data % dtype.itemsize == 0 else raw.copy().view(dtype)
        values = values.reshape(shape)
        values.flags.writeable = False
        return values

    def packed_constant_data(self, raw: np.ndarray, tensor_type: int, shape, where: str) -> np.ndarray:
        """A constant of a packed sub-byte type (INT4, INT2, UINT4), unpacked: one value an element."""
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        needed = packed_size(tensor_type, count)
        if raw.size != needed:
            raise ModelError(
                f"malformed model: {where} has shape {list(shape)} of {tensor_type_name(tensor_type)} "
                f"({needed} bytes packed) but its buffer holds {raw.size} bytes"
            )
        values = unpack(raw, tensor_type, count).reshape(shape)
        values.flags.writeable = False
        return values

    def read_quantization(self, quantization, where: str) -> Quantization | None:
        if quantization is None:
            return None
        where = f"{where} quantization"
        scale = self.float_vector(quantization, "Scale", where)
        zero_point = self.int_vector(quantization, "ZeroPoint", where)
        minimum = self.float_vector(quantization, "Min", where)
        maximum = self.float_vector(quantization, "Max", where)
        with _reading(where):
            dimension = quantization.QuantizedDimension()
        if scale.size == 0 and not zero_point and minimum.size == 0:
            return None
        if zero_point and len(zero_point) != scale.size:
            raise ModelError(
                f"malformed model: {where} has {scale.size} scales but {len(zero_point)} zero points"
            )
        return Quantization(
            scale=scale,
            zero_point=np.asarray(zero_point if zero_point else [0] * scale.size, dtype=np.int64),
            quantized_dimension=dimension,
            min=minimum if minimum.size else None,
            max=maximum if maximum.size else None,
        )

    def float_vector(self, table, name: str, where: str) -> np.ndarray:
        with _reading(f"{where} {name.lower()}"):
            if getattr(table, f"{name}IsNone")():
                return np.zeros(0, np.float32)
            values = getattr(table, f"{name}AsNumpy")()
        if isinstance(values, int):
            return np.zeros(0, np.float32)
        return np.array(values, dtype=np.float32)

    def read_sparsity(self, sparsity, where: str) -> Sparsity | None:
        if sparsity is None:
            return None
        where = f"{where} sparsity"
        traversal_order = self.int_vector(sparsity, "TraversalOrder", where)
        block_map = self.int_vector(sparsity, "BlockMap", where)
        with _reading(where):
            count = sparsity.DimMetadataLength()
        self.check_vector_fits(count, 4, f"{where} dim_metadata")
        dims = []
        for i in range(count):
            with _reading(f"{where} dim_metadata {i}"):
                entry = sparsity.DimMetadata(i)
                dims.append(
                    DimensionMetadata(
                        format=entry.Format(),
                        dense_size=entry.DenseSize(),
                        array_segments=self.sparse_index_vector(entry.ArraySegmentsType(), entry.ArraySegments()),
                        array_indices=self.sparse_index_vector(entry.ArrayIndicesType(), entry.ArrayIndices()),
                    )
                )
        return Sparsity(traversal_order, block_map, tuple(dims))

    @staticmethod
    def sparse_index_vector(kind: int, table) -> np.ndarray | None:
        classes = {
            fb.SparseIndexVector.Int32Vector: fb.Int32Vector,
            fb.SparseIndexVector.Uint16Vector: fb.Uint16Vector,
            fb.SparseIndexVector.Uint8Vector: fb.Uint8Vector,
        }
        if table is None or kind not in classes:
            return None
        vector = classes[kind]()
        vector.Init(table.Bytes, table.Pos)
        values = vector.ValuesAsNumpy()
        return None if isinstance(values, int) else np.asarray(values, dtype=np.int32)

    def read_operator(self, subgraph, index: int, subgraph_where: str, num_tensors: int, operator_codes) -> Operator:
        where = f"{subgraph_where} operator {index}"
        with _reading(where):
            operator = subgraph.Operators(index)
            opcode_index = operator.OpcodeIndex()
        self.check_index(opcode_index, len(operator_codes), "operator code", where)
        code = operator_codes[opcode_index]
        op_name = code.custom_name if code.builtin_code == BuiltinOperator.CUSTOM else builtin_operator_name(code.builtin_code)
        where = f"{subgraph_where} operator {index} ({op_name} v{code.version})"
        inputs = self.int_vector(operator, "Inputs", f"{where} inputs")
        outputs = self.int_vector(operator, "Outputs", f"{where} outputs")
        intermediates = self.int_vector(operator, "Intermediates", f"{where} intermediates")
        for position, tensor_index in enumerate(inputs):
            self.check_index(tensor_index, num_tensors, "tensor", f"{where} input {position}", optional=True)
        for position, tensor_index in enumerate(outputs):
            self.check_index(tensor_index, num_tensors, "tensor", f"{where} output {position}")
        for position, tensor_index in enumerate(intermediates):
            self.check_index(tensor_index, num_tensors, "tensor", f"{where} intermediate {position}")
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
        with _reading(f"{where} options"):
            if code.builtin_code == BuiltinOperator.CUSTOM:
                custom_options = self.read_custom_options(operator, where)
            elif code.builtin_code in BuiltinOperator._value2member_map_:
                try:
                    params = parse_builtin_options(code.builtin_code, operator)
                except ModelError as error:
                    raise ModelError(f"malformed model: {where}: {error}") from error
        return Operator(
            index=index,
            opcode_index=opcode_index,
            builtin_code=code.builtin_code,
            custom_name=code.custom_name,
            version=code.version,
            inputs=inputs,
            outputs=outputs,
            intermediates=intermediates,
            params=params,
            custom_options=custom_options,
        )

    def read_custom_options(self, operator, where: str) -> bytes | None:
        offset = operator.LargeCustomOptionsOffset()
        size = operator.LargeCustomOptionsSize()
        if offset > 1:
            if offset + size > len(self.data):
                raise ModelError(f"malformed model: {where} custom options lie past the end of the file")
            return bytes(self.data[offset : offset + size])
        if operator.CustomOptionsIsNone():
            return None
        self.check_vector_fits(operator.CustomOptionsLength(), 1, f"{where} custom options")
        return operator.CustomOptionsAsNumpy().tobytes()

    def read_metadata(self, model) -> dict[str, bytes]:
        with _reading("the metadata table"):
            count = model.MetadataLength()
        self.check_vector_fits(count, 4, "the metadata table")
        metadata = {}
        for i in range(count):
            where = f"metadata entry {i}"
            with _reading(where):
                entry = model.Metadata(i)
                name = (entry.Name() or b"").decode("utf-8", errors="replace")
                buffer_index = entry.Buffer()
            self.check_index(buffer_index, self.num_buffers, "buffer", f"{where} ({name!r})")
            raw = self.read_buffer(buffer_index, f"{where} ({name!r})")
            metadata[name] = raw.tobytes() if raw is not None else b""
        return metadata

    def read_signature_defs(self, model, subgraphs: Sequence[Subgraph]) -> tuple[SignatureDef, ...]:
        with _reading("the signature def table"):
            count = model.SignatureDefsLength()
        self.check_vector_fits(count, 4, "the signature def table")
        signatures = []
        for i in range(count):
            where = f"signature def {i}"
            with _reading(where):
                entry = model.SignatureDefs(i)
                key = (entry.SignatureKey() or b"").decode("utf-8", errors="replace")
                subgraph_index = entry.SubgraphIndex()
            where = f"signature def {i} ({key!r})"
            self.check_index(subgraph_index, len(subgraphs), "subgraph", where)
            num_tensors = len(subgraphs[subgraph_index].tensors)
            maps = []
            for kind in ("Inputs", "Outputs"):
                with _reading(f"{where} {kind.lower()}"):
                    length = getattr(entry, f"{kind}Length")()
                    self.check_vector_fits(length, 4, f"{where} {kind.lower()}")
                    mapping = {}
                    for j in range(length):
                        tensor_map = getattr(entry, kind)(j)
                        name = (tensor_map.Name() or b"").decode("utf-8", errors="replace")
                        tensor_index = tensor_map.TensorIndex()
                        self.check_index(tensor_index, num_tensors, "tensor", f"{where} {kind.lower()[:-1]} {name!r}")
                        mapping[name] = tensor_index
                maps.append(mapping)
            signatures.append(SignatureDef(key, subgraph_index, maps[0], maps[1]))
        return tuple(signatures)


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
