"""STABLEHLO_PAD (v1) against ai-edge-litert (BUILTIN_REF): edge padding, cropping (negative
edges, also through interior padding), interior padding, empty inputs and outputs, every
type, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import BuiltinOperator as B
from schema.params import StablehloPadParams


def pad_model(shape, low, high, interior, dtype=np.float32, value=-1):
    params = StablehloPadParams(edge_padding_low=tuple(low), edge_padding_high=tuple(high), interior_padding=tuple(interior))
    return single_op_model(B.STABLEHLO_PAD, [In(shape, dtype), Const(np.array(value, dtype))], Out(None, dtype), params)


def numbered(shape, dtype=np.float32) -> np.ndarray:
    return (np.arange(int(np.prod(shape))) + 1).astype(dtype).reshape(shape)


@pytest.mark.parametrize("shape, low, high, interior", [
    ([3], [1], [2], [0]),
    ([3], [1], [2], [1]),
    ([3], [-2], [0], [1]),  # cropping into the interior padding
    ([5], [-1], [-2], [0]),
    ([5], [-2], [-1], [2]),
    ([2, 3], [1, -1], [0, 2], [1, 2]),
    ([2, 3, 4], [0, 0, 0], [0, 0, 0], [0, 0, 0]),
    ([1, 2, 3, 2], [1, 0, 2, 0], [0, 1, -1, 3], [0, 3, 0, 1]),
])
def test_pad_matches_litert(shape, low, high, interior):
    model = pad_model(shape, low, high, interior)
    assert stamped_version(model) == 1
    assert_matches_litert(model, [numbered(shape)])


@pytest.mark.parametrize("shape, low, high, interior, out_shape", [
    ([3], [-3], [-3], [0], [0]),  # a negative size
    ([2, 3], [0, -3], [0, 0], [0, 0], [0, 0]),  # one axis of size 0 empties them all
    ([2, 3], [-1, 0], [-1, 0], [0, 0], [0, 0]),
    ([0], [1], [1], [1], [2]),  # an empty input: only padding (no interior for no element)
])
def test_pad_with_empty_inputs_or_outputs_gives_litert_s_shapes(shape, low, high, interior, out_shape):
    outputs = assert_matches_litert(pad_model(shape, low, high, interior), [numbered(shape)])
    assert list(outputs[0].shape) == out_shape


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float64, np.bool_,
                                   np.complex64], ids=lambda d: np.dtype(d).name)
def test_pad_of_each_type_matches_litert(dtype):
    value = True if dtype == np.bool_ else 7
    assert_matches_litert(pad_model([2, 3], [1, 0], [0, 1], [1, 1], dtype, value), [numbered([2, 3], dtype)])


def refused(model, pattern: str) -> None:
    with pytest.raises(KernelError, match=pattern):
        Interpreter(model_content=model).allocate_tensors()


def test_negative_interior_padding_is_refused_as_litert_does():
    model = single_op_model(B.STABLEHLO_PAD, [In([3]), Const(np.array(0, np.float32))], Out([3]),
                            StablehloPadParams(edge_padding_low=(0,), edge_padding_high=(0,), interior_padding=(-1,)))
    refused(model, r"node 0 \(STABLEHLO_PAD v1\).*interior_padding \[-1\] must not be negative")


def test_padding_vectors_of_another_length_than_the_rank_are_refused():
    model = single_op_model(B.STABLEHLO_PAD, [In([2, 3]), Const(np.array(0, np.float32))], Out([2, 3]),
                            StablehloPadParams(edge_padding_low=(0,), edge_padding_high=(0, 0), interior_padding=(0, 0)))
    refused(model, r"STABLEHLO_PAD v1: edge_padding_low is \[0\]; it must hold one value per input axis \(2\)")


def test_absent_padding_vectors_are_refused():
    # (LiteRT's parser reads them without checking: it crashes on such a file.)
    model = single_op_model(B.STABLEHLO_PAD, [In([3]), Const(np.array(0, np.float32))], Out([3]), StablehloPadParams())
    refused(model, r"STABLEHLO_PAD v1: edge_padding_low is None; it must hold one value per input axis \(1\)")


def test_a_padding_value_of_another_type_is_refused():
    model = single_op_model(B.STABLEHLO_PAD, [In([3]), Const(np.array(0, np.int32))], Out([3]),
                            StablehloPadParams(edge_padding_low=(0,), edge_padding_high=(0,), interior_padding=(0,)))
    refused(model, r"STABLEHLO_PAD v1: padding_value 'c1' has type INT32; this kernel supports FLOAT32")


def test_a_padding_value_of_several_elements_is_refused():
    model = single_op_model(B.STABLEHLO_PAD, [In([3]), Const(np.zeros(2, np.float32))], Out([3]),
                            StablehloPadParams(edge_padding_low=(0,), edge_padding_high=(0,), interior_padding=(0,)))
    refused(model, r"STABLEHLO_PAD v1: padding_value 'c1' has 2 elements; it must hold one")
