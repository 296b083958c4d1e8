"""STRING tensors at the Python API: what ``set_tensor`` takes and ``get_tensor`` gives.

Inside the runtime a STRING tensor is a numpy object array of ``bytes`` (one element per
string, any length, any bytes). At the API the rules are LiteRT's (its
``interpreter_wrapper.cc`` ``SetTensor`` and ``python_utils.cc``
``FillStringBufferWithPyArray``), checked against ai-edge-litert in
``tests/cpu/test_strings.py``:

- ``get_input_details()`` reports the dtype ``numpy.bytes_``; ``get_tensor`` returns an
  object array of ``bytes`` of the tensor's shape (0-d for a scalar);
- ``set_tensor`` takes a numpy array whose dtype is ``S`` (bytes), ``U`` (str) or object;
  any other dtype is "Got value of type ... but expected type STRING". The value must be
  an ndarray itself: a list, a bare ``bytes`` or ``str`` is "Passed in value type is not a
  numpy array, got type list." (after the dtype and shape checks, as in LiteRT);
- each element of an array of rank >= 1, in C order, becomes one string: ``bytes`` as they
  are, ``str`` encoded as UTF-8. Elements of ``S`` / ``U`` arrays are numpy's items, so
  trailing NULs are dropped (numpy's fixed-width padding); an object array keeps them.
  Any other element (int, None, bytearray) is LiteRT's "PyBytes_AsStringAndSize() failed.";
- a 0-d ``S`` or ``U`` array is stored as its raw buffer, as LiteRT does: NUL padding
  included (``np.array(b"hi", "S6")`` is ``b"hi\\0\\0\\0\\0"``) and, for ``U``, the UCS-4
  code units (``np.array("ab")`` is ``b"a\\0\\0\\0b\\0\\0\\0"``). A 0-d object array is the
  one place this runtime differs: LiteRT stores the 8 bytes of the element's *pointer*
  (garbage); here the element is converted like any other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: numpy dtype kinds that LiteRT maps to kTfLiteString (object, bytes, str).
STRING_KINDS = "OSU"


def is_string_value(array: np.ndarray) -> bool:
    """Whether LiteRT takes an array of this dtype as STRING (object, ``S`` or ``U``)."""
    return array.dtype.kind in STRING_KINDS


def strings_for_tensor(given: Any, array: np.ndarray) -> np.ndarray:
    """The object array of ``bytes`` that ``set_tensor(index, given)`` stores in a STRING
    tensor; ``array`` is ``np.asarray(given)`` (already checked for dtype and shape).

    Raises:
      ValueError: ``given`` is not an ndarray, or an element is neither bytes nor str
        (LiteRT's messages, with what was wrong).
    """
    if not isinstance(given, np.ndarray):
        raise ValueError(
            f"Passed in value type is not a numpy array, got type {_type_name(given)}. "
            "(A STRING tensor takes a numpy array of bytes, str or objects, as in LiteRT: "
            "wrap it in np.array(...).)"
        )
    if array.ndim == 0 and array.dtype.kind in "SU":
        value = np.empty((), dtype=object)
        value[()] = array.tobytes()  # the raw buffer, as LiteRT's AddString(PyArray_DATA, NBYTES)
        return value
    items = array.reshape(-1).tolist()
    for position, item in enumerate(items):
        if isinstance(item, str):
            try:
                items[position] = item.encode("utf-8")
            except UnicodeEncodeError as error:
                raise ValueError(
                    f"PyUnicode_AsUTF8AndSize() failed. (element {position} of the value, {item!r}, "
                    f"has no UTF-8 encoding: {error.reason})"
                ) from None
        elif isinstance(item, bytes):
            items[position] = bytes(item)
        else:
            raise ValueError(
                f"PyBytes_AsStringAndSize() failed. (element {position} of the value is "
                f"{type(item).__name__} {item!r}; a STRING tensor takes bytes or str)"
            )
    strings = np.empty(len(items), dtype=object)
    strings[:] = items
    return strings.reshape(array.shape)


def holds_unset_strings(data: np.ndarray) -> bool:
    """Whether a STRING tensor's array still has elements never written (None)."""
    return any(item is None for item in data.reshape(-1).tolist())


def _type_name(value: Any) -> str:
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module.split('.')[0]}.{kind.__qualname__}"
