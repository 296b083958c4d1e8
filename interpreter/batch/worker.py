"""The worker of a batch job: a :class:`Predictor` that reads its own inputs.

Both engines run the same code on each batch of sources: read them
(:class:`~interpreter.batch.inputs.InputLoader`), run the readable ones through the
predictor, and give back each source's outputs or the reason it has none. A batch whose
invoke fails is run again row by row, so that one bad input costs only its own row.

Under Ray the worker is the actor class of ``map_batches``: it is called with
``{"path": [...], "row": [...]}`` and returns those columns with ``error`` (``""`` for a
row with outputs), ``worker`` (where it ran, as JSON) and one column per model output
(zeros on error rows). Reading in the worker, not in a separate Ray stage, keeps the
inputs out of Ray's object store and every CPU for the workers.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from interpreter.batch.inputs import InputError, InputLoader, Source
from interpreter.batch.predictor import Predictor

PATH, ROW, ERROR, WORKER = "path", "row", "error", "worker"
#: Column names of the worker's Ray form and of the result files: no output may take one.
RESERVED_COLUMNS = (PATH, ROW, ERROR, WORKER, "source")


@dataclass
class BatchResult:
    """What a batch of sources gave: ``errors[i]`` is ``""`` when ``sources[i]`` has
    outputs; ``outputs`` holds the rows of those sources only, in order."""

    sources: list[Source]
    errors: list[str]
    outputs: dict[str, np.ndarray]
    worker: dict[str, str]

    @property
    def ok(self) -> list[int]:
        return [i for i, error in enumerate(self.errors) if not error]


class SourcePredictor(Predictor):
    """A :class:`Predictor` that reads its inputs: the worker of a batch job.

    Args:
      model, delegate, precision, batch_size, num_threads, exact, device: as for
        :class:`Predictor`.
      image_range: the interval pixel values 0..255 map onto, for image inputs.

    Raises:
      ValueError: as :class:`Predictor`, or an output named like a job column
        (``RESERVED_COLUMNS``).
    """

    def __init__(self, model: str | os.PathLike | bytes, delegate: str = "none", precision: str = "float32",
                 batch_size: int = 32, *, image_range: tuple[float, float] = (0.0, 1.0), num_threads: int | None = None,
                 exact: bool = True, device: int | None = None) -> None:
        super().__init__(model, delegate, precision, batch_size, num_threads=num_threads, exact=exact, device=device)
        clashes = [spec.name for spec in self.outputs if spec.name in RESERVED_COLUMNS]
        if clashes:
            raise ValueError(f"the model has an output named {', '.join(map(repr, clashes))}, a column name of batch "
                             f"jobs ({', '.join(RESERVED_COLUMNS)})")
        self.loader = InputLoader(self.inputs, image_range)
        #: Where this worker runs (``name``: host and process), on what, and how it batches.
        self.worker = {"name": f"{socket.gethostname()} pid {os.getpid()}", "device": self.device, "mode": self.mode,
                       "reason": self.mode_reason}

    def run(self, sources: Sequence[Source], loaded: Sequence[Mapping[str, np.ndarray] | InputError] | None = None) -> BatchResult:
        """Outputs of ``sources`` (read here unless ``loaded`` gives them, as the loader's
        ``load_many`` does), or why a source has none."""
        sources = list(sources)
        loaded = self.loader.load_many(sources) if loaded is None else list(loaded)
        errors = [str(item) if isinstance(item, InputError) else "" for item in loaded]
        ok = [i for i, error in enumerate(errors) if not error]
        empty = {spec.name: np.empty((0, *spec.row_shape), spec.dtype) for spec in self.outputs}
        if not ok:
            return BatchResult(sources, errors, empty, self.worker)
        arrays = {spec.name: np.stack([loaded[i][spec.name] for i in ok]) for spec in self.inputs}
        try:
            outputs = self.predict(arrays, len(ok))
        except Exception:  # run the rows one by one: only the rows that fail are lost
            outputs = self._row_by_row(arrays, ok, errors)
        return BatchResult(sources, errors, outputs, self.worker)

    def _row_by_row(self, arrays: Mapping[str, np.ndarray], ok: list[int], errors: list[str]) -> dict[str, np.ndarray]:
        rows: list[dict[str, np.ndarray]] = []
        for position, index in enumerate(ok):
            one = {name: value[position:position + 1] for name, value in arrays.items()}
            try:
                rows.append(self.predict(one, 1))
            except Exception as error:
                text = str(error).strip().splitlines()
                errors[index] = f"inference failed: {type(error).__name__}: {text[0] if text else ''}"
        return {spec.name: (np.concatenate([row[spec.name] for row in rows]) if rows
                            else np.empty((0, *spec.row_shape), spec.dtype)) for spec in self.outputs}

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Ray's form: ``{"path": [...], "row": [...]}`` -> those columns with ``error``,
        ``worker`` and every output (zeros where ``error`` is set)."""
        paths = [str(path) for path in batch[PATH]]
        rows = [int(row) for row in batch[ROW]]
        result = self.run([Source(path, row) for path, row in zip(paths, rows)])
        count = len(paths)
        columns: dict[str, np.ndarray] = {
            PATH: np.asarray(paths, dtype=object),
            ROW: np.asarray(rows, dtype=np.int64),
            ERROR: np.asarray(result.errors, dtype=object),
            WORKER: np.asarray([json.dumps(self.worker)] * count, dtype=object),
        }
        ok = result.ok
        for spec in self.outputs:
            full = np.zeros((count, *spec.row_shape), spec.dtype)
            full[ok] = result.outputs[spec.name]
            columns[spec.name] = full
        return columns
