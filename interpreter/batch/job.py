"""A batch job: every input of some paths through a model, into one Parquet file.

:func:`run_batch` finds the sources (:func:`~interpreter.batch.inputs.expand_inputs`),
runs them on an engine (``"local"``: this process, one worker, or one per visible GPU;
``"ray"``: Ray Data ``map_batches`` with :class:`~interpreter.batch.worker.SourcePredictor`
as its actor class), and writes each batch's rows and errors as it comes
(:class:`~interpreter.batch.results.ResultWriter`). Rows plus errors equal the inputs,
unless ``fail_fast`` stopped the job at the batch of the first bad input.
"""

from __future__ import annotations

import os
import pathlib
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from interpreter.batch.inputs import IMAGE_RANGES, expand_inputs
from interpreter.batch.predictor import DELEGATES, OutputSpec
from interpreter.batch.results import ResultWriter
from interpreter.batch.worker import BatchResult, SourcePredictor

ENGINES = ("local", "ray")


@dataclass
class WorkerReport:
    """One worker of a job: where it ran (host, pid, device), how it batched, its rows."""

    name: str
    device: str
    mode: str
    reason: str = ""
    rows: int = 0


@dataclass
class BatchSummary:
    """What a job did. ``stopped_at``: with ``fail_fast``, the first bad input and why."""

    engine: str
    inputs: int
    rows: int
    errors: int
    seconds: float
    output: str
    errors_output: str
    workers: list[WorkerReport] = field(default_factory=list)
    stopped_at: str = ""

    @property
    def rows_per_second(self) -> float:
        """Rows over the job's seconds (the workers' start included)."""
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    @property
    def complete(self) -> bool:
        """Every input gave a row."""
        return self.rows == self.inputs

    def to_dict(self) -> dict[str, Any]:
        """The summary as JSON-ready values (``litedelegate batch --json``)."""
        return {**asdict(self), "rows_per_second": self.rows_per_second, "complete": self.complete}


@dataclass(frozen=True)
class JobOptions:
    """What every worker of a job is built with (see :func:`run_batch`)."""

    model: bytes
    delegate: str = "none"
    precision: str = "float32"
    batch_size: int = 32
    image_range: tuple[float, float] = (0.0, 1.0)
    num_threads: int = 1
    exact: bool = True
    model_path: str | None = None  #: where ``model`` was read from (None for bytes given as such)

    def predictor_kwargs(self, **more: Any) -> dict[str, Any]:
        model = str(pathlib.Path(self.model_path).resolve()) if self.model_path is not None else self.model
        return {"model": model, "delegate": self.delegate, "precision": self.precision,
                "batch_size": self.batch_size, "image_range": self.image_range, "num_threads": self.num_threads,
                "exact": self.exact, **more}


class Collector:
    """Writes each batch's rows and errors, counts them per worker, reports progress and
    says when ``fail_fast`` stops the job."""

    def __init__(self, output: str | os.PathLike, metadata: dict[str, str], fail_fast: bool,
                 progress: Callable[[int, int, int], None] | None, total: int) -> None:
        self.output = output
        self.metadata = metadata
        self.fail_fast = fail_fast
        self.progress = progress
        self.total = total
        self.writer: ResultWriter | None = None
        self.workers: dict[str, WorkerReport] = {}
        self.stopped_at = ""

    def add(self, result: BatchResult) -> bool:
        """Write one batch's results; False when the job should stop (``fail_fast``)."""
        if self.writer is None:
            specs = [OutputSpec(name, -1, value.dtype, tuple(value.shape[1:]), True) for name, value in result.outputs.items()]
            self.writer = ResultWriter(self.output, specs, self.metadata)
        ok = result.ok
        self.writer.write_rows([result.sources[i].label for i in ok], result.outputs)
        failed = [i for i, error in enumerate(result.errors) if error]
        self.writer.write_errors([result.sources[i].label for i in failed], [result.errors[i] for i in failed])
        worker = self.workers.setdefault(result.worker["name"], WorkerReport(**{k: result.worker[k] for k in ("name", "device", "mode", "reason")}))
        worker.rows += len(ok)
        if self.progress is not None:
            self.progress(self.writer.rows, self.writer.errors, self.total)
        if failed and self.fail_fast:
            first = failed[0]
            self.stopped_at = f"{result.sources[first].label}: {result.errors[first]}"
            return False
        return True


