"""Custom options in FlexBuffers, as TFLite's custom ops read them (``AudioSpectrogram``,
``Mfcc``, ``TFLite_Detection_PostProcess``...): a map of named scalars.

TFLite reads each field with ``m["name"].AsInt64()`` / ``AsFloat()`` / ``AsBool()``: a missing
key reads as 0 / false, a float read as an integer is truncated toward zero, a number read
as a bool is ``value != 0``. ``FlexbufferMap`` gives the same readings, so a kernel sees what
TFLite's sees; ``flexbuffer_bytes`` writes such a map (for building models).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from flatbuffers import flexbuffers

__all__ = ["CustomOptionsError", "FlexbufferMap", "flexbuffer_bytes"]


class CustomOptionsError(ValueError):
    """The custom options of a node cannot be read."""


class FlexbufferMap:
    """The FlexBuffer map of a node's custom options, read as TFLite reads it.

    Raises:
      CustomOptionsError: ``data`` is empty, not a FlexBuffer, or not a map (and the
        reading methods, for a key that holds something other than a number).
    """

    def __init__(self, data: bytes | None) -> None:
        raw = bytes(data or b"")
        if not raw:
            raise CustomOptionsError("custom options are empty; a FlexBuffer map is required")
        try:
            root = flexbuffers.Loads(raw)
        except Exception as error:  # the reader raises several types on bad bytes
            raise CustomOptionsError(f"custom options are not a FlexBuffer ({type(error).__name__}: {error})") from None
        if not isinstance(root, dict):
            raise CustomOptionsError(f"custom options hold a FlexBuffer {type(root).__name__}, not a map")
        self.values: dict = root

    def _number(self, key: str) -> float | int:
        value = self.values.get(key)
        if value is None:
            return 0
        if isinstance(value, (bool, int, float)):
            return value
        raise CustomOptionsError(f"custom option {key!r} is {value!r}, not a number")

    def is_null(self, key: str) -> bool:
        """``IsNull``: the key is missing (or holds null); kernels use it for defaults."""
        return self.values.get(key) is None

    def as_int64(self, key: str) -> int:
        """``AsInt64``: 0 when missing, floats truncated toward zero."""
        return int(self._number(key))

    def as_float(self, key: str) -> float:
        """``AsFloat``: 0.0 when missing."""
        return float(self._number(key))

    def as_bool(self, key: str) -> bool:
        """``AsBool``: false when missing, else ``value != 0``."""
        return self._number(key) != 0


def flexbuffer_bytes(values: Mapping[str, bool | int | float | Sequence[int]]) -> bytes:
    """A FlexBuffer map of ``values``, as a converter writes custom options: a list or tuple
    of integers becomes a typed vector of ints (what ``AsTypedVector()`` reads; MediaPipe's
    ``subset_idxs``), anything else a scalar."""
    builder = flexbuffers.Builder()
    with builder.Map():
        for key, value in values.items():
            builder.Key(key)
            if isinstance(value, (list, tuple)):
                builder.TypedVectorFromElements([int(v) for v in value], element_type=flexbuffers.Type.INT)
            else:
                builder.Add(value)
    return bytes(builder.Finish())
