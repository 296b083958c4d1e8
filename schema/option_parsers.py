"""Builtin options: flatbuffer table <-> params dataclass.

``OPTIONS_TABLE_OF_OP`` says which member of the ``BuiltinOptions`` union each
builtin operator uses, and which class of ``schema.params`` holds it (the pairing
of TFLite's ``ParseOpData`` in ``flatbuffer_conversions.cc``). The operators added
after the first union filled up (the StableHLO ops, DILATE, REDUCE_WINDOW) keep
their options in the second union, ``Operator.builtin_options_2``:
``OPTIONS_2_TABLE_OF_OP`` pairs them the same way, and the same parser and writer
serve both (``params_class_of_op`` answers for either). Operators that have
no options table (LOGISTIC, RELU, SQRT, SIN, ...) are in neither; their params are
``None``, and whatever options such an operator carries are ignored, as
TFLite does.

``parse_builtin_options`` is on the model-loading path: it reads the raw
flatbuffer accessors (never the object API), and copies fields by name, driven by
a per-table field list computed once at import from the params dataclasses:
params field ``dilation_w_factor`` <-> accessor ``DilationWFactor()`` <->
object-API attribute ``dilationWFactor``. What it does with a file:

- no options table: the params class with every default, which is what TFLite
  does for an old file (a DEPTHWISE_CONV_2D without dilation gets dilation 1);
- an options table of another type than the op's: ``ModelError`` (TFLite would
  silently take the defaults; a file like that is corrupt or hostile);
- an enum field outside its enum, a string that is not UTF-8, a vector that runs
  off the buffer: ``ModelError`` naming the op and the field.

``builtin_options_of_params`` is the inverse, for the writer: it returns the union
type and a generated ``XxxOptionsT`` ready for ``OperatorT.builtinOptions``
(``builtin_options_2_of_params``: for ``OperatorT.builtinOptions2``).
Floats are stored as float32, so only float32-representable values round-trip
exactly.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import struct
from typing import Any, Callable

from schema import params as p
from schema import schema_generated as fb
from schema.enums import BuiltinOperator as Op
from schema.enums import BuiltinOptions as Opt
from schema.enums import BuiltinOptions2 as Opt2
from schema.enums import builtin_operator_name
from schema.errors import ModelError
from schema.flatbuffer_view import _vector_format

_I32, _U16 = struct.Struct("<i").unpack_from, struct.Struct("<H").unpack_from

#: builtin operator -> (member of the BuiltinOptions union, params class).
OPTIONS_TABLE_OF_OP: dict[Op, tuple[Opt, type]] = {
    # convolutions and pooling
    Op.CONV_2D: (Opt.Conv2DOptions, p.Conv2DParams),
    Op.DEPTHWISE_CONV_2D: (Opt.DepthwiseConv2DOptions, p.DepthwiseConv2DParams),
    Op.TRANSPOSE_CONV: (Opt.TransposeConvOptions, p.TransposeConvParams),
    Op.CONV_3D: (Opt.Conv3DOptions, p.Conv3DParams),
    Op.CONV_3D_TRANSPOSE: (Opt.Conv3DOptions, p.Conv3DParams),
    Op.AVERAGE_POOL_2D: (Opt.Pool2DOptions, p.Pool2DParams),
    Op.MAX_POOL_2D: (Opt.Pool2DOptions, p.Pool2DParams),
    Op.L2_POOL_2D: (Opt.Pool2DOptions, p.Pool2DParams),
    # dense layers
    Op.FULLY_CONNECTED: (Opt.FullyConnectedOptions, p.FullyConnectedParams),
    Op.BATCH_MATMUL: (Opt.BatchMatMulOptions, p.BatchMatMulParams),
    # elementwise binary
    Op.ADD: (Opt.AddOptions, p.AddParams),
    Op.SUB: (Opt.SubOptions, p.SubParams),
    Op.MUL: (Opt.MulOptions, p.MulParams),
    Op.DIV: (Opt.DivOptions, p.DivParams),
    Op.SQUARED_DIFFERENCE: (Opt.SquaredDifferenceOptions, p.SquaredDifferenceParams),
    Op.MAXIMUM: (Opt.MaximumMinimumOptions, p.MaximumMinimumParams),
    Op.MINIMUM: (Opt.MaximumMinimumOptions, p.MaximumMinimumParams),
    Op.POW: (Opt.PowOptions, p.PowParams),
    Op.FLOOR_DIV: (Opt.FloorDivOptions, p.FloorDivParams),
    Op.FLOOR_MOD: (Opt.FloorModOptions, p.FloorModParams),
    Op.ADD_N: (Opt.AddNOptions, p.AddNParams),
    Op.ATAN2: (Opt.ATan2Options, p.ATan2Params),
    Op.BITWISE_XOR: (Opt.BitwiseXorOptions, p.BitwiseXorParams),
    Op.RIGHT_SHIFT: (Opt.RightShiftOptions, p.RightShiftParams),
    # elementwise unary
    Op.ABS: (Opt.AbsOptions, p.AbsParams),
    Op.NEG: (Opt.NegOptions, p.NegParams),
    Op.EXP: (Opt.ExpOptions, p.ExpParams),
    Op.COS: (Opt.CosOptions, p.CosParams),
    Op.SQUARE: (Opt.SquareOptions, p.SquareParams),
    Op.SIGN: (Opt.SignOptions, p.SignParams),
    Op.HARD_SWISH: (Opt.HardSwishOptions, p.HardSwishParams),
    Op.LEAKY_RELU: (Opt.LeakyReluOptions, p.LeakyReluParams),
    Op.GELU: (Opt.GeluOptions, p.GeluParams),
    Op.CAST: (Opt.CastOptions, p.CastParams),
    Op.BITCAST: (Opt.BitcastOptions, p.BitcastParams),
    Op.ZEROS_LIKE: (Opt.ZerosLikeOptions, p.ZerosLikeParams),
    # comparison, logic, selection
    Op.LESS: (Opt.LessOptions, p.LessParams),
    Op.LESS_EQUAL: (Opt.LessEqualOptions, p.LessEqualParams),
    Op.GREATER: (Opt.GreaterOptions, p.GreaterParams),
    Op.GREATER_EQUAL: (Opt.GreaterEqualOptions, p.GreaterEqualParams),
    Op.EQUAL: (Opt.EqualOptions, p.EqualParams),
    Op.NOT_EQUAL: (Opt.NotEqualOptions, p.NotEqualParams),
    Op.LOGICAL_AND: (Opt.LogicalAndOptions, p.LogicalAndParams),
    Op.LOGICAL_OR: (Opt.LogicalOrOptions, p.LogicalOrParams),
    Op.LOGICAL_NOT: (Opt.LogicalNotOptions, p.LogicalNotParams),
    Op.SELECT: (Opt.SelectOptions, p.SelectParams),
    Op.SELECT_V2: (Opt.SelectV2Options, p.SelectV2Params),
    Op.WHERE: (Opt.WhereOptions, p.WhereParams),
    # reductions, normalisations, softmax
    Op.MEAN: (Opt.ReducerOptions, p.ReducerParams),
    Op.SUM: (Opt.ReducerOptions, p.ReducerParams),
    Op.REDUCE_MAX: (Opt.ReducerOptions, p.ReducerParams),
    Op.REDUCE_MIN: (Opt.ReducerOptions, p.ReducerParams),
    Op.REDUCE_PROD: (Opt.ReducerOptions, p.ReducerParams),
    Op.REDUCE_ANY: (Opt.ReducerOptions, p.ReducerParams),
    Op.REDUCE_ALL: (Opt.ReducerOptions, p.ReducerParams),
    Op.SOFTMAX: (Opt.SoftmaxOptions, p.SoftmaxParams),
    Op.LOG_SOFTMAX: (Opt.LogSoftmaxOptions, p.LogSoftmaxParams),
    Op.L2_NORMALIZATION: (Opt.L2NormOptions, p.L2NormParams),
    Op.LOCAL_RESPONSE_NORMALIZATION: (
        Opt.LocalResponseNormalizationOptions,
        p.LocalResponseNormalizationParams,
    ),
    Op.ARG_MAX: (Opt.ArgMaxOptions, p.ArgMaxParams),
    Op.ARG_MIN: (Opt.ArgMinOptions, p.ArgMinParams),
    Op.CUMSUM: (Opt.CumsumOptions, p.CumsumParams),
    Op.SEGMENT_SUM: (Opt.SegmentSumOptions, p.SegmentSumParams),
    Op.UNSORTED_SEGMENT_PROD: (Opt.UnsortedSegmentProdOptions, p.UnsortedSegmentProdParams),
    Op.UNSORTED_SEGMENT_MAX: (Opt.UnsortedSegmentMaxOptions, p.UnsortedSegmentMaxParams),
    Op.UNSORTED_SEGMENT_MIN: (Opt.UnsortedSegmentMinOptions, p.UnsortedSegmentMinParams),
    Op.UNSORTED_SEGMENT_SUM: (Opt.UnsortedSegmentSumOptions, p.UnsortedSegmentSumParams),
    # shape manipulation
    Op.RESHAPE: (Opt.ReshapeOptions, p.ReshapeParams),
    Op.SQUEEZE: (Opt.SqueezeOptions, p.SqueezeParams),
    Op.EXPAND_DIMS: (Opt.ExpandDimsOptions, p.ExpandDimsParams),
    Op.TRANSPOSE: (Opt.TransposeOptions, p.TransposeParams),
    Op.CONCATENATION: (Opt.ConcatenationOptions, p.ConcatenationParams),
    Op.PACK: (Opt.PackOptions, p.PackParams),
    Op.UNPACK: (Opt.UnpackOptions, p.UnpackParams),
    Op.SPLIT: (Opt.SplitOptions, p.SplitParams),
    Op.SPLIT_V: (Opt.SplitVOptions, p.SplitVParams),
    Op.SLICE: (Opt.SliceOptions, p.SliceParams),
    Op.STRIDED_SLICE: (Opt.StridedSliceOptions, p.StridedSliceParams),
    Op.GATHER: (Opt.GatherOptions, p.GatherParams),
    Op.GATHER_ND: (Opt.GatherNdOptions, p.GatherNdParams),
    Op.SCATTER_ND: (Opt.ScatterNdOptions, p.ScatterNdParams),
    Op.TILE: (Opt.TileOptions, p.TileParams),
    Op.BROADCAST_TO: (Opt.BroadcastToOptions, p.BroadcastToParams),
    Op.REVERSE_V2: (Opt.ReverseV2Options, p.ReverseV2Params),
    Op.REVERSE_SEQUENCE: (Opt.ReverseSequenceOptions, p.ReverseSequenceParams),
    Op.PAD: (Opt.PadOptions, p.PadParams),
    Op.PADV2: (Opt.PadV2Options, p.PadV2Params),
    Op.MIRROR_PAD: (Opt.MirrorPadOptions, p.MirrorPadParams),
    Op.SPACE_TO_BATCH_ND: (Opt.SpaceToBatchNDOptions, p.SpaceToBatchNDParams),
    Op.BATCH_TO_SPACE_ND: (Opt.BatchToSpaceNDOptions, p.BatchToSpaceNDParams),
    Op.SPACE_TO_DEPTH: (Opt.SpaceToDepthOptions, p.SpaceToDepthParams),
    Op.DEPTH_TO_SPACE: (Opt.DepthToSpaceOptions, p.DepthToSpaceParams),
    Op.RESIZE_BILINEAR: (Opt.ResizeBilinearOptions, p.ResizeBilinearParams),
    Op.RESIZE_NEAREST_NEIGHBOR: (
        Opt.ResizeNearestNeighborOptions,
        p.ResizeNearestNeighborParams,
    ),
    Op.SHAPE: (Opt.ShapeOptions, p.ShapeParams),
    Op.RANK: (Opt.RankOptions, p.RankParams),
    Op.FILL: (Opt.FillOptions, p.FillParams),
    Op.RANGE: (Opt.RangeOptions, p.RangeParams),
    Op.ONE_HOT: (Opt.OneHotOptions, p.OneHotParams),
    Op.UNIQUE: (Opt.UniqueOptions, p.UniqueParams),
    Op.TOPK_V2: (Opt.TopKV2Options, p.TopKV2Params),
    Op.SPARSE_TO_DENSE: (Opt.SparseToDenseOptions, p.SparseToDenseParams),
    Op.MATRIX_DIAG: (Opt.MatrixDiagOptions, p.MatrixDiagParams),
    Op.MATRIX_SET_DIAG: (Opt.MatrixSetDiagOptions, p.MatrixSetDiagParams),
    Op.DYNAMIC_UPDATE_SLICE: (Opt.DynamicUpdateSliceOptions, p.DynamicUpdateSliceParams),
    Op.BUCKETIZE: (Opt.BucketizeOptions, p.BucketizeParams),
    Op.NON_MAX_SUPPRESSION_V4: (Opt.NonMaxSuppressionV4Options, p.NonMaxSuppressionV4Params),
    Op.NON_MAX_SUPPRESSION_V5: (Opt.NonMaxSuppressionV5Options, p.NonMaxSuppressionV5Params),
    Op.RFFT2D: (Opt.Rfft2dOptions, p.Rfft2dParams),
    # quantization and sparsity
    Op.QUANTIZE: (Opt.QuantizeOptions, p.QuantizeParams),
    Op.DEQUANTIZE: (Opt.DequantizeOptions, p.DequantizeParams),
    Op.DENSIFY: (Opt.DensifyOptions, p.DensifyParams),
    Op.FAKE_QUANT: (Opt.FakeQuantOptions, p.FakeQuantParams),
    # control flow, subgraphs, resources
    Op.IF: (Opt.IfOptions, p.IfParams),
    Op.WHILE: (Opt.WhileOptions, p.WhileParams),
    Op.CALL_ONCE: (Opt.CallOnceOptions, p.CallOnceParams),
    Op.CALL: (Opt.CallOptions, p.CallParams),
    Op.VAR_HANDLE: (Opt.VarHandleOptions, p.VarHandleParams),
    Op.READ_VARIABLE: (Opt.ReadVariableOptions, p.ReadVariableParams),
    Op.ASSIGN_VARIABLE: (Opt.AssignVariableOptions, p.AssignVariableParams),
    Op.HASHTABLE: (Opt.HashtableOptions, p.HashtableParams),
    Op.HASHTABLE_FIND: (Opt.HashtableFindOptions, p.HashtableFindParams),
    Op.HASHTABLE_IMPORT: (Opt.HashtableImportOptions, p.HashtableImportParams),
    Op.HASHTABLE_SIZE: (Opt.HashtableSizeOptions, p.HashtableSizeParams),
    Op.RANDOM_STANDARD_NORMAL: (Opt.RandomOptions, p.RandomParams),
    Op.RANDOM_UNIFORM: (Opt.RandomOptions, p.RandomParams),
    Op.MULTINOMIAL: (Opt.RandomOptions, p.RandomParams),
    # recurrent layers
    Op.SVDF: (Opt.SVDFOptions, p.SVDFParams),
    Op.RNN: (Opt.RNNOptions, p.RNNParams),
    Op.UNIDIRECTIONAL_SEQUENCE_RNN: (Opt.SequenceRNNOptions, p.SequenceRNNParams),
    Op.BIDIRECTIONAL_SEQUENCE_RNN: (
        Opt.BidirectionalSequenceRNNOptions,
        p.BidirectionalSequenceRNNParams,
    ),
    Op.LSTM: (Opt.LSTMOptions, p.LSTMParams),
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: (
        Opt.UnidirectionalSequenceLSTMOptions,
        p.UnidirectionalSequenceLSTMParams,
    ),
    Op.BIDIRECTIONAL_SEQUENCE_LSTM: (
        Opt.BidirectionalSequenceLSTMOptions,
        p.BidirectionalSequenceLSTMParams,
    ),
    # legacy text / embedding ops
    Op.CONCAT_EMBEDDINGS: (Opt.ConcatEmbeddingsOptions, p.ConcatEmbeddingsParams),
    Op.LSH_PROJECTION: (Opt.LSHProjectionOptions, p.LSHProjectionParams),
    Op.SKIP_GRAM: (Opt.SkipGramOptions, p.SkipGramParams),
    Op.EMBEDDING_LOOKUP_SPARSE: (
        Opt.EmbeddingLookupSparseOptions,
        p.EmbeddingLookupSparseParams,
    ),
}

#: builtin operator -> (member of the BuiltinOptions2 union, params class): the operators
#: whose options are in ``Operator.builtin_options_2``.
OPTIONS_2_TABLE_OF_OP: dict[Op, tuple[Opt2, type]] = {
    Op.STABLEHLO_CONCATENATE: (Opt2.StablehloConcatenateOptions, p.StablehloConcatenateParams),
    Op.STABLEHLO_BROADCAST_IN_DIM: (Opt2.StablehloBroadcastInDimOptions, p.StablehloBroadcastInDimParams),
    Op.STABLEHLO_SLICE: (Opt2.StablehloSliceOptions, p.StablehloSliceParams),
    Op.STABLEHLO_CONVOLUTION: (Opt2.StablehloConvolutionOptions, p.StablehloConvolutionParams),
    Op.STABLEHLO_CUSTOM_CALL: (Opt2.StablehloCustomCallOptions, p.StablehloCustomCallParams),
    Op.STABLEHLO_REDUCE: (Opt2.StablehloReduceOptions, p.StablehloReduceParams),
    Op.STABLEHLO_SCATTER: (Opt2.StablehloScatterOptions, p.StablehloScatterParams),
    Op.STABLEHLO_COMPARE: (Opt2.StablehloCompareOptions, p.StablehloCompareParams),
    Op.STABLEHLO_DYNAMIC_SLICE: (Opt2.StablehloDynamicSliceOptions, p.StablehloDynamicSliceParams),
    Op.STABLEHLO_PAD: (Opt2.StablehloPadOptions, p.StablehloPadParams),
    Op.STABLEHLO_IOTA: (Opt2.StablehloIotaOptions, p.StablehloIotaParams),
    Op.STABLEHLO_DOT_GENERAL: (Opt2.StablehloDotGeneralOptions, p.StablehloDotGeneralParams),
    Op.STABLEHLO_REDUCE_WINDOW: (Opt2.StablehloReduceWindowOptions, p.StablehloReduceWindowParams),
    Op.STABLEHLO_SORT: (Opt2.StablehloSortOptions, p.StablehloSortParams),
    Op.STABLEHLO_WHILE: (Opt2.StablehloWhileOptions, p.StablehloWhileParams),
    Op.STABLEHLO_GATHER: (Opt2.StablehloGatherOptions, p.StablehloGatherParams),
    Op.STABLEHLO_TRANSPOSE: (Opt2.StablehloTransposeOptions, p.StablehloTransposeParams),
    Op.DILATE: (Opt2.DilateOptions, p.DilateParams),
    Op.STABLEHLO_RNG_BIT_GENERATOR: (Opt2.StablehloRngBitGeneratorOptions, p.StablehloRngBitGeneratorParams),
    Op.REDUCE_WINDOW: (Opt2.ReduceWindowOptions, p.ReduceWindowParams),
    Op.STABLEHLO_COMPOSITE: (Opt2.StableHLOCompositeOptions, p.StableHLOCompositeParams),
    Op.STABLEHLO_SHIFT_LEFT: (Opt2.StablehloShiftLeftOptions, p.StablehloShiftLeftParams),
    Op.STABLEHLO_CASE: (Opt2.StablehloCaseOptions, p.StablehloCaseParams),
}

#: Schema fields (snake_case, per table) that the params classes deliberately leave
#: out, besides deprecated ones. The parser ignores them; the writer leaves them absent.
#: ``quant_spec`` is an opaque byte vector that recent TFLite schemas added to
#: FullyConnectedOptions; nothing in this runtime reads it.
UNMODELLED_FIELDS: dict[str, frozenset[str]] = {
    "FullyConnectedOptions": frozenset({"quant_spec"}),
}


def snake_to_camel(name: str) -> str:
    """Object-API attribute of a schema field: ``dilation_w_factor`` -> ``dilationWFactor``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def params_class_of_op(op: int) -> type | None:
    """The params class of ``op``'s options (from either union), or None: no options."""
    entry = OPTIONS_TABLE_OF_OP.get(op) or OPTIONS_2_TABLE_OF_OP.get(op)
    return entry[1] if entry is not None else None


