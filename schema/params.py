"""Typed parameters of builtin operators: the Python counterpart of TFLite's
``builtin_op_data.h``.

One frozen dataclass per options table of the schema's ``BuiltinOptions`` union.
The rules every class here follows (``tests/schema_tests/test_params.py`` checks them):

- the class name is the table name with ``Options`` replaced by ``Params``
  (``Conv2DOptions`` -> ``Conv2DParams``);
- the field names are exactly the snake_case field names of ``schema.fbs``
  (the generated object API spells them in camelCase: ``dilation_w_factor`` is
  ``Conv2DOptionsT.dilationWFactor``), and the defaults are the schema defaults,
  so that a file without the table, or without a field added later, reads as the
  old behaviour;
- enum-typed fields hold the IntEnums of ``schema.enums``; vector fields hold
  tuples, or ``None`` when the vector is absent (TFLite tells absent from empty,
  e.g. RESHAPE without ``new_shape`` takes the shape from its second input);
  string fields hold ``str`` or ``None``;
- deprecated fields are left out;
- a field that was added after version 1 of its op says which version added it.

Which op uses which class is ``schema.option_parsers.OPTIONS_TABLE_OF_OP``; the
parsers that fill these classes from a flatbuffer, and the inverse used by the
writer, are in ``schema.option_parsers``.

The tables of the second union (``BuiltinOptions2``: the StableHLO ops, DILATE,
REDUCE_WINDOW) follow the same rules; they are at the end of this module.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from schema import schema_generated as fb
from schema.enums import (
    ActivationFunctionType,
    CombinerType,
    CustomOptionsFormat,
    FullyConnectedOptionsWeightsFormat,
    LSHProjectionType,
    MirrorPadMode,
    Padding,
    ReduceWindowFunction,
    RngAlgorithm,
    StablehloComparisonDirection,
    StablehloComparisonType,
    TensorType,
)

#: The schema's ``LSTMKernelType`` (FULL = 0, BASIC = 1), taken from the generated code
#: like the enums of ``schema.enums`` (which does not define it).
LSTMKernelType = enum.IntEnum(
    "LSTMKernelType",
    {
        key: value
        for key, value in vars(fb.LSTMKernelType).items()
        if not key.startswith("_") and isinstance(value, int)
    },
)

_NONE = ActivationFunctionType.NONE


# ---------------------------------------------------------------------------
# Convolutions and pooling
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Conv2DParams:
    """Options of CONV_2D.

    Every default is TFLite's schema default (what a file without the field reads as,
    and what TFLite's kernels see): ``stride_w`` and ``stride_h`` are 0 there, which no
    kernel runs, so give them (``Conv2DParams(stride_w=1, stride_h=1)`` for a plain
    convolution).
    """

    padding: Padding = Padding.SAME
    stride_w: int = 0
    stride_h: int = 0
    fused_activation_function: ActivationFunctionType = _NONE
    dilation_w_factor: int = 1
    dilation_h_factor: int = 1
    # Added in CONV_2D version 8 (int16 activations with int8 weights); the default
    # FLOAT32 (0) means "not set" and reproduces earlier versions.
    quantized_bias_type: TensorType = TensorType.FLOAT32


@dataclass(frozen=True)
class DepthwiseConv2DParams:
    """Options of DEPTHWISE_CONV_2D.

    Every default is TFLite's schema default (what a file without the field reads as):
    ``stride_w``, ``stride_h`` and ``depth_multiplier`` are 0 there, so give them
    (``DepthwiseConv2DParams(stride_w=1, stride_h=1, depth_multiplier=1)``).
    """

    padding: Padding = Padding.SAME
    stride_w: int = 0
    stride_h: int = 0
    # Redundant with the filter shape; TFLite kernels after TF 2.0 ignore it.
    depth_multiplier: int = 0
    fused_activation_function: ActivationFunctionType = _NONE
    # Added in DEPTHWISE_CONV_2D version 2; the default 1 reproduces version 1.
    dilation_w_factor: int = 1
    # Added in DEPTHWISE_CONV_2D version 2; the default 1 reproduces version 1.
    dilation_h_factor: int = 1


@dataclass(frozen=True)
class TransposeConvParams:
    """Options of TRANSPOSE_CONV."""

    padding: Padding = Padding.SAME
    stride_w: int = 0
    stride_h: int = 0
    # Added in TRANSPOSE_CONV version 4; the default NONE reproduces versions 1-3.
    fused_activation_function: ActivationFunctionType = _NONE
    # Added in TRANSPOSE_CONV version 5 (int16 activations with int8 weights); the
    # default FLOAT32 (0) means "not set" and reproduces earlier versions.
    quantized_bias_type: TensorType = TensorType.FLOAT32


@dataclass(frozen=True)
class Conv3DParams:
    """Options of CONV_3D and CONV_3D_TRANSPOSE."""

    padding: Padding = Padding.SAME
    stride_d: int = 0
    stride_w: int = 0
    stride_h: int = 0
    fused_activation_function: ActivationFunctionType = _NONE
    dilation_d_factor: int = 1
    dilation_w_factor: int = 1
    dilation_h_factor: int = 1


@dataclass(frozen=True)
class Pool2DParams:
    """Options of AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D."""

    padding: Padding = Padding.SAME
    stride_w: int = 0
    stride_h: int = 0
    filter_width: int = 0
    filter_height: int = 0
    fused_activation_function: ActivationFunctionType = _NONE


# ---------------------------------------------------------------------------
# Dense layers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FullyConnectedParams:
    """Options of FULLY_CONNECTED.

    The schema field ``quant_spec`` (an opaque byte vector of recent schemas) is not
    modelled: see ``schema.option_parsers.UNMODELLED_FIELDS``.
    """

    fused_activation_function: ActivationFunctionType = _NONE
    # Added in FULLY_CONNECTED version 2; the default DEFAULT reproduces version 1.
    weights_format: FullyConnectedOptionsWeightsFormat = FullyConnectedOptionsWeightsFormat.DEFAULT
    # Added in FULLY_CONNECTED version 5; the default False reproduces versions 1-4.
    keep_num_dims: bool = False
    # Added for hybrid (float input, int8 weights) FULLY_CONNECTED: op_version.cc stamps
    # version 9 when it is set (schema.fbs's comment says 7); the default False
    # reproduces the earlier hybrid versions.
    asymmetric_quantize_inputs: bool = False
    # Added in FULLY_CONNECTED version 11 (int16 activations with int8 weights); the
    # default FLOAT32 (0) means "not set" and reproduces earlier versions.
    quantized_bias_type: TensorType = TensorType.FLOAT32


@dataclass(frozen=True)
class BatchMatMulParams:
    """Options of BATCH_MATMUL."""

    adj_x: bool = False
    adj_y: bool = False
    # Added in BATCH_MATMUL version 4 (hybrid); the default False reproduces versions 1-3.
    asymmetric_quantize_inputs: bool = False


# ---------------------------------------------------------------------------
# Elementwise arithmetic
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AddParams:
    """Options of ADD."""

    fused_activation_function: ActivationFunctionType = _NONE
    # Added in ADD version 3 (int16 only); the default True reproduces versions 1-2.
    pot_scale_int16: bool = True


@dataclass(frozen=True)
class SubParams:
    """Options of SUB."""

    fused_activation_function: ActivationFunctionType = _NONE
    # Added in SUB version 5 (int16 only); the default True reproduces versions 1-4.
    pot_scale_int16: bool = True


@dataclass(frozen=True)
class MulParams:
    """Options of MUL."""

    fused_activation_function: ActivationFunctionType = _NONE


@dataclass(frozen=True)
class DivParams:
    """Options of DIV."""

    fused_activation_function: ActivationFunctionType = _NONE


@dataclass(frozen=True)
class SquaredDifferenceParams:
    """Options of SQUARED_DIFFERENCE (an empty table)."""


@dataclass(frozen=True)
class MaximumMinimumParams:
    """Options of MAXIMUM and MINIMUM (an empty table)."""


@dataclass(frozen=True)
class PowParams:
    """Options of POW (an empty table)."""


@dataclass(frozen=True)
class FloorDivParams:
    """Options of FLOOR_DIV (an empty table)."""


@dataclass(frozen=True)
class FloorModParams:
    """Options of FLOOR_MOD (an empty table)."""


@dataclass(frozen=True)
class AddNParams:
    """Options of ADD_N (an empty table)."""


@dataclass(frozen=True)
class ATan2Params:
    """Options of ATAN2 (an empty table)."""


@dataclass(frozen=True)
class BitwiseXorParams:
    """Options of BITWISE_XOR (an empty table)."""


@dataclass(frozen=True)
class RightShiftParams:
    """Options of RIGHT_SHIFT (an empty table)."""


# ---------------------------------------------------------------------------
# Elementwise unary
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AbsParams:
    """Options of ABS (an empty table)."""


@dataclass(frozen=True)
class NegParams:
    """Options of NEG (an empty table)."""


@dataclass(frozen=True)
class ExpParams:
    """Options of EXP (an empty table)."""


@dataclass(frozen=True)
class CosParams:
    """Options of COS (an empty table). SIN, LOG, SQRT, RSQRT, FLOOR, CEIL and ROUND
    have no options table at all."""


@dataclass(frozen=True)
class SquareParams:
    """Options of SQUARE (an empty table)."""


@dataclass(frozen=True)
class SignParams:
    """Options of SIGN (an empty table)."""


@dataclass(frozen=True)
class HardSwishParams:
    """Options of HARD_SWISH (an empty table)."""


@dataclass(frozen=True)
class LeakyReluParams:
    """Options of LEAKY_RELU."""

    alpha: float = 0.0


@dataclass(frozen=True)
class GeluParams:
    """Options of GELU."""

    approximate: bool = False


@dataclass(frozen=True)
class CastParams:
    """Options of CAST. The schema default 0 is FLOAT32 for both fields."""

    in_data_type: TensorType = TensorType.FLOAT32
    out_data_type: TensorType = TensorType.FLOAT32


@dataclass(frozen=True)
class BitcastParams:
    """Options of BITCAST (an empty table)."""


@dataclass(frozen=True)
class ZerosLikeParams:
    """Options of ZEROS_LIKE (an empty table)."""


# ---------------------------------------------------------------------------
# Comparison, logic, selection
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LessParams:
    """Options of LESS (an empty table)."""


@dataclass(frozen=True)
class LessEqualParams:
    """Options of LESS_EQUAL (an empty table)."""


@dataclass(frozen=True)
class GreaterParams:
    """Options of GREATER (an empty table)."""


@dataclass(frozen=True)
class GreaterEqualParams:
    """Options of GREATER_EQUAL (an empty table)."""


@dataclass(frozen=True)
class EqualParams:
    """Options of EQUAL (an empty table)."""


@dataclass(frozen=True)
class NotEqualParams:
    """Options of NOT_EQUAL (an empty table)."""


@dataclass(frozen=True)
class LogicalAndParams:
    """Options of LOGICAL_AND (an empty table)."""


@dataclass(frozen=True)
class LogicalOrParams:
    """Options of LOGICAL_OR (an empty table)."""


@dataclass(frozen=True)
class LogicalNotParams:
    """Options of LOGICAL_NOT (an empty table)."""


@dataclass(frozen=True)
class SelectParams:
    """Options of SELECT (an empty table)."""


@dataclass(frozen=True)
class SelectV2Params:
    """Options of SELECT_V2 (an empty table)."""


@dataclass(frozen=True)
class WhereParams:
    """Options of WHERE (an empty table)."""


# ---------------------------------------------------------------------------
# Reductions, normalisations, activations with options
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReducerParams:
    """Options of MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_ANY and
    REDUCE_ALL."""

    keep_dims: bool = False


@dataclass(frozen=True)
class SoftmaxParams:
    """Options of SOFTMAX."""

    beta: float = 0.0


@dataclass(frozen=True)
class LogSoftmaxParams:
    """Options of LOG_SOFTMAX (an empty table)."""


@dataclass(frozen=True)
class L2NormParams:
    """Options of L2_NORMALIZATION. TFLite ignores the activation."""

    fused_activation_function: ActivationFunctionType = _NONE


@dataclass(frozen=True)
class LocalResponseNormalizationParams:
    """Options of LOCAL_RESPONSE_NORMALIZATION."""

    radius: int = 0
    bias: float = 0.0
    alpha: float = 0.0
    beta: float = 0.0


@dataclass(frozen=True)
class ArgMaxParams:
    """Options of ARG_MAX. The schema default 0 is FLOAT32."""

    output_type: TensorType = TensorType.FLOAT32


@dataclass(frozen=True)
class ArgMinParams:
    """Options of ARG_MIN. The schema default 0 is FLOAT32."""

    output_type: TensorType = TensorType.FLOAT32


@dataclass(frozen=True)
class CumsumParams:
    """Options of CUMSUM."""

    exclusive: bool = False
    reverse: bool = False


@dataclass(frozen=True)
class SegmentSumParams:
    """Options of SEGMENT_SUM (an empty table)."""


@dataclass(frozen=True)
class UnsortedSegmentProdParams:
    """Options of UNSORTED_SEGMENT_PROD (an empty table)."""


@dataclass(frozen=True)
class UnsortedSegmentMaxParams:
    """Options of UNSORTED_SEGMENT_MAX (an empty table)."""


@dataclass(frozen=True)
class UnsortedSegmentMinParams:
    """Options of UNSORTED_SEGMENT_MIN (an empty table)."""


@dataclass(frozen=True)
class UnsortedSegmentSumParams:
    """Options of UNSORTED_SEGMENT_SUM (an empty table)."""


# ---------------------------------------------------------------------------
# Shape manipulation
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReshapeParams:
    """Options of RESHAPE. ``new_shape`` None (absent) means the shape comes from the
    second input; an empty tuple is a scalar shape."""

    new_shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class SqueezeParams:
    """Options of SQUEEZE. ``squeeze_dims`` None or empty squeezes every size-1 axis."""

    squeeze_dims: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ExpandDimsParams:
    """Options of EXPAND_DIMS (an empty table)."""


@dataclass(frozen=True)
class TransposeParams:
    """Options of TRANSPOSE (an empty table)."""


@dataclass(frozen=True)
class ConcatenationParams:
    """Options of CONCATENATION."""

    axis: int = 0
    fused_activation_function: ActivationFunctionType = _NONE


@dataclass(frozen=True)
class PackParams:
    """Options of PACK."""

    values_count: int = 0
    axis: int = 0


@dataclass(frozen=True)
class UnpackParams:
    """Options of UNPACK."""

    num: int = 0
    axis: int = 0


@dataclass(frozen=True)
class SplitParams:
    """Options of SPLIT."""

    num_splits: int = 0


@dataclass(frozen=True)
class SplitVParams:
    """Options of SPLIT_V."""

    num_splits: int = 0


@dataclass(frozen=True)
class SliceParams:
    """Options of SLICE (an empty table)."""


@dataclass(frozen=True)
class StridedSliceParams:
    """Options of STRIDED_SLICE."""

    begin_mask: int = 0
    end_mask: int = 0
    # A non-zero mask needs STRIDED_SLICE version 6 (op_version.cc); the default 0
    # reproduces versions 1-5.
    ellipsis_mask: int = 0
    # A non-zero mask needs STRIDED_SLICE version 6 (op_version.cc); the default 0
    # reproduces versions 1-5.
    new_axis_mask: int = 0
    shrink_axis_mask: int = 0
    # Added in STRIDED_SLICE version 8; the default False reproduces versions 1-7.
    offset: bool = False


@dataclass(frozen=True)
class GatherParams:
    """Options of GATHER."""

    axis: int = 0
    # Added in GATHER version 5; the default 0 reproduces versions 1-4.
    batch_dims: int = 0


@dataclass(frozen=True)
class GatherNdParams:
    """Options of GATHER_ND (an empty table)."""


@dataclass(frozen=True)
class ScatterNdParams:
    """Options of SCATTER_ND (an empty table)."""


@dataclass(frozen=True)
class TileParams:
    """Options of TILE (an empty table)."""


@dataclass(frozen=True)
class BroadcastToParams:
    """Options of BROADCAST_TO (an empty table)."""


@dataclass(frozen=True)
class ReverseV2Params:
    """Options of REVERSE_V2 (an empty table)."""


@dataclass(frozen=True)
class ReverseSequenceParams:
    """Options of REVERSE_SEQUENCE."""

    seq_dim: int = 0
    batch_dim: int = 0


@dataclass(frozen=True)
class PadParams:
    """Options of PAD (an empty table)."""


@dataclass(frozen=True)
class PadV2Params:
    """Options of PADV2 (an empty table)."""


@dataclass(frozen=True)
class MirrorPadParams:
    """Options of MIRROR_PAD."""

    mode: MirrorPadMode = MirrorPadMode.REFLECT


@dataclass(frozen=True)
class SpaceToBatchNDParams:
    """Options of SPACE_TO_BATCH_ND (an empty table)."""


@dataclass(frozen=True)
class BatchToSpaceNDParams:
    """Options of BATCH_TO_SPACE_ND (an empty table)."""


@dataclass(frozen=True)
class SpaceToDepthParams:
    """Options of SPACE_TO_DEPTH."""

    block_size: int = 0


@dataclass(frozen=True)
class DepthToSpaceParams:
    """Options of DEPTH_TO_SPACE."""

    block_size: int = 0


@dataclass(frozen=True)
class ResizeBilinearParams:
    """Options of RESIZE_BILINEAR (the deprecated ``new_height``/``new_width`` are left
    out)."""

    align_corners: bool = False
    # Added in RESIZE_BILINEAR version 3; the default False reproduces versions 1-2.
    half_pixel_centers: bool = False


@dataclass(frozen=True)
class ResizeNearestNeighborParams:
    """Options of RESIZE_NEAREST_NEIGHBOR."""

    # True needs RESIZE_NEAREST_NEIGHBOR version 3 (op_version.cc); the default False
    # reproduces versions 1-2.
    align_corners: bool = False
    # Added in RESIZE_NEAREST_NEIGHBOR version 3; the default False reproduces
    # versions 1-2.
    half_pixel_centers: bool = False


@dataclass(frozen=True)
class ShapeParams:
    """Options of SHAPE. The schema default 0 is FLOAT32 (schema.fbs's comment speaks
    of int32); the output tensor's own type is what matters."""

    out_type: TensorType = TensorType.FLOAT32


