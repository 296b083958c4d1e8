"""What a batch job reads (.npy, .npz, images, Parquet rows, directories) and writes (one
Parquet file of rows, one of errors); bad inputs are reported with their reason and the
job goes on, or stops with ``fail_fast``. Jobs here run on the local engine."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from batch_helpers import (DSCNN, FACE_DETECTION, ROCK_PAPER_SCISSORS, assert_rows_equal_single_invokes, make_samples,
                           read_results, single_invokes, two_input_model, write_samples)
from interpreter.batch import run_batch
from interpreter.batch.inputs import InputSpec, Source, expand_inputs


def test_a_directory_with_bad_files_reports_each_with_its_reason_and_every_other_input_once(tmp_path):
    samples = make_samples(DSCNN, 6, seed=1)
    inputs = tmp_path / "inputs"
    sources = write_samples(samples, inputs)
    (inputs / "corrupt.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    np.save(inputs / "wrong_shape.npy", np.zeros((50, 10), np.float32))
    (inputs / "notes.txt").write_text("not an input\n")
    summary = run_batch(DSCNN, [inputs], tmp_path / "out.parquet", batch_size=4)
    assert (summary.inputs, summary.rows, summary.errors, summary.complete) == (9, 6, 3, False)
    result = read_results(tmp_path / "out.parquet")
    assert result.errors == {
        str(inputs / "corrupt.npy"): "cannot read the .npy file: ValueError: EOF: reading array header, expected 24935 bytes got 5",
        str(inputs / "notes.txt"): "not an input file: expected one of .npy, .npz, .png, .jpg, .jpeg, .parquet",
        str(inputs / "wrong_shape.npy"): "input 'input_1': shape [50,10], expected [50,10,1] or [1,50,10,1]",
    }
    assert_rows_equal_single_invokes(result, sources, single_invokes(DSCNN, samples))


def test_fail_fast_stops_after_the_batch_of_the_first_bad_input(tmp_path):
    inputs = tmp_path / "inputs"
    write_samples(make_samples(DSCNN, 9, seed=2), inputs)
    np.save(inputs / "sample_003b.npy", np.zeros((2, 2), np.float32))  # sorts into the second batch of 4
    summary = run_batch(DSCNN, [inputs], tmp_path / "out.parquet", batch_size=4, fail_fast=True)
    assert summary.stopped_at == f"{inputs / 'sample_003b.npy'}: input 'input_1': shape [2,2], expected [50,10,1] or [1,50,10,1]"
    assert (summary.inputs, summary.rows, summary.errors) == (10, 7, 1)  # two batches written, the third never run
    result = read_results(tmp_path / "out.parquet")
    assert len(result.row_sources) == 7 and result.error_sources == [str(inputs / "sample_003b.npy")]


def test_npz_files_give_each_input_by_name(tmp_path):
    model = two_input_model()
    rng = np.random.default_rng(3)
    samples = [{"a": rng.uniform(-1, 1, (1, 4, 3)).astype(np.float32), "b": rng.uniform(-1, 1, (1, 4, 3)).astype(np.float32)}
               for _ in range(5)]
    sources = write_samples(samples, tmp_path / "inputs")
    np.savez(tmp_path / "inputs" / "missing.npz", a=samples[0]["a"])
    np.save(tmp_path / "inputs" / "one.npy", samples[0]["a"])
    run_batch(model, [tmp_path / "inputs"], tmp_path / "out.parquet", batch_size=2)
    result = read_results(tmp_path / "out.parquet")
    assert result.errors == {
        str(tmp_path / "inputs" / "missing.npz"): "the .npz has arrays 'a'; the model's inputs are 'a', 'b'",
        str(tmp_path / "inputs" / "one.npy"): "the model has 2 inputs (a, b): give .npz files with one array per input name",
    }
    assert_rows_equal_single_invokes(result, sources, single_invokes(model, samples))


@pytest.mark.parametrize("image_range, low, high", [("0,1", 0.0, 1.0), ("-1,1", -1.0, 1.0), ("0,255", 0.0, 255.0)])
def test_images_are_resized_to_the_input_and_scaled_to_the_range(tmp_path, image_range, low, high):
    from PIL import Image

    pixels = np.random.default_rng(4).integers(0, 256, (40, 60, 3)).astype(np.uint8)
    Image.fromarray(pixels).save(tmp_path / "photo.png")
    run_batch(FACE_DETECTION, [tmp_path / "photo.png"], tmp_path / "out.parquet", image_range=image_range)
    resized = np.asarray(Image.fromarray(pixels).resize((128, 128), Image.Resampling.BILINEAR), np.float32)
    expected_input = (low + resized * np.float32((high - low) / 255.0))[None]
    (expected,) = single_invokes(FACE_DETECTION, [{"input": expected_input}])
    assert_rows_equal_single_invokes(read_results(tmp_path / "out.parquet"), [str(tmp_path / "photo.png")], [expected])


def test_images_into_a_one_channel_input_are_grey(tmp_path):
    from PIL import Image

    pixels = np.random.default_rng(5).integers(0, 256, (84, 84, 3)).astype(np.uint8)
    Image.fromarray(pixels).save(tmp_path / "hand.jpg", quality=95)
    run_batch(ROCK_PAPER_SCISSORS, [tmp_path / "hand.jpg"], tmp_path / "out.parquet")
    with Image.open(tmp_path / "hand.jpg") as image:
        grey = np.asarray(image.convert("L"), np.float32)
    (name,) = make_samples(ROCK_PAPER_SCISSORS, 1)[0]
    (expected,) = single_invokes(ROCK_PAPER_SCISSORS, [{name: (grey * np.float32(1 / 255))[None, :, :, None]}])
    assert_rows_equal_single_invokes(read_results(tmp_path / "out.parquet"), [str(tmp_path / "hand.jpg")], [expected])


def test_images_into_a_quantized_input_are_quantized_with_its_scale_and_zero_point():
    from interpreter.batch.inputs import _to_input_type

    spec = InputSpec("x", 0, np.dtype(np.int8), (2,), True, scale=0.5, zero_point=-10)
    values = np.array([0.0, 100.0], np.float32)
    np.testing.assert_array_equal(_to_input_type(values, spec), np.array([-10, 127], np.int8))  # 190 saturates


def test_an_image_for_a_model_without_an_image_input_is_a_bad_input(tmp_path):
    from PIL import Image

    Image.new("RGB", (8, 8)).save(tmp_path / "x.png")
    summary = run_batch(two_input_model(), [tmp_path / "x.png"], tmp_path / "out.parquet")
    assert summary.errors == 1
    assert read_results(tmp_path / "out.parquet").errors[str(tmp_path / "x.png")] == (
        "images need a model with one input shaped [1, height, width, 1 or 3]; this model takes a float32[4,3], b float32[4,3]")


def test_parquet_rows_are_inputs_named_by_file_and_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    samples = make_samples(DSCNN, 7, seed=6)
    (name,) = samples[0]
    values = np.concatenate([sample[name] for sample in samples])  # [7, 50, 10, 1]
    tensors = pa.FixedShapeTensorArray.from_numpy_ndarray(values[:4])
    pq.write_table(pa.table({name: tensors}), tmp_path / "tensors.parquet")
    lists = pa.array([row.ravel().tolist() for row in values[4:]], pa.list_(pa.float32()))
    pq.write_table(pa.table({name: lists, "label": ["x", "y", "z"]}), tmp_path / "lists.parquet", row_group_size=2)
    pq.write_table(pa.table({"other": [1.0]}), tmp_path / "unrelated.parquet")
    sources = [f"{tmp_path / 'tensors.parquet'}#{i}" for i in range(4)] + [f"{tmp_path / 'lists.parquet'}#{i}" for i in range(3)]
    assert [s.label for s in expand_inputs([tmp_path / "tensors.parquet", tmp_path / "lists.parquet"])] == sources
    run_batch(DSCNN, [tmp_path / "tensors.parquet", tmp_path / "lists.parquet", tmp_path / "unrelated.parquet"],
              tmp_path / "out.parquet", batch_size=3)
    result = read_results(tmp_path / "out.parquet")
    assert result.errors == {f"{tmp_path / 'unrelated.parquet'}#0": "the Parquet file has columns 'other'; the model's inputs are 'input_1'"}
    assert_rows_equal_single_invokes(result, sources, single_invokes(DSCNN, samples))


def test_a_corrupt_parquet_file_is_one_bad_input(tmp_path):
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    summary = run_batch(DSCNN, [tmp_path / "broken.parquet"], tmp_path / "out.parquet")
    assert (summary.inputs, summary.errors) == (1, 1)
    assert read_results(tmp_path / "out.parquet").errors[str(tmp_path / "broken.parquet")].startswith("cannot read the Parquet file: ")


def test_directories_are_read_in_order_with_subdirectories_and_without_hidden_files(tmp_path):
    for name in ("b.npy", "a/c.npy", "a/.hidden.npy", ".cache/d.npy", "e.png"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    assert [s.path for s in expand_inputs([tmp_path])] == [str(tmp_path / n) for n in ("a/c.npy", "b.npy", "e.png")]
    assert expand_inputs([tmp_path / "b.npy", tmp_path / "b.npy"]) == [Source(str(tmp_path / "b.npy"))] * 2
    with pytest.raises(FileNotFoundError, match="no such input file or directory: .*nowhere"):
        expand_inputs([tmp_path / "nowhere"])


def test_an_empty_directory_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no input files in .*empty"):
        run_batch(DSCNN, [tmp_path / "empty"], tmp_path / "out.parquet")


def test_the_results_are_plain_parquet_that_pandas_and_pyarrow_read_without_ray(tmp_path):
    samples = make_samples(FACE_DETECTION, 2, seed=7)
    sources = write_samples(samples, tmp_path / "inputs")
    run_batch(FACE_DETECTION, sources, tmp_path / "out.parquet", delegate="gpu-host")
    script = f"""
