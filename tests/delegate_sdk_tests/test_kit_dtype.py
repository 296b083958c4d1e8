"""The kit's ``dtype=`` (issue 35): numpy dtypes and scalar types, ``TensorType`` members and
strings all name a tensor type; anything else is a TypeError that says what is accepted.

The author's call of the issue, ``assert_takes_versions_up_to(MyDsp, CONV_2D, max_version=3,
dtype=np.int8)``, failed with ``TypeError: 'type' object is not iterable``.
"""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.recipes import dtype_name, single_op_model, typed_recipes
from delegate_sdk.testing import DTYPE_FORMS, assert_declared_caps, assert_takes_versions_up_to
from schema.enums import BuiltinOperator as B, TensorType
from test_typed_recipes import TinyDsp

INT8_FORMS = [np.int8, np.dtype("int8"), np.dtype(np.int8), TensorType.INT8, "int8", "INT8"]


@pytest.mark.parametrize("form", INT8_FORMS, ids=repr)
def test_every_form_of_int8_names_int8(form):
    assert dtype_name(form) == "int8"


@pytest.mark.parametrize("form,name", [
    (np.float32, "float32"), (TensorType.FLOAT32, "float32"), ("float32", "float32"),
    (np.uint8, "uint8"), (TensorType.INT16, "int16"), (np.bool_, "bool"), (TensorType.BOOL, "bool"),
])
def test_numpy_types_and_tensor_types_name_the_same_types(form, name):
    assert dtype_name(form) == name


@pytest.mark.parametrize("form", [np.int8, np.dtype("int8"), TensorType.INT8], ids=repr)
def test_assert_takes_versions_up_to_takes_np_int8_as_it_takes_the_string(form):
    cap = TinyDsp.support_table[B.CONV_2D]
    assert assert_takes_versions_up_to(TinyDsp, B.CONV_2D, max_version=cap, dtype=form) == \
        assert_takes_versions_up_to(TinyDsp, B.CONV_2D, max_version=cap, dtype="int8")


def test_several_types_may_be_given_in_any_form():
    checks = assert_takes_versions_up_to(TinyDsp, B.ADD, max_version=2, dtype=[np.int8, TensorType.INT8])
    assert {c.dtype for c in checks if c.outcome == "taken"} == {"int8"}  # one type, named twice


def test_the_other_dtype_arguments_take_every_form_too():
    assert typed_recipes(B.CONV_2D, np.int8) == typed_recipes(B.CONV_2D, "int8")
    assert single_op_model(B.CONV_2D, 3, TensorType.INT8) == single_op_model(B.CONV_2D, 3, "int8")
    report = assert_declared_caps(TinyDsp, dtype=np.int8)
    assert {r.dtype for r in report.rows if r.outcome == "taken"} == {"int8"}


@pytest.mark.parametrize("bad", [9, 9.0, float, int, object(), None.__class__, b"int8"], ids=repr)
def test_anything_else_is_a_type_error_naming_what_is_accepted(bad):
    with pytest.raises(TypeError) as caught:
        assert_takes_versions_up_to(TinyDsp, B.CONV_2D, max_version=3, dtype=bad)
    message = str(caught.value)
    assert DTYPE_FORMS in message and repr(bad) in message
    assert "np.int8" in message and "TensorType.INT8" in message and "'int8'" in message


def test_a_string_that_names_no_type_is_a_value_error():
    with pytest.raises(ValueError, match="'int9' names no tensor type"):
        assert_takes_versions_up_to(TinyDsp, B.CONV_2D, max_version=3, dtype="int9")


def test_an_empty_list_of_types_is_refused():
    with pytest.raises(ValueError, match="empty list"):
        assert_takes_versions_up_to(TinyDsp, B.CONV_2D, max_version=3, dtype=[])