@dataclass(frozen=True)
class RankParams:
    """Options of RANK (an empty table)."""


@dataclass(frozen=True)
class FillParams:
    """Options of FILL (an empty table)."""


@dataclass(frozen=True)
class RangeParams:
    """Options of RANGE (an empty table)."""


@dataclass(frozen=True)
class OneHotParams:
    """Options of ONE_HOT."""

    axis: int = 0


@dataclass(frozen=True)
class UniqueParams:
    """Options of UNIQUE."""

    idx_out_type: TensorType = TensorType.INT32


@dataclass(frozen=True)
class TopKV2Params:
    """Options of TOPK_V2 (an empty table)."""


@dataclass(frozen=True)
class SparseToDenseParams:
    """Options of SPARSE_TO_DENSE."""

    validate_indices: bool = False


@dataclass(frozen=True)
class MatrixDiagParams:
    """Options of MATRIX_DIAG (an empty table)."""


@dataclass(frozen=True)
class MatrixSetDiagParams:
    """Options of MATRIX_SET_DIAG (an empty table)."""


@dataclass(frozen=True)
class DynamicUpdateSliceParams:
    """Options of DYNAMIC_UPDATE_SLICE (an empty table)."""


@dataclass(frozen=True)
class BucketizeParams:
    """Options of BUCKETIZE. TFLite requires ``boundaries`` to be present."""

    boundaries: tuple[float, ...] | None = None