def run_batch(model: str | os.PathLike | bytes, inputs: Sequence[str | os.PathLike], output: str | os.PathLike, *,
              engine: str = "local", delegate: str = "none", precision: str = "float32", batch_size: int = 32,
              workers: int | None = None, gpus_per_worker: float | None = None, address: str | None = None,
              image_range: str | tuple[float, float] = "0,1", fail_fast: bool = False, num_threads: int = 1,
              exact: bool = True, progress: Callable[[int, int, int], None] | None = None,
              devices: Sequence[int] | None = None, predictor_class: type[SourcePredictor] = SourcePredictor,
              ) -> BatchSummary:
    """Run every input of ``inputs`` through ``model``; rows to ``output`` (Parquet),
    inputs that give none to ``OUT.errors.parquet`` with the reason.

    Args:
      model: a ``.tflite`` path or the model's bytes.
      inputs: files and directories (``.npy``, ``.npz``, images, Parquet; see
        ``interpreter.batch.inputs``).
      output: the Parquet file of rows.
      engine: ``"local"`` (this process: one worker, or one per visible GPU with
        ``delegate="gpu"``) or ``"ray"`` (Ray Data ``map_batches``, actors with a CPU each,
        or ``gpus_per_worker`` GPUs with ``delegate="gpu"``; a dead worker is restarted and
        its batch retried).
      delegate, precision, batch_size, exact: as for :class:`~interpreter.batch.Predictor`.
      workers: how many (local: GPU workers; ray: actors, default one per CPU, or per GPU
        with ``delegate="gpu"``, of the cluster).
      gpus_per_worker: Ray's ``num_gpus`` per actor (default 1 with ``delegate="gpu"``).
      address: the Ray cluster to join (default: a local one, started and stopped here;
        a Ray already initialized in this process is used as it is).
      image_range: ``"0,1"``, ``"-1,1"`` or ``"0,255"`` (or a (low, high) pair): what pixel
        values 0..255 become.
      fail_fast: stop after the batch that holds the first bad input.
      num_threads: each interpreter's ``num_threads`` (BLAS threads; default 1, so that
        both engines give the same bits: float sums may round differently on another
        number of threads).
      progress: called with (rows, errors, inputs) when the job starts and after each
        batch is written.
      devices: the local engine's visible GPU ids (default: CuPy's device count).
      predictor_class: the worker class (a :class:`SourcePredictor` subclass).

    Raises:
      ValueError: a bad option, or no inputs.
      FileNotFoundError: an input path that does not exist.
      WorkerError: (ray) a worker that could not start, naming the exception it raised.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "local" and (address is not None or gpus_per_worker is not None):
        raise ValueError("address and gpus_per_worker are the ray engine's options")
    if delegate not in DELEGATES and ":" not in delegate:
        raise ValueError(f"unknown delegate {delegate!r}; expected one of {', '.join(DELEGATES)} or MODULE:CLASS[:KEY=VALUE,...]")
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if isinstance(image_range, str):
        if image_range not in IMAGE_RANGES:
            raise ValueError(f"image_range must be one of {', '.join(IMAGE_RANGES)}, got {image_range!r}")
        image_range = IMAGE_RANGES[image_range]
    data = bytes(model) if isinstance(model, (bytes, bytearray, memoryview)) else pathlib.Path(model).read_bytes()
    sources = expand_inputs(inputs)
    if not sources:
        raise ValueError(f"no input files in {', '.join(map(str, inputs))}")
    path = None if isinstance(model, (bytes, bytearray, memoryview)) else str(model)
    options = JobOptions(data, delegate, precision, batch_size, tuple(image_range), num_threads, exact, path)
    metadata = {"litedelegate.model": str(model) if not isinstance(model, (bytes, bytearray, memoryview)) else "(bytes)",
                "litedelegate.delegate": delegate, "litedelegate.precision": precision}
    collector = Collector(output, metadata, fail_fast, progress, len(sources))
    if progress is not None:
        progress(0, 0, len(sources))
    start = time.perf_counter()
    try:
        if engine == "local":
            from interpreter.batch.local import run_local

            run_local(options, sources, collector, workers=workers, devices=devices, predictor_class=predictor_class)
        else:
            from interpreter.batch.ray_engine import run_ray

            run_ray(options, sources, collector, workers=workers, gpus_per_worker=gpus_per_worker, address=address,
                    predictor_class=predictor_class)
    except BaseException:
        if collector.writer is not None:
            collector.writer.abort()
        raise
    seconds = time.perf_counter() - start
    writer = collector.writer
    writer.close()
    return BatchSummary(engine, len(sources), writer.rows, writer.errors, seconds, str(writer.path), str(writer.errors_path),
                        list(collector.workers.values()), collector.stopped_at)

