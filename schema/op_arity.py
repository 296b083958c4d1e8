"""How many inputs and outputs each builtin operator takes, which inputs may be absent and
the ranks its inputs must have.

One declaration per op, read from TFLite's kernels (their ``NumInputs`` / ``NumOutputs`` /
``NumDimensions`` checks in ``tensorflow/lite/kernels/*.cc``). The interpreter checks every node against it
before any kernel or delegate looks at the node (``arity_problem``), so a node with an
input removed or an extra output is a clear error naming the node, op and version, rather
than an ``IndexError`` inside a kernel. Ops missing from the table are not checked here
(their kernels check what they read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from schema.enums import BuiltinOperator as B

#: Stands for "any number" in ``max_inputs`` / ``max_outputs``.
MANY = 1 << 30


@dataclass(frozen=True)
class Arity:
    """``min_inputs..max_inputs`` inputs, ``min_outputs..max_outputs`` outputs; the input
    positions in ``optional`` may be -1 (absent), no other may; ``ranks`` maps an input
    position to the ranks allowed there."""

    min_inputs: int
    max_inputs: int
    min_outputs: int = 1
    max_outputs: int = 1
    optional: frozenset[int] = frozenset()
    ranks: tuple[tuple[int, frozenset[int]], ...] = ()

    def with_ranks(self, **ranks: int | tuple[int, ...]) -> "Arity":
        """The same arity with ranks for inputs: ``with_ranks(input0=4, input2=(0, 1))``."""
        pairs = tuple(
            (int(key.removeprefix("input")), frozenset((value,) if isinstance(value, int) else value))
            for key, value in ranks.items()
        )
        return Arity(self.min_inputs, self.max_inputs, self.min_outputs, self.max_outputs, self.optional, pairs)


def _fixed(inputs: int, outputs: int = 1) -> Arity:
    return Arity(inputs, inputs, outputs, outputs)


_UNARY = (
    B.ABS, B.CAST, B.CEIL, B.COMPLEX_ABS, B.COS, B.DENSIFY, B.DEPTH_TO_SPACE, B.DEQUANTIZE, B.ELU, B.EXP, B.FLOOR,
    B.GELU, B.HARD_SWISH, B.IMAG, B.L2_NORMALIZATION, B.L2_POOL_2D, B.LEAKY_RELU, B.LOCAL_RESPONSE_NORMALIZATION,
    B.LOG, B.LOGICAL_NOT, B.LOGISTIC, B.LOG_SOFTMAX, B.AVERAGE_POOL_2D, B.MAX_POOL_2D, B.NEG, B.QUANTIZE,
    B.RANK, B.REAL, B.RELU, B.RELU6, B.RELU_0_TO_1, B.RELU_N1_TO_1, B.ROUND, B.RSQRT, B.SHAPE, B.SIGN, B.SIN,
    B.SOFTMAX, B.SPACE_TO_DEPTH, B.SQRT, B.SQUARE, B.SQUEEZE, B.TANH, B.WHERE, B.ZEROS_LIKE,
)
_BINARY = (
    B.ADD, B.ARG_MAX, B.ARG_MIN, B.BATCH_MATMUL, B.BROADCAST_TO, B.CUMSUM, B.DIV, B.EQUAL, B.EXPAND_DIMS,
    B.FILL, B.FLOOR_DIV, B.FLOOR_MOD, B.GATHER, B.GATHER_ND, B.GREATER, B.GREATER_EQUAL, B.LESS,
    B.LESS_EQUAL, B.LOGICAL_AND, B.LOGICAL_OR, B.MAXIMUM, B.MEAN, B.MINIMUM, B.MIRROR_PAD, B.MUL,
    B.NOT_EQUAL, B.POW, B.PRELU, B.REDUCE_ALL, B.REDUCE_ANY, B.REDUCE_MAX, B.REDUCE_MIN, B.REDUCE_PROD,
    B.RESIZE_BILINEAR, B.RESIZE_NEAREST_NEIGHBOR, B.REVERSE_V2, B.RFFT2D, B.SQUARED_DIFFERENCE, B.SUB, B.SUM,
    B.TILE, B.TRANSPOSE,
)

#: LSTM / UNIDIRECTIONAL_SEQUENCE_LSTM inputs that may be absent (lstm_shared.h): the
#: input gate's weights and bias (CIFG), the peepholes, the projection, the layer norm.
_LSTM_OPTIONAL = frozenset({1, 5, 9, 10, 11, 12, 16, 17, 20, 21, 22, 23})
#: BIDIRECTIONAL_SEQUENCE_LSTM: the same for each cell (fw 1-17, bw 18-34), and the aux
#: input with its weights (39-47).
_BIDI_LSTM_OPTIONAL = frozenset({1, 5, 9, 10, 11, 12, 16, 17}) | frozenset(
    {18, 22, 26, 27, 28, 29, 33, 34}
) | frozenset(range(39, 48))

ARITY: dict[int, Arity] = {
    **{op: _fixed(1) for op in _UNARY},
    **{op: _fixed(2) for op in _BINARY},
    B.ASSIGN_VARIABLE: _fixed(2, 0),
    B.BATCH_TO_SPACE_ND: _fixed(3),
    B.BIDIRECTIONAL_SEQUENCE_LSTM: Arity(48, 48, 1, 2, optional=_BIDI_LSTM_OPTIONAL),
    B.BIDIRECTIONAL_SEQUENCE_RNN: Arity(12, 12, 1, 2, optional=frozenset({9, 10, 11})),
    B.CALL_ONCE: _fixed(0, 0),
    B.CONCATENATION: Arity(1, MANY),
    B.CONV_2D: Arity(2, 3, optional=frozenset({2})),
    B.DEPTHWISE_CONV_2D: Arity(2, 3, optional=frozenset({2})),
    B.FULLY_CONNECTED: Arity(2, 3, 1, 2, optional=frozenset({2})),  # 2 outputs: the shuffled format (v2)
    B.IF: Arity(1, MANY, 0, MANY),
    # LSTM: the full kernel (20 or 24 inputs, 1 output) or the basic one (5 inputs, 4 outputs).
    B.LSTM: Arity(5, 24, 1, 4, optional=_LSTM_OPTIONAL),
    # Five inputs: (indices, count); six (soft NMS, whichever op): (indices, scores, count).
    B.NON_MAX_SUPPRESSION_V4: Arity(5, 6, 2, 3),
    B.NON_MAX_SUPPRESSION_V5: Arity(5, 6, 2, 3),
    B.ONE_HOT: _fixed(4),
    B.PACK: Arity(1, MANY),
    B.PAD: Arity(2, 3, optional=frozenset({2})),
    B.PADV2: Arity(2, 3, optional=frozenset({2})),
    B.RANGE: _fixed(3),
    B.READ_VARIABLE: _fixed(1),
    B.RESHAPE: Arity(1, 2, optional=frozenset({1})),
    B.RNN: _fixed(5),
    B.SELECT: _fixed(3),
    B.SELECT_V2: _fixed(3),
    B.SLICE: _fixed(3),
    B.SPACE_TO_BATCH_ND: _fixed(3),
    B.SPLIT: Arity(2, 2, 1, MANY),
    B.SPLIT_V: Arity(3, 3, 1, MANY),
    B.STRIDED_SLICE: _fixed(4),
    B.SVDF: Arity(5, 5, optional=frozenset({3})),
    B.TRANSPOSE_CONV: Arity(3, 4, optional=frozenset({3})),
    B.UNIDIRECTIONAL_SEQUENCE_LSTM: Arity(20, 24, optional=_LSTM_OPTIONAL),
    B.UNIDIRECTIONAL_SEQUENCE_RNN: _fixed(5),
    B.TOPK_V2: _fixed(2, 2),
    B.TRANSPOSE_CONV: Arity(3, 4, optional=frozenset({3})),
    B.UNIQUE: _fixed(1, 2),
    B.UNPACK: Arity(1, 1, 1, MANY),
    B.VAR_HANDLE: _fixed(0),
    B.WHILE: Arity(0, MANY, 0, MANY),
    # issue 32, elementwise, bit and indexing ops (branch i32-misc), by name:
    B.ADD_N: Arity(2, MANY),
    B.ATAN2: _fixed(2),
    B.BITCAST: _fixed(1),
    B.BITWISE_XOR: _fixed(2),
    B.BROADCAST_ARGS: _fixed(2),
    B.BUCKETIZE: _fixed(1),
    B.DILATE: _fixed(3),
    B.DYNAMIC_UPDATE_SLICE: _fixed(3),
    B.FAKE_QUANT: _fixed(1),
    B.MATRIX_DIAG: _fixed(1),
    B.MATRIX_SET_DIAG: _fixed(2),
    B.REVERSE_SEQUENCE: _fixed(2),
    B.RIGHT_SHIFT: _fixed(2),
    B.SCATTER_ND: _fixed(3),
    B.SEGMENT_SUM: _fixed(2),
    B.SPARSE_TO_DENSE: _fixed(4),
    B.UNSORTED_SEGMENT_MAX: _fixed(3),
    B.UNSORTED_SEGMENT_MIN: _fixed(3),
    B.UNSORTED_SEGMENT_PROD: _fixed(3),
    B.UNSORTED_SEGMENT_SUM: _fixed(3),
    # issue 32, text and random-number ops (branch i32-text), by name:
    B.EMBEDDING_LOOKUP: _fixed(2),
    B.EMBEDDING_LOOKUP_SPARSE: _fixed(5),
    B.HASHTABLE: _fixed(0),
    B.HASHTABLE_FIND: _fixed(3),
    B.HASHTABLE_IMPORT: _fixed(3, 0),
    B.HASHTABLE_LOOKUP: _fixed(3, 2),
    B.HASHTABLE_SIZE: _fixed(1),
    B.LSH_PROJECTION: Arity(2, 3),
    B.MULTINOMIAL: _fixed(2),
    B.RANDOM_STANDARD_NORMAL: _fixed(1),
    B.RANDOM_UNIFORM: _fixed(1),
    B.SKIP_GRAM: _fixed(1),
    # issue 32, 3-D convolutions, window reductions and StableHLO ops (branch i32-hlo), by name:
    B.CONV_3D: Arity(2, 3, optional=frozenset({2})),
    B.CONV_3D_TRANSPOSE: Arity(3, 4, optional=frozenset({3})),
    B.REDUCE_WINDOW: _fixed(5),
    B.STABLEHLO_ADD: _fixed(2),
    B.STABLEHLO_AND: _fixed(2),
    B.STABLEHLO_CASE: Arity(1, MANY, 0, MANY),
    B.STABLEHLO_COMPOSITE: Arity(1, MANY, 0, MANY),
    B.STABLEHLO_GATHER: _fixed(2),
    B.STABLEHLO_MAXIMUM: _fixed(2),
    B.STABLEHLO_MINIMUM: _fixed(2),
    B.STABLEHLO_MULTIPLY: _fixed(2),
    B.STABLEHLO_PAD: _fixed(2),
    B.STABLEHLO_REDUCE_WINDOW: _fixed(2),
    B.STABLEHLO_RNG_BIT_GENERATOR: _fixed(1, 2),
    B.STABLEHLO_SCATTER: _fixed(3),
    B.STABLEHLO_SHIFT_LEFT: _fixed(2),
}

_RANKS: dict[int, dict[str, int | tuple[int, ...]]] = {
    B.CONV_2D: dict(input0=4, input1=4, input2=1),
    B.DEPTHWISE_CONV_2D: dict(input0=4, input1=4, input2=1),
    B.TRANSPOSE_CONV: dict(input0=1, input1=4, input2=4, input3=1),
    B.FULLY_CONNECTED: dict(input1=2, input2=1),
    B.AVERAGE_POOL_2D: dict(input0=4),
    B.MAX_POOL_2D: dict(input0=4),
    B.L2_POOL_2D: dict(input0=4),
    B.RESIZE_BILINEAR: dict(input0=4, input1=1),
    B.RESIZE_NEAREST_NEIGHBOR: dict(input0=4, input1=1),
    B.DEPTH_TO_SPACE: dict(input0=4),
    B.SPACE_TO_DEPTH: dict(input0=4),
    B.LOCAL_RESPONSE_NORMALIZATION: dict(input0=4),
    B.SPACE_TO_BATCH_ND: dict(input0=(3, 4), input1=1, input2=2),
    B.BATCH_TO_SPACE_ND: dict(input0=(3, 4), input1=1, input2=2),
    B.PAD: dict(input1=2),
    B.PADV2: dict(input1=2),
    B.MIRROR_PAD: dict(input1=2),
    B.TILE: dict(input1=1),
    B.BROADCAST_TO: dict(input1=1),
    B.SLICE: dict(input1=1, input2=1),
    B.STRIDED_SLICE: dict(input1=1, input2=1, input3=1),
    B.TRANSPOSE: dict(input1=1),
    B.REVERSE_V2: dict(input1=1),
    B.MEAN: dict(input1=(0, 1)),
    B.SUM: dict(input1=(0, 1)),
    B.REDUCE_PROD: dict(input1=(0, 1)),
    B.REDUCE_MAX: dict(input1=(0, 1)),
    B.REDUCE_MIN: dict(input1=(0, 1)),
    B.REDUCE_ANY: dict(input1=(0, 1)),
    B.REDUCE_ALL: dict(input1=(0, 1)),
    B.EXPAND_DIMS: dict(input1=(0, 1)),
    B.SPLIT: dict(input0=(0, 1)),
    B.SPLIT_V: dict(input1=1, input2=(0, 1)),
    B.ONE_HOT: dict(input1=0, input2=0, input3=0),
    B.RANGE: dict(input0=0, input1=0, input2=0),
    B.FILL: dict(input0=1, input1=0),
    B.ARG_MAX: dict(input1=(0, 1)),
    B.ARG_MIN: dict(input1=(0, 1)),
    B.CUMSUM: dict(input1=(0, 1)),
    B.RFFT2D: dict(input1=1),
    B.BATCH_MATMUL: dict(input0=(2, 3, 4, 5), input1=(2, 3, 4, 5)),
    # issue 32, elementwise, bit and indexing ops (branch i32-misc), by name:
    B.BROADCAST_ARGS: dict(input0=1, input1=1),
    B.DILATE: dict(input1=1),
    B.DYNAMIC_UPDATE_SLICE: dict(input2=1),
    B.REVERSE_SEQUENCE: dict(input1=1),
    B.SCATTER_ND: dict(input2=1),
    B.SEGMENT_SUM: dict(input1=1),
    B.SPARSE_TO_DENSE: dict(input1=1),
    B.UNSORTED_SEGMENT_MAX: dict(input2=(0, 1)),
    B.UNSORTED_SEGMENT_MIN: dict(input2=(0, 1)),
    B.UNSORTED_SEGMENT_PROD: dict(input2=(0, 1)),
    B.UNSORTED_SEGMENT_SUM: dict(input2=(0, 1)),
    B.RNN: dict(input0=2),
    B.UNIDIRECTIONAL_SEQUENCE_RNN: dict(input0=3),
    B.BIDIRECTIONAL_SEQUENCE_RNN: dict(input0=3),
    B.SVDF: dict(input0=2),
    B.LSTM: dict(input0=2),
    B.UNIDIRECTIONAL_SEQUENCE_LSTM: dict(input0=3),
    B.BIDIRECTIONAL_SEQUENCE_LSTM: dict(input0=3),
    # issue 32, text and random-number ops (branch i32-text), by name:
    B.EMBEDDING_LOOKUP: dict(input0=1),
    B.EMBEDDING_LOOKUP_SPARSE: dict(input0=1, input1=2, input2=1, input3=1),
    B.HASHTABLE_FIND: dict(input0=1),
    B.HASHTABLE_IMPORT: dict(input0=1),
    B.HASHTABLE_LOOKUP: dict(input0=1, input1=1),
    B.HASHTABLE_SIZE: dict(input0=1),
    B.LSH_PROJECTION: dict(input0=2, input2=1),
    B.MULTINOMIAL: dict(input0=2, input1=0),
    B.RANDOM_STANDARD_NORMAL: dict(input0=1),
    B.RANDOM_UNIFORM: dict(input0=1),
    # issue 32, 3-D convolutions, window reductions and StableHLO ops (branch i32-hlo), by name:
    B.CONV_3D: dict(input0=5, input1=5),
    B.CONV_3D_TRANSPOSE: dict(input0=1, input1=5, input2=5),
    B.REDUCE_WINDOW: dict(input2=1, input3=1, input4=1),
    B.STABLEHLO_RNG_BIT_GENERATOR: dict(input0=1),
}
for _op, _ranks in _RANKS.items():
    ARITY[_op] = ARITY[_op].with_ranks(**_ranks)


def _count(low: int, high: int) -> str:
    if low == high:
        return str(low)
    if high >= MANY:
        return f"at least {low}"
    return f"{low} to {high}" if high > low + 1 else f"{low} or {high}"


def _ranks_text(ranks: list[int]) -> str:
    """'4-D', '0-D or 1-D', '2-D to 5-D'."""
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-D to {ranks[-1]}-D"
    return " or ".join(f"{rank}-D" for rank in ranks)


def arity_problem(
    op: int, inputs: Sequence[int], outputs: Sequence[int], rank_of: Callable[[int], int | None] | None = None
) -> str | None:
    """What is wrong with a node of builtin ``op`` reading tensors ``inputs`` and writing
    ``outputs`` (-1: absent), by the op's declaration; None if nothing, or if the op is
    not declared here. With ``rank_of`` (a tensor index to its rank, or None when not
    known yet) the input ranks are checked too."""
    arity = ARITY.get(op)
    if arity is None:
        return None
    if not arity.min_inputs <= len(inputs) <= arity.max_inputs:
        return f"takes {_count(arity.min_inputs, arity.max_inputs)} inputs, the node has {len(inputs)}"
    if not arity.min_outputs <= len(outputs) <= arity.max_outputs:
        return f"has {_count(arity.min_outputs, arity.max_outputs)} outputs, the node has {len(outputs)}"
    for position, tensor_index in enumerate(inputs):
        if tensor_index < 0 and position not in arity.optional:
            return f"input {position} is required, the node has none (-1) there"
    for position, tensor_index in enumerate(outputs):
        if tensor_index < 0:
            return f"output {position} is absent (-1)"
    if rank_of is not None:
        for position, allowed in arity.ranks:
            if position >= len(inputs) or inputs[position] < 0:
                continue
            rank = rank_of(inputs[position])
            if rank is not None and rank not in allowed:
                wanted = _ranks_text(sorted(allowed))
                return f"input {position} (tensor {inputs[position]}) is {rank}-D, the op takes a {wanted} tensor there"
    return None