@dataclass(frozen=True)
class NonMaxSuppressionV4Params:
    """Options of NON_MAX_SUPPRESSION_V4 (an empty table)."""


@dataclass(frozen=True)
class NonMaxSuppressionV5Params:
    """Options of NON_MAX_SUPPRESSION_V5 (an empty table)."""


@dataclass(frozen=True)
class Rfft2dParams:
    """Options of RFFT2D (an empty table)."""


# ---------------------------------------------------------------------------
# Quantization and sparsity
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class QuantizeParams:
    """Options of QUANTIZE (an empty table)."""


@dataclass(frozen=True)
class DequantizeParams:
    """Options of DEQUANTIZE (an empty table)."""


@dataclass(frozen=True)
class DensifyParams:
    """Options of DENSIFY (an empty table)."""


@dataclass(frozen=True)
class FakeQuantParams:
    """Options of FAKE_QUANT."""

    min: float = 0.0
    max: float = 0.0
    num_bits: int = 0
    # Added in FAKE_QUANT version 2; the default False reproduces version 1.
    narrow_range: bool = False


# ---------------------------------------------------------------------------
# Control flow, subgraphs, resources
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IfParams:
    """Options of IF."""

    then_subgraph_index: int = 0
    else_subgraph_index: int = 0


@dataclass(frozen=True)
class WhileParams:
    """Options of WHILE."""

    cond_subgraph_index: int = 0
    body_subgraph_index: int = 0


