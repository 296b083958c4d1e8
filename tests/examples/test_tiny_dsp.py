"""TinyDSP, the int8-only example delegate: its caps proven in int8 with the SDK's recipes
alone, bit-exact with the CPU path (itself bit-exact with LiteRT's BUILTIN_REF) on five
real int8 models, intermediates included; and the kit's bit-exact models catch a TinyDSP
whose FULLY_CONNECTED rescales in fixed point."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

from delegate_sdk.testing import assert_takes_versions_up_to
from interpreter.testing import assert_matches_cpu, check_delegate, diff
from schema.enums import BuiltinOperator as B

sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "examples"))
import tiny_dsp  # noqa: E402
from tiny_dsp import TinyDsp, TinyDspKernel  # noqa: E402

REAL = pathlib.Path(__file__).parents[1] / "data" / "models" / "real"
INT8_MODELS = sorted(REAL.glob("*int8*.tflite"))


@pytest.mark.parametrize("op", sorted(TinyDsp.support_table, key=int), ids=lambda op: B(op).name)
def test_every_int8_version_up_to_the_cap_is_taken_and_the_next_refused(op):
    checks = assert_takes_versions_up_to(TinyDsp, op, TinyDsp.support_table[op])  # the type is inferred: int8
    assert [c.outcome for c in checks if c.outcome in ("taken", "refused")] == ["taken", "refused"]


def test_check_delegate_in_int8():
    report = check_delegate(TinyDsp, dtype="int8", strict=True)
    assert sum(row.ran for row in report.rows) == 4


@pytest.mark.parametrize("path", INT8_MODELS, ids=lambda p: p.stem)
def test_bit_exact_on_the_real_int8_models_intermediates_included(path):
    interpreter = assert_matches_cpu(path.read_bytes(), TinyDsp, invokes=3, intermediates=True)
    assert any(p.delegated for p in interpreter.node_placements())


def _fixed_point_fully_connected(context, node):
    """The mistake: FULLY_CONNECTED rescaled like a convolution (MultiplyByQuantizedMultiplier)."""
    x, w, b = (context.tensors[t] for t in node.inputs[:3])
    y = context.tensors[node.outputs[0]]
    weights = w.data.astype(np.int64)

    def run(x_value):
        acc = (x_value.reshape(-1, weights.shape[1]).astype(np.int64) - tiny_dsp._zero_point(x)) @ weights.T
        acc = acc + b.data.astype(np.int64)
        return tiny_dsp._requantize_per_channel(acc, x, w, y, node.params.fused_activation_function).reshape(y.shape)

    return run


class FixedPointKernel(TinyDspKernel):
    ops = {**TinyDspKernel.ops, B.FULLY_CONNECTED: _fixed_point_fully_connected}


class FixedPointTinyDsp(TinyDsp):
    kernel_class = FixedPointKernel


def test_the_kits_bit_exact_models_catch_a_fixed_point_fully_connected():
    with pytest.raises(AssertionError, match=r"(?s)FULLY_CONNECTED v4 \(bit-exact.*differ \(exact\).*"
                       r"first node that differs .*node 0 FULLY_CONNECTED v4 on TinyDsp \(kernel _fixed_point_fully_connected\)"):
        check_delegate(FixedPointTinyDsp, dtype="int8")


def test_diff_of_tinydsp_on_a_real_model_is_clean():
    report = diff((REAL / "mltk_keyword_spotting_alexa_int8.tflite").read_bytes(), TinyDsp, invokes=2)
    assert report.ok and report.delegated_nodes == 53
