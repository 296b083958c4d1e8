"""The minimum version a node needs: TFLite's ``GetBuiltinOperatorVersion``.

Facts from ``tensorflow/compiler/mlir/lite/tools/versioning/op_version.cc``
(tensorflow/tensorflow at 03f49db5a23ec2b22a59f3f3d72e5744469ea30b, the same
commit as the runtime table in ``runtime_version.py``). Each op has one small
rule function; inside it the checks run in TFLite's order, because the order is
part of the rule (DEPTHWISE_CONV_2D int8 is v3 even when dilated, so the int8
check must come before the dilation check).

An op with no rule is version 1 (TFLite's ``default: return 1``).

Where this differs from the C++ on purpose:

- C++ ``at(i)`` on a missing input/output throws; here a missing or omitted
  tensor has type ``None`` and rank 0, so it simply matches no type check.
- CONV_2D v4 and DEPTHWISE_CONV_2D v5 (int16 filters) read ``outputs.at(1)``
  in TFLite, which only exists by accident (these ops have one output; the C++
  would throw). We read output 0, the evident intent.
- ``quantized_bias_type`` (CONV_2D v8, FULLY_CONNECTED v11, TRANSPOSE_CONV v5) is
  "set" when it is not the schema default FLOAT32 (0): that is what the kernels
  and the converter mean. TFLite's flatbuffer path converts the schema value to a
  ``TfLiteType`` first, where FLOAT32 becomes non-zero, so re-versioning a file
  there would call every int16x8 conv "set".
- params missing (``None``) or lacking a field read as the schema default
  (``dilation_*_factor`` 1, ``pot_scale_int16`` true, everything else 0/false).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType
from schema.versioning.op_signature import OpSignature

__all__ = ["get_builtin_operator_version", "ops_with_version_rules"]

B = BuiltinOperator
T = TensorType

_Rule = Callable[[OpSignature], int]
_RULES: dict[BuiltinOperator, _Rule] = {}

# LSTMKernelType / FullyConnectedOptionsWeightsFormat values (schema.fbs).
_LSTM_FULL_KERNEL = 0
_LSTM_BASIC_KERNEL = 1
_WEIGHTS_SHUFFLED_4X16_INT8 = 1


def get_builtin_operator_version(signature: OpSignature) -> int:
    """The minimum version of ``signature.op`` that runs this node (TFLite's rules)."""
    rule = _RULES.get(BuiltinOperator(signature.op))
    return rule(signature) if rule is not None else 1


def ops_with_version_rules() -> frozenset[BuiltinOperator]:
    """Ops that have a rule here (every other builtin op is always version 1)."""
    return frozenset(_RULES)


def _rule(*ops: BuiltinOperator) -> Callable[[_Rule], _Rule]:
    def register(function: _Rule) -> _Rule:
        for op in ops:
            _RULES[op] = function
        return function

    return register


# --- tiny helpers ----------------------------------------------------------------


def _in(sig: OpSignature, index: int) -> int | None:
    """Type of input ``index`` (None when absent or omitted)."""
    if 0 <= index < len(sig.inputs) and sig.inputs[index] is not None:
        return sig.inputs[index].type
    return None


def _out(sig: OpSignature, index: int) -> int | None:
    """Type of output ``index`` (None when absent)."""
    if 0 <= index < len(sig.outputs) and sig.outputs[index] is not None:
        return sig.outputs[index].type
    return None


def _in_rank(sig: OpSignature, index: int) -> int:
    if 0 <= index < len(sig.inputs) and sig.inputs[index] is not None:
        return sig.inputs[index].rank
    return 0


def _in_shape(sig: OpSignature, index: int) -> tuple[int, ...]:
    tensor = sig.inputs[index] if 0 <= index < len(sig.inputs) else None
    return tuple(tensor.shape or ()) if tensor is not None else ()


def _io(sig: OpSignature, input0: int, input1: int, output0: int) -> bool:
    """Input 0, input 1 and output 0 have exactly these types."""
    return _in(sig, 0) == input0 and _in(sig, 1) == input1 and _out(sig, 0) == output0


def _is_hybrid(sig: OpSignature) -> bool:
    """Float activations with int8 weights ("hybrid" kernels)."""
    return _io(sig, T.FLOAT32, T.INT8, T.FLOAT32)


def _is_int16_in_out(sig: OpSignature) -> bool:
    return _in(sig, 0) == T.INT16 and _out(sig, 0) == T.INT16


def _param(sig: OpSignature, name: str, default: object = 0) -> object:
    return getattr(sig.params, name, default) if sig.params is not None else default


def _ext(sig: OpSignature, name: str, default: object = False) -> object:
    return sig.ext.get(name, default)


def _has_quantized_bias_type(sig: OpSignature) -> bool:
    return int(_param(sig, "quantized_bias_type", T.FLOAT32) or 0) != T.FLOAT32


def _needs_broadcast(sig: OpSignature) -> bool:
    """TFLite's NeedBroadcastForBinaryInputs: the first two input shapes differ."""
    return len(sig.inputs) >= 2 and _in_shape(sig, 0) != _in_shape(sig, 1)


def _max_input_rank(sig: OpSignature) -> int:
    return max((_in_rank(sig, i) for i in range(len(sig.inputs))), default=0)


def _broadcasts_above_4d(sig: OpSignature) -> bool:
    return _needs_broadcast(sig) and _max_input_rank(sig) > 4


# --- convolutions and matrix products ----------------------------------------------


@_rule(B.CONV_2D)
def _conv_2d(sig: OpSignature) -> int:
    # v8: int16 activations x int8 filter with an explicit quantized_bias_type
    if _io(sig, T.INT16, T.INT8, T.INT16) and _has_quantized_bias_type(sig):
        return 8
    # v6: grouped convolution (input channels != filter input channels)
    if _ext(sig, "is_grouped_convolution"):
        return 6
    # v4: int16 activations and int16 filter
    if _io(sig, T.INT16, T.INT16, T.INT16):
        return 4
    # v3: full int8
    if _io(sig, T.INT8, T.INT8, T.INT8):
        return 3
    # v7: int8 activations x int4 filter
    if _io(sig, T.INT8, T.INT4, T.INT8):
        return 7
    # v2 hybrid (float x int8 filter), v5 when the filter is per-channel
    if _is_hybrid(sig):
        return 5 if _ext(sig, "is_per_channel_quantized") else 2
    return 1


@_rule(B.DEPTHWISE_CONV_2D)
def _depthwise_conv_2d(sig: OpSignature) -> int:
    # v5: int16 activations and int16 filter
    if _io(sig, T.INT16, T.INT16, T.INT16):
        return 5
    # v4 hybrid (float x int8 filter), v6 when the filter is per-channel
    if _is_hybrid(sig):
        return 6 if _ext(sig, "is_per_channel_quantized") else 4
    # v3: full int8 (comes before the dilation rule: dilated int8 is v3)
    if _io(sig, T.INT8, T.INT8, T.INT8):
        return 3
    # v7: int8 activations x int4 filter
    if _io(sig, T.INT8, T.INT4, T.INT8):
        return 7
    # v2: dilation (DepthwiseConv2DOptions.dilation_*_factor != 1)
    if _param(sig, "dilation_w_factor", 1) != 1 or _param(sig, "dilation_h_factor", 1) != 1:
        return 2
    return 1


@_rule(B.TRANSPOSE_CONV)
def _transpose_conv(sig: OpSignature) -> int:
    # v5: int16 x int8 with an explicit quantized_bias_type (TFLite tests input 0,
    # which for this op is the output-shape tensor)
    if _io(sig, T.INT16, T.INT8, T.INT16) and _has_quantized_bias_type(sig):
        return 5
    # v4: fused activation function
    if sig.params is not None and _param(sig, "fused_activation_function", 0) != ActivationFunctionType.NONE:
        return 4
    # v3: bias input (4th input present)
    if len(sig.inputs) == 4 and _in(sig, 3) is not None:
        return 3
    # v2: int8 weights
    if _in(sig, 1) == T.INT8:
        return 2
    return 1


@_rule(B.FULLY_CONNECTED)
def _fully_connected(sig: OpSignature) -> int:
    # v14: int2 weights
    if _in(sig, 1) == T.INT2:
        return 14
    # v13: int16 activations x int4 weights
    if _io(sig, T.INT16, T.INT4, T.INT16):
        return 13
    # v12: hybrid with per-channel weights
    if _is_hybrid(sig) and _ext(sig, "is_per_channel_quantized"):
        return 12
    # v11: int16 x int8 with an explicit quantized_bias_type
    if _io(sig, T.INT16, T.INT8, T.INT16) and _has_quantized_bias_type(sig):
        return 11
    # v8: sparse weights
    if _ext(sig, "sparse_weight"):
        return 8
    # v7: int16 activations and int16 weights
    if _io(sig, T.INT16, T.INT16, T.INT16):
        return 7
    # v6: exactly two inputs (no bias slot at all; an omitted bias, -1, still counts)
    if len(sig.inputs) == 2:
        return 6
    # v5: keep_num_dims
    if _param(sig, "keep_num_dims", False):
        return 5
    # v4: full int8
    if _io(sig, T.INT8, T.INT8, T.INT8):
        return 4
    # v10: int8 activations x int4 weights
    if _io(sig, T.INT8, T.INT4, T.INT8):
        return 10
    # v3 hybrid, v9 hybrid with asymmetric_quantize_inputs
    if _is_hybrid(sig):
        return 9 if _param(sig, "asymmetric_quantize_inputs", False) else 3
    # v2: shuffled 4x16 int8 weights format
    if _param(sig, "weights_format", 0) == _WEIGHTS_SHUFFLED_4X16_INT8:
        return 2
    return 1


@_rule(B.BATCH_MATMUL)
def _batch_matmul(sig: OpSignature) -> int:
    # v3: int16
    if _in(sig, 0) == T.INT16:
        return 3
    # v2: int8
    if _in(sig, 0) == T.INT8:
        return 2
    # v4: hybrid with asymmetric_quantize_inputs
    if _is_hybrid(sig) and sig.params is not None and _param(sig, "asymmetric_quantize_inputs", False):
        return 4
    return 1


@_rule(B.SVDF)
def _svdf(sig: OpSignature) -> int:
    # v3: full integer (int8 input)
    if _in(sig, 0) == T.INT8:
        return 3
    # v2 hybrid, v4 hybrid with asymmetric_quantize_inputs
    if _is_hybrid(sig):
        return 4 if _param(sig, "asymmetric_quantize_inputs", False) else 2
    return 1


@_rule(B.EMBEDDING_LOOKUP)
def _embedding_lookup(sig: OpSignature) -> int:
    # v4: int4 table or per-channel table
    if _in(sig, 1) == T.INT4 or _ext(sig, "is_per_channel_quantized"):
        return 4
    # v5: int2 table
    if _in(sig, 1) == T.INT2:
        return 5
    return 1


# --- elementwise binary ------------------------------------------------------------


@_rule(B.ADD)
def _add(sig: OpSignature) -> int:
    # v6: float16
    if _in(sig, 0) == T.FLOAT16:
        return 6
    # v5: plain (not quantized) int16
    if _in(sig, 0) == T.INT16 and not _ext(sig, "input_quantized"):
        return 5
    # v4: int64
    if _in(sig, 0) == T.INT64:
        return 4
    # v3: quantized int16 with general scales (AddOptions.pot_scale_int16 false)
    if _is_int16_in_out(sig) and sig.params is not None and not _param(sig, "pot_scale_int16", True):
        return 3
    # v2: int8
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.SUB)
def _sub(sig: OpSignature) -> int:
    # v5: int16 with general scales (SubOptions.pot_scale_int16 false)
    if _is_int16_in_out(sig) and sig.params is not None and not _param(sig, "pot_scale_int16", True):
        return 5
    # v4: int64
    if _in(sig, 0) == T.INT64:
        return 4
    # v3: broadcasting with more than 4 dimensions
    if _broadcasts_above_4d(sig):
        return 3
    # v2: int8
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


