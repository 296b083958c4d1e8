"""Bad files never crash the reader: every defect is a ModelError that says what and where."""

from __future__ import annotations

import pathlib
import zlib

import flatbuffers
import numpy as np
import pytest

from schema import schema_generated as fb
from schema.errors import ModelError
from schema.model import Model

MODELS_DIR = pathlib.Path(__file__).parents[1] / "data" / "models"
SMALL_MODEL = MODELS_DIR / "converter" / "dwconv_dil2_float32.tflite"
# Everything the reader could raise if a defect slipped past its checks.
LOW_LEVEL = (IndexError, KeyError, AttributeError, TypeError, OverflowError, UnicodeDecodeError, RecursionError)


def rewrite(path: pathlib.Path, change) -> bytes:
    """Load a model with the object API, let ``change`` corrupt it, and write it again."""
    return rewrite_bytes(path.read_bytes(), change)


def rewrite_bytes(data: bytes, change) -> bytes:
    """``rewrite`` of a model held in memory."""
    model = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
    change(model)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def model_error(data: bytes) -> str:
    with pytest.raises(ModelError) as caught:
        Model.from_bytes(data)
    return str(caught.value)


def test_empty_file_is_refused():
    assert "only 0 bytes" in model_error(b"")


def test_wrong_file_identifier_is_refused():
    data = bytearray(SMALL_MODEL.read_bytes())
    data[4:8] = b"ABCD"
    assert "file identifier is b'ABCD'" in model_error(bytes(data))


def test_schema_version_other_than_3_is_refused():
    def change(model):
        model.version = 4

    assert "unsupported schema version 4" in model_error(rewrite(SMALL_MODEL, change))


def test_truncated_file_is_refused():
    data = SMALL_MODEL.read_bytes()
    for length in (8, 64, len(data) // 2, len(data) - 100):
        with pytest.raises(ModelError):
            Model.from_bytes(data[:length])


def test_operator_input_out_of_range_names_operator_and_tensor():
    def change(model):
        model.subgraphs[0].operators[1].inputs[0] = 500

    message = model_error(rewrite(SMALL_MODEL, change))
    assert "operator 1 (DEPTHWISE_CONV_2D v2) input 0 refers to tensor 500" in message


def test_opcode_index_out_of_range_is_refused():
    def change(model):
        model.subgraphs[0].operators[0].opcodeIndex = 7

    assert "refers to operator code 7" in model_error(rewrite(SMALL_MODEL, change))


def test_buffer_index_out_of_range_is_refused():
    def change(model):
        model.subgraphs[0].tensors[1].buffer = 999

    assert "refers to buffer 999" in model_error(rewrite(SMALL_MODEL, change))


def test_subgraph_output_out_of_range_is_refused():
    def change(model):
        model.subgraphs[0].outputs = [77]

    assert "output 0 refers to tensor 77" in model_error(rewrite(SMALL_MODEL, change))


def test_buffer_shorter_than_its_tensor_shape_is_refused():
    def change(model):
        tensor = next(t for t in model.subgraphs[0].tensors if model.buffers[t.buffer].data is not None)
        model.buffers[tensor.buffer].data = model.buffers[tensor.buffer].data[:4]

    assert "but its buffer holds only 4 bytes" in model_error(rewrite(SMALL_MODEL, change))


def test_negative_dimension_is_refused():
    def change(model):
        model.subgraphs[0].tensors[0].shape[1] = -5

    assert "negative dimension" in model_error(rewrite(SMALL_MODEL, change))


def test_absurd_shape_is_refused_without_allocating():
    def change(model):
        model.subgraphs[0].tensors[0].shape = [1 << 20, 1 << 20, 1 << 10]

    assert "more than the" in model_error(rewrite(SMALL_MODEL, change))


def test_mismatched_options_type_names_the_operator():
    def change(model):
        model.subgraphs[0].operators[0].builtinOptionsType = fb.BuiltinOptions.AddOptions
        model.subgraphs[0].operators[0].builtinOptions = fb.AddOptionsT()

    message = model_error(rewrite(SMALL_MODEL, change))
    assert "operator 0 (DEPTHWISE_CONV_2D v2)" in message and "AddOptions" in message


def test_external_buffer_past_end_of_file_is_refused():
    def change(model):
        tensor = next(t for t in model.subgraphs[0].tensors if model.buffers[t.buffer].data is not None)
        model.buffers[tensor.buffer].data = None
        model.buffers[tensor.buffer].offset = 10_000_000
        model.buffers[tensor.buffer].size = 64

    assert "past the end" in model_error(rewrite(SMALL_MODEL, change))


def test_missing_file_is_a_model_error():
    with pytest.raises(ModelError, match="Could not open"):
        Model.from_path("/nonexistent/model.tflite")


def mutations(data: bytes, rng: np.random.Generator, count: int):
    """Seeded corruptions: truncations, byte flips, overwritten words, random files."""
    for i in range(count):
        kind = i % 4
        buf = bytearray(data)
        if kind == 0:
            yield bytes(buf[: rng.integers(0, len(buf))])
        elif kind == 1:
            for position in rng.integers(0, len(buf), size=rng.integers(1, 8)):
                buf[position] = int(rng.integers(0, 256))
            yield bytes(buf)
        elif kind == 2:
            position = int(rng.integers(8, len(buf) - 4))
            buf[position : position + 4] = int(rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, rng.integers(0, 1 << 32)])).to_bytes(4, "little")
            yield bytes(buf)
        else:
            random_bytes = bytearray(rng.integers(0, 256, size=rng.integers(8, 2048), dtype=np.uint8).tobytes())
            random_bytes[4:8] = b"TFL3"
            yield bytes(random_bytes)