import json, sys
import pandas, pyarrow.parquet as pq
table = pq.read_table({str(tmp_path / 'out.parquet')!r})
frame = pandas.read_parquet({str(tmp_path / 'out.parquet')!r})
errors = pandas.read_parquet({str(tmp_path / 'out.errors.parquet')!r})
field = table.schema.field("regressors")
print(json.dumps({{
    "ray": "ray" in sys.modules,
    "columns": table.column_names,
    "type": [field.type.extension_name, list(field.type.shape), str(field.type.value_type)],
    "shape": json.loads(field.metadata[b"shape"]),
    "tensor": list(table.column("regressors").combine_chunks().to_numpy_ndarray().shape),
    "pandas": [len(frame), len(frame["regressors"][0])],
    "errors": list(errors.columns),
    "metadata": table.schema.metadata[b"litedelegate.delegate"].decode(),
}}))
"""
    answer = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    assert answer == {
        "ray": False,
        "columns": ["source", "regressors", "classificators"],
        "type": ["arrow.fixed_shape_tensor", [896, 16], "float"],
        "shape": [896, 16],
        "tensor": [2, 896, 16],
        "pandas": [2, 896 * 16],
        "errors": ["source", "error"],
        "metadata": "gpu-host",
    }


def test_a_failed_job_leaves_no_result_files(tmp_path):
    class Broken(Exception):
        pass

    def progress(rows, errors, total):
        if rows:
            raise Broken()

    sources = write_samples(make_samples(DSCNN, 2), tmp_path / "inputs")
    with pytest.raises(Broken):
        run_batch(DSCNN, sources, tmp_path / "out.parquet", batch_size=1, progress=progress)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inputs"]
