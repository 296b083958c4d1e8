"""Write ``.tflite`` models from Python.

>>> builder = ModelBuilder()
>>> graph = builder.subgraph()
>>> x = graph.add_input("x", [1, 8, 8, 3])
>>> w = graph.add_constant("w", np.ones([1, 3, 3, 3], np.float32))
>>> b = graph.add_constant("b", np.zeros([3], np.float32))
>>> y = graph.add_tensor("y", [1, 8, 8, 3])
>>> graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, [x, w, b], [y],
...                    DepthwiseConv2DParams(stride_w=1, stride_h=1, depth_multiplier=1,
...                                          dilation_w_factor=2, dilation_h_factor=2))
>>> graph.add_output(y)
>>> model_bytes = builder.build()

The params types default to TFLite's schema defaults, which are what a file without the
field reads as: strides and ``depth_multiplier`` are 0 there, so a convolution's params
give them (1 for a plain convolution).

Every operator is stamped with the minimum version it needs
(``get_builtin_operator_version``), unless a version is given explicitly, and the
model gets TFLite's ``min_runtime_version`` metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import flatbuffers
import numpy as np

from schema import schema_generated as fb
from schema.enums import BuiltinOperator, TENSOR_TYPE_OF_NUMPY_DTYPE, TensorType, value_dtype
from schema.model import (
    FILE_IDENTIFIER,
    PLACEHOLDER_FOR_GREATER_OP_CODES,
    SCHEMA_VERSION,
    Quantization,
    Tensor,
    encode_string_tensor,
    string_array,
)
from schema.option_parsers import builtin_options_2_of_params, builtin_options_of_params, params_class_of_op
from schema.packed import BITS_OF_PACKED_TYPE, check_values, pack
from schema.versioning.op_signature import op_signature_from_tensors
from schema.versioning.op_version import get_builtin_operator_version
from schema.versioning.runtime_version import get_min_runtime_version

#: Bytes reserved for the ``min_runtime_version`` metadata string (as TFLite does).
MIN_RUNTIME_VERSION_BYTES = 16
#: Alignment of constant buffers in written files.
BUFFER_ALIGNMENT = 16


def quantization(
    scale: float | Sequence[float],
    zero_point: int | Sequence[int] = 0,
    quantized_dimension: int = 0,
) -> Quantization:
    """Quantization parameters from Python numbers (per-tensor or per-channel)."""
    scales = np.atleast_1d(np.asarray(scale, dtype=np.float32))
    zero_points = np.atleast_1d(np.asarray(zero_point, dtype=np.int64))
    if zero_points.size == 1 and scales.size > 1:
        zero_points = np.repeat(zero_points, scales.size)
    return Quantization(scale=scales, zero_point=zero_points, quantized_dimension=quantized_dimension)


@dataclass
class _OperatorRecord:
    builtin_code: int
    custom_name: str | None
    version: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    params: object | None
    custom_options: bytes | None
    intermediates: tuple[int, ...] = ()


@dataclass
class SubgraphBuilder:
    """Tensors and operators of one subgraph, in the order they were added."""

    name: str
    index: int
    tensors: list[Tensor] = field(default_factory=list)
    operators: list[_OperatorRecord] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    def add_tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: int | np.dtype | type = TensorType.FLOAT32,
        *,
        data: np.ndarray | None = None,
        quantization: Quantization | None = None,
        shape_signature: Sequence[int] | None = None,
        is_variable: bool = False,
    ) -> int:
        """Add a tensor and return its index. ``dtype`` is a TensorType or a numpy dtype."""
        tensor_type = _tensor_type(dtype)
        if data is not None:
            if tensor_type == TensorType.STRING:
                data = string_array(data).reshape(tuple(shape))
            else:
                dtype = value_dtype(tensor_type)
                if dtype is None:
                    raise ValueError(f"tensor {name!r}: this runtime holds no values of type {TensorType(tensor_type).name}")
                data = np.ascontiguousarray(data, dtype=dtype).reshape(tuple(shape))
                if tensor_type in BITS_OF_PACKED_TYPE:
                    check_values(data, tensor_type, f"tensor {name!r}")
        self.tensors.append(
            Tensor(
                index=len(self.tensors),
                name=name,
                type=tensor_type,
                shape=tuple(int(d) for d in shape),
                shape_signature=tuple(int(d) for d in shape_signature) if shape_signature is not None else None,
                buffer=0,
                data=data,
                quantization=quantization,
                sparsity=None,
                is_variable=is_variable,
                has_rank=True,
            )
        )
        return len(self.tensors) - 1

    def add_input(self, name: str, shape: Sequence[int], dtype=TensorType.FLOAT32, **kwargs) -> int:
        """Add a tensor and make it an input of the subgraph."""
        index = self.add_tensor(name, shape, dtype, **kwargs)
        self.inputs.append(index)
        return index

    def add_constant(
        self, name: str, value: np.ndarray, *, dtype=None, quantization: Quantization | None = None
    ) -> int:
        """Add a constant tensor holding ``value`` (its dtype gives the tensor type, unless
        ``dtype`` does: ``TensorType.INT4`` / ``INT2`` / ``UINT4`` take integer values, one an
        element, which the file stores packed).

        Strings: a ``bytes`` / ``str`` array, an object array or a list of them, or a single
        ``bytes`` / ``str`` (a 0-d STRING constant); ``str`` is stored as UTF-8.
        """
        if isinstance(value, (bytes, str)) or (dtype is None and _holds_strings(value)):
            value, dtype = string_array(value), TensorType.STRING
        value = np.asarray(value)
        tensor_type = _tensor_type(dtype if dtype is not None else value.dtype)
        return self.add_tensor(name, value.shape, tensor_type, data=value, quantization=quantization)

    def add_output(self, tensor: int) -> None:
        """Mark ``tensor`` as an output of the subgraph."""
        self.outputs.append(tensor)

    def add_operator(
        self,
        op: int | str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        params: object | None = None,
        *,
        version: int | None = None,
        custom_options: bytes | None = None,
        intermediates: Sequence[int] = (),
    ) -> int:
        """Add a node. ``op`` is a BuiltinOperator, or a string for a custom op.

        With ``version=None`` the node is stamped with the minimum version it needs;
        builtin ops given without params get their default params.
        """
        if isinstance(op, str):
            code, custom_name = BuiltinOperator.CUSTOM, op
            stamped = version or 1
        else:
            code, custom_name = int(op), None
            if params is None:
                params = _default_params(code)
            stamped = version if version is not None else self.minimum_version(code, inputs, outputs, params)
        self.operators.append(
            _OperatorRecord(code, custom_name, stamped, tuple(inputs), tuple(outputs), params, custom_options, tuple(intermediates))
        )
        return len(self.operators) - 1

    def minimum_version(self, code: int, inputs: Sequence[int], outputs: Sequence[int], params) -> int:
        """The version ``get_builtin_operator_version`` gives this node."""
        signature = op_signature_from_tensors(
            BuiltinOperator(code),
            params,
            [self.tensors[i] if i >= 0 else None for i in inputs],
            [self.tensors[i] for i in outputs],
        )
        return get_builtin_operator_version(signature)


class ModelBuilder:
    """Builds a whole model: subgraphs, signature defs, metadata."""

    def __init__(self, description: str = "litedelegate") -> None:
        self.description = description
        self.subgraphs: list[SubgraphBuilder] = []
        self.signatures: list[tuple[str, int, dict[str, int], dict[str, int]]] = []
        self.metadata: dict[str, bytes] = {}

    def subgraph(self, name: str | None = None) -> SubgraphBuilder:
        """Add a subgraph (the first one is the main subgraph) and return it."""
        index = len(self.subgraphs)
        graph = SubgraphBuilder(name=name if name is not None else ("main" if index == 0 else f"subgraph_{index}"), index=index)
        self.subgraphs.append(graph)
        return graph

    def add_signature(
        self,
        key: str,
        subgraph: SubgraphBuilder,
        inputs: Mapping[str, int] | None = None,
        outputs: Mapping[str, int] | None = None,
    ) -> None:
        """Add a signature def; by default it names the subgraph's inputs/outputs by tensor name."""
        inputs = dict(inputs) if inputs is not None else {subgraph.tensors[i].name: i for i in subgraph.inputs}
        outputs = dict(outputs) if outputs is not None else {subgraph.tensors[i].name: i for i in subgraph.outputs}
        self.signatures.append((key, subgraph.index, inputs, outputs))

    def add_metadata(self, name: str, value: bytes) -> None:
        self.metadata[name] = bytes(value)

    def min_runtime_version(self) -> str:
        """TFLite's minimum runtime version for the (op, version) pairs of this model."""
        pairs = {
            (record.builtin_code, record.version)
            for graph in self.subgraphs
            for record in graph.operators
            if record.builtin_code != BuiltinOperator.CUSTOM
        }
        return get_min_runtime_version(pairs)

    def build(self) -> bytes:
        """Serialize to ``.tflite`` bytes (schema version 3, identifier TFL3)."""
        if not self.subgraphs:
            raise ValueError("a model needs at least one subgraph")
        model = fb.ModelT()
        model.version = SCHEMA_VERSION
        model.description = self.description
        buffers = [_AlignedBufferT()]  # buffer 0 is the empty sentinel, by convention
        opcode_index: dict[tuple[int, str | None, int], int] = {}
        model.operatorCodes = []
        model.subgraphs = []
        for graph in self.subgraphs:
            model.subgraphs.append(self._subgraph_t(graph, buffers, opcode_index, model.operatorCodes))
        metadata = dict(self.metadata)
        if "min_runtime_version" not in metadata:
            version = self.min_runtime_version().encode("ascii")
            metadata["min_runtime_version"] = version.ljust(MIN_RUNTIME_VERSION_BYTES, b"\0")
        model.metadata = []
        for name, value in metadata.items():
            entry = fb.MetadataT()
            entry.name = name
            entry.buffer = _append_buffer(buffers, np.frombuffer(value, dtype=np.uint8))
            model.metadata.append(entry)
        model.signatureDefs = [self._signature_t(*signature) for signature in self.signatures]
        model.buffers = buffers
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
        return bytes(builder.Output())

    def _subgraph_t(self, graph: SubgraphBuilder, buffers, opcode_index, operator_codes) -> fb.SubGraphT:
        subgraph = fb.SubGraphT()
        subgraph.name = graph.name
        subgraph.tensors = [_tensor_t(tensor, buffers) for tensor in graph.tensors]
        subgraph.inputs = list(graph.inputs)
        subgraph.outputs = list(graph.outputs)
        subgraph.operators = []
        for record in graph.operators:
            key = (record.builtin_code, record.custom_name, record.version)
            if key not in opcode_index:
                opcode_index[key] = len(operator_codes)
                operator_codes.append(_operator_code_t(*key))
            operator = fb.OperatorT()
            operator.opcodeIndex = opcode_index[key]
            operator.inputs = list(record.inputs)
            operator.outputs = list(record.outputs)
            if record.intermediates:
                operator.intermediates = list(record.intermediates)
            if record.builtin_code != BuiltinOperator.CUSTOM:
                operator.builtinOptionsType, operator.builtinOptions = builtin_options_of_params(
                    record.builtin_code, record.params
                )
                operator.builtinOptions2Type, operator.builtinOptions2 = builtin_options_2_of_params(
                    record.builtin_code, record.params
                )
            if record.custom_options is not None:
                operator.customOptions = list(record.custom_options)
            subgraph.operators.append(operator)
        return subgraph

    @staticmethod
    def _signature_t(key: str, subgraph_index: int, inputs: dict, outputs: dict) -> fb.SignatureDefT:
        signature = fb.SignatureDefT()
        signature.signatureKey = key
        signature.subgraphIndex = subgraph_index
        signature.inputs = [_tensor_map_t(name, index) for name, index in inputs.items()]
        signature.outputs = [_tensor_map_t(name, index) for name, index in outputs.items()]
        return signature


