"""``litedelegate ops``: the CPU resolver's ops, versions and kernels; ``--compare-litert``."""

from __future__ import annotations

import json

import pytest

from backends.cpu import builtin_op_resolver
from interpreter.cli import main
from interpreter.cli.ops import format_versions


def run_json(capsys, *args) -> dict:
    assert main(["ops", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_ops_json_is_the_resolver_listing(capsys):
    data = run_json(capsys)
    listed = builtin_op_resolver().list_ops()
    assert data["builtins"] == [entry.to_json() for entry in listed if not entry.is_custom]
    assert data["custom"] == [entry.to_json() for entry in listed if entry.is_custom]
    assert data["totals"]["builtin_ops"] == len(data["builtins"]) > 100
    assert data["totals"]["builtin_versions"] == len(builtin_op_resolver().registered_builtins())


def test_each_op_lists_the_kernels_that_run_each_version(capsys):
    ops = {entry["op"]: entry for entry in run_json(capsys)["builtins"]}
    add = ops["ADD"]
    assert add["versions"] == [1, 2, 3, 4, 5, 6]
    kernels = {k["kernel"]: k["versions"] for k in add["kernels"]}
    assert kernels == {"backends.cpu.kernels.binary_quantized.QuantizedAddSub": [1, 2, 3],
                       "backends.cpu.kernels.binary.Add": [1, 4, 5, 6]}
    assert ops["DEPTHWISE_CONV_2D"]["versions"] == [1, 2, 3, 4, 5, 6, 7]


def test_custom_ops_are_listed_after_the_builtins(capsys):
    data = run_json(capsys)
    (custom,) = [c for c in data["custom"] if c["op"] == "Convolution2DTransposeBias"]
    assert custom["custom"] and custom["versions"] == [1]
    assert custom["kernels"] == [{"kernel": "backends.cpu.kernels.mediapipe_custom.Convolution2DTransposeBias", "versions": [1]}]


def test_ops_prints_a_table_with_version_ranges(cli):
    result = cli("ops")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("litedelegate CPU builtins: ") and " builtin ops (" in lines[0]
    (add,) = [line for line in lines if line.startswith("ADD ")]
    assert add.split()[1] == "1-6" and "binary.Add (1, 4-6)" in add and "binary_quantized.QuantizedAddSub (1-3)" in add
    assert any(line.startswith("Convolution2DTransposeBias (custom)") for line in lines)


def test_format_versions_joins_runs():
    assert format_versions([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8"
    assert format_versions([]) == ""


def test_compare_litert_lists_what_litert_runs_and_what_is_missing_here(capsys):
    pytest.importorskip("ai_edge_litert")
    comparison = run_json(capsys, "--compare-litert")["litert"]
    rows = {row["op"]: row for row in comparison["ops"]}
    assert rows["ADD_N"] == {"op": "ADD_N", "kind": "builtin", "litedelegate": [1], "litert": [1], "litert_ref": [1],
                             "missing": []}
    assert rows["DYNAMIC_UPDATE_SLICE"]["litedelegate"] == [1, 2, 3, 4, 5, 6]
    assert rows["DYNAMIC_UPDATE_SLICE"]["missing"] == []
    from test_op_coverage import KNOWN_GAPS  # what is still missing is listed there

    for op, versions in list(KNOWN_GAPS.items())[:3]:
        assert rows[op]["missing"] == list(versions), op
    assert rows["CONV_2D"]["litert"][:6] == [1, 2, 3, 4, 5, 6] and 1 not in rows["CONV_2D"]["missing"]
    assert rows["CEIL"]["litert_ref"] == [] and rows["CEIL"]["missing"] == []
    assert rows["STABLEHLO_ADD"]["kind"] == "stablehlo"
    assert rows["TFLite_Detection_PostProcess"]["kind"] == "custom" and rows["TFLite_Detection_PostProcess"]["litert"] == [1]
    assert rows["Convolution2DTransposeBias"]["litert"] == []  # MediaPipe's: only here
    builtin = comparison["totals"]["builtin"]
    assert builtin["covered_versions"] + builtin["missing_versions"] == builtin["litert_versions"]


def test_compare_litert_without_litert_is_one_clear_error(monkeypatch, capsys):
    from interpreter.cli import litert_ops

    def missing():
        raise litert_ops.LiteRTUnavailableError("ai-edge-litert is not installed (pip install ai-edge-litert)")

    monkeypatch.setattr(litert_ops, "litert_package_version", missing)
    assert main(["ops", "--compare-litert"]) == 1
    assert "LiteRTUnavailableError: ai-edge-litert is not installed" in capsys.readouterr().err
