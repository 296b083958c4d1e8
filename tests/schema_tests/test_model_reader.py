"""The read view against ai-edge-litert's flatbuffer_utils (the oracle for file contents)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from schema.model import Model

MODELS = sorted((pathlib.Path(__file__).parents[1] / "data" / "models").glob("*/*.tflite"))


def litert_model(path: pathlib.Path):
    from ai_edge_litert.tools import flatbuffer_utils

    return flatbuffer_utils.read_model(str(path))


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_operator_codes_and_versions_equal_flatbuffer_utils(path):
    ours = Model.from_path(path)
    theirs = litert_model(path)
    expected = [
        (max(code.deprecatedBuiltinCode, code.builtinCode), code.version) for code in theirs.operatorCodes
    ]
    assert [(code.builtin_code, code.version) for code in ours.operator_codes] == expected


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_every_operator_has_the_code_and_version_of_its_opcode(path):
    ours = Model.from_path(path)
    theirs = litert_model(path)
    for subgraph, their_subgraph in zip(ours.subgraphs, theirs.subgraphs):
        for op, their_op in zip(subgraph.operators, their_subgraph.operators):
            code = theirs.operatorCodes[their_op.opcodeIndex]
            assert (op.builtin_code, op.version) == (max(code.deprecatedBuiltinCode, code.builtinCode), code.version)
            assert list(op.inputs) == list(their_op.inputs)
            assert list(op.outputs) == list(their_op.outputs)


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_tensors_equal_flatbuffer_utils(path):
    ours = Model.from_path(path)
    theirs = litert_model(path)
    for subgraph, their_subgraph in zip(ours.subgraphs, theirs.subgraphs):
        assert len(subgraph.tensors) == len(their_subgraph.tensors)
        for tensor, their in zip(subgraph.tensors, their_subgraph.tensors):
            assert tensor.name == their.name.decode()
            assert tensor.type == their.type
            assert list(tensor.shape) == list(their.shape if their.shape is not None else [])
            q = their.quantization
            if q is not None and q.scale is not None and len(q.scale):
                np.testing.assert_array_equal(tensor.quantization.scale, np.asarray(q.scale, np.float32))
                np.testing.assert_array_equal(tensor.quantization.zero_point, np.asarray(q.zeroPoint, np.int64))
                assert tensor.quantization.quantized_dimension == q.quantizedDimension
            data = theirs.buffers[their.buffer].data
            if data is not None and len(data):
                assert tensor.data is not None
                assert tensor.data.tobytes() == np.asarray(data, np.uint8).tobytes()
            else:
                assert tensor.data is None


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_subgraph_inputs_outputs_and_signatures_equal_flatbuffer_utils(path):
    ours = Model.from_path(path)
    theirs = litert_model(path)
    assert list(ours.subgraphs[0].inputs) == list(theirs.subgraphs[0].inputs)
    assert list(ours.subgraphs[0].outputs) == list(theirs.subgraphs[0].outputs)
    their_signatures = theirs.signatureDefs or []
    assert [s.key for s in ours.signature_defs] == [s.signatureKey.decode() for s in their_signatures]
    for signature, their in zip(ours.signature_defs, their_signatures):
        assert signature.inputs == {m.name.decode(): m.tensorIndex for m in their.inputs}
        assert signature.outputs == {m.name.decode(): m.tensorIndex for m in their.outputs}


def test_constant_data_is_a_read_only_view_into_the_file_bytes():
    model = Model.from_path(pathlib.Path(__file__).parents[1] / "data/models/converter/dwconv_dil2_float32.tflite")
    constants = [t for t in model.subgraphs[0].tensors if t.data is not None]
    assert constants
    for tensor in constants:
        assert not tensor.data.flags.writeable
        assert tensor.data.base is not None  # a view, not a copy


def test_per_channel_quantization_is_read_with_its_dimension():
    model = Model.from_path(pathlib.Path(__file__).parents[1] / "data/models/converter/dwconv_dil2_int8.tflite")
    per_channel = [t for t in model.subgraphs[0].tensors if t.quantization is not None and t.quantization.is_per_channel]
    assert per_channel
    filters = [t for t in per_channel if t.type == 9]  # INT8 filters of the depthwise convs
    assert all(t.quantization.scale.size == t.shape[t.quantization.quantized_dimension] for t in filters)


def test_dequantize_of_float16_weights_is_seen_in_the_real_model():
    model = Model.from_path(pathlib.Path(__file__).parents[1] / "data/models/real/mp_face_detection_short_range.tflite")
    dequantize = [op for op in model.subgraphs[0].operators if op.op_name == "DEQUANTIZE"]
    assert dequantize and all(op.version == 2 for op in dequantize)
    source = model.subgraphs[0].tensors[dequantize[0].inputs[0]]
    assert source.dtype == np.float16 and source.is_constant


def test_min_runtime_version_metadata_is_read():
    model = Model.from_path(pathlib.Path(__file__).parents[1] / "data/models/converter/dwconv_dil2_float32.tflite")
    assert model.min_runtime_version == "1.12.0"


def test_every_recipe_s_params_equal_what_the_generated_accessors_read():
    """The fast reader (flatbuffer_view) and the generated accessors read the same options from
    every recipe model, from either union (StableHLO ops, REDUCE_WINDOW: builtin_options_2)."""
    from delegate_sdk.testing import VERSION_RECIPES
    from schema import schema_generated as fb
    from schema.option_parsers import OPTIONS_2_TABLE_OF_OP, parse_builtin_options

    second_union_params = 0
    for entry in VERSION_RECIPES.values():
        data = entry()
        ours = Model.from_bytes(data)
        raw = fb.Model.GetRootAs(data, 0)
        for s, subgraph in enumerate(ours.subgraphs):
            for i, op in enumerate(subgraph.operators):
                expected = parse_builtin_options(op.builtin_code, raw.Subgraphs(s).Operators(i))
                assert op.params == expected, f"{entry.label}: subgraph {s} operator {i}"
                second_union_params += op.builtin_code in OPTIONS_2_TABLE_OF_OP and op.params != type(op.params)()
    assert second_union_params >= 5  # (recipes whose builtin_options_2 are not all defaults)


def test_the_options_of_a_second_union_op_are_read_from_builtin_options_2():
    from model_helpers import Const, In, Out, single_op_model
    from schema.enums import BuiltinOperator as B
    from schema.params import StablehloPadParams

    params = StablehloPadParams(edge_padding_low=(1,), edge_padding_high=(2,), interior_padding=(1,))
    model = single_op_model(B.STABLEHLO_PAD, [In([2]), Const(np.float32(0))], Out([6]), params)
    assert Model.from_bytes(model).subgraphs[0].operators[0].params == params
