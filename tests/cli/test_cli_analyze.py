"""``litedelegate analyze``: placements checked by applying the delegate for real, and the graph files."""

from __future__ import annotations

import shutil

import pytest

from backends.cpu import builtin_op_resolver
from cli_helpers import DWCONV_DIL2, FACE_DETECTION, MINI_MOBILENET_INT8, dot_counts, html_counts, svg_counts
from delegate_sdk.op_resolver import find_unresolved_operators
from interpreter.cli.analysis import analyze
from interpreter.cli.common import load_model, make_delegate
from interpreter.cli import graph
from interpreter.cli.graph import to_dot, to_html, to_svg
from schema.enums import BuiltinOperator
from schema.model import Model

CAPPED_REASON = "DEPTHWISE_CONV_2D v2: max version supported by GpuDelegate is 1 (capped by options)"


def test_capping_depthwise_at_v1_leaves_the_dilated_node_on_the_cpu_with_the_reason(cli):
    result = cli("analyze", "--delegate", "gpu-host", "--cap", "DEPTHWISE_CONV_2D=1")
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("0  DEPTHWISE_CONV_2D v2"))
    assert " CPU " in row and CAPPED_REASON in row
    assert "summary: 7 of 8 node(s) on GpuDelegate in 1 partition(s), 1 on the CPU, 0 that nothing can run" in result.stdout
    assert "version caps: DEPTHWISE_CONV_2D<=v1" in result.stdout


