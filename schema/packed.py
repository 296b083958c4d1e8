"""The sub-byte tensor types (INT4, INT2, UINT4): packed in files, one value an element in memory.

A ``.tflite`` file packs these types densely, as TFLite's converter and
``tensor_utils::PackInt8IntoDenseInt`` do: two int4 (or uint4) values a byte, four int2
values a byte, the first value in the lowest bits, the last byte padded with zeros. This
runtime holds them unpacked, one value in each int8 (INT4, INT2) or uint8 (UINT4) element,
as LiteRT's Python API shows them (``get_tensor`` of an INT4 tensor is an int8 array of
values in [-8, 7]): the model reader unpacks constant buffers (:func:`unpack`), the builder
packs them (:func:`pack`), and kernels compute on the values directly (TFLite's kernels
unpack with ``UnpackDenseInt4IntoInt8`` / ``UnpackPackedIntToInt8`` before computing too).
"""

from __future__ import annotations

import numpy as np

from schema.enums import TensorType, tensor_type_name

__all__ = ["BITS_OF_PACKED_TYPE", "VALUE_RANGE_OF_PACKED_TYPE", "pack", "packed_size", "unpack", "check_values"]

#: The packed sub-byte types and their widths in bits.
BITS_OF_PACKED_TYPE: dict[int, int] = {TensorType.INT4: 4, TensorType.INT2: 2, TensorType.UINT4: 4}

#: The values each packed type holds, inclusive.
VALUE_RANGE_OF_PACKED_TYPE: dict[int, tuple[int, int]] = {
    TensorType.INT4: (-8, 7),
    TensorType.INT2: (-2, 1),
    TensorType.UINT4: (0, 15),
}


def packed_size(tensor_type: int, count: int) -> int:
    """Bytes that ``count`` values of ``tensor_type`` take packed."""
    per_byte = 8 // BITS_OF_PACKED_TYPE[tensor_type]
    return -(-count // per_byte)


def check_values(values: np.ndarray, tensor_type: int, where: str) -> None:
    """Raise ``ValueError`` unless every value fits ``tensor_type`` (what LiteRT's ``set_tensor`` says)."""
    low, high = VALUE_RANGE_OF_PACKED_TYPE[tensor_type]
    if values.size and (int(values.min()) < low or int(values.max()) > high):
        raise ValueError(f"Values for {tensor_type_name(tensor_type)} {where} must be between {low} and {high}.")


def pack(values: np.ndarray, tensor_type: int) -> np.ndarray:
    """The file bytes (uint8) of ``values`` (any integer array, C order) as ``tensor_type``.

    Raises:
      ValueError: a value does not fit the type.
    """
    values = np.asarray(values).ravel()
    check_values(values, tensor_type, "data")
    bits = BITS_OF_PACKED_TYPE[tensor_type]
    per_byte = 8 // bits
    fields = (values.astype(np.int64) & ((1 << bits) - 1)).astype(np.uint8)
    fields = np.concatenate([fields, np.zeros(packed_size(tensor_type, values.size) * per_byte - values.size, np.uint8)])
    fields = fields.reshape(-1, per_byte)
    shifts = (np.arange(per_byte) * bits).astype(np.uint8)
    return np.bitwise_or.reduce(fields << shifts, axis=1).astype(np.uint8)


def unpack(raw: np.ndarray, tensor_type: int, count: int) -> np.ndarray:
    """The first ``count`` values packed in ``raw`` (uint8 bytes), one an element: int8 for
    INT4 and INT2 (sign-extended), uint8 for UINT4."""
    bits = BITS_OF_PACKED_TYPE[tensor_type]
    per_byte = 8 // bits
    shifts = (np.arange(per_byte) * bits).astype(np.uint8)
    fields = ((np.asarray(raw, np.uint8)[:, None] >> shifts) & ((1 << bits) - 1)).ravel()[:count]
    if tensor_type == TensorType.UINT4:
        return fields.astype(np.uint8)
    sign = 1 << (bits - 1)  # sign extension: (field ^ sign) - sign
    return ((fields.astype(np.int16) ^ sign) - sign).astype(np.int8)