def _table_name(union: type[enum.IntEnum], union_type: int) -> str:
    try:
        return union(union_type).name
    except ValueError:
        return f"UNKNOWN_OPTIONS({union_type})"


# --------------------------------------------------------------------------
# Field lists, computed once at import.
# --------------------------------------------------------------------------

_SCALAR, _ENUM, _VECTOR, _STRING = "scalar", "enum", "vector", "string"


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str  # params field, snake_case
    attribute: str  # object-API attribute, camelCase
    kind: str  # _SCALAR, _ENUM, _VECTOR or _STRING
    read: Callable[[Any], Any]  # raw accessor (unbound); vectors: ...AsNumpy
    is_none: Callable[[Any], bool] | None  # vectors only: ...IsNone
    enum_type: type[enum.IntEnum] | None  # enums only


@dataclasses.dataclass(frozen=True)
class _Table:
    union_type: Opt | Opt2
    params_class: type
    reader_class: type  # generated raw accessor class, e.g. fb.Conv2DOptions
    object_class: type  # generated object-API class, e.g. fb.Conv2DOptionsT
    fields: tuple[_Field, ...]
    defaults: Any  # params_class() (frozen, so one shared instance is safe)

    @functools.cached_property
    def scalars_only(self) -> bool:
        """Every field a scalar or an enum (no vector or string to follow)."""
        return all(field.kind in (_SCALAR, _ENUM) for field in self.fields)

    @property
    def second_union(self) -> bool:
        """Whether the table is a member of ``BuiltinOptions2`` (``builtin_options_2``)."""
        return isinstance(self.union_type, Opt2)


