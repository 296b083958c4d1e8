"""Python enums for the schema's enum types, taken from the generated code.

The enums are built from ``schema_generated`` so they can never disagree with
``schema.fbs``: adding an operator to the schema adds it here.
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np

from schema import schema_generated as fb


def _enum_from_generated(name: str, generated_class: type) -> type[enum.IntEnum]:
    members = {
        key: value
        for key, value in vars(generated_class).items()
        if not key.startswith("_") and isinstance(value, int)
    }
    return enum.IntEnum(name, members)


BuiltinOperator = _enum_from_generated("BuiltinOperator", fb.BuiltinOperator)
BuiltinOptions = _enum_from_generated("BuiltinOptions", fb.BuiltinOptions)
BuiltinOptions2 = _enum_from_generated("BuiltinOptions2", fb.BuiltinOptions2)
TensorType = _enum_from_generated("TensorType", fb.TensorType)
Padding = _enum_from_generated("Padding", fb.Padding)
ActivationFunctionType = _enum_from_generated("ActivationFunctionType", fb.ActivationFunctionType)
QuantizationDetails = _enum_from_generated("QuantizationDetails", fb.QuantizationDetails)
LSHProjectionType = _enum_from_generated("LSHProjectionType", fb.LSHProjectionType)
FullyConnectedOptionsWeightsFormat = _enum_from_generated(
    "FullyConnectedOptionsWeightsFormat", fb.FullyConnectedOptionsWeightsFormat
)
MirrorPadMode = _enum_from_generated("MirrorPadMode", fb.MirrorPadMode)
CombinerType = _enum_from_generated("CombinerType", fb.CombinerType)
ReduceWindowFunction = _enum_from_generated("ReduceWindowFunction", fb.ReduceWindowFunction)
RngAlgorithm = _enum_from_generated("RngAlgorithm", fb.RngAlgorithm)
CustomOptionsFormat = _enum_from_generated("CustomOptionsFormat", fb.CustomOptionsFormat)
StablehloPrecisionConfig = _enum_from_generated("StablehloPrecisionConfig", fb.StablehloPrecisionConfig)
StablehloComparisonDirection = _enum_from_generated("StablehloComparisonDirection", fb.StablehloComparisonDirection)
StablehloComparisonType = _enum_from_generated("StablehloComparisonType", fb.StablehloComparisonType)

#: TensorType -> numpy dtype, for every type that has a numpy equivalent.
NUMPY_DTYPE_OF_TENSOR_TYPE: dict[int, np.dtype] = {
    TensorType.FLOAT32: np.dtype(np.float32),
    TensorType.FLOAT16: np.dtype(np.float16),
    TensorType.FLOAT64: np.dtype(np.float64),
    TensorType.INT8: np.dtype(np.int8),
    TensorType.UINT8: np.dtype(np.uint8),
    TensorType.INT16: np.dtype(np.int16),
    TensorType.UINT16: np.dtype(np.uint16),
    TensorType.INT32: np.dtype(np.int32),
    TensorType.UINT32: np.dtype(np.uint32),
    TensorType.INT64: np.dtype(np.int64),
    TensorType.UINT64: np.dtype(np.uint64),
    TensorType.BOOL: np.dtype(np.bool_),
    TensorType.COMPLEX64: np.dtype(np.complex64),
    TensorType.COMPLEX128: np.dtype(np.complex128),
    TensorType.BFLOAT16: np.dtype(ml_dtypes.bfloat16),  # numpy has no bfloat16: ml_dtypes' (dtype.kind "V")
    TensorType.STRING: np.dtype(np.object_),
    TensorType.RESOURCE: np.dtype(np.int32),
    TensorType.VARIANT: np.dtype(np.object_),
}

#: numpy dtype -> TensorType (the inverse map, for the types a user can feed).
TENSOR_TYPE_OF_NUMPY_DTYPE: dict[np.dtype, int] = {
    dtype: tensor_type
    for tensor_type, dtype in NUMPY_DTYPE_OF_TENSOR_TYPE.items()
    if tensor_type not in (TensorType.STRING, TensorType.RESOURCE, TensorType.VARIANT)
}
TENSOR_TYPE_OF_NUMPY_DTYPE[np.dtype(np.object_)] = TensorType.STRING


#: The packed sub-byte types (``schema.packed``) -> the dtype that holds one value an
#: element in memory (what LiteRT's Python API reports for them, too).
UNPACKED_DTYPE_OF_PACKED_TYPE: dict[int, np.dtype] = {
    TensorType.INT4: np.dtype(np.int8),
    TensorType.INT2: np.dtype(np.int8),
    TensorType.UINT4: np.dtype(np.uint8),
}


def value_dtype(tensor_type: int) -> np.dtype | None:
    """The numpy dtype this runtime holds values of ``tensor_type`` in: :func:`numpy_dtype`,
    or for the packed sub-byte types int8 / uint8, one value an element; None for the types
    it cannot hold (FLOAT8...)."""
    dtype = NUMPY_DTYPE_OF_TENSOR_TYPE.get(tensor_type)
    return dtype if dtype is not None else UNPACKED_DTYPE_OF_PACKED_TYPE.get(tensor_type)


def numpy_dtype(tensor_type: int) -> np.dtype:
    """The numpy dtype that holds values of ``tensor_type``.

    Raises:
      ValueError: the type has no numpy representation (INT4, INT2, UINT4, FLOAT8...; see
        :func:`value_dtype` for the sub-byte types).
    """
    try:
        return NUMPY_DTYPE_OF_TENSOR_TYPE[tensor_type]
    except KeyError:
        raise ValueError(
            f"tensor type {tensor_type_name(tensor_type)} has no numpy representation in this runtime"
        ) from None


def tensor_type_name(tensor_type: int) -> str:
    """``TensorType`` name for an int, or ``'UNKNOWN(<n>)'``."""
    try:
        return TensorType(tensor_type).name
    except ValueError:
        return f"UNKNOWN({tensor_type})"


def builtin_operator_name(code: int) -> str:
    """``BuiltinOperator`` name for an int, or ``'UNKNOWN_BUILTIN(<n>)'``."""
    try:
        return BuiltinOperator(code).name
    except ValueError:
        return f"UNKNOWN_BUILTIN({code})"