def _mul_rescale_at_least_one(sig: OpSignature) -> bool:
    """input1_scale * input2_scale / output_scale >= 1, in float32 as TFLite computes it."""
    s1 = np.float32(_ext(sig, "input1_scale", 0.0))
    s2 = np.float32(_ext(sig, "input2_scale", 0.0))
    so = np.float32(_ext(sig, "output_scale", 0.0))
    if s1 == 0 or s2 == 0 or so == 0:
        return False
    return bool(s1 * s2 / so >= np.float32(1.0))


@_rule(B.MUL)
def _mul(sig: OpSignature) -> int:
    # v8: float16
    if _in(sig, 0) == T.FLOAT16:
        return 8
    # v7: plain (not quantized) int16, or uint32
    if (_in(sig, 0) == T.INT16 and not _ext(sig, "input_quantized")) or _in(sig, 0) == T.UINT32:
        return 7
    # v6: complex64
    if _in(sig, 0) == T.COMPLEX64:
        return 6
    # v5: int64
    if _in(sig, 0) == T.INT64:
        return 5
    # v4: quantized int16
    if _in(sig, 0) == T.INT16:
        return 4
    # v3: quantized with rescale (s1 * s2 / s_out) >= 1
    if _mul_rescale_at_least_one(sig):
        return 3
    # v2: int8
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.DIV)
def _div(sig: OpSignature) -> int:
    # v2: broadcasting with more than 4 dimensions
    if _broadcasts_above_4d(sig):
        return 2
    return 1


