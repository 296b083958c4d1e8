"""``litedelegate run``, exit codes and error lines (``python -m interpreter`` as a subprocess)."""

from __future__ import annotations

import numpy as np
import pytest

from cli_helpers import DWCONV_DIL2, MINI_MOBILENET_FLOAT
from interpreter import Interpreter
from interpreter.cli import main


def test_run_without_a_model_runs_the_shipped_example(cli):
    result = cli("run")
    assert result.returncode == 0, result.stderr
    assert "model: example model" in result.stdout
    assert "nodes: 8 (" in result.stdout and "DEPTHWISE_CONV_2D v2" in result.stdout
    assert "probabilities" in result.stdout and "[1,10]" in result.stdout
    assert "invoke:" in result.stdout and "on the CPU" in result.stdout


def test_run_with_inputs_from_files_writes_the_outputs_it_computed(cli, tmp_path):
    interpreter = Interpreter(model_path=str(MINI_MOBILENET_FLOAT))
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    value = np.random.default_rng(3).uniform(-1, 1, detail["shape"]).astype(np.float32)
    np.save(tmp_path / "x.npy", value)
    interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    expected = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])

    result = cli("run", MINI_MOBILENET_FLOAT, "--input", f"{detail['name']}={tmp_path / 'x.npy'}",
                 "--output-dir", tmp_path / "out", "--json")
    assert result.returncode == 0, result.stderr
    summary = result.json()
    assert summary["nodes"] == 9
    assert summary["inputs"] == [{"name": detail["name"], "dtype": "float32", "shape": list(detail["shape"]), "source": "file"}]
    (output,) = summary["outputs"]
    assert output["shape"] == list(expected.shape)
    np.testing.assert_array_equal(np.load(output["file"]), expected)


def test_run_with_the_host_emulated_gpu_delegates_every_node_of_the_example(cli):
    result = cli("run", "--delegate", "gpu-host", "--json")
    assert result.returncode == 0, result.stderr
    summary = result.json()
    assert summary["delegate"]["name"] == "GpuDelegate"
    assert (summary["delegate"]["delegated"], summary["delegate"]["partitions"]) == (8, 1)
    assert summary["outputs"][0]["shape"] == [1, 10]


def test_run_with_the_real_gpu_runs_or_says_in_one_line_why_not(cli):
    result = cli("run", DWCONV_DIL2, "--delegate", "gpu")
    if result.returncode == 0:  # a machine with a usable CUDA device
        assert "GpuDelegate" in result.stdout
        return
    assert result.returncode == 1
    assert len(result.error_lines) == 1 and "GpuUnavailableError" in result.error_lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_a_model_without_kernels_fails_with_one_unsupported_operator_line(cli, built_models):
    result = cli("run", built_models["custom_op"])
    assert result.returncode == 1
    assert len(result.error_lines) == 1, result.stderr
    assert result.error_lines[0].startswith("litedelegate: error: UnsupportedOperatorError:")
    assert "MyMissingOp v1 (node 1)" in result.error_lines[0]


def test_errors_are_one_line_and_debug_shows_the_traceback(cli, tmp_path):
    missing = tmp_path / "missing.tflite"
    quiet = cli("run", missing)
    assert quiet.returncode == 1
    assert quiet.error_lines == [f"litedelegate: error: FileNotFoundError: no such model file: {missing}"]
    loud = cli("run", missing, "--debug")
    assert loud.returncode == 1 and "Traceback" in loud.stderr


def test_a_file_that_is_not_a_model_is_a_model_error(cli, tmp_path):
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(b"not a flatbuffer at all")
    result = cli("analyze", junk)
    assert result.returncode == 1
    assert len(result.error_lines) == 1 and "ModelError" in result.error_lines[0]


def test_usage_errors_exit_with_2(cli):
    for args in (["frobnicate"], ["analyze", "--cap", "NOT_AN_OP=1"]):
        result = cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [
    ["run", "--delegate", "tpu"], ["analyze", "--cap", "DEPTHWISE_CONV_2D"], ["analyze", "--graph", "picture.png"],
    ["analyze", "--delegate", "none", "--cap", "ADD=1"], ["versions", "--tflite", "one.two"],
    ["versions", "--rewrite", "out.bin"], ["run", "--input", "no-equals-sign"], ["bench", "--runs", "0"],
])
def test_usage_errors_in_process(args, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err