FUZZ_MODELS = [p for p in sorted(MODELS_DIR.glob("*/*.tflite")) if p.stat().st_size < 64 * 1024]


@pytest.mark.parametrize("path", FUZZ_MODELS, ids=lambda p: p.stem)
def test_seeded_mutations_raise_only_model_errors(path):
    rng = np.random.default_rng(zlib.crc32(path.name.encode()))
    parsed = refused = 0
    for data in mutations(path.read_bytes(), rng, count=120):
        try:
            Model.from_bytes(data)
            parsed += 1
        except ModelError as error:
            assert str(error), "a ModelError must say what is wrong"
            refused += 1
        except LOW_LEVEL as error:  # pragma: no cover - the failure this test exists for
            pytest.fail(f"{type(error).__name__} escaped the reader: {error}")
    assert parsed + refused == 120 and refused > 0


def stablehlo_pad_model() -> bytes:
    """One STABLEHLO_PAD node (options in builtin_options_2)."""
    from model_helpers import Const, In, Out, single_op_model
    from schema.enums import BuiltinOperator
    from schema.params import StablehloPadParams

    params = StablehloPadParams(edge_padding_low=(1,), edge_padding_high=(1,), interior_padding=(1,))
    return single_op_model(BuiltinOperator.STABLEHLO_PAD, [In([2]), Const(np.float32(0))], Out([5]), params)


def test_a_mismatched_second_union_options_type_names_the_operator_and_both_tables():
    def change(model):
        model.subgraphs[0].operators[0].builtinOptions2Type = fb.BuiltinOptions2.StablehloGatherOptions
        model.subgraphs[0].operators[0].builtinOptions2 = fb.StablehloGatherOptionsT()

    message = model_error(rewrite_bytes(stablehlo_pad_model(), change))
    assert "malformed model: subgraph 0 operator 0 (STABLEHLO_PAD v1)" in message
    assert "builtin options 2 StablehloPadOptions" in message and "StablehloGatherOptions" in message


def operator_field_slot(data: bytes, slot: int) -> int:
    """The byte in ``data`` holding the vtable entry of field ``slot`` of subgraph 0's operator 0."""
    operator = fb.Model.GetRootAs(data, 0).Subgraphs(0).Operators(0)
    position = operator._tab.Pos
    vtable = position - int.from_bytes(data[position : position + 4], "little", signed=True)
    return vtable + 4 + 2 * slot


def test_a_second_union_options_type_past_the_end_names_the_operator_and_the_field():
    data = bytearray(stablehlo_pad_model())
    at = operator_field_slot(bytes(data), 11)  # builtin_options_2_type (Offset(26) in schema_generated)
    data[at : at + 2] = (0xFFFF).to_bytes(2, "little")
    message = model_error(bytes(data))
    assert "cannot read subgraph 0 operator 0 (STABLEHLO_PAD v1) builtin_options_2" in message


def test_a_second_union_options_table_past_the_end_names_the_operator_table_and_field():
    data = bytearray(stablehlo_pad_model())
    operator = fb.Model.GetRootAs(bytes(data), 0).Subgraphs(0).Operators(0)
    at = operator._tab.Pos + operator._tab.Offset(28)  # builtin_options_2: the table's offset
    data[at : at + 4] = (len(data) * 4).to_bytes(4, "little")
    message = model_error(bytes(data))
    assert "subgraph 0 operator 0 (STABLEHLO_PAD v1)" in message
    assert "StablehloPadOptions" in message and "edge_padding_low" in message
