"""Op signatures: everything the versioning rules look at for one node.

This mirrors TFLite's ``OpSignature`` / ``GetOpSignature``
(``tensorflow/compiler/mlir/lite/tools/versioning/op_signature.{h,cc}``): the
operator, a summary of each input and output tensor (type, shape, constness,
quantization), the parsed options ("params") and the few derived facts TFLite
keeps in ``ext_options`` (here the dict ``ext``).

``op_signature_from_tensors`` builds a signature from duck-typed tensors, so that
the read view (``schema.model``) and the builder (``schema.builder``) can both use
it. A tensor object must have:

    type            int (TensorType)
    shape           tuple of ints
    shape_signature tuple of ints or None (dynamic when any entry is -1)
    is_constant     bool
    quantization    None, or an object with ``scale`` (1-D float array),
                    ``zero_point`` (1-D int array), ``quantized_dimension`` (int)
    data            numpy array or None (the constant value; not read by the
                    current rules, which only look at shapes and quantization)

and may have ``sparsity`` (None unless the constant is stored sparse; read with
``getattr`` for FULLY_CONNECTED's ``sparse_weight``).

``None`` in an inputs list is an omitted optional input (index -1 in the file).
TFLite keeps such inputs in the signature as a ``kTfLiteNoType`` entry, so
``len(signature.inputs)`` counts them too (FULLY_CONNECTED without bias has 3
inputs, not 2, and stays below version 6).

"Quantized" in ``ext`` (``input_quantized``) means the tensor has at least one
quantization scale. TFLite's flatbuffer path tests only whether the
``quantization`` table exists; converters write an empty table on plain tensors,
and the read view reports an empty table as ``None``, so testing for scales gives
what the converter means (a quantized type) on both kinds of file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from schema.enums import BuiltinOperator

__all__ = [
    "QuantizationSignature",
    "TensorSignature",
    "OpSignature",
    "op_signature_from_tensors",
    "tensor_signature",
]


@dataclass(frozen=True)
class QuantizationSignature:
    """The quantization facts the versioning rules need from one tensor."""

    scales: tuple[float, ...]
    zero_points: tuple[int, ...] = ()
    quantized_dimension: int = 0

    @property
    def num_scales(self) -> int:
        return len(self.scales)

    @property
    def is_per_channel(self) -> bool:
        return len(self.scales) > 1


@dataclass(frozen=True)
class TensorSignature:
    """One input or output of a node, as TFLite's ``OpSignatureTensorSpec``."""

    type: int
    shape: tuple[int, ...] | None
    is_const: bool = False
    is_shape_dynamic: bool = False
    quantization: QuantizationSignature | None = None

    @property
    def rank(self) -> int:
        """Number of dimensions (0 when the shape is unknown, as TFLite's empty dims)."""
        return len(self.shape) if self.shape is not None else 0

    @property
    def is_quantized(self) -> bool:
        return self.quantization is not None and self.quantization.num_scales > 0


@dataclass
class OpSignature:
    """What ``get_builtin_operator_version`` decides on.

    ``ext`` holds TFLite's ``ext_options`` under their TFLite field names, filled
    for exactly the ops TFLite's ``GetOpSignature`` fills (see ``_EXT_OPTIONS``).
    """

    op: BuiltinOperator
    inputs: list[TensorSignature | None]
    outputs: list[TensorSignature]
    params: object | None = None
    version: int = 1
    ext: dict[str, object] = field(default_factory=dict)


def tensor_signature(tensor: Any) -> TensorSignature | None:
    """The signature of one duck-typed tensor (``None`` for an omitted input)."""
    if tensor is None:
        return None
    shape = None if tensor.shape is None else tuple(int(d) for d in tensor.shape)
    shape_signature = tensor.shape_signature
    return TensorSignature(
        type=int(tensor.type),
        shape=shape,
        is_const=bool(tensor.is_constant),
        is_shape_dynamic=shape_signature is not None and any(int(d) == -1 for d in shape_signature),
        quantization=_quantization_signature(tensor.quantization),
    )


def op_signature_from_tensors(
    op: int,
    params: object | None,
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    *,
    version: int = 1,
) -> OpSignature:
    """Build the signature of a node from its params and duck-typed tensors."""
    op = BuiltinOperator(op)
    fill_ext = _EXT_OPTIONS.get(op)
    return OpSignature(
        op=op,
        inputs=[tensor_signature(t) for t in inputs],
        outputs=[tensor_signature(t) for t in outputs],
        params=params,
        version=version,
        ext=fill_ext(list(inputs), list(outputs)) if fill_ext is not None else {},
    )


# --- quantization and shape helpers on duck-typed tensors -----------------------


def _quantization_signature(quantization: Any) -> QuantizationSignature | None:
    if quantization is None:
        return None
    scales = np.asarray(getattr(quantization, "scale", ()), dtype=np.float64).ravel()
    zero_points = getattr(quantization, "zero_point", None)
    zero_points = () if zero_points is None else np.asarray(zero_points).ravel()
    return QuantizationSignature(
        scales=tuple(float(s) for s in scales),
        zero_points=tuple(int(z) for z in zero_points),
        quantized_dimension=int(getattr(quantization, "quantized_dimension", 0) or 0),
    )


def _at(tensors: Sequence[Any], index: int) -> Any:
    """tensors[index], or None when the list is too short (or the input omitted)."""
    return tensors[index] if 0 <= index < len(tensors) else None


