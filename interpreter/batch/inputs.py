"""The inputs of a batch job: which samples the paths hold, and reading one into arrays.

A *source* is one sample: a ``.npy`` file (one sample, shaped as the model's input with
or without its leading 1), an ``.npz`` file (one array per input name), an image (PNG or
JPEG, resized to the model's input and scaled to ``image_range``), or one row of a
Parquet file (one column per input). Directories stand for every file in them, their
subdirectories included (hidden files aside), so that a file nothing can read still
counts as an input and is reported as a bad one.

Reading a source checks it against the model's inputs (:class:`InputSpec`) and raises
:class:`InputError`, with the reason, for anything that cannot be read or has the wrong
shape or dtype: a batch job reports it and goes on.
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

NUMPY_SUFFIXES = (".npy", ".npz")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
PARQUET_SUFFIXES = (".parquet",)
INPUT_SUFFIXES = NUMPY_SUFFIXES + IMAGE_SUFFIXES + PARQUET_SUFFIXES

#: ``--image-range``: the interval that pixel values 0..255 are mapped onto.
IMAGE_RANGES: dict[str, tuple[float, float]] = {"0,1": (0.0, 1.0), "-1,1": (-1.0, 1.0), "0,255": (0.0, 255.0)}


class InputError(ValueError):
    """A source that cannot be a row: unreadable, or the wrong shape or dtype (the reason)."""


@dataclass(frozen=True)
class InputSpec:
    """One model input as a batch job sees it.

    ``row_shape`` is one sample's shape: the input's shape without its leading 1 when it
    has one (``batch_axis``), else the whole shape. ``scale``/``zero_point`` are the
    input's quantization (``scale`` 0 when it has none), used to quantize images.
    """

    name: str
    index: int
    dtype: np.dtype
    row_shape: tuple[int, ...]
    batch_axis: bool
    scale: float = 0.0
    zero_point: int = 0

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any]) -> "InputSpec":
        """The spec of an ``Interpreter.get_input_details()`` entry (at batch 1)."""
        shape = tuple(int(d) for d in detail["shape"])
        batch_axis = len(shape) > 0 and shape[0] == 1
        scale, zero_point = detail.get("quantization", (0.0, 0))
        return cls(detail["name"], int(detail["index"]), np.dtype(detail["dtype"]), shape[1:] if batch_axis else shape,
                   batch_axis, float(scale), int(zero_point))

    def describe(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.row_shape))}]"


@dataclass(frozen=True)
class Source:
    """One sample: a file (``row`` -1) or one row of a Parquet file."""

    path: str
    row: int = -1

    @property
    def label(self) -> str:
        """What the ``source`` column says: the path, or ``path#row`` for a Parquet row."""
        return self.path if self.row < 0 else f"{self.path}#{self.row}"


def conform(value: Any, spec: InputSpec, leading: int | None = None) -> np.ndarray:
    """``value`` as input ``spec`` takes it: its shape ``row_shape`` (or ``[leading,
    *row_shape]`` when ``leading`` is given; a sample may carry the model's leading 1)
    and its dtype (a lossless cast is made: uint8 to float32, say; a lossy one is refused).

    Raises:
      InputError: the wrong shape, or a dtype that does not cast without loss.
    """
    array = np.asarray(value)
    expected = spec.row_shape if leading is None else (leading, *spec.row_shape)
    if array.shape != expected:
        with_one = (1, *spec.row_shape) if leading is None else (leading, 1, *spec.row_shape)
        if spec.batch_axis and array.shape == with_one:
            array = array.reshape(expected)
        else:
            wanted = f"[{','.join(map(str, expected))}]"
            if spec.batch_axis and leading is None:
                wanted += f" or [1,{','.join(map(str, spec.row_shape))}]"
            raise InputError(f"input {spec.name!r}: shape [{','.join(map(str, array.shape))}], expected {wanted}")
    if array.dtype != spec.dtype:
        if array.dtype.kind in "OUSV" or not np.can_cast(array.dtype, spec.dtype, "safe"):
            raise InputError(
                f"input {spec.name!r}: dtype {array.dtype.name}, expected {spec.dtype.name} (a cast from "
                f"{array.dtype.name} could lose values: convert the data first)"
            )
        array = array.astype(spec.dtype)
    return array


# -- finding the sources -------------------------------------------------------------------------

def expand_inputs(paths: Iterable[str | os.PathLike]) -> list[Source]:
    """Every sample the paths hold, in order: files as given, each directory's files in
    sorted order (subdirectories included, hidden files skipped), each Parquet file as
    one source per row. A Parquet file whose metadata cannot be read is one source (it
    is reported as a bad input when read).

    Raises:
      FileNotFoundError: a path that does not exist.
    """
    sources: list[Source] = []
    for given in paths:
        path = pathlib.Path(given)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p.relative_to(path)))
        elif path.is_file():
            files = [path]
        else:
            raise FileNotFoundError(f"no such input file or directory: {given}")
        for file in files:
            sources.extend(_sources_of_file(file))
    return sources