@_rule(B.MAXIMUM, B.MINIMUM)
def _maximum_minimum(sig: OpSignature) -> int:
    # v4: int16
    if _is_int16_in_out(sig):
        return 4
    # v3: broadcasting with more than 4 dimensions
    if _broadcasts_above_4d(sig):
        return 3
    # v2: int8
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.FLOOR_DIV)
def _floor_div(sig: OpSignature) -> int:
    # v3: int16 / int8
    if _in(sig, 0) in (T.INT16, T.INT8):
        return 3
    # v2: float32
    if _in(sig, 0) == T.FLOAT32:
        return 2
    return 1


@_rule(B.FLOOR_MOD)
def _floor_mod(sig: OpSignature) -> int:
    # v2: int16 / int8
    if _in(sig, 0) in (T.INT16, T.INT8):
        return 2
    return 1


@_rule(B.SQUARED_DIFFERENCE, B.SPACE_TO_DEPTH, B.SPLIT_V, B.SUM, B.LOG_SOFTMAX, B.GREATER, B.LESS_EQUAL, B.DEPTH_TO_SPACE)
def _int8_is_v2(sig: OpSignature) -> int:
    # v2: int8
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


# --- comparisons and selection -----------------------------------------------------


@_rule(B.EQUAL)
def _equal(sig: OpSignature) -> int:
    # v5: int16; v3: string; v2: int8
    if _in(sig, 0) == T.INT16:
        return 5
    if _in(sig, 0) == T.STRING:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.NOT_EQUAL)