class _AlignedBufferT(fb.BufferT):
    """A BufferT whose data vector starts on a ``BUFFER_ALIGNMENT`` boundary."""

    def Pack(self, builder):  # noqa: N802 (generated-code naming)
        data_offset = None
        if self.data is not None and len(self.data):
            payload = self.data.tobytes()
            builder.StartVector(1, len(payload), BUFFER_ALIGNMENT)
            builder.head -= len(payload)
            builder.Bytes[builder.head : builder.head + len(payload)] = payload
            builder.vectorNumElems = len(payload)
            data_offset = builder.EndVector()
        fb.BufferStart(builder)
        if data_offset is not None:
            fb.BufferAddData(builder, data_offset)
        return fb.BufferEnd(builder)


def _append_buffer(buffers: list, raw: np.ndarray) -> int:
    buffer = _AlignedBufferT()
    buffer.data = np.ascontiguousarray(raw, dtype=np.uint8).ravel()
    buffers.append(buffer)
    return len(buffers) - 1


def _tensor_t(tensor: Tensor, buffers: list) -> fb.TensorT:
    entry = fb.TensorT()
    entry.name = tensor.name
    entry.type = tensor.type
    entry.shape = list(tensor.shape)
    if tensor.shape_signature is not None:
        entry.shapeSignature = list(tensor.shape_signature)
    entry.isVariable = tensor.is_variable
    if tensor.data is not None:
        if tensor.type == TensorType.STRING:
            raw = np.frombuffer(encode_string_tensor(tensor.data), dtype=np.uint8)
        elif tensor.type in BITS_OF_PACKED_TYPE:
            raw = pack(tensor.data, tensor.type)
        else:
            raw = np.ascontiguousarray(tensor.data).view(np.uint8).ravel()
        entry.buffer = _append_buffer(buffers, raw)
    else:
        # Activations and variables each get an empty buffer of their own, as the
        # converter does (some tools assume buffer indices are not shared).
        buffers.append(_AlignedBufferT())
        entry.buffer = len(buffers) - 1
    if tensor.quantization is not None:
        q = fb.QuantizationParametersT()
        q.scale = [float(s) for s in tensor.quantization.scale]
        q.zeroPoint = [int(z) for z in tensor.quantization.zero_point]
        q.quantizedDimension = int(tensor.quantization.quantized_dimension)
        if tensor.quantization.min is not None:
            q.min = [float(v) for v in tensor.quantization.min]
        if tensor.quantization.max is not None:
            q.max = [float(v) for v in tensor.quantization.max]
        entry.quantization = q
    return entry