def _compile_table(union_type: Opt | Opt2, params_class: type) -> _Table:
    reader_class = getattr(fb, union_type.name)
    object_class = getattr(fb, union_type.name + "T")
    fields = []
    for field in dataclasses.fields(params_class):
        attribute = snake_to_camel(field.name)
        accessor = attribute[:1].upper() + attribute[1:]
        if not hasattr(reader_class, accessor):
            raise AttributeError(
                f"{params_class.__name__}.{field.name} is not a field of schema table "
                f"{union_type.name} (no accessor {accessor})"
            )
        default = field.default
        read = getattr(reader_class, accessor)
        is_none = enum_type = None
        if isinstance(default, enum.IntEnum):
            kind, enum_type = _ENUM, type(default)
        elif default is None and hasattr(reader_class, accessor + "AsNumpy"):
            kind = _VECTOR
            read = getattr(reader_class, accessor + "AsNumpy")
            is_none = getattr(reader_class, accessor + "IsNone")
        elif default is None:
            kind = _STRING
        else:
            kind = _SCALAR
        fields.append(_Field(field.name, attribute, kind, read, is_none, enum_type))
    return _Table(
        union_type, params_class, reader_class, object_class, tuple(fields), params_class()
    )


_TABLE_OF_OP: dict[int, _Table] = {}
for _op, (_union_type, _params_class) in (*OPTIONS_TABLE_OF_OP.items(), *OPTIONS_2_TABLE_OF_OP.items()):
    _TABLE_OF_OP[int(_op)] = _compile_table(_union_type, _params_class)