def _not_equal(sig: OpSignature) -> int:
    # v4: int16; v3: string; v2: int8
    if _in(sig, 0) == T.INT16:
        return 4
    if _in(sig, 0) == T.STRING:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.LESS, B.GREATER_EQUAL)
def _less_greater_equal(sig: OpSignature) -> int:
    # v3: int16; v2: int8
    if _in(sig, 0) == T.INT16:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.SELECT)
def _select(sig: OpSignature) -> int:
    # v4: uint32
    if _in(sig, 0) == T.UINT32:
        return 4
    # v3: a 5-D input
    if 5 in (_in_rank(sig, 0), _in_rank(sig, 1), _in_rank(sig, 2)):
        return 3
    # v2: int8 (TFLite tests input 0, the condition)
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.SELECT_V2)
def _select_v2(sig: OpSignature) -> int:
    # v2: uint32 (TFLite tests input 0, the condition)
    if _in(sig, 0) == T.UINT32:
        return 2
    return 1


@_rule(B.WHERE)
def _where(sig: OpSignature) -> int:
    # v1: bool condition; v2: any other condition type
    return 1 if _in(sig, 0) == T.BOOL else 2


# --- pooling, reductions, activations ------------------------------------------------


@_rule(B.MAX_POOL_2D, B.AVERAGE_POOL_2D)
def _pool_2d(sig: OpSignature) -> int:
    # v3: int16; v2: int8
    if _is_int16_in_out(sig):
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.SOFTMAX, B.MEAN, B.MIRROR_PAD, B.REDUCE_MAX, B.REDUCE_MIN, B.RELU6, B.RSQRT)
def _int16_v3_int8_v2(sig: OpSignature) -> int:
    # v3: int16; v2: int8
    if _in(sig, 0) == T.INT16:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.EXP, B.LOG, B.REDUCE_PROD, B.SQRT)
