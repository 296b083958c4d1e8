"""Params types (schema/params.py) and option parsers (schema/option_parsers.py).

The consistency tests here are the ones the versioning procedure relies on: a field
added to a table of schema.fbs and not to its params class (or with another
default) fails them.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
from pathlib import Path

import flatbuffers
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schema import params as p
from schema import schema_generated as fb
from schema.enums import BuiltinOperator, BuiltinOptions, BuiltinOptions2, Padding
from schema.errors import ModelError
from schema.option_parsers import (
    OPTIONS_2_TABLE_OF_OP,
    OPTIONS_TABLE_OF_OP,
    UNMODELLED_FIELDS,
    builtin_options_2_of_params,
    builtin_options_of_params,
    params_class_of_op,
    parse_builtin_options,
    snake_to_camel,
)

MODELS_DIR = Path(__file__).resolve().parents[1] / "data" / "models"

#: Every op with options, of either union: op -> (union member, params class).
ALL_TABLES_OF_OP = {**OPTIONS_TABLE_OF_OP, **OPTIONS_2_TABLE_OF_OP}

#: One op per options table, to run per-table checks once per table: table name ->
#: (union member, params class, op). By name: the members of the two unions are IntEnums
#: that compare equal by number (BuiltinOptions2.StablehloConcatenateOptions == 1 ==
#: BuiltinOptions.Conv2DOptions).
TABLES = {}
for _op, (_union_type, _params_class) in ALL_TABLES_OF_OP.items():
    TABLES.setdefault(_union_type.name, (_union_type, _params_class, _op))
UNION_TYPES = [union_type for union_type, _, _ in TABLES.values()]
TABLE_IDS = list(TABLES)
OPS = list(ALL_TABLES_OF_OP)
OP_IDS = [op.name for op in OPS]


def object_class(union_type):
    return getattr(fb, union_type.name + "T")


def number_type(union_type, field: dataclasses.Field) -> str:
    """The flatbuffers number type of a scalar field, or of a vector field's elements
    ("Int32", "Int64", "Uint8", "Uint32", "Bool"...), read from the generated accessor."""
    accessor = snake_to_camel(field.name)
    accessor = accessor[:1].upper() + accessor[1:]
    reader = getattr(fb, union_type.name)
    source = inspect.getsource(getattr(reader, accessor + "AsNumpy", None) or getattr(reader, accessor))
    return re.search(r"number_types\.(?!UOffsetT)(\w+)Flags", source).group(1)


def int_range(union_type, field: dataclasses.Field) -> tuple[int, int]:
    """The values a (scalar or vector element) integer field holds (int32, long, uint...)."""
    info = np.iinfo(np.dtype(number_type(union_type, field).lower()))
    return int(info.min), int(info.max)


def schema_attributes(union_type) -> set[str]:
    """camelCase names of the non-deprecated fields of a table (the object API omits
    deprecated ones)."""
    return set(vars(object_class(union_type)()))


def field_kind(field: dataclasses.Field) -> str:
    if isinstance(field.default, enum.IntEnum):
        return "enum"
    if field.default is None:
        return "vector" if str(field.type).startswith("tuple") else "string"
    return type(field.default).__name__  # bool, int, float


def operator_with(union_type, options, second_union: bool = False):
    """A generated ``Operator`` accessor over a minimal flatbuffer holding the options (in
    ``builtin_options_2`` with ``second_union``)."""
    operator = fb.OperatorT()
    operator.opcodeIndex = 0
    operator.inputs = [0]
    operator.outputs = [1]
    if second_union:
        operator.builtinOptions2Type = union_type
        operator.builtinOptions2 = options
    else:
        operator.builtinOptionsType = union_type
        operator.builtinOptions = options
    builder = flatbuffers.Builder(0)
    builder.Finish(operator.Pack(builder))
    return fb.Operator.GetRootAs(builder.Output(), 0)


def round_trip(op, params):
    if op in OPTIONS_2_TABLE_OF_OP:
        union_type, options = builtin_options_2_of_params(op, params)
        return parse_builtin_options(op, operator_with(union_type, options, second_union=True))
    union_type, options = builtin_options_of_params(op, params)
    return parse_builtin_options(op, operator_with(union_type, options))


def non_default_value(union_type, params_class, field: dataclasses.Field):
    kind = field_kind(field)
    if kind == "bool":
        return not field.default
    if kind == "enum":  # (CustomOptionsFormat has one member only)
        return next((member for member in type(field.default) if member != field.default), field.default)
    if kind == "int":
        return field.default + (2**40 if int_range(union_type, field)[1] > 2**32 else 7)
    if kind == "float":
        return 0.5 if field.default != 0.5 else 0.25
    if kind == "vector":
        element = number_type(union_type, field)
        if element == "Bool":
            return (True, False, True)
        if element.startswith("Float"):
            return (0.5, -1.25, 3.0)
        return (3, 1, 7) if element.startswith("Uint") else (3, -1, 7)
    return "container/é"


def non_default_params(union_type, params_class):
    return params_class(
        **{f.name: non_default_value(union_type, params_class, f) for f in dataclasses.fields(params_class)}
    )


def value_strategy(union_type, field: dataclasses.Field):
    kind = field_kind(field)
    if kind == "bool":
        return st.booleans()
    if kind == "enum":
        return st.sampled_from(list(type(field.default)))
    if kind == "int":
        return st.integers(*int_range(union_type, field))
    if kind == "float":
        return st.floats(width=32, allow_nan=False)
    if kind == "vector":
        element_type = number_type(union_type, field)
        if element_type == "Bool":
            element = st.booleans()
        elif element_type.startswith("Float"):
            element = st.floats(width=32, allow_nan=False)
        else:
            element = st.integers(*int_range(union_type, field))
        return st.none() | st.lists(element, max_size=6).map(tuple)
    return st.none() | st.text(max_size=8)


# ---------------------------------------------------------------------------
# Schema defaults equal params defaults; field names match the schema
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("union_type", UNION_TYPES, ids=TABLE_IDS)
def test_params_defaults_equal_the_schema_defaults(union_type):
    _, params_class, _ = TABLES[union_type.name]
    generated = object_class(union_type)()
    for field in dataclasses.fields(params_class):
        schema_default = getattr(generated, snake_to_camel(field.name))
        if field_kind(field) == "vector":
            assert field.default is None, field.name
            assert schema_default is None or len(schema_default) == 0, field.name
        else:
            assert field.default == schema_default, field.name


@pytest.mark.parametrize("union_type", UNION_TYPES, ids=TABLE_IDS)
def test_every_params_field_is_a_field_of_its_schema_table(union_type):
    _, params_class, _ = TABLES[union_type.name]
    attributes = schema_attributes(union_type)
    unknown = [
        f.name for f in dataclasses.fields(params_class) if snake_to_camel(f.name) not in attributes
    ]
    assert unknown == []


@pytest.mark.parametrize("union_type", UNION_TYPES, ids=TABLE_IDS)
def test_every_non_deprecated_schema_field_is_a_params_field(union_type):
    _, params_class, _ = TABLES[union_type.name]
    ours = {snake_to_camel(f.name) for f in dataclasses.fields(params_class)}
    left_out = {snake_to_camel(n) for n in UNMODELLED_FIELDS.get(union_type.name, ())}
    assert schema_attributes(union_type) - left_out - ours == set()


@pytest.mark.parametrize("union_type", UNION_TYPES, ids=TABLE_IDS)
def test_enum_fields_use_the_enum_of_their_default(union_type):
    _, params_class, _ = TABLES[union_type.name]
    for field in dataclasses.fields(params_class):
        if isinstance(field.default, enum.IntEnum):
            assert type(field.default).__name__ in str(field.type), field.name


def test_every_member_of_the_builtin_options_union_has_a_params_class():
    covered = {union_type for union_type, _ in OPTIONS_TABLE_OF_OP.values()}
    assert {m for m in BuiltinOptions if m != BuiltinOptions.NONE} - covered == set()


def test_every_member_of_the_second_options_union_has_a_params_class():
    covered = {union_type for union_type, _ in OPTIONS_2_TABLE_OF_OP.values()}
    assert {m for m in BuiltinOptions2 if m != BuiltinOptions2.NONE} - covered == set()


def test_no_op_has_options_in_both_unions():
    assert set(OPTIONS_TABLE_OF_OP) & set(OPTIONS_2_TABLE_OF_OP) == set()


def test_params_class_of_op_answers_for_both_unions_and_none_for_ops_without_options():
    assert params_class_of_op(BuiltinOperator.CONV_3D) is p.Conv3DParams
    assert params_class_of_op(BuiltinOperator.STABLEHLO_GATHER) is p.StablehloGatherParams
    assert params_class_of_op(BuiltinOperator.STABLEHLO_ADD) is None


@pytest.mark.parametrize("union_type", UNION_TYPES, ids=TABLE_IDS)
def test_params_class_is_named_after_its_table(union_type):
    _, params_class, _ = TABLES[union_type.name]
    assert params_class.__name__ == union_type.name.replace("Options", "Params")


def test_ops_that_share_a_table_share_one_params_class():
    class_of_table = {}
    for op, (union_type, params_class) in ALL_TABLES_OF_OP.items():
        assert class_of_table.setdefault(union_type.name, params_class) is params_class, op.name


def test_params_are_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.DepthwiseConv2DParams().dilation_w_factor = 2


# ---------------------------------------------------------------------------
# Round trip: params -> XxxOptionsT -> flatbuffer -> parser -> params
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_non_default_params_round_trip_through_a_flatbuffer(op):
    union_type, params_class = ALL_TABLES_OF_OP[op]
    params = non_default_params(union_type, params_class)
    assert round_trip(op, params) == params


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_default_params_round_trip_through_a_flatbuffer(op):
    _, params_class = ALL_TABLES_OF_OP[op]
    assert round_trip(op, params_class()) == params_class()


FIELDED_TABLES = [u for u in UNION_TYPES if dataclasses.fields(TABLES[u.name][1])]


@pytest.mark.parametrize("union_type", FIELDED_TABLES, ids=[u.name for u in FIELDED_TABLES])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_params_value_round_trips_through_a_flatbuffer(union_type, data):
    _, params_class, op = TABLES[union_type.name]
    params = data.draw(
        st.builds(
            params_class,
            **{f.name: value_strategy(union_type, f) for f in dataclasses.fields(params_class)},
        )
    )
    assert round_trip(op, params) == params


def test_an_empty_vector_stays_empty_and_an_absent_one_stays_absent():
    assert round_trip(BuiltinOperator.RESHAPE, p.ReshapeParams(new_shape=())).new_shape == ()
    assert round_trip(BuiltinOperator.RESHAPE, p.ReshapeParams(new_shape=None)).new_shape is None


def test_parsed_vectors_are_tuples_of_python_ints():
    parsed = round_trip(BuiltinOperator.SQUEEZE, p.SqueezeParams(squeeze_dims=(1, 2)))
    assert type(parsed.squeeze_dims) is tuple
    assert all(type(value) is int for value in parsed.squeeze_dims)


def test_parsed_enum_fields_are_enum_members():
    parsed = round_trip(BuiltinOperator.CONV_2D, p.Conv2DParams(padding=Padding.VALID))
    assert parsed.padding is Padding.VALID


def test_writer_gives_no_options_for_an_op_without_an_options_table():
    assert builtin_options_of_params(BuiltinOperator.LOGISTIC, None) == (BuiltinOptions.NONE, None)


def test_writer_writes_the_default_table_when_params_are_none():
    union_type, options = builtin_options_of_params(BuiltinOperator.DEPTHWISE_CONV_2D, None)
    assert union_type == BuiltinOptions.DepthwiseConv2DOptions
    assert options.dilationWFactor == 1


def test_writer_rejects_params_of_another_op():
    with pytest.raises(TypeError, match="CONV_2D.*Conv2DParams.*Pool2DParams"):
        builtin_options_of_params(BuiltinOperator.CONV_2D, p.Pool2DParams())


def test_writer_rejects_params_for_an_op_without_an_options_table():
    with pytest.raises(TypeError, match="RELU"):
        builtin_options_of_params(BuiltinOperator.RELU, p.AddParams())


# ---------------------------------------------------------------------------
# Absent, mismatched and invalid options
# ---------------------------------------------------------------------------


def test_depthwise_conv_without_options_gets_dilation_1():
    parsed = parse_builtin_options(
        BuiltinOperator.DEPTHWISE_CONV_2D, operator_with(BuiltinOptions.NONE, None)
    )
    assert parsed == p.DepthwiseConv2DParams()
    assert (parsed.dilation_w_factor, parsed.dilation_h_factor) == (1, 1)


def test_depthwise_conv_written_before_dilation_existed_gets_dilation_1():
    # A version-1 writer knew only the first five fields: the dilation slots are absent.
    builder = flatbuffers.Builder(0)
    fb.DepthwiseConv2DOptionsStart(builder)
    fb.DepthwiseConv2DOptionsAddPadding(builder, Padding.VALID)
    fb.DepthwiseConv2DOptionsAddStrideW(builder, 2)
    fb.DepthwiseConv2DOptionsAddStrideH(builder, 2)
    fb.DepthwiseConv2DOptionsAddDepthMultiplier(builder, 1)
    options = fb.DepthwiseConv2DOptionsEnd(builder)
    fb.OperatorStart(builder)
    fb.OperatorAddBuiltinOptionsType(builder, BuiltinOptions.DepthwiseConv2DOptions)
    fb.OperatorAddBuiltinOptions(builder, options)
    builder.Finish(fb.OperatorEnd(builder))
    operator = fb.Operator.GetRootAs(builder.Output(), 0)

    parsed = parse_builtin_options(BuiltinOperator.DEPTHWISE_CONV_2D, operator)
    assert parsed == p.DepthwiseConv2DParams(
        padding=Padding.VALID, stride_w=2, stride_h=2, depth_multiplier=1
    )


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_absent_options_give_the_params_defaults(op):
    _, params_class = ALL_TABLES_OF_OP[op]
    assert parse_builtin_options(op, operator_with(BuiltinOptions.NONE, None)) == params_class()


def test_an_op_without_an_options_table_parses_to_none():
    operator = operator_with(BuiltinOptions.NONE, None)
    assert parse_builtin_options(BuiltinOperator.RELU, operator) is None


def test_an_unknown_builtin_code_parses_to_none():
    assert parse_builtin_options(100_000, operator_with(BuiltinOptions.NONE, None)) is None


def test_mismatched_options_type_raises_model_error_naming_op_and_both_types():
    operator = operator_with(BuiltinOptions.Pool2DOptions, fb.Pool2DOptionsT())
    with pytest.raises(ModelError) as error:
        parse_builtin_options(BuiltinOperator.CONV_2D, operator)
    message = str(error.value)
    assert "CONV_2D" in message and "Conv2DOptions" in message and "Pool2DOptions" in message


def test_options_type_outside_the_union_raises_model_error():
    operator = operator_with(200, None)
    with pytest.raises(ModelError, match="ADD.*AddOptions.*200"):
        parse_builtin_options(BuiltinOperator.ADD, operator)


def test_out_of_range_padding_raises_model_error_naming_op_and_field():
    operator = operator_with(BuiltinOptions.Conv2DOptions, fb.Conv2DOptionsT(padding=7))
    with pytest.raises(ModelError, match="CONV_2D.*padding.*7"):
        parse_builtin_options(BuiltinOperator.CONV_2D, operator)


def test_out_of_range_activation_raises_model_error_naming_op_and_field():
    operator = operator_with(BuiltinOptions.AddOptions, fb.AddOptionsT(fusedActivationFunction=-3))
    with pytest.raises(ModelError, match="ADD.*fused_activation_function"):
        parse_builtin_options(BuiltinOperator.ADD, operator)


def test_out_of_range_tensor_type_raises_model_error_naming_op_and_field():
    operator = operator_with(BuiltinOptions.CastOptions, fb.CastOptionsT(outDataType=100))
    with pytest.raises(ModelError, match="CAST.*out_data_type"):
        parse_builtin_options(BuiltinOperator.CAST, operator)


def test_a_string_that_is_not_utf8_raises_model_error_naming_op_and_field():
    options = fb.VarHandleOptionsT(container=b"\xff\xfe")
    operator = operator_with(BuiltinOptions.VarHandleOptions, options)
    with pytest.raises(ModelError, match="VAR_HANDLE.*container"):
        parse_builtin_options(BuiltinOperator.VAR_HANDLE, operator)


def test_a_vector_running_off_the_buffer_raises_model_error_naming_op_and_field():
    operator = operator_with(BuiltinOptions.ReshapeOptions, fb.ReshapeOptionsT(newShape=[1, 2]))
    reader = fb.ReshapeOptions()
    table = operator.BuiltinOptions()
    reader.Init(table.Bytes, table.Pos)
    data = bytearray(table.Bytes)
    length_at = reader._tab.Vector(reader._tab.Offset(4)) - 4
    data[length_at : length_at + 4] = (10**6).to_bytes(4, "little")
    hostile = fb.Operator.GetRootAs(bytes(data), 0)
    with pytest.raises(ModelError, match="RESHAPE.*new_shape"):
        parse_builtin_options(BuiltinOperator.RESHAPE, hostile)


def test_writer_rejects_an_out_of_range_enum():
    with pytest.raises(ValueError):
        builtin_options_of_params(BuiltinOperator.CONV_2D, p.Conv2DParams(padding=9))



# ---------------------------------------------------------------------------
# The second union (builtin_options_2): StableHLO ops, DILATE, REDUCE_WINDOW
# ---------------------------------------------------------------------------


def test_an_op_of_the_second_union_reads_its_options_from_builtin_options_2():
    options = fb.StablehloGatherOptionsT(offsetDims=[1], sliceSizes=[1, 2], indexVectorDim=1)
    operator = operator_with(BuiltinOptions2.StablehloGatherOptions, options, second_union=True)
    parsed = parse_builtin_options(BuiltinOperator.STABLEHLO_GATHER, operator)
    assert parsed == p.StablehloGatherParams(offset_dims=(1,), slice_sizes=(1, 2), index_vector_dim=1)


def test_an_op_of_the_second_union_ignores_the_first_union():
    # TFLite reads builtin_options_2 only: a table in builtin_options is not its options.
    operator = operator_with(BuiltinOptions.Conv2DOptions, fb.Conv2DOptionsT())
    assert parse_builtin_options(BuiltinOperator.REDUCE_WINDOW, operator) == p.ReduceWindowParams()


def test_a_mismatched_second_union_table_raises_model_error_naming_op_and_both_tables():
    operator = operator_with(BuiltinOptions2.StablehloPadOptions, fb.StablehloPadOptionsT(), second_union=True)
    with pytest.raises(ModelError, match="STABLEHLO_GATHER.*builtin options 2.*StablehloGatherOptions.*StablehloPadOptions"):
        parse_builtin_options(BuiltinOperator.STABLEHLO_GATHER, operator)


def test_a_second_union_type_outside_the_union_raises_model_error():
    operator = operator_with(200, None, second_union=True)
    with pytest.raises(ModelError, match="STABLEHLO_PAD.*StablehloPadOptions.*200"):
        parse_builtin_options(BuiltinOperator.STABLEHLO_PAD, operator)


def test_an_out_of_range_reduce_function_raises_model_error_naming_op_and_field():
    options = fb.ReduceWindowOptionsT(reduceFunction=42)
    operator = operator_with(BuiltinOptions2.ReduceWindowOptions, options, second_union=True)
    with pytest.raises(ModelError, match="REDUCE_WINDOW.*reduce_function.*42"):
        parse_builtin_options(BuiltinOperator.REDUCE_WINDOW, operator)


def test_the_writers_put_each_op_s_options_in_its_own_union():
    params = p.StablehloPadParams(edge_padding_low=(1,), edge_padding_high=(0,), interior_padding=(2,))
    assert builtin_options_of_params(BuiltinOperator.STABLEHLO_PAD, params) == (BuiltinOptions.NONE, None)
    union_type, options = builtin_options_2_of_params(BuiltinOperator.STABLEHLO_PAD, params)
    assert union_type == BuiltinOptions2.StablehloPadOptions and list(options.interiorPadding) == [2]
    assert builtin_options_2_of_params(BuiltinOperator.CONV_2D, None) == (BuiltinOptions2.NONE, None)


def test_the_writers_reject_params_of_another_op_in_either_union():
    with pytest.raises(TypeError, match="STABLEHLO_PAD.*StablehloPadParams.*Conv2DParams"):
        builtin_options_of_params(BuiltinOperator.STABLEHLO_PAD, p.Conv2DParams())
    with pytest.raises(TypeError, match="CONV_2D.*Conv2DParams.*StablehloPadParams"):
        builtin_options_2_of_params(BuiltinOperator.CONV_2D, p.StablehloPadParams())
    with pytest.raises(TypeError, match="STABLEHLO_ADD.*no builtin options 2"):
        builtin_options_2_of_params(BuiltinOperator.STABLEHLO_ADD, p.StablehloPadParams())


def test_a_built_model_stores_second_union_options_where_litert_reads_them():
    from ai_edge_litert.tools import flatbuffer_utils

    from schema.builder import ModelBuilder

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2])
    value = graph.add_constant("value", np.zeros([], np.float32))
    y = graph.add_tensor("y", [5])
    params = p.StablehloPadParams(edge_padding_low=(1,), edge_padding_high=(1,), interior_padding=(1,))
    graph.add_operator(BuiltinOperator.STABLEHLO_PAD, [x, value], [y], params)
    graph.add_output(y)
    operator = flatbuffer_utils.read_model_from_bytearray(bytearray(builder.build())).subgraphs[0].operators[0]
    assert operator.builtinOptionsType == BuiltinOptions.NONE
    assert operator.builtinOptions2Type == BuiltinOptions2.StablehloPadOptions
    assert list(operator.builtinOptions2.edgePaddingLow) == [1]

# ---------------------------------------------------------------------------
# Real files agree with the object API of ai_edge_litert
# ---------------------------------------------------------------------------

MODEL_FILES = sorted(MODELS_DIR.rglob("*.tflite"))


def _normalised(value):
    if isinstance(value, np.ndarray):
        return tuple(value.tolist())
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return value


def test_there_are_model_files_to_check():
    assert MODEL_FILES


MODEL_IDS = [str(f.relative_to(MODELS_DIR)) for f in MODEL_FILES]


@pytest.mark.parametrize("path", MODEL_FILES, ids=MODEL_IDS)
def test_parsed_options_of_real_files_agree_with_the_object_api(path):
    from ai_edge_litert.tools import flatbuffer_utils

    data = path.read_bytes()
    model = fb.Model.GetRootAs(data, 0)
    model_t = flatbuffer_utils.read_model_from_bytearray(bytearray(data))
    checked = 0
    for s in range(model.SubgraphsLength()):
        subgraph = model.Subgraphs(s)
        for i in range(subgraph.OperatorsLength()):
            operator = subgraph.Operators(i)
            code = model.OperatorCodes(operator.OpcodeIndex())
            builtin_code = max(code.DeprecatedBuiltinCode(), code.BuiltinCode())
            parsed = parse_builtin_options(builtin_code, operator)
            operator_t = model_t.subgraphs[s].operators[i]
            where = f"subgraph {s} operator {i} ({BuiltinOperator(builtin_code).name})"
            if builtin_code not in ALL_TABLES_OF_OP:
                assert parsed is None, where
                continue
            union_type, params_class = ALL_TABLES_OF_OP[builtin_code]
            assert type(parsed) is params_class, where
            if builtin_code in OPTIONS_2_TABLE_OF_OP:
                present, options_t = operator_t.builtinOptions2Type, operator_t.builtinOptions2
            else:
                present, options_t = operator_t.builtinOptionsType, operator_t.builtinOptions
            assert present in (0, union_type), where
            options_t = options_t or object_class(union_type)()
            for field in dataclasses.fields(params_class):
                expected = _normalised(getattr(options_t, snake_to_camel(field.name)))
                assert getattr(parsed, field.name) == expected, f"{where}: {field.name}"
            checked += 1
    assert checked > 0
