"""get_builtin_operator_version: TFLite's rules, checked on real files and rule by rule.

Facts come from TFLite's ``op_version.cc`` / ``op_version_test.cc`` and from the
versions TFLite's converter stamped on ``tests/data/models`` (see SOURCES.md).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schema import params as P
from schema import schema_generated as fb
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType
from schema.versioning.op_signature import OpSignature, TensorSignature, op_signature_from_tensors
from schema.versioning.op_version import get_builtin_operator_version, ops_with_version_rules
from schema.versioning.runtime_version import TFLITE_MIN_RUNTIME_VERSIONS

B = BuiltinOperator
T = TensorType

MODELS = Path(__file__).resolve().parent.parent / "data" / "models"

#: The ops litedelegate covers (the versioning brief's list; TFLite has no ONES_LIKE).
COVERED_OPS = [
    getattr(B, name)
    for name in (
        "ADD SUB MUL DIV SQUARED_DIFFERENCE MAXIMUM MINIMUM POW CONV_2D DEPTHWISE_CONV_2D "
        "TRANSPOSE_CONV FULLY_CONNECTED BATCH_MATMUL AVERAGE_POOL_2D MAX_POOL_2D L2_POOL_2D MEAN "
        "SUM REDUCE_MAX REDUCE_MIN REDUCE_PROD SOFTMAX LOG_SOFTMAX LOGISTIC TANH RELU RELU6 "
        "RELU_N1_TO_1 RELU_0_TO_1 LEAKY_RELU PRELU ELU HARD_SWISH GELU EXP LOG SQRT RSQRT SQUARE "
        "ABS NEG SIN COS FLOOR CEIL ROUND SIGN RESHAPE SQUEEZE EXPAND_DIMS TRANSPOSE CONCATENATION "
        "PACK UNPACK SPLIT SPLIT_V SLICE STRIDED_SLICE GATHER GATHER_ND TILE BROADCAST_TO "
        "REVERSE_V2 PAD PADV2 MIRROR_PAD RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR DEPTH_TO_SPACE "
        "SPACE_TO_DEPTH SPACE_TO_BATCH_ND BATCH_TO_SPACE_ND SHAPE RANK FILL ZEROS_LIKE RANGE CAST "
        "ARG_MAX ARG_MIN CUMSUM L2_NORMALIZATION LOCAL_RESPONSE_NORMALIZATION SELECT SELECT_V2 "
        "WHERE LESS LESS_EQUAL GREATER GREATER_EQUAL EQUAL NOT_EQUAL LOGICAL_AND LOGICAL_OR "
        "LOGICAL_NOT DEQUANTIZE QUANTIZE DENSIFY IF WHILE CALL_ONCE VAR_HANDLE READ_VARIABLE "
        "ASSIGN_VARIABLE FLOOR_DIV FLOOR_MOD"
    ).split()
]


# ---------------------------------------------------------------------------
# Duck-typed tensors, as the read view and the builder provide them
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class FakeTensor:
    type: int
    shape: tuple[int, ...] = (1, 8, 8, 4)
    shape_signature: tuple[int, ...] | None = None
    is_constant: bool = False
    quantization: Any = None
    data: Any = None
    sparsity: Any = None


def quant(*scales: float, axis: int = 0) -> SimpleNamespace:
    return SimpleNamespace(
        scale=np.asarray(scales, dtype=np.float32),
        zero_point=np.zeros(len(scales), dtype=np.int64),
        quantized_dimension=axis,
    )


def t(tensor_type: int, shape: tuple[int, ...] = (1, 8, 8, 4), **kwargs) -> FakeTensor:
    return FakeTensor(tensor_type, tuple(shape), **kwargs)


def const(tensor_type: int, shape: tuple[int, ...], **kwargs) -> FakeTensor:
    return FakeTensor(tensor_type, tuple(shape), is_constant=True, data=np.zeros(shape), **kwargs)


def version(op: int, inputs: list, outputs: list, params: object | None = None) -> int:
    return get_builtin_operator_version(op_signature_from_tensors(op, params, inputs, outputs))


def by_types(op: int, input_types: list, output_types: list | None = None, params=None, rank: int = 4) -> int:
    """Version of a node whose tensors differ only by type (None = omitted input)."""
    shape = (2,) * rank
    inputs = [None if ty is None else t(ty, shape) for ty in input_types]
    outputs = [t(ty, shape) for ty in (output_types if output_types is not None else input_types[:1])]
    return version(op, inputs, outputs, params)


# ---------------------------------------------------------------------------
# The versions TFLite stamped on real files
# ---------------------------------------------------------------------------


def _camel_to_snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _params_of(code: int, operator: Any) -> Any:
    try:
        from schema.option_parsers import parse_builtin_options
    except ImportError:  # pragma: no cover - the parsers were written concurrently
        options = fb.OperatorT.InitFromObj(operator).builtinOptions
        if options is None:
            return None
        return SimpleNamespace(**{_camel_to_snake(k): v for k, v in vars(options).items()})
    return parse_builtin_options(code, operator)


def _file_tensor(model: Any, subgraph: Any, index: int) -> FakeTensor:
    tensor = subgraph.Tensors(index)
    buffer = model.Buffers(tensor.Buffer())
    data = buffer.DataAsNumpy() if tensor.Buffer() != 0 and buffer.DataLength() > 0 else None
    quantization = None
    q = tensor.Quantization()
    if q is not None and q.ScaleLength() > 0:
        quantization = SimpleNamespace(
            scale=q.ScaleAsNumpy(),
            zero_point=q.ZeroPointAsNumpy() if q.ZeroPointLength() else np.zeros(q.ScaleLength(), np.int64),
            quantized_dimension=q.QuantizedDimension(),
        )
    return FakeTensor(
        type=tensor.Type(),
        shape=tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else (),
        shape_signature=None if tensor.ShapeSignatureIsNone() else tuple(int(d) for d in tensor.ShapeSignatureAsNumpy()),
        is_constant=data is not None,
        quantization=quantization,
        data=data,
        sparsity=tensor.Sparsity(),
    )


def _stamped_operators() -> list:
    """(file, op name, stamped version, signature) for every builtin operator of every model."""
    found = []
    for path in sorted(MODELS.glob("*/*.tflite")):
        model = fb.Model.GetRootAs(path.read_bytes(), 0)
        for s in range(model.SubgraphsLength()):
            subgraph = model.Subgraphs(s)
            for o in range(subgraph.OperatorsLength()):
                operator = subgraph.Operators(o)
                code_table = model.OperatorCodes(operator.OpcodeIndex())
                code = max(code_table.DeprecatedBuiltinCode(), code_table.BuiltinCode())
                if code == B.CUSTOM:
                    continue
                inputs = [None if i < 0 else _file_tensor(model, subgraph, i) for i in operator.InputsAsNumpy()]
                outputs = [_file_tensor(model, subgraph, i) for i in operator.OutputsAsNumpy()]
                signature = op_signature_from_tensors(
                    code, _params_of(code, operator), inputs, outputs, version=code_table.Version()
                )
                found.append((path.name, B(code).name, code_table.Version(), signature))
    return found


def _stamped_operator_codes() -> list:
    """(file, op name, stamped version, computed versions of the nodes that share the code).

    Nodes of one op share one OperatorCode, so the file records one version per
    code: TFLite's UpdateOpVersion raises it to the largest version any node needs.
    """
    groups: dict[tuple[str, str, int], list[int]] = {}
    for name, op, stamped, signature in STAMPED:
        groups.setdefault((name, op, stamped), []).append(get_builtin_operator_version(signature))
    return [(name, op, stamped, computed) for (name, op, stamped), computed in groups.items()]


STAMPED = _stamped_operators()
STAMPED_CODES = _stamped_operator_codes()

#: Where a file's stamp and TFLite's current rules disagree, with the reason.
KNOWN_DIVERGENCES = {
    # MediaPipe's converter stamped its float16 DEQUANTIZE v2; TFLite's rule (since
    # DEQUANTIZE v3, TF 1.15) gives int16 and float16 inputs version 3.
    ("mp_face_detection_short_range.tflite", "DEQUANTIZE"): (2, 3),
    ("mp_face_landmark.tflite", "DEQUANTIZE"): (2, 3),
    ("mp_palm_detection_lite.tflite", "DEQUANTIZE"): (2, 3),
    ("mediapipe_face_landmark_with_attention.tflite", "DEQUANTIZE"): (2, 3),
}


def test_the_models_directory_has_converter_and_real_models():
    names = {name for name, *_ in STAMPED}
    assert "dwconv_dil2_int8.tflite" in names and "mltk_keyword_spotting_dscnn_int8.tflite" in names


CHECKED_CODES = [entry for entry in STAMPED_CODES if (entry[0], entry[1]) not in KNOWN_DIVERGENCES]


@pytest.mark.parametrize(
    "name, op, stamped, computed",
    CHECKED_CODES,
    ids=[f"{name}-{op}-v{stamped}" for name, op, stamped, _ in CHECKED_CODES],
)
def test_version_stamped_by_tflite_is_the_largest_version_computed_for_the_nodes_of_that_op(name, op, stamped, computed):
    assert max(computed) == stamped


def test_mediapipe_float16_dequantize_is_stamped_v2_though_tflite_rules_give_v3():
    for (name, op), (stamped, computed) in KNOWN_DIVERGENCES.items():
        entries = [e for e in STAMPED_CODES if e[0] == name and e[1] == op]
        assert [(e[2], max(e[3])) for e in entries] == [(stamped, computed)]


def test_a_float_depthwise_conv_without_dilation_shares_the_v2_code_of_a_dilated_one():
    # mini_mobilenet_float32 mixes dilated and undilated depthwise convs: one code, v2.
    entries = [e for e in STAMPED_CODES if e[0] == "mini_mobilenet_float32.tflite" and e[1] == "DEPTHWISE_CONV_2D"]
    assert [(e[2], sorted(set(e[3]))) for e in entries] == [(2, [1, 2])]


def test_dilated_int8_depthwise_conv_in_the_converter_file_is_v3():
    versions = {e[2] for e in STAMPED if e[0] == "dwconv_dil2_int8.tflite" and e[1] == "DEPTHWISE_CONV_2D"}
    assert versions == {3}


def test_fully_connected_int8_with_omitted_bias_in_the_converter_file_is_v4():
    entries = [e for e in STAMPED if e[0] == "softmax_int8.tflite" and e[1] == "FULLY_CONNECTED"]
    assert entries and all(e[3].inputs[2] is None for e in entries)
    assert {get_builtin_operator_version(e[3]) for e in entries} == {4}


# ---------------------------------------------------------------------------
# DEPTHWISE_CONV_2D
# ---------------------------------------------------------------------------


def dwconv(input_type, filter_type, output_type, *, dilation=1, filter_scales=None) -> int:
    filter_quant = quant(*filter_scales) if filter_scales else None
    params = P.DepthwiseConv2DParams(dilation_w_factor=dilation, dilation_h_factor=dilation)
    inputs = [t(input_type), const(filter_type, (1, 3, 3, 4), quantization=filter_quant), const(T.INT32, (4,))]
    return version(B.DEPTHWISE_CONV_2D, inputs, [t(output_type)], params)


def test_depthwise_conv_2d_float_without_dilation_is_v1():
    assert dwconv(T.FLOAT32, T.FLOAT32, T.FLOAT32) == 1


def test_depthwise_conv_2d_float_with_dilation_is_v2():
    assert dwconv(T.FLOAT32, T.FLOAT32, T.FLOAT32, dilation=2) == 2


def test_depthwise_conv_2d_dilation_in_one_direction_only_is_v2():
    params = P.DepthwiseConv2DParams(dilation_w_factor=1, dilation_h_factor=3)
    inputs = [t(T.FLOAT32), const(T.FLOAT32, (1, 3, 3, 4))]
    assert version(B.DEPTHWISE_CONV_2D, inputs, [t(T.FLOAT32)], params) == 2


@pytest.mark.parametrize("dilation", [1, 2])
def test_depthwise_conv_2d_int8_is_v3_with_or_without_dilation(dilation):
    assert dwconv(T.INT8, T.INT8, T.INT8, dilation=dilation, filter_scales=[0.1] * 4) == 3


def test_depthwise_conv_2d_hybrid_with_per_tensor_filter_is_v4():
    assert dwconv(T.FLOAT32, T.INT8, T.FLOAT32, filter_scales=[0.1]) == 4


def test_depthwise_conv_2d_hybrid_with_per_channel_filter_is_v6():
    assert dwconv(T.FLOAT32, T.INT8, T.FLOAT32, filter_scales=[0.1, 0.2, 0.3, 0.4]) == 6


def test_depthwise_conv_2d_int16_with_int16_filter_is_v5():
    assert dwconv(T.INT16, T.INT16, T.INT16) == 5


def test_depthwise_conv_2d_int16_with_int8_filter_matches_no_rule_and_is_v1():
    # TFLite fact: only an int16 *filter* selects v5; 16x8 falls through the rules.
    assert dwconv(T.INT16, T.INT8, T.INT16) == 1


def test_depthwise_conv_2d_int8_with_int4_filter_is_v7():
    assert dwconv(T.INT8, T.INT4, T.INT8) == 7


def test_depthwise_conv_2d_without_params_reads_dilation_as_1():
    assert version(B.DEPTHWISE_CONV_2D, [t(T.FLOAT32), const(T.FLOAT32, (1, 3, 3, 4))], [t(T.FLOAT32)]) == 1


# ---------------------------------------------------------------------------
# CONV_2D
# ---------------------------------------------------------------------------


def conv(input_type, filter_type, output_type, *, in_channels=4, filter_in_channels=4, filter_scales=None, params=None):
    filter_quant = quant(*filter_scales) if filter_scales else None
    inputs = [
        t(input_type, (1, 8, 8, in_channels)),
        const(filter_type, (8, 3, 3, filter_in_channels), quantization=filter_quant),
        const(T.INT32, (8,)),
    ]
    return version(B.CONV_2D, inputs, [t(output_type, (1, 8, 8, 8))], params or P.Conv2DParams())


def test_conv_2d_float_is_v1():
    assert conv(T.FLOAT32, T.FLOAT32, T.FLOAT32) == 1


def test_conv_2d_dilation_does_not_change_the_version():
    assert conv(T.FLOAT32, T.FLOAT32, T.FLOAT32, params=P.Conv2DParams(dilation_w_factor=2, dilation_h_factor=2)) == 1


def test_conv_2d_hybrid_with_per_tensor_filter_is_v2():
    assert conv(T.FLOAT32, T.INT8, T.FLOAT32, filter_scales=[0.5]) == 2


def test_conv_2d_int8_is_v3():
    assert conv(T.INT8, T.INT8, T.INT8, filter_scales=[0.5] * 8) == 3


def test_conv_2d_int16_with_int16_filter_is_v4():
    assert conv(T.INT16, T.INT16, T.INT16) == 4


def test_conv_2d_hybrid_with_per_channel_filter_is_v5():
    assert conv(T.FLOAT32, T.INT8, T.FLOAT32, filter_scales=[0.5] * 8) == 5


def test_conv_2d_grouped_is_v6():
    assert conv(T.FLOAT32, T.FLOAT32, T.FLOAT32, in_channels=8, filter_in_channels=4) == 6


def test_conv_2d_grouped_rule_comes_before_the_int8_rule():
    assert conv(T.INT8, T.INT8, T.INT8, in_channels=8, filter_in_channels=4) == 6


def test_conv_2d_int8_with_int4_filter_is_v7():
    assert conv(T.INT8, T.INT4, T.INT8) == 7


def test_conv_2d_int16x8_with_explicit_quantized_bias_type_is_v8():
    assert conv(T.INT16, T.INT8, T.INT16, params=P.Conv2DParams(quantized_bias_type=T.INT32)) == 8


def test_conv_2d_int16x8_with_default_quantized_bias_type_matches_no_rule_and_is_v1():
    assert conv(T.INT16, T.INT8, T.INT16) == 1


def test_conv_2d_signature_is_per_channel_when_filter_scales_match_output_channels():
    inputs = [t(T.FLOAT32), const(T.INT8, (8, 3, 3, 4), quantization=quant(*[0.1] * 8))]
    signature = op_signature_from_tensors(B.CONV_2D, P.Conv2DParams(), inputs, [t(T.FLOAT32)])
    assert signature.ext == {"is_per_channel_quantized": True, "is_grouped_convolution": False}


# ---------------------------------------------------------------------------
# FULLY_CONNECTED
# ---------------------------------------------------------------------------


def fc(input_type, weight_type, output_type, *, params=None, bias=True, weight_scales=None, sparsity=None):
    weight_quant = quant(*weight_scales) if weight_scales else None
    inputs = [t(input_type, (1, 16)), const(weight_type, (8, 16), quantization=weight_quant, sparsity=sparsity)]
    if bias is True:
        inputs.append(const(T.INT32 if input_type == T.INT8 else T.FLOAT32, (8,)))
    elif bias is None:
        inputs.append(None)
    return version(B.FULLY_CONNECTED, inputs, [t(output_type, (1, 8))], params or P.FullyConnectedParams())


def test_fully_connected_float_is_v1():
    assert fc(T.FLOAT32, T.FLOAT32, T.FLOAT32) == 1


def test_fully_connected_shuffled_4x16_int8_weights_format_is_v2():
    params = P.FullyConnectedParams(weights_format=1)
    assert fc(T.UINT8, T.UINT8, T.UINT8, params=params) == 2


def test_fully_connected_hybrid_is_v3():
    assert fc(T.FLOAT32, T.INT8, T.FLOAT32, weight_scales=[0.1]) == 3


def test_fully_connected_int8_is_v4():
    assert fc(T.INT8, T.INT8, T.INT8, weight_scales=[0.1]) == 4


def test_fully_connected_keep_num_dims_is_v5():
    assert fc(T.FLOAT32, T.FLOAT32, T.FLOAT32, params=P.FullyConnectedParams(keep_num_dims=True)) == 5


def test_fully_connected_keep_num_dims_rule_comes_before_the_int8_rule():
    params = P.FullyConnectedParams(keep_num_dims=True)
    assert fc(T.INT8, T.INT8, T.INT8, params=params, weight_scales=[0.1]) == 5


def test_fully_connected_with_two_inputs_is_v6():
    assert fc(T.FLOAT32, T.FLOAT32, T.FLOAT32, bias=False) == 6


def test_fully_connected_with_an_omitted_bias_slot_counts_three_inputs():
    assert fc(T.INT8, T.INT8, T.INT8, bias=None, weight_scales=[0.1]) == 4


def test_fully_connected_int16_with_int16_weights_is_v7():
    assert fc(T.INT16, T.INT16, T.INT16) == 7


def test_fully_connected_sparse_weights_is_v8():
    assert fc(T.FLOAT32, T.FLOAT32, T.FLOAT32, sparsity=object()) == 8


def test_fully_connected_hybrid_asymmetric_inputs_is_v9():
    params = P.FullyConnectedParams(asymmetric_quantize_inputs=True)
    assert fc(T.FLOAT32, T.INT8, T.FLOAT32, params=params, weight_scales=[0.1]) == 9


def test_fully_connected_int8_with_int4_weights_is_v10():
    assert fc(T.INT8, T.INT4, T.INT8) == 10


def test_fully_connected_int16x8_with_explicit_quantized_bias_type_is_v11():
    params = P.FullyConnectedParams(quantized_bias_type=T.INT64)
    assert fc(T.INT16, T.INT8, T.INT16, params=params) == 11


def test_fully_connected_hybrid_with_per_channel_weights_is_v12():
    assert fc(T.FLOAT32, T.INT8, T.FLOAT32, weight_scales=[0.1] * 8) == 12


def test_fully_connected_int16_with_int4_weights_is_v13():
    assert fc(T.INT16, T.INT4, T.INT16) == 13


def test_fully_connected_int2_weights_is_v14():
    assert fc(T.INT8, T.INT2, T.INT8) == 14


# ---------------------------------------------------------------------------
# MUL, ADD, SUB and other binary ops
# ---------------------------------------------------------------------------


def quantized_binary(op, tensor_type, s1, s2, s_out, params=None) -> int:
    inputs = [t(tensor_type, quantization=quant(s1)), t(tensor_type, quantization=quant(s2))]
    return version(op, inputs, [t(tensor_type, quantization=quant(s_out))], params)


def test_mul_float_is_v1():
    assert by_types(B.MUL, [T.FLOAT32, T.FLOAT32]) == 1


def test_mul_int8_with_rescale_below_one_is_v2():
    assert quantized_binary(B.MUL, T.INT8, 0.1, 0.2, 0.5) == 2


def test_mul_int8_with_rescale_of_at_least_one_is_v3():
    assert quantized_binary(B.MUL, T.INT8, 0.5, 0.5, 0.125) == 3


def test_mul_rescale_of_exactly_one_is_v3():
    assert quantized_binary(B.MUL, T.INT8, 0.5, 0.5, 0.25) == 3


def test_mul_uint8_with_rescale_of_at_least_one_is_v3():
    assert quantized_binary(B.MUL, T.UINT8, 1.0, 1.0, 0.5) == 3


def test_mul_quantized_int16_is_v4():
    assert quantized_binary(B.MUL, T.INT16, 0.1, 0.1, 0.1) == 4


def test_mul_int64_is_v5():
    assert by_types(B.MUL, [T.INT64, T.INT64]) == 5


def test_mul_complex64_is_v6():
    assert by_types(B.MUL, [T.COMPLEX64, T.COMPLEX64]) == 6


def test_mul_plain_int16_is_v7():
    assert by_types(B.MUL, [T.INT16, T.INT16]) == 7


def test_mul_uint32_is_v7():
    assert by_types(B.MUL, [T.UINT32, T.UINT32]) == 7


def test_mul_float16_is_v8():
    assert by_types(B.MUL, [T.FLOAT16, T.FLOAT16]) == 8


def test_add_int8_is_v2():
    assert quantized_binary(B.ADD, T.INT8, 0.1, 0.1, 0.1, P.AddParams()) == 2


def test_add_quantized_int16_with_general_scales_is_v3():
    assert quantized_binary(B.ADD, T.INT16, 0.1, 0.1, 0.1, P.AddParams(pot_scale_int16=False)) == 3


def test_add_quantized_int16_with_power_of_two_scales_is_v1():
    assert quantized_binary(B.ADD, T.INT16, 0.125, 0.125, 0.125, P.AddParams(pot_scale_int16=True)) == 1


def test_add_int64_is_v4():
    assert by_types(B.ADD, [T.INT64, T.INT64], params=P.AddParams()) == 4


def test_add_plain_int16_is_v5():
    assert by_types(B.ADD, [T.INT16, T.INT16], params=P.AddParams()) == 5


def test_add_float16_is_v6():
    assert by_types(B.ADD, [T.FLOAT16, T.FLOAT16], params=P.AddParams()) == 6


def test_sub_int8_is_v2():
    assert quantized_binary(B.SUB, T.INT8, 0.1, 0.1, 0.1, P.SubParams()) == 2


def test_sub_broadcasting_above_four_dimensions_is_v3():
    inputs = [t(T.FLOAT32, (2, 1, 3, 1, 4)), t(T.FLOAT32, (1, 2, 1, 3, 4))]
    assert version(B.SUB, inputs, [t(T.FLOAT32, (2, 2, 3, 3, 4))], P.SubParams()) == 3


def test_sub_int64_is_v4():
    assert by_types(B.SUB, [T.INT64, T.INT64], params=P.SubParams()) == 4


def test_sub_int16_with_general_scales_is_v5():
    assert quantized_binary(B.SUB, T.INT16, 0.1, 0.1, 0.1, P.SubParams(pot_scale_int16=False)) == 5


def test_div_broadcasting_above_four_dimensions_is_v2():
    inputs = [t(T.FLOAT32, (2, 2, 2, 2, 2)), t(T.FLOAT32, (2,))]
    assert version(B.DIV, inputs, [t(T.FLOAT32, (2, 2, 2, 2, 2))]) == 2


def test_div_five_dimensional_without_broadcasting_is_v1():
    assert by_types(B.DIV, [T.FLOAT32, T.FLOAT32], rank=5) == 1


@pytest.mark.parametrize("op", [B.MAXIMUM, B.MINIMUM])
def test_maximum_minimum_versions(op):
    assert by_types(op, [T.FLOAT32, T.FLOAT32]) == 1
    assert by_types(op, [T.INT8, T.INT8]) == 2
    assert version(op, [t(T.INT8, (2, 2, 2, 2, 2)), t(T.INT8, (1,))], [t(T.INT8, (2, 2, 2, 2, 2))]) == 3
    assert by_types(op, [T.INT16, T.INT16]) == 4


def test_floor_div_versions():
    assert [by_types(B.FLOOR_DIV, [ty, ty]) for ty in (T.INT32, T.FLOAT32, T.INT16, T.INT8)] == [1, 2, 3, 3]


def test_floor_mod_versions():
    assert [by_types(B.FLOOR_MOD, [ty, ty]) for ty in (T.INT32, T.FLOAT32, T.INT16, T.INT8)] == [1, 1, 2, 2]


# ---------------------------------------------------------------------------
# Ops whose version depends on the type of one tensor
# ---------------------------------------------------------------------------

TYPE_RULES = [
    # (op, input types, output types or None, expected)
    *[(op, [T.INT16], None, 3) for op in (B.SOFTMAX, B.MEAN, B.MIRROR_PAD, B.REDUCE_MAX, B.REDUCE_MIN, B.RELU6, B.RSQRT)],
    *[(op, [T.INT8], None, 2) for op in (B.SOFTMAX, B.MEAN, B.MIRROR_PAD, B.REDUCE_MAX, B.REDUCE_MIN, B.RELU6, B.RSQRT)],
    *[(op, [T.FLOAT32], None, 1) for op in (B.SOFTMAX, B.MEAN, B.REDUCE_MAX, B.RELU6, B.RSQRT)],
    *[(op, [T.INT8], None, 2) for op in (B.SUM, B.LOG_SOFTMAX, B.SQUARED_DIFFERENCE, B.DEPTH_TO_SPACE, B.SPACE_TO_DEPTH, B.SPLIT_V, B.GREATER, B.LESS_EQUAL)],
    *[(op, [T.INT16], None, 1) for op in (B.SUM, B.LOG_SOFTMAX, B.GREATER)],
    *[(op, [ty], None, 2) for op in (B.EXP, B.LOG, B.SQRT, B.REDUCE_PROD) for ty in (T.INT8, T.INT16)],
    *[(op, [T.INT16], [T.INT16], 3) for op in (B.TANH, B.LOGISTIC, B.MAX_POOL_2D, B.AVERAGE_POOL_2D)],
    *[(op, [T.INT8], [T.INT8], 2) for op in (B.TANH, B.LOGISTIC, B.MAX_POOL_2D, B.AVERAGE_POOL_2D)],
    (B.RELU, [T.INT16], None, 3), (B.RELU, [T.UINT8], None, 2), (B.RELU, [T.INT8], None, 2),
    (B.LEAKY_RELU, [T.INT16], None, 2), (B.LEAKY_RELU, [T.INT8], None, 1),
    (B.GELU, [T.UINT8], None, 2), (B.GELU, [T.INT8], None, 2), (B.GELU, [T.FLOAT32], None, 1),
    (B.SIGN, [T.INT32], None, 2), (B.SIGN, [T.FLOAT32], None, 1),
    (B.ABS, [T.INT8], None, 2), (B.ABS, [T.INT32], None, 5), (B.ABS, [T.INT16], None, 4),
    (B.L2_NORMALIZATION, [T.FLOAT32], [T.INT8], 2), (B.L2_NORMALIZATION, [T.INT8], [T.UINT8], 1),
    (B.ARG_MAX, [T.INT8, T.INT32], [T.INT32], 2), (B.ARG_MIN, [T.BOOL, T.INT32], [T.INT32], 3),
    (B.EQUAL, [T.INT8, T.INT8], [T.BOOL], 2), (B.EQUAL, [T.STRING, T.STRING], [T.BOOL], 3),
    (B.EQUAL, [T.INT16, T.INT16], [T.BOOL], 5),
    (B.NOT_EQUAL, [T.INT8, T.INT8], [T.BOOL], 2), (B.NOT_EQUAL, [T.STRING, T.STRING], [T.BOOL], 3),
    (B.NOT_EQUAL, [T.INT16, T.INT16], [T.BOOL], 4),
    (B.LESS, [T.INT16, T.INT16], [T.BOOL], 3), (B.GREATER_EQUAL, [T.INT8, T.INT8], [T.BOOL], 2),
    (B.SELECT_V2, [T.UINT32, T.FLOAT32, T.FLOAT32], [T.FLOAT32], 2),
    (B.SELECT, [T.INT8, T.INT8, T.INT8], [T.INT8], 2), (B.SELECT, [T.UINT32, T.INT8, T.INT8], [T.INT8], 4),
    (B.WHERE, [T.BOOL], [T.INT64], 1), (B.WHERE, [T.FLOAT32], [T.INT64], 2),
    (B.CONCATENATION, [T.INT8, T.INT8], None, 2), (B.CONCATENATION, [T.INT16, T.INT16], None, 3),
    (B.CONCATENATION, [T.UINT32, T.UINT32], None, 4), (B.CONCATENATION, [T.INT4, T.INT4], None, 5),
    (B.PACK, [T.INT8, T.INT8], None, 2), (B.PACK, [T.INT16, T.INT16], None, 3), (B.PACK, [T.UINT32], None, 4),
    (B.UNPACK, [T.UINT8], None, 2), (B.UNPACK, [T.BOOL], None, 3), (B.UNPACK, [T.INT16], None, 4),
    (B.UNPACK, [T.FLOAT16], None, 5),
    (B.SPLIT, [T.INT32, T.INT8], [T.INT8], 2), (B.SPLIT, [T.INT32, T.INT32], [T.INT32], 3),
    (B.SPLIT, [T.INT32, T.INT16], [T.INT16], 4),
    (B.SLICE, [T.INT8, T.INT32, T.INT32], None, 2), (B.SLICE, [T.STRING, T.INT32, T.INT32], None, 3),
    (B.SLICE, [T.INT16, T.INT32, T.INT32], None, 4), (B.SLICE, [T.UINT32, T.INT32, T.INT32], None, 6),
    (B.GATHER, [T.INT8, T.INT32], None, 2), (B.GATHER, [T.BOOL, T.INT32], None, 3),
    (B.GATHER, [T.INT16, T.INT32], None, 4), (B.GATHER, [T.FLOAT32, T.INT16], None, 6),
    (B.GATHER_ND, [T.STRING, T.INT32], None, 2), (B.GATHER_ND, [T.INT16, T.INT32], None, 3),
    (B.GATHER_ND, [T.FLOAT32, T.INT16], None, 4), (B.GATHER_ND, [T.BOOL, T.INT32], None, 5),
    (B.TILE, [T.STRING, T.INT32], None, 2), (B.TILE, [T.INT8, T.INT32], None, 3),
    (B.SQUEEZE, [T.STRING], None, 2), (B.SQUEEZE, [T.INT8], None, 1),
    (B.BROADCAST_TO, [T.FLOAT32, T.INT32], None, 2), (B.BROADCAST_TO, [T.INT8, T.INT32], None, 3),
    (B.REVERSE_V2, [T.BOOL, T.INT32], None, 2), (B.REVERSE_V2, [T.INT8, T.INT32], None, 3),
    (B.PAD, [T.INT8, T.INT32], None, 2), (B.PAD, [T.INT16, T.INT32], None, 3), (B.PADV2, [T.BOOL, T.INT32], None, 5),
    (B.SPACE_TO_BATCH_ND, [T.INT8, T.INT32, T.INT32], None, 2),
    (B.BATCH_TO_SPACE_ND, [T.INT16, T.INT32, T.INT32], None, 4),
    (B.FILL, [T.INT32, T.BOOL], [T.BOOL], 2), (B.FILL, [T.INT32, T.INT8], [T.INT8], 3),
    (B.FILL, [T.INT64, T.FLOAT16], [T.FLOAT16], 4), (B.FILL, [T.INT32, T.FLOAT32], [T.FLOAT32], 1),
    (B.RANGE, [T.INT64, T.INT64, T.INT64], None, 2), (B.RANGE, [T.INT32, T.INT32, T.INT32], None, 1),
    (B.CAST, [T.FLOAT32], [T.UINT32], 2), (B.CAST, [T.INT8], [T.FLOAT32], 3), (B.CAST, [T.UINT16], [T.INT32], 4),
    (B.CAST, [T.FLOAT32], [T.FLOAT16], 5), (B.CAST, [T.INT4], [T.FLOAT32], 6), (B.CAST, [T.BFLOAT16], [T.FLOAT32], 7),
    (B.CAST, [T.FLOAT32], [T.INT32], 1),
    (B.DEQUANTIZE, [T.INT16], [T.FLOAT32], 3), (B.DEQUANTIZE, [T.FLOAT16], [T.FLOAT32], 3),
    (B.DEQUANTIZE, [T.INT4], [T.FLOAT32], 6), (B.DEQUANTIZE, [T.UINT8], [T.FLOAT32], 1),
    (B.QUANTIZE, [T.FLOAT32], [T.INT8], 1), (B.QUANTIZE, [T.FLOAT32], [T.UINT8], 1),
    (B.QUANTIZE, [T.FLOAT32], [T.INT16], 2), (B.QUANTIZE, [T.FLOAT32], [T.INT4], 4),
    (B.TRANSPOSE, [T.INT8, T.INT32], None, 2), (B.TRANSPOSE, [T.BOOL, T.INT32], None, 3),
    (B.TRANSPOSE, [T.INT16, T.INT32], None, 5), (B.TRANSPOSE, [T.INT4, T.INT32], None, 7),
    (B.TRANSPOSE, [T.BFLOAT16, T.INT32], None, 8),
    (B.BATCH_MATMUL, [T.INT8, T.INT8], None, 2), (B.BATCH_MATMUL, [T.INT16, T.INT16], None, 3),
]


@pytest.mark.parametrize(
    "op, input_types, output_types, expected",
    TYPE_RULES,
    ids=[
        f"{B(op).name}-{'+'.join(T(x).name for x in ins)}->{'+'.join(T(x).name for x in (outs or ins[:1]))}-is-v{v}"
        for op, ins, outs, v in TYPE_RULES
    ],
)
def test_version_chosen_by_tensor_types(op, input_types, output_types, expected):
    assert by_types(op, input_types, output_types) == expected


# ---------------------------------------------------------------------------
# Ops whose version depends on params or shapes
# ---------------------------------------------------------------------------


def test_resize_bilinear_half_pixel_centers_is_v3():
    params = P.ResizeBilinearParams(half_pixel_centers=True)
    assert by_types(B.RESIZE_BILINEAR, [T.FLOAT32, T.INT32], [T.FLOAT32], params) == 3


def test_resize_bilinear_align_corners_alone_stays_v1():
    params = P.ResizeBilinearParams(align_corners=True)
    assert by_types(B.RESIZE_BILINEAR, [T.FLOAT32, T.INT32], [T.FLOAT32], params) == 1


def test_resize_bilinear_int8_is_v2_and_int16_is_v4():
    params = P.ResizeBilinearParams()
    assert by_types(B.RESIZE_BILINEAR, [T.INT8, T.INT32], [T.INT8], params) == 2
    assert by_types(B.RESIZE_BILINEAR, [T.INT16, T.INT32], [T.INT16], params) == 4


def test_resize_bilinear_half_pixel_centers_rule_comes_before_the_int8_rule():
    params = P.ResizeBilinearParams(half_pixel_centers=True)
    assert by_types(B.RESIZE_BILINEAR, [T.INT8, T.INT32], [T.INT8], params) == 3


def test_resize_nearest_neighbor_align_corners_is_v3():
    params = P.ResizeNearestNeighborParams(align_corners=True)
    assert by_types(B.RESIZE_NEAREST_NEIGHBOR, [T.FLOAT32, T.INT32], [T.FLOAT32], params) == 3


def test_resize_nearest_neighbor_int8_is_v2_and_int16_is_v4():
    params = P.ResizeNearestNeighborParams()
    assert by_types(B.RESIZE_NEAREST_NEIGHBOR, [T.INT8, T.INT32], [T.INT8], params) == 2
    assert by_types(B.RESIZE_NEAREST_NEIGHBOR, [T.INT16, T.INT32], [T.INT16], params) == 4


def strided_slice(input_type=T.FLOAT32, rank=4, **params) -> int:
    shape = (2,) * rank
    inputs = [t(input_type, shape), const(T.INT32, (rank,)), const(T.INT32, (rank,)), const(T.INT32, (rank,))]
    return version(B.STRIDED_SLICE, inputs, [t(input_type, shape)], P.StridedSliceParams(**params))


def test_strided_slice_float_4d_is_v1():
    assert strided_slice() == 1


def test_strided_slice_int8_is_v2():
    assert strided_slice(T.INT8) == 2


def test_strided_slice_bool_is_v3():
    assert strided_slice(T.BOOL) == 3


def test_strided_slice_more_than_four_dimensions_is_v4():
    assert strided_slice(rank=5) == 4


def test_strided_slice_signature_records_the_input_rank():
    inputs = [t(T.FLOAT32, (1, 2, 3, 4, 5)), const(T.INT32, (5,)), const(T.INT32, (5,)), const(T.INT32, (5,))]
    signature = op_signature_from_tensors(B.STRIDED_SLICE, P.StridedSliceParams(), inputs, [t(T.FLOAT32)])
    assert signature.ext == {"num_dims": 5}


def test_strided_slice_string_is_v5():
    assert strided_slice(T.STRING) == 5


def test_strided_slice_ellipsis_or_new_axis_mask_is_v6():
    assert strided_slice(ellipsis_mask=2) == 6
    assert strided_slice(new_axis_mask=1) == 6


def test_strided_slice_uint32_is_v7():
    assert strided_slice(T.UINT32) == 7


def test_strided_slice_offset_is_v8():
    assert strided_slice(T.UINT32, offset=True) == 8


def test_transpose_five_dimensions_is_v4_and_six_is_v6():
    assert by_types(B.TRANSPOSE, [T.FLOAT32, T.INT32], rank=5) == 4
    assert by_types(B.TRANSPOSE, [T.FLOAT32, T.INT32], rank=6) == 6
    assert by_types(B.TRANSPOSE, [T.FLOAT32, T.INT32], rank=7) == 8


def test_slice_more_than_four_dimensions_is_v5():
    assert by_types(B.SLICE, [T.FLOAT32, T.INT32, T.INT32], rank=5) == 5


def test_pad_more_than_four_dimensions_is_v4():
    assert by_types(B.PAD, [T.INT8, T.INT32], rank=5) == 4


def test_space_to_batch_nd_on_a_non_4d_input_is_v3():
    assert by_types(B.SPACE_TO_BATCH_ND, [T.INT8, T.INT32, T.INT32], rank=3) == 3


def test_select_with_a_five_dimensional_input_is_v3():
    assert by_types(B.SELECT, [T.BOOL, T.FLOAT32, T.FLOAT32], [T.FLOAT32], rank=5) == 3


def test_gather_batch_dims_is_v5():
    assert by_types(B.GATHER, [T.FLOAT32, T.INT32], params=P.GatherParams(batch_dims=1)) == 5


def test_transpose_conv_versions():
    params = P.TransposeConvParams()
    shape = const(T.INT32, (4,))
    weights_f, weights_q = const(T.FLOAT32, (4, 3, 3, 4)), const(T.INT8, (4, 3, 3, 4), quantization=quant(0.1))
    assert version(B.TRANSPOSE_CONV, [shape, weights_f, t(T.FLOAT32)], [t(T.FLOAT32)], params) == 1
    assert version(B.TRANSPOSE_CONV, [shape, weights_q, t(T.INT8)], [t(T.INT8)], params) == 2
    assert version(B.TRANSPOSE_CONV, [shape, weights_q, t(T.INT8), None], [t(T.INT8)], params) == 2
    assert version(B.TRANSPOSE_CONV, [shape, weights_f, t(T.FLOAT32), const(T.FLOAT32, (4,))], [t(T.FLOAT32)], params) == 3


def test_transpose_conv_fused_activation_is_v4():
    params = P.TransposeConvParams(fused_activation_function=ActivationFunctionType.RELU)
    inputs = [const(T.INT32, (4,)), const(T.FLOAT32, (4, 3, 3, 4)), t(T.FLOAT32)]
    assert version(B.TRANSPOSE_CONV, inputs, [t(T.FLOAT32)], params) == 4


def test_batch_matmul_hybrid_asymmetric_inputs_is_v4():
    params = P.BatchMatMulParams(asymmetric_quantize_inputs=True)
    assert by_types(B.BATCH_MATMUL, [T.FLOAT32, T.INT8], [T.FLOAT32], params) == 4
    assert by_types(B.BATCH_MATMUL, [T.FLOAT32, T.INT8], [T.FLOAT32], P.BatchMatMulParams()) == 1


# ---------------------------------------------------------------------------
# Recurrent ops: the weights' type, then a param (TFLite's cases for RNN, SVDF, the LSTMs)
# ---------------------------------------------------------------------------

#: A hybrid node: float32 activations, int8 weights, float32 output.
HYBRID = ([T.FLOAT32, T.INT8, T.INT8], [T.FLOAT32])


def test_svdf_float_is_v1_hybrid_v2_int8_v3_hybrid_asymmetric_v4():
    assert by_types(B.SVDF, [T.FLOAT32, T.FLOAT32], [T.FLOAT32], P.SVDFParams()) == 1
    assert by_types(B.SVDF, *HYBRID, P.SVDFParams()) == 2
    assert by_types(B.SVDF, [T.INT8, T.INT8, T.INT16], [T.INT8], P.SVDFParams()) == 3
    assert by_types(B.SVDF, *HYBRID, P.SVDFParams(asymmetric_quantize_inputs=True)) == 4


def test_svdf_int8_input_is_v3_whatever_the_params():
    assert by_types(B.SVDF, [T.INT8, T.INT8, T.INT16], [T.INT8], P.SVDFParams(asymmetric_quantize_inputs=True)) == 3


RNN_PARAMS = {
    B.RNN: P.RNNParams,
    B.UNIDIRECTIONAL_SEQUENCE_RNN: P.SequenceRNNParams,
    B.BIDIRECTIONAL_SEQUENCE_RNN: P.BidirectionalSequenceRNNParams,
    B.BIDIRECTIONAL_SEQUENCE_LSTM: P.BidirectionalSequenceLSTMParams,
}


@pytest.mark.parametrize("op", list(RNN_PARAMS), ids=lambda op: B(op).name)
def test_recurrent_float_is_v1_int8_weights_v2_with_asymmetric_inputs_v3(op):
    params = RNN_PARAMS[op]
    assert by_types(op, [T.FLOAT32, T.FLOAT32], [T.FLOAT32], params()) == 1
    assert by_types(op, *HYBRID, params()) == 2
    assert by_types(op, *HYBRID, params(asymmetric_quantize_inputs=True)) == 3


@pytest.mark.parametrize("op", list(RNN_PARAMS), ids=lambda op: B(op).name)
def test_recurrent_rule_reads_the_weights_at_input_1(op):
    """TFLite tests input 1 only: a BIDIRECTIONAL_SEQUENCE_LSTM with CIFG (input 1 absent)
    is v1 even with int8 weights elsewhere."""
    assert by_types(op, [T.FLOAT32, None, T.INT8], [T.FLOAT32], RNN_PARAMS[op]()) == 1


def test_lstm_full_kernel_versions():
    full = P.LSTMParams()
    assert by_types(B.LSTM, [T.FLOAT32, T.FLOAT32, T.FLOAT32], [T.FLOAT32], full) == 1
    assert by_types(B.LSTM, [T.INT8, T.INT8, T.INT8], [T.INT8], full) == 1  # 8x8->16 integer LSTM
    assert by_types(B.LSTM, *HYBRID, full) == 3
    assert by_types(B.LSTM, *HYBRID, P.LSTMParams(asymmetric_quantize_inputs=True)) == 4
    assert by_types(B.LSTM, [T.INT16, T.INT8, T.INT8], [T.INT16], full) == 5


def test_lstm_basic_kernel_is_v2_whatever_the_types():
    basic = P.LSTMParams(kernel_type=P.LSTMKernelType.BASIC)
    assert by_types(B.LSTM, [T.FLOAT32, T.FLOAT32, T.FLOAT32], [T.FLOAT32], basic) == 2
    assert by_types(B.LSTM, [T.UINT8, T.UINT8, T.UINT8], [T.UINT8], basic) == 2
    # the hybrid and int16 rules are the full kernel's only
    assert by_types(B.LSTM, *HYBRID, basic) == 2
    assert by_types(B.LSTM, [T.INT16, T.INT8, T.INT8], [T.INT16], basic) == 2


def test_unidirectional_sequence_lstm_versions():
    plain = P.UnidirectionalSequenceLSTMParams()
    op = B.UNIDIRECTIONAL_SEQUENCE_LSTM
    assert by_types(op, [T.FLOAT32, T.FLOAT32, T.FLOAT32], [T.FLOAT32], plain) == 1
    assert by_types(op, [T.INT8, T.INT8, T.INT8], [T.INT8], plain) == 1
    assert by_types(op, *HYBRID, plain) == 2
    assert by_types(op, *HYBRID, P.UnidirectionalSequenceLSTMParams(asymmetric_quantize_inputs=True)) == 3
    assert by_types(op, [T.FLOAT32, T.FLOAT32, T.FLOAT32], [T.FLOAT32],
                    P.UnidirectionalSequenceLSTMParams(diagonal_recurrent_tensors=True)) == 4
    assert by_types(op, [T.INT16, T.INT8, T.INT8], [T.INT16], plain) == 5


def test_unidirectional_sequence_lstm_diagonal_comes_before_the_hybrid_rule_and_int16_before_both():
    op = B.UNIDIRECTIONAL_SEQUENCE_LSTM
    diagonal = P.UnidirectionalSequenceLSTMParams(diagonal_recurrent_tensors=True, asymmetric_quantize_inputs=True)
    assert by_types(op, *HYBRID, diagonal) == 4
    assert by_types(op, [T.INT16, T.INT8, T.INT8], [T.INT16], diagonal) == 5


def test_lstm_int16_versions_are_tflite_rules_without_a_runtime_release():
    """TFLite's rules give LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM v5 to int16x8 nodes, yet
    its runtime table (and LiteRT's resolver) has no v5 for either."""
    for op in (B.LSTM, B.UNIDIRECTIONAL_SEQUENCE_LSTM):
        assert (op, 5) not in TFLITE_MIN_RUNTIME_VERSIONS
        assert (op, 4) in TFLITE_MIN_RUNTIME_VERSIONS


# ---------------------------------------------------------------------------
# Quantization-dependent ext options
# ---------------------------------------------------------------------------


def test_dequantize_int8_per_tensor_is_v2():
    assert version(B.DEQUANTIZE, [const(T.INT8, (8, 3), quantization=quant(0.1))], [t(T.FLOAT32, (8, 3))]) == 2


def test_dequantize_int8_per_channel_along_its_quantized_dimension_is_v5():
    tensor = const(T.INT8, (8, 3), quantization=quant(0.1, 0.2, 0.3, axis=1))
    assert version(B.DEQUANTIZE, [tensor], [t(T.FLOAT32, (8, 3))]) == 5


def test_dequantize_scales_not_matching_the_quantized_dimension_are_not_per_channel():
    tensor = const(T.INT8, (8, 3), quantization=quant(0.1, 0.2, 0.3, axis=0))
    assert version(B.DEQUANTIZE, [tensor], [t(T.FLOAT32, (8, 3))]) == 2


def test_quantize_to_a_per_channel_output_is_v3():
    output = t(T.INT8, (1, 4), quantization=quant(0.1, 0.2, 0.3, 0.4, axis=1))
    assert version(B.QUANTIZE, [t(T.FLOAT32, (1, 4))], [output]) == 3


def test_abs_quantized_int16_is_v3():
    assert version(B.ABS, [t(T.INT16, quantization=quant(0.01))], [t(T.INT16, quantization=quant(0.01))]) == 3


def test_quantization_without_scales_does_not_make_a_tensor_quantized():
    empty = SimpleNamespace(scale=np.zeros(0, np.float32), zero_point=np.zeros(0, np.int64), quantized_dimension=0)
    assert version(B.ABS, [t(T.INT16, quantization=empty)], [t(T.INT16)]) == 4


# ---------------------------------------------------------------------------
# Signatures
# ---------------------------------------------------------------------------


def test_signature_marks_a_tensor_with_minus_one_in_its_shape_signature_dynamic():
    signature = op_signature_from_tensors(B.RELU, None, [t(T.FLOAT32, (1, 4), shape_signature=(-1, 4))], [t(T.FLOAT32)])
    assert signature.inputs[0].is_shape_dynamic and not signature.outputs[0].is_shape_dynamic


def test_signature_keeps_an_omitted_input_as_none():
    signature = op_signature_from_tensors(B.FULLY_CONNECTED, None, [t(T.FLOAT32), t(T.FLOAT32), None], [t(T.FLOAT32)])
    assert len(signature.inputs) == 3 and signature.inputs[2] is None


def test_signature_records_constness_and_quantization():
    signature = op_signature_from_tensors(B.ADD, None, [const(T.INT8, (2,), quantization=quant(0.5, 0.25))], [t(T.INT8)])
    spec = signature.inputs[0]
    assert spec.is_const and spec.quantization.scales == (0.5, 0.25) and spec.quantization.is_per_channel


def test_handwritten_signature_without_ext_or_params_uses_defaults():
    signature = OpSignature(op=B.DEPTHWISE_CONV_2D, inputs=[TensorSignature(T.INT8, (1,)), TensorSignature(T.INT8, (1,))], outputs=[TensorSignature(T.INT8, (1,))])
    assert get_builtin_operator_version(signature) == 3


@pytest.mark.parametrize(
    "op",
    [B.ELU, B.PRELU, B.HARD_SWISH, B.RESHAPE, B.EXPAND_DIMS, B.SHAPE, B.RANK, B.ZEROS_LIKE, B.CUMSUM,
     B.NEG, B.SIN, B.COS, B.FLOOR, B.CEIL, B.ROUND, B.SQUARE, B.POW, B.RELU_N1_TO_1, B.RELU_0_TO_1,
     B.LOGICAL_AND, B.LOGICAL_OR, B.LOGICAL_NOT, B.L2_POOL_2D, B.LOCAL_RESPONSE_NORMALIZATION,
     B.DENSIFY, B.IF, B.WHILE, B.CALL_ONCE, B.VAR_HANDLE, B.READ_VARIABLE, B.ASSIGN_VARIABLE,
     B.RFFT2D, B.COMPLEX_ABS, B.REAL, B.IMAG],
    ids=lambda op: B(op).name,
)
def test_op_without_a_tflite_rule_is_always_v1(op):
    assert op not in ops_with_version_rules()
    assert by_types(op, [T.INT8, T.INT8], [T.INT8]) == 1


TYPES = [ty for ty in TensorType]


@settings(max_examples=300, deadline=None)
@given(
    op=st.sampled_from(COVERED_OPS),
    input_types=st.lists(st.sampled_from(TYPES), min_size=1, max_size=4),
    output_types=st.lists(st.sampled_from(TYPES), min_size=1, max_size=2),
    rank=st.integers(0, 7),
)
def test_covered_ops_never_get_a_version_tflite_has_no_runtime_release_for(op, input_types, output_types, rank):
    assert (op, by_types(op, input_types, output_types, rank=rank)) in TFLITE_MIN_RUNTIME_VERSIONS
