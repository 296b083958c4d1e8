"""``interpreter.testing.quantized_reference``: a node's prepared integer arithmetic.

Each test rebuilds the node's output from the published parameters alone, with the
formula ``RESCALING_SCHEMES`` names, and must give the CPU kernel's bits (the CPU kernels
are bit-exact with LiteRT's BUILTIN_REF: tests/test_int8_models.py) on the kit's
bit-exact int8 models.
"""

from __future__ import annotations


import numpy as np
import pytest

from backends.cpu.quantization import multiply_by_quantized_multiplier
from delegate_sdk.testing import single_op_model
from interpreter.testing import RESCALING_SCHEMES, quantized_reference
from schema.enums import BuiltinOperator as B
from schema.model import Model


def _constants(model: bytes):
    subgraph = Model.from_bytes(model).subgraphs[0]
    return [subgraph.tensors[i] for i in subgraph.operators[0].inputs]


def _c_round(values: np.ndarray) -> np.ndarray:
    return np.where(values >= 0, np.floor(values + 0.5), np.ceil(values - 0.5)).astype(np.int64)


def test_fully_connected_rescales_in_double():
    model = single_op_model(B.FULLY_CONNECTED, 4, "int8")
    ref = quantized_reference(model, 0)
    assert ref.scheme == "double" and "double" in ref.formula and ref.multipliers is None
    _, w, b = _constants(model)
    x = np.random.default_rng(3).integers(-128, 128, (8, 64)).astype(np.int8)
    acc = (x.astype(np.int64) - ref.params["in_zp"]) @ (np.asarray(w.data, np.int64) - ref.params["w_zp"]).T + np.asarray(b.data, np.int64)
    mine = np.clip(_c_round(acc * np.asarray(ref.real_scale, np.float64)) + ref.output_zero_point, ref.low, ref.high)
    np.testing.assert_array_equal(mine.astype(np.int8), ref.reference(x)[0])


def test_add_shifts_left_by_20_and_rescales_to_twice_the_larger_scale():
    model = single_op_model(B.ADD, 2, "int8")
    ref = quantized_reference(model, 0)
    assert ref.scheme == "add-sub" and ref.params["left_shift"] == 20
    (s1,), (s2,) = ref.input_scales
    twice = 2 * max(s1, s2)
    for (multiplier, shift), real in ((ref.params["m1"], s1 / twice), (ref.params["m2"], s2 / twice),
                                      (ref.params["mo"], twice / (2**20 * ref.output_scale))):
        assert multiplier * 2.0**shift / 2**31 == pytest.approx(real, rel=1e-6)
    rng = np.random.default_rng(4)
    a, b = (rng.integers(-128, 128, (1, 8, 8, 8)).astype(np.int8) for _ in range(2))
    off1, off2, zo = ref.params["offsets"]
    left = multiply_by_quantized_multiplier((a.astype(np.int64) + off1) << 20, *ref.params["m1"])
    right = multiply_by_quantized_multiplier((b.astype(np.int64) + off2) << 20, *ref.params["m2"])
    mine = np.clip(multiply_by_quantized_multiplier(left + right, *ref.params["mo"]) + zo, ref.low, ref.high)
    np.testing.assert_array_equal(mine.astype(np.int8), ref.reference(a, b)[0])


def test_conv_publishes_one_fixed_point_multiplier_per_channel():
    model = single_op_model(B.CONV_2D, 3, "int8")
    ref = quantized_reference(model, 0)
    assert ref.scheme == "fixed-point" and ref.multipliers.shape == ref.shifts.shape == (8,)
    w_scales = ref.input_scales[1]
    for multiplier, shift, w_scale in zip(ref.multipliers, ref.shifts, w_scales):
        real = float(np.float32(ref.input_scales[0][0])) * w_scale / ref.output_scale
        assert int(multiplier) * 2.0 ** int(shift) / 2**31 == pytest.approx(real, rel=1e-6)


def test_a_float_node_has_no_integer_reference():
    with pytest.raises(ValueError, match="no quantized integer output"):
        quantized_reference(single_op_model(B.ADD, 1), 0)


def test_every_scheme_has_its_formula():
    assert set(RESCALING_SCHEMES) == {"double", "fixed-point", "add-sub", "power-of-two", "other"}
