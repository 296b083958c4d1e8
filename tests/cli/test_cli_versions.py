"""``litedelegate versions``: declared vs minimum versions, older releases, ``--rewrite``."""

from __future__ import annotations

import numpy as np

from cli_helpers import DWCONV_DIL2, MINI_MOBILENET_FLOAT
from interpreter import Interpreter
from interpreter.cli.modelinfo import minimum_version
from interpreter.cli.rewrite import rewrite_versions, verify
from interpreter.cli.versions import EXIT_OLDER_RELEASE_CANNOT_RUN
from schema.model import Model


def test_tflite_1_11_cannot_run_the_dilated_nodes(cli):
    result = cli("versions", DWCONV_DIL2, "--tflite", "1.11.0")
    assert result.returncode == EXIT_OLDER_RELEASE_CANNOT_RUN == 3
    assert "TFLite 1.11.0 cannot run 2 node(s) of this model:" in result.stdout
    rows = [line.split() for line in result.stdout.splitlines() if "DEPTHWISE_CONV_2D  v2" in line and "1.12.0" in line]
    assert [row[:2] for row in rows] == [["0", "0"], ["0", "1"]]


def test_versions_as_json(cli):
    result = cli("versions", DWCONV_DIL2, "--tflite", "1.11.0", "--runtime", "0.1.0", "--json")
    assert result.returncode == 3
    data = result.json()
    assert [(n["op"], n["declared"], n["minimum"], n["status"]) for n in data["nodes"]] == [("DEPTHWISE_CONV_2D", 2, 2, "ok")] * 2
    assert data["min_runtime_version"]["metadata"] == data["min_runtime_version"]["tflite"] == "1.12.0"
    litedelegate, tflite = data["checks"]
    assert (litedelegate["runtime"], litedelegate["cannot_run"]) == ("litedelegate", [])
    assert [(e["index"], e["version"], e["added_in"]) for e in tflite["cannot_run"]] == [(0, 2, "1.12.0"), (1, 2, "1.12.0")]


def test_a_release_that_runs_every_node_exits_0(cli):
    result = cli("versions", DWCONV_DIL2, "--tflite", "1.12.0")
    assert result.returncode == 0, result.stderr
    assert "TFLite 1.12.0 runs every node of this model" in result.stdout


def test_rewrite_splits_a_shared_operator_code_and_verifies(cli, built_models, tmp_path):
    source, out = built_models["over_stamped_shared"], tmp_path / "lowered.tflite"
    before = Model.from_path(source)
    assert [op.version for op in before.subgraphs[0].operators] == [2, 2, 2, 1]
    assert len(before.operator_codes) == 2  # the three depthwise nodes share one code

    result = cli("versions", source, "--rewrite", out, "--json")
    assert result.returncode == 0, result.stderr
    rewrite = result.json()["rewrite"]
    assert [(e["index"], e["from"], e["to"]) for e in rewrite["lowered"]] == [(0, 2, 1), (2, 2, 1)]
    assert rewrite["verification"]["ok"] and rewrite["verification"]["outputs"].startswith("identical")
    assert rewrite["operator_codes"] == {"before": 2, "after": 3}

    after = Model.from_path(out)
    graph = after.subgraphs[0]
    assert [op.version for op in graph.operators] == [1, 2, 1, 1]
    assert all(op.version == minimum_version(graph, op) for op in graph.operators)
    assert after.min_runtime_version == "1.12.0"  # the dilated node still needs v2
    assert _outputs(source) == _outputs(out)


def test_rewrite_lowers_the_min_runtime_version_metadata(cli, built_models, tmp_path):
    source, out = built_models["over_stamped"], tmp_path / "lowered.tflite"
    assert Model.from_path(source).min_runtime_version == "1.12.0"
    result = cli("versions", source, "--rewrite", out, "--tflite", "1.11.0")
    assert result.returncode == 0, result.stdout + result.stderr  # after the rewrite 1.11 runs it
    assert "lowered: subgraph 0 node 0 DEPTHWISE_CONV_2D v2 -> v1" in result.stdout
    assert "verified: versions ok, structure unchanged, outputs identical" in result.stdout
    assert "TFLite 1.11.0 runs every node of the rewritten model" in result.stdout
    after = Model.from_path(out)
    assert after.min_runtime_version == "1.5.0"
    assert len(after.operator_codes) == 2  # the lowered nodes still share one code
    assert _outputs(source) == _outputs(out)


def test_rewrite_of_a_converter_file_lowers_its_over_stamped_node(cli, tmp_path):
    out = tmp_path / "mini.tflite"
    result = cli("versions", MINI_MOBILENET_FLOAT, "--rewrite", out, "--tflite", "1.11.0", "--json")
    assert result.returncode == 3  # node 3 is dilated: v2 even after the rewrite
    data = result.json()
    assert [(e["index"], e["from"], e["to"]) for e in data["rewrite"]["lowered"]] == [(1, 2, 1)]
    assert data["rewrite"]["verification"]["ok"]
    assert [e["index"] for e in data["checks"][0]["cannot_run"]] == [3]
    assert data["checks"][0]["checked"] == "after rewrite"


def test_without_rewrite_the_check_says_which_nodes_a_rewrite_would_fix(cli, built_models):
    result = cli("versions", built_models["over_stamped_shared"], "--tflite", "1.11.0", "--json")
    assert result.returncode == 3
    blocked = result.json()["checks"][0]["cannot_run"]
    assert [(e["index"], e["runs_after_rewrite"]) for e in blocked] == [(0, True), (1, False), (2, True)]


def test_verification_catches_a_wrong_version(built_models):
    data = built_models["over_stamped"].read_bytes()
    targets = {(0, 0): 1, (0, 1): 1}
    rewritten = rewrite_versions(data, targets)
    assert verify(data, rewritten, targets).ok
    wrong = verify(data, rewritten, {(0, 0): 1, (0, 1): 2})
    assert not wrong.ok and not wrong.versions_ok and "expected v2" in wrong.problems[0]


def _outputs(path) -> list[bytes]:
    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    interpreter.set_tensor(detail["index"], np.random.default_rng(5).standard_normal(detail["shape"]).astype(np.float32))
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).tobytes() for d in interpreter.get_output_details()]