del _op, _union_type, _params_class

#: The builtin codes whose options are in the second union (``builtin_options_2_type``,
#: ``builtin_options_2``): what a reader passes to ``parse_builtin_options_at`` for them.
SECOND_UNION_OPS: frozenset[int] = frozenset(int(op) for op in OPTIONS_2_TABLE_OF_OP)


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------


def parse_builtin_options(builtin_code: int, operator: Any) -> Any:
    """The params of one operator, read from its ``builtin_options`` (or its
    ``builtin_options_2``, for the ops of ``OPTIONS_2_TABLE_OF_OP``).

    Args:
      builtin_code: the effective builtin code of the operator
        (``max(deprecated_builtin_code, builtin_code)`` of its OperatorCode).
      operator: a generated ``Operator`` accessor (the raw API).

    Returns:
      an instance of the op's params class (all defaults when the file has no
      options table), or ``None`` for an op that takes no options.

    Raises:
      ModelError: the options table is of another type than the op's, or a field
        holds a value that the schema does not allow.
    """
    table = _TABLE_OF_OP.get(builtin_code)
    if table is None:
        return None
    if table.second_union:
        present = operator.BuiltinOptions2Type()
        flat_table = operator.BuiltinOptions2() if present != Opt2.NONE else None
    else:
        present = operator.BuiltinOptionsType()
        flat_table = operator.BuiltinOptions() if present != Opt.NONE else None
    if flat_table is None:
        return parse_builtin_options_at(builtin_code, present, None, None)
    return parse_builtin_options_at(builtin_code, present, flat_table.Bytes, flat_table.Pos)