@dataclass(frozen=True)
class CallOnceParams:
    """Options of CALL_ONCE."""

    init_subgraph_index: int = 0


@dataclass(frozen=True)
class CallParams:
    """Options of CALL (``subgraph`` is a uint32 in the schema)."""

    subgraph: int = 0


@dataclass(frozen=True)
class VarHandleParams:
    """Options of VAR_HANDLE."""

    container: str | None = None
    shared_name: str | None = None


@dataclass(frozen=True)
class ReadVariableParams:
    """Options of READ_VARIABLE (an empty table)."""


@dataclass(frozen=True)
class AssignVariableParams:
    """Options of ASSIGN_VARIABLE (an empty table)."""


@dataclass(frozen=True)
class HashtableParams:
    """Options of HASHTABLE. The schema default 0 is FLOAT32 for both dtypes."""

    table_id: int = 0
    key_dtype: TensorType = TensorType.FLOAT32
    value_dtype: TensorType = TensorType.FLOAT32


@dataclass(frozen=True)
class HashtableFindParams:
    """Options of HASHTABLE_FIND (an empty table)."""


@dataclass(frozen=True)
class HashtableImportParams:
    """Options of HASHTABLE_IMPORT (an empty table)."""


@dataclass(frozen=True)
class HashtableSizeParams:
    """Options of HASHTABLE_SIZE (an empty table)."""