def _int8_or_int16_is_v2(sig: OpSignature) -> int:
    # v2: int8 or int16
    if _in(sig, 0) in (T.INT8, T.INT16):
        return 2
    return 1


@_rule(B.TANH, B.LOGISTIC)
def _tanh_logistic(sig: OpSignature) -> int:
    # v3: int16; v2: int8
    if _is_int16_in_out(sig):
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.RELU)
def _relu(sig: OpSignature) -> int:
    # v3: int16; v2: int8 / uint8
    if _in(sig, 0) == T.INT16:
        return 3
    if _in(sig, 0) in (T.INT8, T.UINT8):
        return 2
    return 1


@_rule(B.LEAKY_RELU)
def _leaky_relu(sig: OpSignature) -> int:
    # v2: int16
    return 2 if _in(sig, 0) == T.INT16 else 1


@_rule(B.GELU)
def _gelu(sig: OpSignature) -> int:
    # v2: int8 / uint8
    return 2 if _in(sig, 0) in (T.INT8, T.UINT8) else 1


@_rule(B.ABS)
def _abs(sig: OpSignature) -> int:
    # v5: int32
    if _in(sig, 0) == T.INT32:
        return 5
    # v3: quantized int16, v4: plain int16
    if _in(sig, 0) == T.INT16:
        return 3 if _ext(sig, "input_quantized") else 4
    # v2: int8 / uint8
    if _in(sig, 0) in (T.INT8, T.UINT8):
        return 2
    return 1


@_rule(B.SIGN)
def _sign(sig: OpSignature) -> int:
    # v2: int32
    return 2 if _in(sig, 0) == T.INT32 else 1


@_rule(B.L2_NORMALIZATION)
def _l2_normalization(sig: OpSignature) -> int:
    # v2: int8 output
    return 2 if _out(sig, 0) == T.INT8 else 1


@_rule(B.ARG_MAX, B.ARG_MIN)
def _arg_max_min(sig: OpSignature) -> int:
    # v3: bool; v2: int8
    if _in(sig, 0) == T.BOOL:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.TOPK_V2)
def _topk_v2(sig: OpSignature) -> int:
    # v3: int16 input, k or indices output; v2: int8
    if _in(sig, 0) == T.INT16 or _in(sig, 1) == T.INT16 or _out(sig, 1) == T.INT16:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


# --- shape and data movement ---------------------------------------------------------


@_rule(B.TRANSPOSE)
def _transpose(sig: OpSignature) -> int:
    # v8: more than 6 dimensions, or bfloat16
    if _in_rank(sig, 0) > 6 or _in(sig, 0) == T.BFLOAT16:
        return 8
    # v7: int4
    if _in(sig, 0) == T.INT4:
        return 7
    # v6: 6 dimensions
    if _in_rank(sig, 0) > 5:
        return 6
    # v5: int16
    if _in(sig, 0) == T.INT16:
        return 5
    # v4: 5 dimensions
    if _in_rank(sig, 0) > 4:
        return 4
    # v3: bool; v2: int8
    if _in(sig, 0) == T.BOOL:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.CONCATENATION)
