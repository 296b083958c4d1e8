"""The testing helpers: delegate_sdk.testing imports nothing above delegate_sdk (issue 18,
item 9); assert_matches_cpu's tolerances per dtype pass correct delegates on the bundled
real models and say where and by how much a wrong one differs (item 6); check_delegate
tests every declared cap in one call (item 1)."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from backends.gpu import GpuDelegate
from delegate_sdk import SimpleDelegate
from delegate_sdk.testing import ReferenceDelegate, ReferenceDelegateKernel, assert_declared_caps, single_op_model
from interpreter.testing import DEFAULT_TOLERANCES, assert_matches_cpu, check_delegate
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType

ROOT = pathlib.Path(__file__).resolve().parents[2]
REAL_FLOAT_MODELS = sorted((ROOT / "tests" / "data" / "models" / "real").glob("mp_*.tflite"))
sys.path.insert(0, str(ROOT))
from examples.toy_npu import ToyNpu  # noqa: E402


# -- item 9: imports point one way ------------------------------------------------------------------


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", sorted((ROOT / "delegate_sdk").glob("*.py")), ids=lambda p: p.name)
def test_delegate_sdk_imports_nothing_above_it(path):
    assert not _imports(path) & {"interpreter", "backends"}, f"{path.name} imports upward"


def test_importing_the_testing_helpers_loads_no_interpreter():
    code = ("import sys, delegate_sdk.testing; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('interpreter', 'backends')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("name", ["assert_matches_cpu", "run_model", "check_delegate"])
def test_the_helpers_that_run_models_say_where_they_moved(name):
    with pytest.raises(ImportError, match=f"delegate_sdk.testing.{name} moved to interpreter.testing .*"
                       f"from interpreter.testing import {name}"):
        exec(f"from delegate_sdk.testing import {name}")  # noqa: S102
    import delegate_sdk.testing

    assert not hasattr(delegate_sdk.testing, "no_such_helper")


# -- item 6: tolerances ----------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [ToyNpu, lambda: GpuDelegate(device="host")], ids=["ToyNpu", "GpuDelegate-host"])
@pytest.mark.parametrize("path", REAL_FLOAT_MODELS, ids=lambda p: p.stem)
def test_correct_delegates_pass_the_default_tolerance_on_the_real_float_models(path, make):
    """Both sum in other orders than the CPU kernels (ToyNpu: one product over patches)."""
    interpreter = assert_matches_cpu(path.read_bytes(), make)
    assert interpreter.delegation_report.num_delegated > 50


def test_the_old_default_tolerance_failed_on_a_real_model_from_summation_order_alone():
    palm = ROOT / "tests" / "data" / "models" / "real" / "mp_palm_detection_lite.tflite"
    with pytest.raises(AssertionError, match=r"invoke 1, output 0 'Identity': \d+ of 36288 element\(s\) differ beyond "
                       r"rtol=1e-05, atol=1e-06") as caught:
        assert_matches_cpu(palm.read_bytes(), lambda: GpuDelegate(device="host"), rtol=1e-5, atol=1e-6, invokes=1,
                           localize=False)
    assert "first node that differs" not in str(caught.value)  # localize=False: no node-by-node search


class Off(ReferenceDelegateKernel):
    """Right, except one element of its output (a stand-in for a real bug)."""

    def eval(self, context, node):
        super().eval(context, node)
        out = context.tensors[node.outputs[0]].data
        out.reshape(-1)[4] += 0.5 if out.dtype.kind == "f" else 3


def off_by(table):
    class OffDelegate(ReferenceDelegate):
        kernel_class = Off

    return lambda: OffDelegate(table, name="Off")


def test_a_failure_says_where_and_by_how_much():
    with pytest.raises(AssertionError) as caught:
        assert_matches_cpu(single_op_model(B.ADD, 1), off_by({B.ADD: 1}), invokes=1)
    message = str(caught.value)
    assert "the delegated outputs differ from the CPU's" in message
    assert "invoke 1, output 0 'z': 1 of 6 element(s) differ beyond rtol=0.0001, atol=1e-06, scaled_atol=1e-05" in message
    assert "worst at (1, 1): got " in message and "|difference| 0.5 where" in message


def test_integer_outputs_must_be_equal():
    with pytest.raises(AssertionError, match=r"1 of 6 element\(s\) differ \(exact\); the largest difference, 3, at \(1, 1\)"):
        assert_matches_cpu(single_op_model(B.ADD, 4), off_by({B.ADD: 4}), invokes=1)  # int64


def test_the_defaults_are_per_dtype():
    assert DEFAULT_TOLERANCES["float32"].scaled_atol > 0 and "int8" not in DEFAULT_TOLERANCES


# -- item 1: one call tests every declared cap -------------------------------------------------------


def test_check_delegate_on_the_toy_npu():
    report = check_delegate(ToyNpu)
    outcomes = {row.label: row.outcome for row in report.rows}
    assert outcomes["DEPTHWISE_CONV_2D v1"] == "taken" and outcomes["DEPTHWISE_CONV_2D v2"] == "refused"
    assert outcomes["FULLY_CONNECTED v2"] == "refused"
    assert all(row.ran for row in report.rows if row.outcome == "taken")


class Int8Only(SimpleDelegate):
    """Declares ADD up to 2 but takes int8 only: v1 (float32) is left by its predicate."""

    name = "Int8Only"
    support_table = {B.ADD: 2}
    kernel_class = ReferenceDelegateKernel

    def node_rejection_reason(self, context, node, registration):
        return None if context.tensors[node.inputs[0]].type == TensorType.INT8 else "int8 only"


def test_declared_versions_the_predicate_leaves_are_reported_and_fail_when_strict():
    report = assert_declared_caps(Int8Only)
    assert [(r.label, r.outcome) for r in report.rows] == [
        ("ADD v1", "left by the predicate"), ("ADD v2", "taken"), ("ADD v3", "refused")]
    with pytest.raises(AssertionError, match=r"ADD v1 \(float32\) is declared but left: ADD v1: int8 only"):
        assert_declared_caps(Int8Only, strict=True)


def test_a_version_set_is_checked_inside_and_above():
    report = assert_declared_caps(lambda: ReferenceDelegate({B.DEPTHWISE_CONV_2D: frozenset({1, 3})}, name="Gappy"))
    assert [(r.label, r.outcome) for r in report.rows] == [
        ("DEPTHWISE_CONV_2D v1", "taken"), ("DEPTHWISE_CONV_2D v2", "refused"), ("DEPTHWISE_CONV_2D v3", "taken"),
        ("DEPTHWISE_CONV_2D v4", "refused")]


class Careless(SimpleDelegate):
    """Overrides the SDK's check and takes every version of what it lists."""

    name = "Careless"
    support_table = {B.ADD: 1}
    kernel_class = ReferenceDelegateKernel

    def rejection_reason(self, context, node, registration):
        return None if registration.builtin_code == B.ADD else "not ADD"


def test_a_delegate_that_takes_a_version_above_its_cap_fails_the_check():
    with pytest.raises(AssertionError, match=r"ADD v2 \(int8 quantized\) is not declared, so it must be refused with "
                       r"'ADD v2: max version supported by Careless is 1', but it was taken"):
        assert_declared_caps(Careless)


def test_check_delegate_runs_the_taken_recipes_against_the_cpu():
    with pytest.raises(AssertionError, match=r"the delegate's outputs differ from the CPU's on recipe models:\nADD v1"):
        check_delegate(off_by({B.ADD: 1}))


def test_infinities_and_nans_neither_widen_nor_break_the_comparison():
    from interpreter.testing import _compare

    tolerance = DEFAULT_TOLERANCES["float32"]
    expected = np.array([np.inf, -np.inf, np.nan, 1.0, 2.0], np.float32)
    assert _compare(expected.copy(), expected, tolerance, "here") is None
    off = expected.copy()
    off[3] = 1.5
    assert "1 of 5 element(s) differ" in _compare(off, expected, tolerance, "here")
    off = expected.copy()
    off[4] = np.nan
    assert "1 NaN(s) where the CPU has a number" in _compare(off, expected, tolerance, "here")