@dataclass(frozen=True)
class RandomParams:
    """Options of RANDOM_STANDARD_NORMAL, RANDOM_UNIFORM and MULTINOMIAL (int64 seeds)."""

    seed: int = 0
    seed2: int = 0


# ---------------------------------------------------------------------------
# Recurrent layers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SVDFParams:
    """Options of SVDF."""

    rank: int = 0
    fused_activation_function: ActivationFunctionType = _NONE
    # Added in SVDF version 4 (hybrid); the default False reproduces versions 1-3.
    asymmetric_quantize_inputs: bool = False


@dataclass(frozen=True)
class RNNParams:
    """Options of RNN."""

    fused_activation_function: ActivationFunctionType = _NONE
    # Added in RNN version 3 (hybrid); the default False reproduces versions 1-2.
    asymmetric_quantize_inputs: bool = False


@dataclass(frozen=True)
class SequenceRNNParams:
    """Options of UNIDIRECTIONAL_SEQUENCE_RNN."""

    time_major: bool = False
    fused_activation_function: ActivationFunctionType = _NONE
    # Added in UNIDIRECTIONAL_SEQUENCE_RNN version 3 (hybrid); the default False
    # reproduces versions 1-2.
    asymmetric_quantize_inputs: bool = False


@dataclass(frozen=True)
class BidirectionalSequenceRNNParams:
    """Options of BIDIRECTIONAL_SEQUENCE_RNN."""

    time_major: bool = False
    fused_activation_function: ActivationFunctionType = _NONE
    merge_outputs: bool = False
    # Added in BIDIRECTIONAL_SEQUENCE_RNN version 3 (hybrid); the default False
    # reproduces versions 1-2.
    asymmetric_quantize_inputs: bool = False