def test_capped_analysis_as_json(cli):
    result = cli("analyze", "--delegate", "gpu-host", "--cap", "depthwise_conv_2d=1", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["method"] == "interpreter"
    assert data["delegate"]["version_caps"] == {"DEPTHWISE_CONV_2D": 1}
    assert data["summary"] == {"nodes": 8, "delegated": 7, "cpu": 1, "unsupported": 0, "partitions": 1, "no_cpu_kernel": 0}
    nodes = data["subgraphs"][0]["nodes"]
    assert (nodes[0]["op"], nodes[0]["version"], nodes[0]["runs_on"]) == ("DEPTHWISE_CONV_2D", 2, "CPU")
    assert nodes[0]["why_not_delegated"] == [CAPPED_REASON]
    assert all(n["runs_on"] == "GpuDelegate" and n["partition"] == 0 for n in nodes[1:])
    (partition,) = data["subgraphs"][0]["partitions"]
    assert partition["nodes"] == list(range(1, 8)) and len(partition["inputs"]) == 1 and len(partition["outputs"]) == 1
    assert data["min_runtime_version"]["tflite"] == "1.12.0"


def test_dilated_converter_model_goes_to_the_gpu_with_shapes_and_types(cli, tmp_path):
    result = cli("analyze", DWCONV_DIL2, "--delegate", "gpu-host", "--json", "--graph", tmp_path / "g.dot")
    assert result.returncode == 0, result.stderr
    data = result.json()
    nodes = data["subgraphs"][0]["nodes"]
    assert [(n["op"], n["version"], n["runs_on"]) for n in nodes] == [("DEPTHWISE_CONV_2D", 2, "GpuDelegate")] * 2
    model = Model.from_path(DWCONV_DIL2)
    for node, operator in zip(nodes, model.subgraphs[0].operators):
        assert [t["shape"] for t in node["inputs"]] == [list(model.subgraphs[0].tensors[i].shape) for i in operator.inputs]
        assert node["outputs"][0]["type"] == "FLOAT32"
    assert data["size"]["file_bytes"] == DWCONV_DIL2.stat().st_size
    assert dot_counts((tmp_path / "g.dot").read_text()) == (2, 1)


def test_real_model_analysis_and_its_svg(cli, tmp_path):
    svg = tmp_path / "face.svg"
    result = cli("analyze", FACE_DETECTION, "--delegate", "gpu-host", "--json", "--graph", svg)
    assert result.returncode == 0, result.stderr
    data = result.json()
    summary = data["summary"]
    assert summary["nodes"] == 164 and summary["unsupported"] == 0
    assert summary["delegated"] + summary["cpu"] == 164
    nodes = data["subgraphs"][0]["nodes"]
    assert sum(1 for n in nodes if n["op"] == "DEQUANTIZE") == 74
    assert svg_counts(svg.read_text()) == (164, summary["partitions"])


def test_analyze_works_on_a_model_the_cpu_cannot_fully_run(cli):
    """int8 kernels may be missing: analyze reports them (from the resolver) instead of crashing."""
    model = Model.from_path(MINI_MOBILENET_INT8)
    missing = {u.node for u in find_unresolved_operators(model, builtin_op_resolver())}
    result = cli("analyze", MINI_MOBILENET_INT8, "--delegate", "gpu-host", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    nodes = data["subgraphs"][0]["nodes"]
    assert [(n["op"], n["version"]) for n in nodes] == [(op.op_name, op.version) for op in model.subgraphs[0].operators]
    assert {n["index"] for n in nodes if not n["cpu_kernel"]} == missing
    assert data["method"] == ("dry run" if missing else "interpreter")
    for node in nodes:
        if node["runs_on"] != "GpuDelegate":
            assert node["why_not_delegated"], node
            assert (node["runs_on"] is None) == (not node["cpu_kernel"]), node


def test_a_custom_op_without_kernel_is_reported_as_runnable_nowhere(built_models):
    analysis = analyze(load_model(str(built_models["custom_op"])), make_delegate("none"))
    assert analysis.method == "dry run"
    add, custom = analysis.nodes
    assert (add.runs_on, add.cpu_kernel) == ("CPU", True)
    assert (custom.op, custom.runs_on, custom.cpu_kernel) == ("MyMissingOp", None, False)
    assert "no kernel for MyMissingOp" in custom.why_not_elsewhere[0]
    nodes, partitions = html_counts(to_html(analysis))
    assert (nodes, partitions) == (2, 0)


def test_every_subgraph_is_analyzed_and_drawn(cli, built_models, tmp_path):
    page = tmp_path / "if.html"
    result = cli("analyze", built_models["if"], "--delegate", "gpu-host", "--json", "--graph", page)
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert [len(s["nodes"]) for s in data["subgraphs"]] == [1, 1, 1]
    assert data["subgraphs"][0]["nodes"][0]["op"] == "IF"
    assert html_counts(page.read_text()) == (3, data["summary"]["partitions"])


def test_cpu_only_analysis_has_no_partitions(cli):
    result = cli("analyze", "--delegate", "none", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["summary"]["cpu"] == 8 and data["summary"]["partitions"] == 0
    assert all(not n["why_not_delegated"] for n in data["subgraphs"][0]["nodes"])


def test_our_own_svg_html_and_dot_count_the_same_nodes_and_partitions():
    choice = make_delegate("gpu-host", {BuiltinOperator.CONV_2D: 0})  # CONV_2D off the GPU: 3 partitions
    analysis = analyze(load_model(None), choice)
    assert [n.runs_on for n in analysis.nodes].count("CPU") == 2
    expected = (8, len(analysis.partitions))
    assert expected[1] == 3
    assert svg_counts(to_svg(analysis)) == expected
    assert html_counts(to_html(analysis)) == expected
    assert dot_counts(to_dot(analysis)) == expected


def test_svg_without_graphviz_is_drawn_by_our_layout(monkeypatch, tmp_path):
    monkeypatch.setattr(graph.shutil, "which", lambda name: None)
    analysis = analyze(load_model(None), make_delegate("gpu-host", {BuiltinOperator.DEPTHWISE_CONV_2D: 1}))
    note = graph.write_graph(analysis, tmp_path / "g.svg")
    assert "not installed" in note
    assert svg_counts((tmp_path / "g.svg").read_text()) == (8, 1)


def test_svg_through_graphviz_when_it_is_installed(tmp_path):
    if shutil.which("dot") is None:
        pytest.skip("graphviz (dot) is not installed")
    analysis = analyze(load_model(None), make_delegate("gpu-host", {BuiltinOperator.DEPTHWISE_CONV_2D: 1}))
    assert graph.write_graph(analysis, tmp_path / "g.svg") == "rendered by graphviz"
    assert svg_counts((tmp_path / "g.svg").read_text()) == (8, 1)


def test_excluded_ops_stay_on_the_cpu_with_the_reason():
    analysis = analyze(load_model(None), make_delegate("gpu-host", excluded=[BuiltinOperator.ADD]))
    add = next(n for n in analysis.nodes if n.op == "ADD")
    assert add.runs_on == "CPU" and add.why_not_delegated == ["ADD v1: excluded by the GpuDelegate options"]
    assert len(analysis.partitions) == 2


def test_rich_output_on_a_terminal(cli):
    pytest.importorskip("rich")
    result = cli("analyze", "--delegate", "gpu-host", "--cap", "DEPTHWISE_CONV_2D=1", env={"LITEDELEGATE_RICH": "1", "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "max version supported by GpuDelegate is 1" in result.stdout and "\x1b[" in result.stdout
