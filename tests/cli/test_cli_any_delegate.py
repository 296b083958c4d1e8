"""``--delegate MODULE:CLASS[:KEY=VALUE,...]``: any delegate in run, analyze and bench, with
the same reports and pictures as the GPU one (issue 18, item 7)."""

from __future__ import annotations

import os
import sys

import pytest
from cli_helpers import FACE_DETECTION, ROOT, html_counts, run_cli

from interpreter.cli.common import UsageError, load_delegate_spec, parse_delegate_options

TOY = "examples.toy_npu:ToyNpu"


def test_analyze_prints_the_placement_report_and_draws_the_partitions(tmp_path):
    """The acceptance: `litedelegate analyze model.tflite --delegate examples.toy_npu:ToyNpu`."""
    from interpreter.example_model import build_example_model

    model = tmp_path / "model.tflite"
    model.write_bytes(build_example_model())
    picture = tmp_path / "toy.html"
    result = run_cli("analyze", model, "--delegate", TOY, "--graph", picture)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "delegate: ToyNpu (examples.toy_npu:ToyNpu)" in out
    assert "DEPTHWISE_CONV_2D v2: max version supported by ToyNpu is 1" in out
    assert "MEAN v1: ToyNpu does not support MEAN" in out
    assert "ToyNpu #0" in out and "ToyNpu #1" in out
    assert "summary: 6 of 8 node(s) on ToyNpu in 2 partition(s), 2 on the CPU, 0 that nothing can run" in out
    assert html_counts(picture.read_text()) == (8, 2)
    assert "ToyNpu partition 1 (2 nodes)" in picture.read_text()


def test_analyze_json_names_the_delegate(tmp_path):
    result = run_cli("analyze", "--delegate", f"{TOY}:min_nodes_per_partition=3", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["delegate"]["name"] == "ToyNpu" and data["delegate"]["kind"] == "custom"
    assert data["summary"]["delegated"] == 4


def test_run_and_bench_take_any_delegate():
    result = run_cli("run", "--delegate", f"{TOY}:min_nodes_per_partition=3")
    assert result.returncode == 0, result.stderr
    assert "delegate: ToyNpu (examples.toy_npu:ToyNpu): 4 of 8 node(s) in 1 partition(s)" in result.stdout
    result = run_cli("bench", FACE_DETECTION, "--delegate", TOY, "--runs", "2", "--json")
    assert result.returncode == 0, result.stderr
    assert {p["delegate"] for p in result.json()["partitions"]} == {"ToyNpu"}


def test_a_file_and_caps_work_too():
    result = run_cli("analyze", "--delegate", "examples/toy_npu.py:ToyNpu", "--cap", "CONV_2D=0", "--json")
    assert result.returncode == 0, result.stderr
    nodes = result.json()["subgraphs"][0]["nodes"]
    assert "CONV_2D v1: max version supported by ToyNpu is 0 (capped by options)" in nodes[1]["why_not_delegated"]


def test_a_delegate_that_fails_in_prepare(tmp_path):
    (tmp_path / "broken_delegate.py").write_text(
        "from examples.toy_npu import ToyNpu\n\n"
        "class Broken(ToyNpu):\n"
        "    def prepare(self, context):\n"
        "        raise RuntimeError('no device')\n"
    )
    result = run_cli("run", "--delegate", f"{tmp_path / 'broken_delegate.py'}:Broken")
    assert result.returncode == 1
    assert ("litedelegate: error: DelegatePrepareError: Restored original execution plan after delegate application "
            "failure: delegate ToyNpu failed in prepare: RuntimeError: no device") in result.stderr
    result = run_cli("analyze", "--delegate", f"{tmp_path / 'broken_delegate.py'}:Broken")
    assert result.returncode == 0 and "delegate not applied: RuntimeError: no device" in result.stdout


@pytest.mark.parametrize("spec,message", [
    ("examples.toy_npu:Nope", "examples.toy_npu has no 'Nope'; it has ToyNpu"),
    ("no_such_module:X", "no module named 'no_such_module'"),
    ("examples.toy_npu:ToyNpu:bogus=1", "does not take these options (got an unexpected keyword argument 'bogus')"),
    ("examples.toy_npu:ToyNpu:oops", "options are KEY=VALUE separated by commas, got 'oops'"),
    ("examples.toy_npu:ACTIVATIONS", "ACTIVATIONS is not a delegate"),
    ("examples/nothing.py:X", "no such file: examples/nothing.py"),
    ("gpu-hots", "unknown delegate 'gpu-hots'; expected one of gpu, gpu-host, none, or MODULE:CLASS"),
])
def test_usage_errors_say_what_is_wrong(spec, message):
    result = run_cli("run", "--delegate", spec)
    assert result.returncode == 2
    assert message in result.stderr


def test_options_are_python_literals():
    assert parse_delegate_options("a=1,b='x,y',c=[1, 2],d=word,e={'k': (1, 2)}", "spec") == {
        "a": 1, "b": "x,y", "c": [1, 2], "d": "word", "e": {"k": (1, 2)}}


def test_the_current_directory_is_searched_when_the_module_is_not_on_the_path(monkeypatch):
    """The `litedelegate` script does not put the current directory on sys.path; `python -m` does."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(ROOT)) and
                                      os.path.abspath(p) != str(ROOT)])
    for name in [m for m in sys.modules if m == "examples" or m.startswith("examples.")]:
        monkeypatch.delitem(sys.modules, name)
    choice = load_delegate_spec(TOY)
    assert choice.name == "ToyNpu" and choice.source == TOY
    monkeypatch.chdir(ROOT / "tests")
    with pytest.raises(UsageError, match="no module named 'examples.nope'"):
        load_delegate_spec("examples.nope:X")


def test_a_factory_function_and_a_delegate_object(tmp_path):
    (tmp_path / "factories.py").write_text(
        "from examples.toy_npu import ToyNpu\n"
        "def make(partitions=1):\n"
        "    return ToyNpu(max_delegated_partitions=partitions)\n"
        "READY = ToyNpu()\n"
    )
    assert load_delegate_spec(f"{tmp_path / 'factories.py'}:make:partitions=2").delegate.max_delegated_partitions == 2
    assert load_delegate_spec(f"{tmp_path / 'factories.py'}:READY").name == "ToyNpu"
    with pytest.raises(UsageError, match="READY is a delegate object, which takes no options"):
        load_delegate_spec(f"{tmp_path / 'factories.py'}:READY:x=1")