@dataclass(frozen=True)
class LSTMParams:
    """Options of LSTM. A clip of 0.0 means no clipping."""

    fused_activation_function: ActivationFunctionType = _NONE
    cell_clip: float = 0.0
    proj_clip: float = 0.0
    # Added in LSTM version 2 (BASIC kernel); the default FULL reproduces version 1.
    kernel_type: LSTMKernelType = LSTMKernelType.FULL
    # Added in LSTM version 4 (hybrid); the default False reproduces versions 1-3.
    asymmetric_quantize_inputs: bool = False


@dataclass(frozen=True)
class UnidirectionalSequenceLSTMParams:
    """Options of UNIDIRECTIONAL_SEQUENCE_LSTM. A clip of 0.0 means no clipping."""

    fused_activation_function: ActivationFunctionType = _NONE
    cell_clip: float = 0.0
    proj_clip: float = 0.0
    time_major: bool = False
    # Added in UNIDIRECTIONAL_SEQUENCE_LSTM version 3 (hybrid); the default False
    # reproduces versions 1-2.
    asymmetric_quantize_inputs: bool = False
    # Added in UNIDIRECTIONAL_SEQUENCE_LSTM version 4; the default False reproduces
    # versions 1-3.
    diagonal_recurrent_tensors: bool = False


@dataclass(frozen=True)
class BidirectionalSequenceLSTMParams:
    """Options of BIDIRECTIONAL_SEQUENCE_LSTM. A clip of 0.0 means no clipping."""

    fused_activation_function: ActivationFunctionType = _NONE
    cell_clip: float = 0.0
    proj_clip: float = 0.0
    merge_outputs: bool = False
    # Added in BIDIRECTIONAL_SEQUENCE_LSTM version 2; the default True reproduces
    # version 1, which assumed time-major inputs.
    time_major: bool = True
    # Added in BIDIRECTIONAL_SEQUENCE_LSTM version 3 (hybrid); the default False
    # reproduces versions 1-2.
    asymmetric_quantize_inputs: bool = False


