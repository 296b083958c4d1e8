"""SVDF against ai-edge-litert's BUILTIN_REF kernel, over several invokes in a row (the
state, a variable tensor, keeps the last ``memory`` activations of every filter).

Float and hybrid within 1e-5 (the time-filter dot products are float sums, in another
order than TFLite's loops); int8 (v3) bit-exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_invokes_match_litert

from delegate_sdk.context import KernelError
from delegate_sdk.recipes.sequence import svdf_model
from interpreter import Interpreter
from schema.enums import ActivationFunctionType

Act = ActivationFunctionType
EXACT = {"rtol": 0, "atol": 0}


def invokes(model: bytes, count: int = 6, seed: int = 1) -> list[list[np.ndarray]]:
    """``count`` sets of random inputs (more invokes than the memory is long, so old
    activations drop out of the state)."""
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(count):
        row = []
        for detail in Interpreter(model_content=model).get_input_details():
            if detail["dtype"] == np.int8:
                row.append(rng.integers(-128, 128, detail["shape"]).astype(np.int8))
            else:
                row.append(rng.uniform(-2, 2, detail["shape"]).astype(np.float32))
        sets.append(row)
    return sets


def check(model: bytes, **tolerance) -> None:
    assert_invokes_match_litert(model, invokes(model), **tolerance)


@pytest.mark.parametrize("rank, memory", [(1, 1), (2, 5), (3, 4)])
def test_svdf_float_is_v1_and_matches_litert_over_invokes(rank, memory):
    model = svdf_model(rank=rank, memory=memory)
    assert stamped_version(model) == 1
    check(model)


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU6, Act.TANH])
def test_svdf_float_activation_matches_litert(activation):
    check(svdf_model(activation=activation))


def test_svdf_float_without_bias_matches_litert():
    check(svdf_model(bias=False))


def test_svdf_hybrid_is_v2_and_matches_litert():
    model = svdf_model(kind="hybrid", input_size=20)
    assert stamped_version(model) == 2
    check(model)


def test_svdf_hybrid_asymmetric_inputs_is_v4_and_matches_litert():
    model = svdf_model(kind="hybrid", asymmetric=True, input_size=20)
    assert stamped_version(model) == 4
    check(model)


@pytest.mark.parametrize("rank, memory, bias", [(2, 5, True), (1, 1, True), (3, 2, False)])
def test_svdf_int8_is_v3_and_matches_litert_bit_for_bit(rank, memory, bias):
    model = svdf_model(kind="int8", rank=rank, memory=memory, bias=bias)
    assert stamped_version(model) == 3
    check(model, **EXACT)


def test_svdf_int8_without_relu_is_refused_as_by_litert():
    model = svdf_model(kind="int8", activation=Act.NONE)
    with pytest.raises(KernelError, match="SVDF v3.*RELU activation"):
        Interpreter(model_content=model).allocate_tensors()