def _concatenation(sig: OpSignature) -> int:
    # v5: int4; v4: uint32; v3: int16; v2: int8
    if _in(sig, 0) == T.INT4:
        return 5
    if _in(sig, 0) == T.UINT32:
        return 4
    if _in(sig, 0) == T.INT16:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.PACK)
def _pack(sig: OpSignature) -> int:
    # v2: int8; v3: int16; v4: uint32
    if _in(sig, 0) == T.INT8:
        return 2
    if _is_int16_in_out(sig):
        return 3
    if _in(sig, 0) == T.UINT32:
        return 4
    return 1


@_rule(B.UNPACK)
def _unpack(sig: OpSignature) -> int:
    # v2: int8 / uint8; v3: bool; v4: int16; v5: float16 / bfloat16
    if _in(sig, 0) in (T.INT8, T.UINT8):
        return 2
    if _in(sig, 0) == T.BOOL:
        return 3
    if _is_int16_in_out(sig):
        return 4
    if _in(sig, 0) in (T.FLOAT16, T.BFLOAT16):
        return 5
    return 1


@_rule(B.SPLIT)
def _split(sig: OpSignature) -> int:
    # The data is input 1 (input 0 is the axis). v4: int16; v3: int32; v2: int8
    if _in(sig, 1) == T.INT16:
        return 4
    if _in(sig, 1) == T.INT32:
        return 3
    if _in(sig, 1) == T.INT8:
        return 2
    return 1


@_rule(B.SLICE)
def _slice(sig: OpSignature) -> int:
    # v7: int4; v6: uint32; v5: more than 4 dimensions; v4: int16; v3: string; v2: int8
    if _in(sig, 0) == T.INT4:
        return 7
    if _in(sig, 0) == T.UINT32:
        return 6
    if _in_rank(sig, 0) > 4:
        return 5
    if _in(sig, 0) == T.INT16:
        return 4
    if _in(sig, 0) == T.STRING:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.STRIDED_SLICE)
def _strided_slice(sig: OpSignature) -> int:
    # v8: StridedSliceOptions.offset
    if _param(sig, "offset", False):
        return 8
    # v7: uint32
    if _in(sig, 0) == T.UINT32:
        return 7
    # v6: ellipsis_mask or new_axis_mask
    if _param(sig, "ellipsis_mask", 0) != 0 or _param(sig, "new_axis_mask", 0) != 0:
        return 6
    # v5: string
    if _in(sig, 0) == T.STRING:
        return 5
    # v4: more than 4 dimensions
    if int(_ext(sig, "num_dims", 0)) > 4:
        return 4
    # v3: bool; v2: int8
    if _in(sig, 0) == T.BOOL:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.GATHER)
def _gather(sig: OpSignature) -> int:
    # v7: int4 params; v6: int16 indices; v5: batch_dims != 0; v4: int16; v3: bool; v2: int8
    if _in(sig, 0) == T.INT4:
        return 7
    if _in(sig, 1) == T.INT16:
        return 6
    if _param(sig, "batch_dims", 0) != 0:
        return 5
    if _in(sig, 0) == T.INT16:
        return 4
    if _in(sig, 0) == T.BOOL:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.GATHER_ND)
def _gather_nd(sig: OpSignature) -> int:
    # v5: bool; v4: int16 indices; v3: int16 params; v2: string
    if _in(sig, 0) == T.BOOL:
        return 5
    if _in(sig, 1) == T.INT16:
        return 4
    if _in(sig, 0) == T.INT16:
        return 3
    if _in(sig, 0) == T.STRING:
        return 2
    return 1


@_rule(B.TILE)
def _tile(sig: OpSignature) -> int:
    # v3: int8; v2: string
    if _in(sig, 0) == T.INT8:
        return 3
    if _in(sig, 0) == T.STRING:
        return 2
    return 1


@_rule(B.SQUEEZE)
def _squeeze(sig: OpSignature) -> int:
    # v2: string
    return 2 if _in(sig, 0) == T.STRING else 1