# ---------------------------------------------------------------------------
# Legacy text / embedding ops
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ConcatEmbeddingsParams:
    """Options of CONCAT_EMBEDDINGS."""

    num_channels: int = 0
    num_columns_per_channel: tuple[int, ...] | None = None
    embedding_dim_per_channel: tuple[int, ...] | None = None


@dataclass(frozen=True)
class LSHProjectionParams:
    """Options of LSH_PROJECTION."""

    type: LSHProjectionType = LSHProjectionType.UNKNOWN


@dataclass(frozen=True)
class SkipGramParams:
    """Options of SKIP_GRAM."""

    ngram_size: int = 0
    max_skip_size: int = 0
    include_all_ngrams: bool = False


@dataclass(frozen=True)
class EmbeddingLookupSparseParams:
    """Options of EMBEDDING_LOOKUP_SPARSE."""

    combiner: CombinerType = CombinerType.SUM


# ---------------------------------------------------------------------------
# Tables of the second options union (BuiltinOptions2: StableHLO ops, DILATE,
# REDUCE_WINDOW). These mirror StableHLO's op attributes and carry no op-version
# history: every op using them is at version 1. Which op uses which class is
# ``schema.option_parsers.OPTIONS_2_TABLE_OF_OP``.
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StablehloConcatenateParams:
    """Options of STABLEHLO_CONCATENATE."""

    dimension: int = 0


@dataclass(frozen=True)
class StablehloBroadcastInDimParams:
    """Options of STABLEHLO_BROADCAST_IN_DIM."""

    broadcast_dimensions: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StablehloSliceParams:
    """Options of STABLEHLO_SLICE."""

    start_indices: tuple[int, ...] | None = None
    limit_indices: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StablehloConvolutionParams:
    """Options of STABLEHLO_CONVOLUTION (``precision_config``: StablehloPrecisionConfig values)."""

    window_strides: tuple[int, ...] | None = None
    padding: tuple[int, ...] | None = None
    lhs_dilation: tuple[int, ...] | None = None
    rhs_dilation: tuple[int, ...] | None = None
    window_reversal: tuple[bool, ...] | None = None
    input_batch_dimension: int = 0
    input_feature_dimension: int = 0
    input_spatial_dimensions: tuple[int, ...] | None = None
    kernel_input_feature_dimension: int = 0
    kernel_output_feature_dimension: int = 0
    kernel_spatial_dimensions: tuple[int, ...] | None = None
    output_batch_dimension: int = 0
    output_feature_dimension: int = 0
    output_spatial_dimensions: tuple[int, ...] | None = None
    feature_group_count: int = 0
    batch_group_count: int = 0
    precision_config: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StablehloCustomCallParams:
    """Options of STABLEHLO_CUSTOM_CALL."""

    call_target_name: str | None = None
    has_side_effect: bool = False
    backend_config: str | None = None
    api_version: int = 0
    called_computations: tuple[int, ...] | None = None
    custom_attributes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StablehloReduceParams:
    """Options of STABLEHLO_REDUCE."""

    dimensions: tuple[int, ...] | None = None
    body_subgraph_index: int = 0


@dataclass(frozen=True)
class StablehloScatterParams:
    """Options of STABLEHLO_SCATTER: StableHLO's scatter dimension numbers, and the subgraph
    that combines an operand value with an update (LiteRT runs an empty one as "replace",
    or one STABLEHLO_ADD / MULTIPLY / MAXIMUM / MINIMUM node)."""

    indices_are_sorted: bool = False
    update_window_dims: tuple[int, ...] | None = None
    inserted_window_dims: tuple[int, ...] | None = None
    scatter_dims_to_operand_dims: tuple[int, ...] | None = None
    index_vector_dim: int = 0
    unique_indices: bool = False
    update_computation_subgraph_index: int = 0


@dataclass(frozen=True)
class StablehloCompareParams:
    """Options of STABLEHLO_COMPARE."""

    comparison_direction: StablehloComparisonDirection = (
        StablehloComparisonDirection.STABLEHLO_COMPARISON_DIRECTION_EQ
    )
    compare_type: StablehloComparisonType = StablehloComparisonType.STABLEHLO_COMPARISON_TYPE_NOTYPE