def _num_scales(tensor: Any) -> int:
    if tensor is None or tensor.quantization is None:
        return 0
    return int(np.asarray(tensor.quantization.scale).size)


def _first_scale(tensor: Any) -> float:
    return float(np.asarray(tensor.quantization.scale).ravel()[0])


def _has_scales(tensor: Any) -> bool:
    return _num_scales(tensor) > 0


def _dim(tensor: Any, axis: int) -> int | None:
    """shape[axis], or None when the tensor or that dimension is missing."""
    if tensor is None or tensor.shape is None or not 0 <= axis < len(tensor.shape):
        return None
    return int(tensor.shape[axis])


def _rank(tensor: Any) -> int:
    if tensor is None or tensor.shape is None:
        return 0
    return len(tensor.shape)


def _scales_match_dim(tensor: Any, axis: int) -> bool:
    """TFLite's ``IsTensorSizeEqual(scale size, shape[axis])``."""
    size = _dim(tensor, axis)
    return size is not None and size >= 0 and _num_scales(tensor) == size


# --- ext_options, per op, as TFLite's GetOpSignature fills them ------------------


def _conv_2d_ext(inputs: list, outputs: list) -> dict[str, object]:
    data, filters = _at(inputs, 0), _at(inputs, 1)
    num_filters = _dim(filters, 0)
    per_channel = num_filters is not None and num_filters > 0 and _num_scales(filters) == num_filters
    # Grouped when the input has more channels than one filter sees (NHWC vs OHWI).
    input_channels, filter_channels = _dim(data, 3), _dim(filters, 3)
    grouped = input_channels is not None and filter_channels is not None and input_channels != filter_channels
    return {"is_per_channel_quantized": per_channel, "is_grouped_convolution": grouped}


def _depthwise_conv_2d_ext(inputs: list, outputs: list) -> dict[str, object]:
    filters = _at(inputs, 1)
    num_channels = _dim(filters, 3)
    per_channel = num_channels is not None and num_channels > 0 and _num_scales(filters) == num_channels
    return {"is_per_channel_quantized": per_channel}


def _fully_connected_ext(inputs: list, outputs: list) -> dict[str, object]:
    weights = _at(inputs, 1)
    per_channel = False
    if _has_scales(weights) and _rank(weights) > 0:
        per_channel = _scales_match_dim(weights, 0)
    return {
        "sparse_weight": weights is not None and getattr(weights, "sparsity", None) is not None,
        "is_per_channel_quantized": per_channel,
    }


def _mul_ext(inputs: list, outputs: list) -> dict[str, object]:
    ext: dict[str, object] = {
        "input1_scale": 0.0,
        "input2_scale": 0.0,
        "output_scale": 0.0,
        "input_quantized": False,
    }
    if len(inputs) < 2 or len(outputs) < 1:
        return ext
    first, second, output = inputs[0], inputs[1], outputs[0]
    if _has_scales(first) and _has_scales(second) and _has_scales(output):
        ext["input1_scale"] = _first_scale(first)
        ext["input2_scale"] = _first_scale(second)
        ext["output_scale"] = _first_scale(output)
    ext["input_quantized"] = _has_scales(first) or _has_scales(second)
    return ext


def _strided_slice_ext(inputs: list, outputs: list) -> dict[str, object]:
    return {"num_dims": _rank(_at(inputs, 0))}


def _input_quantized_ext(inputs: list, outputs: list) -> dict[str, object]:
    return {"input_quantized": _has_scales(_at(inputs, 0))}


def _per_channel_along_quantized_dimension(tensor: Any) -> bool:
    if _num_scales(tensor) <= 1:
        return False
    return _scales_match_dim(tensor, int(tensor.quantization.quantized_dimension))


def _dequantize_ext(inputs: list, outputs: list) -> dict[str, object]:
    return {"is_per_channel_quantized": _per_channel_along_quantized_dimension(_at(inputs, 0))}


def _quantize_ext(inputs: list, outputs: list) -> dict[str, object]:
    return {"is_per_channel_quantized": _per_channel_along_quantized_dimension(_at(outputs, 0))}


def _embedding_lookup_ext(inputs: list, outputs: list) -> dict[str, object]:
    table = _at(inputs, 1)
    per_channel = False
    if _has_scales(table) and _rank(table) > 0:
        per_channel = _num_scales(table) > 1 and _scales_match_dim(table, 0)
    return {"is_per_channel_quantized": per_channel}


_EXT_OPTIONS: dict[BuiltinOperator, Callable[[list, list], dict[str, object]]] = {
    BuiltinOperator.CONV_2D: _conv_2d_ext,
    BuiltinOperator.DEPTHWISE_CONV_2D: _depthwise_conv_2d_ext,
    BuiltinOperator.FULLY_CONNECTED: _fully_connected_ext,
    BuiltinOperator.MUL: _mul_ext,
    BuiltinOperator.STRIDED_SLICE: _strided_slice_ext,
    BuiltinOperator.ABS: _input_quantized_ext,
    BuiltinOperator.ADD: _input_quantized_ext,
    BuiltinOperator.DEQUANTIZE: _dequantize_ext,
    BuiltinOperator.QUANTIZE: _quantize_ext,
    BuiltinOperator.EMBEDDING_LOOKUP: _embedding_lookup_ext,
}