def _operator_code_t(builtin_code: int, custom_name: str | None, version: int) -> fb.OperatorCodeT:
    code = fb.OperatorCodeT()
    code.builtinCode = builtin_code
    code.deprecatedBuiltinCode = min(builtin_code, PLACEHOLDER_FOR_GREATER_OP_CODES)
    code.version = version
    if custom_name is not None:
        code.customCode = custom_name
    return code


def _tensor_map_t(name: str, index: int) -> fb.TensorMapT:
    entry = fb.TensorMapT()
    entry.name = name
    entry.tensorIndex = index
    return entry


def _tensor_type(dtype) -> int:
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        return int(dtype)
    dtype = np.dtype(dtype)
    if dtype.kind in "SU":  # bytes / str arrays (np.bytes_, as LiteRT reports STRING)
        return TensorType.STRING
    return TENSOR_TYPE_OF_NUMPY_DTYPE[dtype]


def _holds_strings(value) -> bool:
    """Whether a constant given without a dtype is strings (bytes/str, or an object array
    or list of them)."""
    array = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
    if array.dtype.kind in "SU":
        return True
    if array.dtype != np.object_ or array.size == 0:
        return False
    return all(isinstance(item, (bytes, str)) for item in array.reshape(-1).tolist())


def _default_params(code: int):
    params_class = params_class_of_op(code)
    return params_class() if params_class is not None else None
