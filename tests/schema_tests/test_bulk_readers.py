"""The bulk readers (``schema.tensor_tables``, ``schema.operator_tables``) read what the
table-by-table reader reads, and refuse what it refuses with its error.

Oracle: ``schema.model``'s table-by-table reader (the bulk readers disabled)."""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schema import model as schema_model
from schema.errors import ModelError
from schema.model import Model

MODELS = sorted((pathlib.Path(__file__).resolve().parents[1] / "data" / "models").rglob("*.tflite"))
#: a bundled model with enough tensors and operators for both bulk readers
MUTATED_MODEL = pathlib.Path(__file__).resolve().parents[1] / "data" / "models" / "real" / "mltk_keyword_spotting_alexa_int8.tflite"


def _table_by_table(data: bytes):
    """What the table-by-table reader makes of ``data``: the model, or its error's text."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema_model, "read_tensors", lambda *args: None)
        patch.setattr(schema_model, "operator_fields", lambda *args: None)
        return _outcome(data)


def _outcome(data: bytes):
    try:
        return Model.from_bytes(data)
    except ModelError as error:
        return f"ModelError: {error}"


def _same(a, b, where: str = "model") -> None:
    """Assert ``a`` and ``b`` hold the same values (numpy arrays by dtype, shape and values)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), where
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for field in dataclasses.fields(a):
            _same(getattr(a, field.name), getattr(b, field.name), f"{where}.{field.name}")
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"


def test_the_bulk_readers_are_used_on_a_large_model():
    data = MUTATED_MODEL.read_bytes()
    with pytest.MonkeyPatch.context() as patch:
        def refuse(*args):
            raise AssertionError("the table-by-table reader was asked")

        patch.setattr(schema_model._ModelReader, "read_operator", refuse)
        patch.setattr(schema_model._ModelReader, "read_tensor", refuse)
        Model.from_bytes(data)


@pytest.mark.parametrize("path", MODELS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_bulk_readers_read_what_the_table_by_table_reader_reads(path):
    data = path.read_bytes()
    _same(_outcome(data), _table_by_table(data))


def _table_positions(data: bytes) -> list[int]:
    """Where the first subgraph's tensor and operator tables and its tensors' quantization
    tables start."""
    from schema.flatbuffer_view import root_table

    subgraph = root_table(data).tables(2)[0]
    tensors = subgraph.tables(0)
    quantizations = [table.table(4) for table in tensors]
    return [table.pos for table in (*tensors, *subgraph.tables(3), *quantizations) if table is not None]


ORIGINAL = MUTATED_MODEL.read_bytes()
TABLES = _table_positions(ORIGINAL)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_damaged_model_gets_the_table_by_table_readers_outcome(draw):
    """Bytes overwritten in and around the tensor and operator tables (their vtables,
    fields, vectors): the same model, or the same error, either way."""
    data = bytearray(ORIGINAL)
    for _ in range(draw.draw(st.integers(1, 3))):
        at = draw.draw(st.sampled_from(TABLES)) + draw.draw(st.integers(-24, 48))
        data[at] = draw.draw(st.sampled_from([0, 1, 2, 4, 0x7F, 0x80, 0xFF, draw.draw(st.integers(0, 255))]))
    damaged = bytes(data)
    _same(_outcome(damaged), _table_by_table(damaged))


def _quantization_vectors(data: bytes) -> tuple[list[int], list[int]]:
    """Where the first subgraph's scales (float32) and zero points (int64) lie."""
    from schema.flatbuffer_view import root_table

    scales, zero_points = [], []
    for tensor in root_table(data).tables(2)[0].tables(0):
        quantization = tensor.table(4)
        if quantization is None:
            continue
        for slot, found in ((2, scales), (3, zero_points)):
            vector = quantization.vector(slot, 1)
            if vector is not None and vector[1]:
                found.append(vector[0])
    return scales, zero_points


SCALES, ZERO_POINTS = _quantization_vectors(ORIGINAL)


@pytest.mark.parametrize("scale", [float("nan"), float("inf"), -0.5, 0.0])
@pytest.mark.parametrize("which", [0, len(SCALES) // 2, len(SCALES) - 1])
def test_a_bad_scale_gets_the_table_by_table_readers_error(scale, which):
    data = bytearray(ORIGINAL)
    data[SCALES[which] : SCALES[which] + 4] = np.float32(scale).tobytes()
    outcome = _outcome(bytes(data))
    if scale != 0:  # (scale 0 is refused on int8 values only)
        assert isinstance(outcome, str) and "scale" in outcome
    _same(outcome, _table_by_table(bytes(data)))


@pytest.mark.parametrize("zero_point", [1 << 31, -(1 << 31) - 1, 1 << 40])
def test_a_zero_point_outside_int32_gets_the_table_by_table_readers_error(zero_point):
    data = bytearray(ORIGINAL)
    at = ZERO_POINTS[len(ZERO_POINTS) // 2]
    data[at : at + 8] = np.int64(zero_point).tobytes()
    outcome = _outcome(bytes(data))
    assert isinstance(outcome, str) and "zero point" in outcome
    assert outcome == _table_by_table(bytes(data))


SPARSE_MODEL = pathlib.Path(__file__).resolve().parents[1] / "data" / "models" / "real" / "mp_pose_detection.tflite"


def _sparsity_tables(data: bytes) -> list[int]:
    """Where the first subgraph's sparsity tables, their dim_metadata entries and the
    entries' index vector tables start."""
    from schema.flatbuffer_view import root_table

    found = []
    for tensor in root_table(data).tables(2)[0].tables(0):
        sparsity = tensor.table(6)
        if sparsity is None:
            continue
        found.append(sparsity.pos)
        for entry in sparsity.tables(2):
            found.append(entry.pos)
            found.extend(vector.pos for slot in (3, 5) if (vector := entry.table(slot)) is not None)
    return found


SPARSE_ORIGINAL = SPARSE_MODEL.read_bytes()
SPARSITY_TABLES = _sparsity_tables(SPARSE_ORIGINAL)


def _checked_sparsity_only(data: bytes):
    """What the reader makes of ``data`` with sparsity read by ``checked_sparsity`` alone."""

    def refuse(*args):
        raise IndexError("plain_sparsity disabled")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema_model._ModelReader, "plain_sparsity", refuse)
        return _outcome(data)


def test_the_sparse_model_has_sparsity_tables_to_damage():
    assert len(SPARSITY_TABLES) > 100


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_sparsity_gets_the_checked_readers_outcome(draw):
    """Bytes overwritten in and around the sparsity tables: ``plain_sparsity`` reads the
    same parameters as ``checked_sparsity``, or leaves the error to it."""
    data = bytearray(SPARSE_ORIGINAL)
    for _ in range(draw.draw(st.integers(1, 3))):
        at = draw.draw(st.sampled_from(SPARSITY_TABLES)) + draw.draw(st.integers(-24, 48))
        data[at] = draw.draw(st.sampled_from([0, 1, 2, 4, 0x7F, 0x80, 0xFF, draw.draw(st.integers(0, 255))]))
    damaged = bytes(data)
    _same(_outcome(damaged), _checked_sparsity_only(damaged))
