"""schema.custom_options: FlexBuffer custom options read as TFLite's custom ops read them."""

from __future__ import annotations

import pytest
from flatbuffers import flexbuffers

from schema.custom_options import CustomOptionsError, FlexbufferMap, flexbuffer_bytes


def test_values_round_trip():
    options = FlexbufferMap(flexbuffer_bytes({"window_size": 480, "stride": 160, "magnitude_squared": True}))
    assert (options.as_int64("window_size"), options.as_int64("stride"), options.as_bool("magnitude_squared")) == (480, 160, True)


def test_a_missing_key_reads_as_zero_and_false():
    options = FlexbufferMap(flexbuffer_bytes({"stride": 1}))
    assert (options.as_int64("window_size"), options.as_float("window_size"), options.as_bool("window_size")) == (0, 0.0, False)


def test_as_int64_truncates_floats_toward_zero():
    options = FlexbufferMap(flexbuffer_bytes({"up": 4000.9, "down": -2.7}))
    assert (options.as_int64("up"), options.as_int64("down")) == (4000, -2)


def test_as_bool_is_non_zero():
    options = FlexbufferMap(flexbuffer_bytes({"two": 2, "zero": 0.0}))
    assert (options.as_bool("two"), options.as_bool("zero")) == (True, False)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "custom options are empty"),
        (b"\x00\x01", "not a FlexBuffer"),
        (bytes(flexbuffers.Dumps([1, 2])), "custom options hold a FlexBuffer list, not a map"),
    ],
)
def test_bytes_that_are_not_a_map_are_refused(data, message):
    with pytest.raises(CustomOptionsError, match=message):
        FlexbufferMap(data)


def test_a_string_value_read_as_a_number_is_refused():
    with pytest.raises(CustomOptionsError, match="custom option 'mode' is 'fast', not a number"):
        FlexbufferMap(flexbuffer_bytes({"mode": "fast"})).as_int64("mode")


def test_is_null_tells_a_missing_key_from_a_zero():
    options = FlexbufferMap(flexbuffer_bytes({"detections_per_class": 0}))
    assert (options.is_null("detections_per_class"), options.is_null("use_regular_nms")) == (False, True)


def test_a_list_of_integers_is_written_as_a_typed_vector_as_converters_write_it():
    # MediaPipe reads subset_idxs with AsTypedVector(), which finds nothing in an untyped vector.
    data = flexbuffer_bytes({"subset_idxs": [61, 146, 291], "scale_x": 1.5})
    subset = flexbuffers.GetRoot(data).AsMap["subset_idxs"]
    assert subset.IsTypedVector and subset.AsTypedVector.Value == [61, 146, 291]
    assert FlexbufferMap(data).as_float("scale_x") == 1.5