#: Params already read from a table of scalars alone, by what decides them (the op, the
#: table's vtable and its inline bytes): models repeat the same options on many nodes.
_SCALAR_PARAMS: dict[tuple, Any] = {}
_SCALAR_PARAMS_LIMIT = 4096


def parse_builtin_options_at(builtin_code: int, present: int, data: Any, position: int | None) -> Any:
    """``parse_builtin_options`` from the raw pieces of the op's union (the first, or the
    second for the ops of ``SECOND_UNION_OPS``): the union's type (``present``) and the
    position of its table in ``data`` (None when the file has none).

    A table whose fields are all scalars or enums is decided by its vtable and its
    inline bytes: the params read from one are kept and returned for the same bytes
    again (the params are frozen)."""
    table = _TABLE_OF_OP.get(builtin_code)
    if table is None:
        return None
    if present == 0:  # NONE, in either union
        return table.defaults
    if present != table.union_type:
        union, where = (Opt2, "builtin options 2") if table.second_union else (Opt, "builtin options")
        raise ModelError(
            f"operator {builtin_operator_name(builtin_code)} expects {where} "
            f"{table.union_type.name} but the file has {_table_name(union, present)}"
        )
    if not table.fields or position is None:
        return table.defaults
    key = None
    if table.scalars_only:
        key = _scalar_table_key(builtin_code, data, position)
        if key is not None:
            cached = _SCALAR_PARAMS.get(key)
            if cached is not None:
                return cached
    reader = table.reader_class()
    reader.Init(data, position)
    values = {}
    for field in table.fields:
        try:
            values[field.name] = _read_field(field, reader, builtin_code)
        except ModelError:
            raise
        except (ValueError, IndexError, struct.error) as error:
            raise ModelError(
                f"operator {builtin_operator_name(builtin_code)}: cannot read field "
                f"{field.name} of {table.union_type.name}: {error}"
            ) from error
    params = table.params_class(**values)
    if key is not None and len(_SCALAR_PARAMS) < _SCALAR_PARAMS_LIMIT:
        _SCALAR_PARAMS[key] = params
    return params


