"""``litedelegate batch``: the summary, the exit codes (0 only when every input gave a row,
1 otherwise or on a job error, 2 on a usage error) and the two Parquet files."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from cli_helpers import FACE_DETECTION, ROOT

from interpreter.cli import main

DSCNN = ROOT / "tests" / "data" / "models" / "real" / "mltk_keyword_spotting_dscnn_int8.tflite"


def write_inputs(directory: pathlib.Path, count: int, bad: bool = False) -> pathlib.Path:
    directory.mkdir()
    rng = np.random.default_rng(0)
    for i in range(count):
        np.save(directory / f"x{i}.npy", rng.uniform(-1, 1, (50, 10, 1)).astype(np.float32))
    if bad:
        (directory / "readme.txt").write_text("not an input")
    return directory


def test_batch_over_the_bundled_example_images_writes_a_row_per_image(cli, tmp_path):
    import pyarrow.parquet as pq

    result = cli("batch", FACE_DETECTION, ROOT / "examples" / "batch_inputs", "--output", tmp_path / "faces.parquet",
                 "--image-range=-1,1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:5] == [
        f"model: {FACE_DETECTION}",
        "engine: local, batch size 32, delegate none",
        "inputs: 8",
        f"rows: 8 -> {tmp_path / 'faces.parquet'}",
        f"errors: 0 -> {tmp_path / 'faces.errors.parquet'}",
    ]
    assert lines[5].startswith("throughput: ") and lines[5].endswith(" s)")
    assert "CPU (numpy)  sample by sample     8" in result.stdout
    assert "sample by sample: output 'regressors' has shape [1, 28672, 16] for a batch of 32" in result.stdout
    assert result.stderr == ""  # the summary says why it ran sample by sample; the warning is not repeated
    table = pq.read_table(tmp_path / "faces.parquet")
    assert table.column("source").to_pylist() == [str(p) for p in sorted((ROOT / "examples" / "batch_inputs").iterdir())]


def test_batch_with_a_bad_input_exits_1_and_lists_it(cli, tmp_path):
    inputs = write_inputs(tmp_path / "inputs", 3, bad=True)
    result = cli("batch", DSCNN, inputs, "-o", tmp_path / "out.parquet", "--batch-size", "2", "--json")
    assert result.returncode == 1, result.stderr
    summary = result.json()
    assert (summary["inputs"], summary["rows"], summary["errors"], summary["complete"]) == (4, 3, 1, False)
    assert summary["engine"] == "local" and summary["workers"][0]["mode"] == "batched"
    assert summary["errors_output"] == str(tmp_path / "out.errors.parquet")


def test_batch_with_fail_fast_says_where_it_stopped(cli, tmp_path):
    inputs = write_inputs(tmp_path / "inputs", 2, bad=True)
    result = cli("batch", DSCNN, inputs, "-o", tmp_path / "out.parquet", "--batch-size", "1", "--fail-fast")
    assert result.returncode == 1
    assert f"stopped at the first bad input (--fail-fast): {inputs / 'readme.txt'}: not an input file" in result.stdout


def test_batch_with_the_gpu_delegate_and_no_gpu_fails_in_one_line(cli, tmp_path):
    pytest.importorskip("cupy")
    inputs = write_inputs(tmp_path / "inputs", 1)
    result = cli("batch", DSCNN, inputs, "-o", tmp_path / "out.parquet", "--delegate", "gpu")
    if result.returncode == 0:
        pytest.skip("this machine has a CUDA device")
    assert result.returncode == 1
    (line,) = result.error_lines
    assert line.startswith("litedelegate: error: GpuUnavailableError: ")
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("options, message", [
    (["--engine", "local", "--address", "auto"], "--address and --gpus-per-worker are for --engine ray"),
    (["--engine", "ray", "--gpus-per-worker", "1"], "--gpus-per-worker is for --delegate gpu"),
    (["--precision", "float16"], "--precision is the GPU delegate's"),
    (["--batch-size", "0"], "--batch-size must be at least 1"),
    (["--workers", "0"], "--workers must be at least 1"),
])
def test_batch_usage_errors_exit_2(tmp_path, capsys, options, message):
    inputs = write_inputs(tmp_path / "inputs", 1)
    assert main(["batch", str(DSCNN), str(inputs), "-o", str(tmp_path / "out.parquet"), *options]) == 2
    assert f"litedelegate batch: error: {message}" in capsys.readouterr().err


def test_batch_with_a_missing_input_is_a_usage_error(tmp_path, capsys):
    assert main(["batch", str(DSCNN), str(tmp_path / "nowhere"), "-o", str(tmp_path / "out.parquet")]) == 2
    assert "no such input file or directory: " in capsys.readouterr().err


def test_batch_needs_an_output(tmp_path, capsys):
    assert main(["batch", str(DSCNN), str(tmp_path)]) == 2
    assert "the following arguments are required: --output/-o" in capsys.readouterr().err