def _hidden(relative: pathlib.Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _sources_of_file(file: pathlib.Path) -> list[Source]:
    if file.suffix.lower() in PARQUET_SUFFIXES:
        pq = import_optional("pyarrow.parquet")
        try:
            rows = pq.ParquetFile(file).metadata.num_rows
        except Exception:  # unreadable metadata: one source, which reading reports
            return [Source(str(file))]
        return [Source(str(file), row) for row in range(rows)]
    return [Source(str(file))]


# -- reading them --------------------------------------------------------------------------------

class InputLoader:
    """Reads sources into ``{input name: array of row_shape}`` for a model's inputs.

    Args:
      specs: the model's inputs.
      image_range: the interval pixel values 0..255 map onto (``(0, 1)``, ``(-1, 1)`` or
        ``(0, 255)``); integer inputs with a quantization get the quantized values.
    """

    def __init__(self, specs: Sequence[InputSpec], image_range: tuple[float, float] = (0.0, 1.0)) -> None:
        self.specs = list(specs)
        self.image_range = image_range
        self._parquet: dict[str, Any] = {}  # path -> (ParquetFile, row group starts)
        self._row_group: tuple[str, int, Any] | None = None  # the last row group read

    def load_many(self, sources: Sequence[Source]) -> list[dict[str, np.ndarray] | InputError]:
        """Each source read, or the :class:`InputError` saying why it cannot be."""
        loaded: list[dict[str, np.ndarray] | InputError] = []
        for source in sources:
            try:
                loaded.append(self.load(source))
            except InputError as error:
                loaded.append(error)
        return loaded

    def load(self, source: Source) -> dict[str, np.ndarray]:
        """One source as ``{input name: array}``.

        Raises:
          InputError: the source cannot be read, or does not fit the model's inputs.
        """
        if source.row >= 0:
            return self._parquet_row(source)
        suffix = pathlib.Path(source.path).suffix.lower()
        if suffix == ".npy":
            return self._npy(source.path)
        if suffix == ".npz":
            return self._npz(source.path)
        if suffix in IMAGE_SUFFIXES:
            return self._image(source.path)
        if suffix in PARQUET_SUFFIXES:
            return self._unreadable_parquet(source.path)
        raise InputError(f"not an input file: expected one of {', '.join(INPUT_SUFFIXES)}")

    # -- numpy files -----------------------------------------------------------------------------
    def _npy(self, path: str) -> dict[str, np.ndarray]:
        if len(self.specs) != 1:
            names = ", ".join(spec.name for spec in self.specs)
            raise InputError(f"the model has {len(self.specs)} inputs ({names}): give .npz files with one array per input name")
        return {self.specs[0].name: conform(_read_numpy(path), self.specs[0])}

    def _npz(self, path: str) -> dict[str, np.ndarray]:
        try:
            with np.load(path, allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
        except Exception as error:
            raise InputError(f"cannot read: {_reason(error)}") from None
        names = [spec.name for spec in self.specs]
        if len(self.specs) == 1 and len(arrays) == 1:  # one input: the array's name does not matter
            arrays = {names[0]: next(iter(arrays.values()))}
        missing = [name for name in names if name not in arrays]
        extra = [name for name in arrays if name not in names]
        if missing or extra:
            raise InputError(
                f"the .npz has arrays {', '.join(map(repr, arrays)) or '(none)'}; the model's inputs are "
                f"{', '.join(map(repr, names))}"
            )
        return {spec.name: conform(arrays[spec.name], spec) for spec in self.specs}

    # -- images ----------------------------------------------------------------------------------
    def _image(self, path: str) -> dict[str, np.ndarray]:
        spec = self._image_input()
        height, width, channels = spec.row_shape if len(spec.row_shape) == 3 else (*spec.row_shape, 0)
        try:
            from PIL import Image
        except ImportError:
            raise InputError("reading images needs Pillow: pip install 'litedelegate[batch]'") from None
        try:
            with Image.open(path) as image:
                image = image.convert("L" if channels in (0, 1) else "RGB")
                image = image.resize((width, height), Image.Resampling.BILINEAR)
                pixels = np.asarray(image, dtype=np.float32)
        except Exception as error:
            raise InputError(f"cannot read the image: {_reason(error)}") from None
        low, high = self.image_range
        values = low + pixels * np.float32((high - low) / 255.0)
        return {spec.name: _to_input_type(values.reshape(spec.row_shape), spec)}

    def _image_input(self) -> InputSpec:
        shapes = [spec.row_shape for spec in self.specs]
        if len(self.specs) == 1:
            shape = shapes[0]
            if (len(shape) == 3 and shape[2] in (1, 3)) or len(shape) == 2:
                return self.specs[0]
        raise InputError(
            "images need a model with one input shaped [1, height, width, 1 or 3]; this model takes "
            + ", ".join(f"{spec.name} {spec.describe()}" for spec in self.specs)
        )

    # -- Parquet rows ----------------------------------------------------------------------------
    def _parquet_row(self, source: Source) -> dict[str, np.ndarray]:
        start, group = self._row_group_of(source.path, source.row)
        names = [spec.name for spec in self.specs]
        if any(name not in group.column_names for name in names):
            columns = self._parquet[source.path][0].schema_arrow.names
            raise InputError(
                f"the Parquet file has columns {', '.join(map(repr, columns))}; the model's inputs are "
                f"{', '.join(map(repr, names))}"
            )
        row = source.row - start
        return {spec.name: conform(_cell(group.column(spec.name), row, spec), spec) for spec in self.specs}

    def _row_group_of(self, path: str, row: int) -> tuple[int, Any]:
        """(first row, table) of the row group holding ``row``; the last one read is kept."""
        pq = import_optional("pyarrow.parquet")
        if path not in self._parquet:
            try:
                file = pq.ParquetFile(path)
            except Exception as error:
                raise InputError(f"cannot read the Parquet file: {_reason(error)}") from None
            starts = np.cumsum([0] + [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)])
            self._parquet = {path: (file, starts)}  # one file open at a time: sources come file by file
        file, starts = self._parquet[path]
        group = int(np.searchsorted(starts, row, side="right")) - 1
        if self._row_group is None or self._row_group[:2] != (path, group):
            names = [spec.name for spec in self.specs]
            columns = [name for name in names if name in file.schema_arrow.names]
            try:
                self._row_group = (path, group, file.read_row_group(group, columns=columns))
            except Exception as error:
                raise InputError(f"cannot read row group {group} of the Parquet file: {_reason(error)}") from None
        return int(starts[group]), self._row_group[2]

    def _unreadable_parquet(self, path: str) -> dict[str, np.ndarray]:
        pq = import_optional("pyarrow.parquet")
        try:
            pq.ParquetFile(path)
        except Exception as error:
            raise InputError(f"cannot read the Parquet file: {_reason(error)}") from None
        raise InputError("the Parquet file has no rows")


def _cell(column: Any, row: int, spec: InputSpec) -> np.ndarray:
    """One cell of a Parquet column as an array: a fixed-shape tensor, a (nested) list of
    numbers (reshaped to the input's row shape), or a number."""
    import pyarrow as pa

    cell = column.slice(row, 1).combine_chunks()
    if cell.null_count:
        raise InputError(f"input {spec.name!r}: the value is null")
    if isinstance(cell.type, pa.FixedShapeTensorType):
        return cell.to_numpy_ndarray()[0]
    if pa.types.is_list(cell.type) or pa.types.is_large_list(cell.type) or pa.types.is_fixed_size_list(cell.type):
        values = cell
        while pa.types.is_list(values.type) or pa.types.is_large_list(values.type) or pa.types.is_fixed_size_list(values.type):
            values = values.flatten()
        flat = values.to_numpy(zero_copy_only=False)
        if flat.size != int(np.prod(spec.row_shape)):
            raise InputError(
                f"input {spec.name!r}: {flat.size} values, expected {int(np.prod(spec.row_shape))} "
                f"(shape [{','.join(map(str, spec.row_shape))}])"
            )
        return flat.reshape(spec.row_shape)
    if pa.types.is_integer(cell.type) or pa.types.is_floating(cell.type) or pa.types.is_boolean(cell.type):
        return cell.to_numpy(zero_copy_only=False).reshape(())
    raise InputError(f"input {spec.name!r}: a Parquet column of type {cell.type} is not a tensor or a list of numbers")


def _read_numpy(path: str) -> np.ndarray:
    """A ``.npy`` file's array (``numpy.lib.format``: a file without the .npy magic is
    reported as such, where ``np.load`` would take it for a pickle)."""
    try:
        with open(path, "rb") as file:
            return np.lib.format.read_array(file, allow_pickle=False)
    except Exception as error:
        raise InputError(f"cannot read the .npy file: {_reason(error)}") from None


def _to_input_type(values: np.ndarray, spec: InputSpec) -> np.ndarray:
    """Float pixel values in the input's dtype: quantized with the input's scale and zero
    point for a quantized integer input, rounded and clipped for another integer one."""
    if spec.dtype.kind == "f":
        return values.astype(spec.dtype)
    if spec.dtype.kind in "iu":
        if spec.scale > 0:
            values = np.round(values / np.float32(spec.scale)) + spec.zero_point
        info = np.iinfo(spec.dtype)
        return np.clip(np.round(values), info.min, info.max).astype(spec.dtype)
    raise InputError(f"input {spec.name!r} takes {spec.dtype.name}: images cannot be read into it")


def import_optional(module: str) -> Any:
    """``module`` (pyarrow, ray...), or an ImportError saying to install the ``batch`` extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"batch jobs need {module.split('.')[0]} ({error}): pip install 'litedelegate[batch]' (ray[data], "
            "pyarrow, Pillow)"
        ) from error


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