def _scalar_table_key(builtin_code: int, data: Any, position: int) -> tuple | None:
    """What decides a table of scalars: its vtable's entries and the bytes from its start
    to 8 past its last field (None when they do not lie inside ``data``)."""
    length = len(data)
    if position < 4 or position + 4 > length:
        return None
    vtable = position - _I32(data, position)[0]
    if vtable < 0 or vtable + 4 > length:
        return None
    size = _U16(data, vtable)[0]
    if size < 4 or vtable + size > length:
        return None
    slots = bytes(data[vtable + 4 : vtable + size])
    end = position + max(_vector_format((size - 4) // 2, "H").unpack_from(data, vtable + 4), default=0) + 8
    if end > length:
        return None
    return (builtin_code, slots, bytes(data[position:end]))


def _read_field(field: _Field, reader: Any, builtin_code: int) -> Any:
    kind = field.kind
    if kind is _SCALAR:
        return field.read(reader)
    if kind is _ENUM:
        raw = field.read(reader)
        try:
            return field.enum_type(raw)
        except ValueError:
            raise ModelError(
                f"operator {builtin_operator_name(builtin_code)}: field {field.name} "
                f"has value {raw}, which is not a {field.enum_type.__name__}"
            ) from None
    if kind is _VECTOR:
        if field.is_none(reader):
            return None
        return tuple(field.read(reader).tolist())
    raw = field.read(reader)  # _STRING: bytes or None
    return None if raw is None else raw.decode("utf-8")


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------


def builtin_options_of_params(builtin_code: int, params: Any) -> tuple[int, Any]:
    """The ``(builtin_options_type, XxxOptionsT)`` that the writer stores for ``params``.

    ``params`` None for an op that has an options table means all defaults (the
    table is written anyway, as the TFLite converter does). Ops without options
    give ``(BuiltinOptions.NONE, None)``, and so do the ops whose options are in the
    second union (``builtin_options_2_of_params`` writes those).

    Raises:
      TypeError: ``params`` is not of the op's params class.
      ValueError: an enum field holds a value outside its enum.
    """
    table = _TABLE_OF_OP.get(builtin_code)
    if table is not None and table.second_union:
        _check_params_class(builtin_code, table, params)
        return Opt.NONE, None
    return _options_of_params(builtin_code, table, params, "builtin options", Opt.NONE)


def builtin_options_2_of_params(builtin_code: int, params: Any) -> tuple[int, Any]:
    """``builtin_options_of_params`` for the second union: the ``(builtin_options_2_type,
    XxxOptionsT)`` that the writer stores for ``params`` of an op of
    ``OPTIONS_2_TABLE_OF_OP``; ``(BuiltinOptions2.NONE, None)`` for every other op.

    Raises:
      TypeError: ``params`` is not of the op's params class.
      ValueError: an enum field holds a value outside its enum.
    """
    table = _TABLE_OF_OP.get(builtin_code)
    if table is not None and not table.second_union:
        _check_params_class(builtin_code, table, params)
        return Opt2.NONE, None
    return _options_of_params(builtin_code, table, params, "builtin options 2", Opt2.NONE)


def _check_params_class(builtin_code: int, table: _Table, params: Any) -> None:
    if params is not None and type(params) is not table.params_class:
        raise TypeError(
            f"operator {builtin_operator_name(builtin_code)} takes "
            f"{table.params_class.__name__}, got {type(params).__name__}"
        )


def _options_of_params(builtin_code: int, table: _Table | None, params: Any, where: str, none: int) -> tuple[int, Any]:
    if table is None:
        if params is not None:
            raise TypeError(
                f"operator {builtin_operator_name(builtin_code)} takes no {where}, "
                f"got {type(params).__name__}"
            )
        return none, None
    if params is None:
        params = table.defaults
    _check_params_class(builtin_code, table, params)
    options = table.object_class()
    for field in table.fields:
        value = getattr(params, field.name)
        if field.kind is _ENUM:
            value = int(field.enum_type(value))
        elif field.kind is _VECTOR and value is not None:
            value = list(value)
        setattr(options, field.attribute, value)
    return table.union_type, options