@_rule(B.BROADCAST_TO)
def _broadcast_to(sig: OpSignature) -> int:
    # v1 was rolled back (its op code number changed): the first version is 2.
    # v3: int8 / int16
    return 3 if _in(sig, 0) in (T.INT8, T.INT16) else 2


@_rule(B.REVERSE_V2)
def _reverse_v2(sig: OpSignature) -> int:
    # v3: int8; v2: bool
    if _in(sig, 0) == T.INT8:
        return 3
    if _in(sig, 0) == T.BOOL:
        return 2
    return 1


@_rule(B.PAD, B.PADV2)
def _pad(sig: OpSignature) -> int:
    # v5: bool; v4: more than 4 dimensions; v3: int16; v2: int8
    if _in(sig, 0) == T.BOOL:
        return 5
    if _in_rank(sig, 0) > 4:
        return 4
    if _in(sig, 0) == T.INT16:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.SPACE_TO_BATCH_ND, B.BATCH_TO_SPACE_ND)
def _space_batch_nd(sig: OpSignature) -> int:
    # v4: int16; v3: input not 4-D; v2: int8
    if _in(sig, 0) == T.INT16:
        return 4
    if _in_rank(sig, 0) != 4:
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.RESIZE_BILINEAR)
def _resize_bilinear(sig: OpSignature) -> int:
    # v4: int16; v3: half_pixel_centers; v2: int8 (align_corners alone stays v1)
    if _in(sig, 0) == T.INT16:
        return 4
    if _param(sig, "half_pixel_centers", False):
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.RESIZE_NEAREST_NEIGHBOR)
def _resize_nearest_neighbor(sig: OpSignature) -> int:
    # v4: int16; v3: half_pixel_centers or align_corners; v2: int8
    if _in(sig, 0) == T.INT16:
        return 4
    if _param(sig, "half_pixel_centers", False) or _param(sig, "align_corners", False):
        return 3
    if _in(sig, 0) == T.INT8:
        return 2
    return 1


@_rule(B.FILL)
def _fill(sig: OpSignature) -> int:
    # The value is input 1. v4: float16; v3: int8 / int16; v2: bool / string
    if len(sig.inputs) >= 2:
        if _in(sig, 1) == T.FLOAT16:
            return 4
        if _in(sig, 1) in (T.INT8, T.INT16):
            return 3
        if _in(sig, 1) in (T.BOOL, T.STRING):
            return 2
    return 1


@_rule(B.RANGE)
def _range(sig: OpSignature) -> int:
    # v2: int64
    return 2 if _in(sig, 0) == T.INT64 else 1


@_rule(B.SPARSE_TO_DENSE)
def _sparse_to_dense(sig: OpSignature) -> int:
    # The values are input 2. v3: int8 / uint8; v2: int64
    if _in(sig, 2) in (T.INT8, T.UINT8):
        return 3
    if _in(sig, 2) == T.INT64:
        return 2
    return 1


