"""Helpers of the batch tests: inputs written as files, the reference (single invokes, on
the plain Interpreter API), reading a job's Parquet results, and small models."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

import numpy as np

from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator, TensorType
from schema.params import AddParams, Conv2DParams, GatherParams

ROOT = pathlib.Path(__file__).resolve().parents[2]
REAL_MODELS = sorted((ROOT / "tests" / "data" / "models" / "real").glob("*.tflite"))
DSCNN = ROOT / "tests" / "data" / "models" / "real" / "mltk_keyword_spotting_dscnn_int8.tflite"
FACE_DETECTION = ROOT / "tests" / "data" / "models" / "real" / "mp_face_detection_short_range.tflite"
FACE_LANDMARK = ROOT / "tests" / "data" / "models" / "real" / "mp_face_landmark.tflite"
HEY_JARVIS = ROOT / "tests" / "data" / "models" / "real" / "mww_hey_jarvis_int8_streaming.tflite"
ROCK_PAPER_SCISSORS = ROOT / "tests" / "data" / "models" / "real" / "mltk_rock_paper_scissors_int8.tflite"
STATEFUL_OPS = {"VAR_HANDLE", "ASSIGN_VARIABLE", "READ_VARIABLE", "CALL_ONCE"}


def input_details(model) -> list[dict]:
    interpreter = Interpreter(model_path=str(model)) if not isinstance(model, bytes) else Interpreter(model_content=model)
    interpreter.allocate_tensors()
    return interpreter.get_input_details()


def make_samples(model, count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """``count`` samples (each ``{input name: array of the input's shape}``): random
    values over the type's range, and every third sample a constant at the top of it (so
    that a model that keeps state, fed in order, would carry some into the next)."""
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(count):
        sample = {}
        for detail in input_details(model):
            dtype, shape = np.dtype(detail["dtype"]), tuple(detail["shape"])
            if dtype.kind == "f":
                value = np.full(shape, 1.0, dtype) if i % 3 == 2 else rng.uniform(-1, 1, shape).astype(dtype)
            else:
                info = np.iinfo(dtype)
                value = np.full(shape, info.max, dtype) if i % 3 == 2 else rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
            sample[detail["name"]] = value
        samples.append(sample)
    return samples


def write_samples(samples: list[dict[str, np.ndarray]], directory: pathlib.Path) -> list[str]:
    """Each sample as a file, in order (``.npy`` for one input, every other one without its
    leading 1; ``.npz`` for several inputs); returns the paths (the sources)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, sample in enumerate(samples):
        if len(sample) == 1:
            (value,) = sample.values()
            path = directory / f"sample_{i:03d}.npy"
            np.save(path, value[0] if i % 2 and value.shape[:1] == (1,) else value)
        else:
            path = directory / f"sample_{i:03d}.npz"
            np.savez(path, **sample)
        paths.append(str(path))
    return paths


def single_invokes(model, samples: list[dict[str, np.ndarray]], delegate_factory=None) -> list[dict[str, np.ndarray]]:
    """Each sample's outputs from one ``invoke`` at batch 1, by the plain Interpreter API on
    one BLAS thread, as batch workers run by default (a fresh interpreter per sample for a
    model that keeps state between invokes): each output's row (its value without the
    leading 1)."""

    def fresh() -> Interpreter:
        source = {"model_path": str(model)} if not isinstance(model, bytes) else {"model_content": model}
        interpreter = Interpreter(**source, num_threads=1)
        if delegate_factory is not None:
            interpreter.modify_graph_with_delegate(delegate_factory())
        interpreter.allocate_tensors()
        return interpreter

    interpreter = fresh()
    stateful = bool({op["op_name"] for op in interpreter.get_ops_details()} & STATEFUL_OPS)
    rows = []
    for sample in samples:
        if stateful:
            interpreter = fresh()
        for detail in interpreter.get_input_details():
            interpreter.set_tensor(detail["index"], sample[detail["name"]])
        interpreter.invoke()
        outputs = {}
        for detail in interpreter.get_output_details():
            value = interpreter.get_tensor(detail["index"])
            outputs[detail["name"]] = value[0] if value.shape[:1] == (1,) else value
        rows.append(outputs)
    return rows


@dataclass
class JobResult:
    """A job's two Parquet files, read back with pyarrow: rows by source, errors by source."""

    rows: dict[str, dict[str, np.ndarray]]
    errors: dict[str, str]
    row_sources: list[str]
    error_sources: list[str]


def read_results(output: pathlib.Path) -> JobResult:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from interpreter.batch.results import errors_path_for

    table = pq.read_table(output)
    sources = table.column("source").to_pylist()
    columns = {}
    for name in table.column_names[1:]:
        column = table.column(name).combine_chunks()
        columns[name] = column.to_numpy_ndarray() if isinstance(column.type, pa.FixedShapeTensorType) else column.to_numpy()
    rows = {source: {name: value[i] for name, value in columns.items()} for i, source in enumerate(sources)}
    errors_table = pq.read_table(errors_path_for(output))
    error_sources = errors_table.column("source").to_pylist()
    errors = dict(zip(error_sources, errors_table.column("error").to_pylist()))
    return JobResult(rows, errors, sources, error_sources)


def assert_rows_equal_single_invokes(result: JobResult, sources: list[str], expected: list[dict[str, np.ndarray]]) -> None:
    """Every source has exactly one row, and its outputs equal the single invokes' bit for bit."""
    assert sorted(result.row_sources) == sorted(sources), "each input must appear exactly once"
    for source, outputs in zip(sources, expected):
        row = result.rows[source]
        assert list(row) == list(outputs), source
        for name, value in outputs.items():
            assert row[name].dtype == value.dtype and row[name].shape == value.shape, (source, name)
            assert row[name].tobytes() == value.tobytes(), f"{source}: output {name!r} differs from a single invoke"


# -- small models --------------------------------------------------------------------------------

def float_conv_model(batch: int = 1) -> bytes:
    """main(x) = CONV_2D(x) in float32, 3x3 over 8 channels into 16, its batch free (-1 in
    shape_signature): batched BLAS sums that equal single invokes."""
    rng = np.random.default_rng(3)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [batch, 12, 12, 8], shape_signature=[-1, 12, 12, 8])
    w = graph.add_constant("w", rng.uniform(-1, 1, (16, 3, 3, 8)).astype(np.float32))
    b = graph.add_constant("b", rng.uniform(-1, 1, 16).astype(np.float32))
    y = graph.add_tensor("y", [batch, 12, 12, 16], shape_signature=[-1, 12, 12, 16])
    graph.add_operator(BuiltinOperator.CONV_2D, [x, w, b], [y], Conv2DParams(stride_w=1, stride_h=1))
    graph.add_output(y)
    return builder.build()