@dataclass(frozen=True)
class StablehloDynamicSliceParams:
    """Options of STABLEHLO_DYNAMIC_SLICE."""

    slice_sizes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StablehloPadParams:
    """Options of STABLEHLO_PAD: per axis, the edge padding before and after (negative:
    cropping) and the interior padding between elements."""

    edge_padding_low: tuple[int, ...] | None = None
    edge_padding_high: tuple[int, ...] | None = None
    interior_padding: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StablehloIotaParams:
    """Options of STABLEHLO_IOTA."""

    iota_dimension: int = 0


@dataclass(frozen=True)
class StablehloDotGeneralParams:
    """Options of STABLEHLO_DOT_GENERAL (``precision_config``: StablehloPrecisionConfig values)."""

    lhs_batching_dimensions: tuple[int, ...] | None = None
    rhs_batching_dimensions: tuple[int, ...] | None = None
    lhs_contracting_dimensions: tuple[int, ...] | None = None
    rhs_contracting_dimensions: tuple[int, ...] | None = None
    precision_config: tuple[int, ...] | None = None


@dataclass(frozen=True)
class StablehloReduceWindowParams:
    """Options of STABLEHLO_REDUCE_WINDOW. ``window_dimensions`` is required; an absent or
    empty other vector means all 1 (strides, dilations) or all 0 (``padding``: a (low,
    high) pair per axis), as LiteRT's parser fills them."""

    window_dimensions: tuple[int, ...] | None = None
    window_strides: tuple[int, ...] | None = None
    base_dilations: tuple[int, ...] | None = None
    window_dilations: tuple[int, ...] | None = None
    padding: tuple[int, ...] | None = None
    body_subgraph_index: int = 0


@dataclass(frozen=True)
class StablehloSortParams:
    """Options of STABLEHLO_SORT."""

    dimension: int = 0
    is_stable: bool = False
    comparator_subgraph_index: int = 0


@dataclass(frozen=True)
class StablehloWhileParams:
    """Options of STABLEHLO_WHILE."""

    cond_subgraph_index: int = 0
    body_subgraph_index: int = 0


@dataclass(frozen=True)
class StablehloGatherParams:
    """Options of STABLEHLO_GATHER: StableHLO's gather dimension numbers and slice sizes."""

    offset_dims: tuple[int, ...] | None = None
    collapsed_slice_dims: tuple[int, ...] | None = None
    start_index_map: tuple[int, ...] | None = None
    index_vector_dim: int = 0
    slice_sizes: tuple[int, ...] | None = None
    indices_are_sorted: bool = False


@dataclass(frozen=True)
class StablehloTransposeParams:
    """Options of STABLEHLO_TRANSPOSE."""

    permutation: tuple[int, ...] | None = None


@dataclass(frozen=True)
class DilateParams:
    """Options of DILATE (an empty table: the dilations are an input)."""


@dataclass(frozen=True)
class StablehloRngBitGeneratorParams:
    """Options of STABLEHLO_RNG_BIT_GENERATOR (DEFAULT runs Philox in LiteRT)."""

    algorithm: RngAlgorithm = RngAlgorithm.DEFAULT


@dataclass(frozen=True)
class ReduceWindowParams:
    """Options of the deprecated REDUCE_WINDOW: the reduction (UNSUPPORTED, the default,
    is refused)."""

    reduce_function: ReduceWindowFunction = ReduceWindowFunction.UNSUPPORTED


@dataclass(frozen=True)
class StableHLOCompositeParams:
    """Options of STABLEHLO_COMPOSITE: the composite's name, version and attributes (bytes
    of a FlexBuffer map), and the subgraph that computes it (its decomposition)."""

    name: str | None = None
    decomposition_subgraph_index: int = 0
    composite_attributes: tuple[int, ...] | None = None
    composite_attributes_format: CustomOptionsFormat = CustomOptionsFormat.FLEXBUFFERS
    version: int = 0


@dataclass(frozen=True)
class StablehloShiftLeftParams:
    """Options of STABLEHLO_SHIFT_LEFT (an empty table)."""


@dataclass(frozen=True)
class StablehloCaseParams:
    """Options of STABLEHLO_CASE: the branch subgraphs, by index (an index input out of
    range runs the last)."""

    branch_subgraph_indices: tuple[int, ...] | None = None