@_rule(B.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(sig: OpSignature) -> int:
    # v6: bfloat16; v5: int4; v4: int16; v3: float16; v2: int64 indices
    if _in(sig, 0) == T.BFLOAT16:
        return 6
    if _in(sig, 0) == T.INT4:
        return 5
    if _in(sig, 0) == T.INT16:
        return 4
    if _in(sig, 0) == T.FLOAT16:
        return 3
    if _in(sig, 2) == T.INT64:
        return 2
    return 1


# --- types and quantization --------------------------------------------------------


def _in_or_out(sig: OpSignature, *types: int) -> bool:
    """Input 0 or output 0 has one of ``types``."""
    return _in(sig, 0) in types or _out(sig, 0) in types


@_rule(B.CAST)
def _cast(sig: OpSignature) -> int:
    # v8: int2 / uint4
    if _in_or_out(sig, T.INT2, T.UINT4):
        return 8
    # v7: bfloat16
    if _in_or_out(sig, T.BFLOAT16):
        return 7
    # v6: int4 -> float32
    if _in(sig, 0) == T.INT4 and _out(sig, 0) == T.FLOAT32:
        return 6
    # v5: float64 / float16
    if _in_or_out(sig, T.FLOAT64, T.FLOAT16):
        return 5
    # v4: uint16; v3: int8; v2: uint32
    if _in_or_out(sig, T.UINT16):
        return 4
    if _in_or_out(sig, T.INT8):
        return 3
    if _in_or_out(sig, T.UINT32):
        return 2
    return 1


@_rule(B.DEQUANTIZE)
def _dequantize(sig: OpSignature) -> int:
    # v8: uint4; v7: int2; v6: int4
    if _in(sig, 0) == T.UINT4:
        return 8
    if _in(sig, 0) == T.INT2:
        return 7
    if _in(sig, 0) == T.INT4:
        return 6
    # v3: int16 / float16
    if _in(sig, 0) in (T.INT16, T.FLOAT16):
        return 3
    # v2: int8, v5: per-channel int8
    if _in(sig, 0) == T.INT8:
        return 5 if _ext(sig, "is_per_channel_quantized") else 2
    return 1


@_rule(B.QUANTIZE)
def _quantize(sig: OpSignature) -> int:
    # v5: uint4; v4: int4 (input or output)
    if _in_or_out(sig, T.UINT4):
        return 5
    if _in_or_out(sig, T.INT4):
        return 4
    # v3: per-channel output
    if _ext(sig, "is_per_channel_quantized"):
        return 3
    # v2: int16 output
    if _out(sig, 0) == T.INT16:
        return 2
    return 1


@_rule(B.FAKE_QUANT)
def _fake_quant(sig: OpSignature) -> int:
    # v2: narrow_range
    return 2 if _param(sig, "narrow_range", False) else 1


# --- recurrent ---------------------------------------------------------------------


@_rule(B.LSTM)
def _lstm(sig: OpSignature) -> int:
    full_kernel = _param(sig, "kernel_type", _LSTM_FULL_KERNEL) == _LSTM_FULL_KERNEL
    # v5: int16 activations x int8 weights (full kernel)
    if full_kernel and _in(sig, 0) == T.INT16 and _in(sig, 2) == T.INT8 and _out(sig, 0) == T.INT16:
        return 5
    # v3 hybrid (full kernel), v4 with asymmetric_quantize_inputs
    if full_kernel and _in(sig, 0) == T.FLOAT32 and _in(sig, 2) == T.INT8 and _out(sig, 0) == T.FLOAT32:
        return 4 if _param(sig, "asymmetric_quantize_inputs", False) else 3
    # v2: basic kernel
    if _param(sig, "kernel_type", _LSTM_FULL_KERNEL) == _LSTM_BASIC_KERNEL:
        return 2
    return 1


@_rule(B.UNIDIRECTIONAL_SEQUENCE_LSTM)
def _unidirectional_sequence_lstm(sig: OpSignature) -> int:
    # v5: int16 activations x int8 weights
    if _in(sig, 0) == T.INT16 and _in(sig, 2) == T.INT8 and _out(sig, 0) == T.INT16:
        return 5
    # v4: diagonal_recurrent_tensors
    if _param(sig, "diagonal_recurrent_tensors", False):
        return 4
    # v2 hybrid, v3 with asymmetric_quantize_inputs
    if _in(sig, 0) == T.FLOAT32 and _in(sig, 2) == T.INT8 and _out(sig, 0) == T.FLOAT32:
        return 3 if _param(sig, "asymmetric_quantize_inputs", False) else 2
    return 1


@_rule(B.RNN, B.UNIDIRECTIONAL_SEQUENCE_RNN, B.BIDIRECTIONAL_SEQUENCE_RNN, B.BIDIRECTIONAL_SEQUENCE_LSTM)
def _hybrid_rnn(sig: OpSignature) -> int:
    # v2 hybrid (int8 weights, float output), v3 with asymmetric_quantize_inputs
    if _in(sig, 1) == T.INT8 and _out(sig, 0) == T.FLOAT32:
        return 3 if _param(sig, "asymmetric_quantize_inputs", False) else 2
    return 1
