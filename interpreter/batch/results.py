"""Writing a batch job's results: one Parquet file of rows, one of errors.

``OUT.parquet`` has one row per input that gave outputs: a ``source`` column (the file,
or ``file#row`` for a row of a Parquet input) and one column per model output, named by
the output's name, holding the row's tensor as an ``arrow.fixed_shape_tensor`` (the
shape in the type, and again as JSON in the field's ``shape`` metadata; a scalar output
is a plain column). ``OUT.errors.parquet`` has ``source`` and ``error`` (the reason) for
every input that gave none. Both are plain Parquet, read by pyarrow or pandas without
Ray::

    table = pyarrow.parquet.read_table("OUT.parquet")
    boxes = table.column("regressors").combine_chunks().to_numpy_ndarray()   # [rows, 896, 16]

Files are written under a temporary name and renamed when the job ends, so a file with
the final name is complete.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Mapping, Sequence

import numpy as np

from interpreter.batch.inputs import import_optional
from interpreter.batch.predictor import OutputSpec

SOURCE, ERROR = "source", "error"


def errors_path_for(output: str | os.PathLike) -> pathlib.Path:
    """``OUT.parquet`` -> ``OUT.errors.parquet`` (a name without ``.parquet`` gets the suffix added)."""
    path = pathlib.Path(output)
    stem = path.name[: -len(".parquet")] if path.name.endswith(".parquet") else path.name
    return path.with_name(f"{stem}.errors.parquet")


class ResultWriter:
    """Appends rows and errors to the two Parquet files of a job.

    Args:
      output: the rows' file (``OUT.parquet``); errors go to :func:`errors_path_for`.
      outputs: the model's outputs, in order: the columns after ``source``.
      metadata: key/values stored in both files' schema metadata (model, delegate...).

    Raises:
      ValueError: an output named ``source``.
    """

    def __init__(self, output: str | os.PathLike, outputs: Sequence[OutputSpec], metadata: Mapping[str, str] = ()) -> None:
        self.pa = import_optional("pyarrow")
        self.pq = import_optional("pyarrow.parquet")
        names = [spec.name for spec in outputs]
        if SOURCE in names:
            raise ValueError(f"the model has an output named {SOURCE!r}, the name of the column of sources")
        self.outputs = list(outputs)
        self.path = pathlib.Path(output)
        self.errors_path = errors_path_for(output)
        meta = {key.encode(): str(value).encode() for key, value in dict(metadata).items()}
        fields = [self.pa.field(SOURCE, self.pa.string())] + [self._field(spec) for spec in self.outputs]
        self.schema = self.pa.schema(fields, metadata=meta)
        self.errors_schema = self.pa.schema([self.pa.field(SOURCE, self.pa.string()), self.pa.field(ERROR, self.pa.string())],
                                            metadata=meta)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._partial = [self.path.with_name(self.path.name + ".partial"),
                         self.errors_path.with_name(self.errors_path.name + ".partial")]
        # Dictionary encoding only for the sources: on the tensors' values (floats, mostly
        # distinct) it made each batch's write 6x slower (28 -> 4.7 ms for 32 rows of face
        # detection's outputs, measured) for no gain in size.
        self._rows = self.pq.ParquetWriter(self._partial[0], self.schema, use_dictionary=[SOURCE])
        self._errors = self.pq.ParquetWriter(self._partial[1], self.errors_schema)
        self.rows = 0
        self.errors = 0

    def _field(self, spec: OutputSpec) -> Any:
        value_type = self.pa.from_numpy_dtype(spec.dtype)
        if not spec.row_shape:
            return self.pa.field(spec.name, value_type)
        return self.pa.field(spec.name, self.pa.fixed_shape_tensor(value_type, list(spec.row_shape)),
                             metadata={b"shape": json.dumps(list(spec.row_shape)).encode()})

    def write_rows(self, sources: Sequence[str], outputs: Mapping[str, np.ndarray]) -> None:
        """Rows: ``sources[i]`` with ``outputs[name][i]`` for every output."""
        if not sources:
            return
        columns = [self.pa.array(list(sources), self.pa.string())]
        for spec in self.outputs:
            value = np.ascontiguousarray(outputs[spec.name], dtype=spec.dtype)
            if value.shape != (len(sources), *spec.row_shape):
                raise ValueError(f"output {spec.name!r}: shape {list(value.shape)} for {len(sources)} row(s)")
            column = (self.pa.array(value) if not spec.row_shape
                      else self.pa.FixedShapeTensorArray.from_numpy_ndarray(value))
            columns.append(column)
        self._rows.write_table(self.pa.Table.from_arrays(columns, schema=self.schema))
        self.rows += len(sources)

    def write_errors(self, sources: Sequence[str], errors: Sequence[str]) -> None:
        """Errors: ``sources[i]`` could not give a row, because ``errors[i]``."""
        if not sources:
            return
        table = self.pa.Table.from_arrays([self.pa.array(list(sources), self.pa.string()),
                                           self.pa.array(list(errors), self.pa.string())], schema=self.errors_schema)
        self._errors.write_table(table)
        self.errors += len(sources)

    def close(self) -> None:
        """Finish both files and give them their final names."""
        self._rows.close()
        self._errors.close()
        os.replace(self._partial[0], self.path)
        os.replace(self._partial[1], self.errors_path)

    def abort(self) -> None:
        """Stop without leaving files (after an error that ends the job)."""
        for writer in (self._rows, self._errors):
            try:
                writer.close()
            except Exception:  # already closed or broken: the file goes anyway
                pass
        for partial in self._partial:
            partial.unlink(missing_ok=True)