def two_input_model() -> bytes:
    """main(a, b) = a + b, float32 [1, 4, 3] each, the batch free."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    a = graph.add_input("a", [1, 4, 3], shape_signature=[-1, 4, 3])
    b = graph.add_input("b", [1, 4, 3], shape_signature=[-1, 4, 3])
    total = graph.add_tensor("sum", [1, 4, 3], shape_signature=[-1, 4, 3])
    graph.add_operator(BuiltinOperator.ADD, [a, b], [total], AddParams())
    graph.add_output(total)
    return builder.build()


def fixed_reshape_model() -> bytes:
    """main(x) = RESHAPE(x, [1, 12]): x is float32 [1, 3, 4], its batch fixed by the shape."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 3, 4])
    shape = graph.add_constant("shape", np.array([1, 12], np.int32))
    y = graph.add_tensor("y", [1, 12])
    graph.add_operator(BuiltinOperator.RESHAPE, [x, shape], [y])
    graph.add_output(y)
    return builder.build()


def gather_one_row_model() -> bytes:
    """main(i) = GATHER(table, i) with a table of one row: only the index 0 is valid."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    table = graph.add_constant("table", np.array([[1.0, 2.0, 3.0]], np.float32))
    indices = graph.add_input("i", [1, 2], TensorType.INT32, shape_signature=[-1, 2])
    rows = graph.add_tensor("rows", [1, 2, 3], shape_signature=[-1, 2, 3])
    graph.add_operator(BuiltinOperator.GATHER, [table, indices], [rows], GatherParams(axis=0))
    graph.add_output(rows)
    return builder.build()
