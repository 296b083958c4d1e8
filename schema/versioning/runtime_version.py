"""Which runtime release first runs a given (op, version).

Two tables with the same shape, ``{(BuiltinOperator, version): release}``:

``TFLITE_MIN_RUNTIME_VERSIONS``
    TFLite's own table (facts from ``FindMinimumRuntimeVersionForOp`` in
    ``tensorflow/compiler/mlir/lite/tools/versioning/runtime_version.cc``,
    tensorflow/tensorflow at 03f49db5a23ec2b22a59f3f3d72e5744469ea30b), every
    entry it lists, for all ops, in its order. The value is the first TF Lite
    runtime release that runs that op version. An empty string would mean "in no
    release yet"; that TFLite table has no such entry today, but the helpers below
    handle one (in either table).

``LITEDELEGATE_MIN_RUNTIME_VERSIONS``
    The first release of *this* runtime that runs (op, version), built from
    ``LITEDELEGATE_RELEASES`` (release -> op -> versions, one line per op). Kernel
    authors extend that table by hand: a new (op, version) goes in the group of the
    release being developed, ``CURRENT_RELEASE``. It lists exactly the (op, version)
    pairs the CPU backend registers (tests/test_consistency.py checks both directions).

Release strings compare numerically, component by component (``compare_versions``).
"""

from __future__ import annotations

import importlib.metadata
from typing import Iterable

from schema.enums import BuiltinOperator

__all__ = [
    "CURRENT_RELEASE",
    "TFLITE_MIN_RUNTIME_VERSIONS",
    "LITEDELEGATE_MIN_RUNTIME_VERSIONS",
    "LITEDELEGATE_RELEASES",
    "UnknownOpVersionError",
    "compare_versions",
    "get_min_runtime_version",
    "installed_release",
    "release_adding",
]

#: The release being developed. New (op, version) pairs go in its group of LITEDELEGATE_RELEASES.
CURRENT_RELEASE = "0.1.0"


def installed_release() -> str:
    """The installed litedelegate release (package metadata), else ``CURRENT_RELEASE``."""
    try:
        return importlib.metadata.version("litedelegate")
    except importlib.metadata.PackageNotFoundError:
        return CURRENT_RELEASE


# fmt: off
#: TFLite's FindMinimumRuntimeVersionForOp map (BROADCAST_TO starts at version 2:
#: its version 1 was rolled back and its op code renumbered).
TFLITE_MIN_RUNTIME_VERSIONS: dict[tuple[BuiltinOperator, int], str] = {
    (BuiltinOperator.AVERAGE_POOL_2D, 1): "1.5.0",
    (BuiltinOperator.AVERAGE_POOL_2D, 2): "1.14.0",
    (BuiltinOperator.AVERAGE_POOL_2D, 3): "2.3.0",
    (BuiltinOperator.BATCH_MATMUL, 1): "2.3.0",
    (BuiltinOperator.BATCH_MATMUL, 2): "2.3.0",
    (BuiltinOperator.BATCH_MATMUL, 3): "2.4.0",
    (BuiltinOperator.BATCH_MATMUL, 4): "2.5.0",
    (BuiltinOperator.BROADCAST_TO, 2): "2.5.0",
    (BuiltinOperator.BROADCAST_TO, 3): "2.5.0",
    (BuiltinOperator.CONV_2D, 1): "1.5.0",
    (BuiltinOperator.CONV_2D, 2): "1.14.0",
    (BuiltinOperator.CONV_2D, 3): "1.14.0",
    (BuiltinOperator.CONV_2D, 4): "2.3.0",
    (BuiltinOperator.CONV_2D, 5): "2.4.0",
    (BuiltinOperator.CONV_2D, 6): "2.9.0",
    (BuiltinOperator.CONV_2D, 7): "2.11.0",
    (BuiltinOperator.CONV_2D, 8): "2.15.0",
    (BuiltinOperator.DEPTHWISE_CONV_2D, 1): "1.5.0",
    (BuiltinOperator.DEPTHWISE_CONV_2D, 2): "1.12.0",
    (BuiltinOperator.DEPTHWISE_CONV_2D, 3): "1.14.0",
    (BuiltinOperator.DEPTHWISE_CONV_2D, 4): "2.2.0",
    (BuiltinOperator.DEPTHWISE_CONV_2D, 5): "2.3.0",
    (BuiltinOperator.DEPTHWISE_CONV_2D, 6): "2.3.0",
    (BuiltinOperator.DEPTHWISE_CONV_2D, 7): "2.11.0",
    (BuiltinOperator.ADD, 1): "1.5.0",
    (BuiltinOperator.ADD, 2): "1.14.0",
    (BuiltinOperator.ADD, 3): "2.4.0",
    (BuiltinOperator.ADD, 4): "2.6.0",
    (BuiltinOperator.ADD, 5): "2.13.0",
    (BuiltinOperator.ADD, 6): "2.23.0",
    (BuiltinOperator.ADD_N, 1): "1.14.0",
    (BuiltinOperator.SPACE_TO_BATCH_ND, 1): "1.6.0",
    (BuiltinOperator.SPACE_TO_BATCH_ND, 2): "1.14.0",
    (BuiltinOperator.SPACE_TO_BATCH_ND, 3): "2.3.0",
    (BuiltinOperator.SPACE_TO_BATCH_ND, 4): "2.12.0",
    (BuiltinOperator.SUB, 1): "1.6.0",
    (BuiltinOperator.SUB, 2): "1.14.0",
    (BuiltinOperator.SUB, 3): "2.3.0",
    (BuiltinOperator.SUB, 4): "2.4.0",
    (BuiltinOperator.SUB, 5): "2.4.0",
    (BuiltinOperator.DENSIFY, 1): "2.2.0",
    (BuiltinOperator.DIV, 1): "1.6.0",
    (BuiltinOperator.DIV, 2): "2.3.0",
    (BuiltinOperator.BATCH_TO_SPACE_ND, 1): "1.6.0",
    (BuiltinOperator.BATCH_TO_SPACE_ND, 2): "1.14.0",
    (BuiltinOperator.BATCH_TO_SPACE_ND, 3): "2.3.0",
    (BuiltinOperator.BATCH_TO_SPACE_ND, 4): "2.12.0",
    (BuiltinOperator.CAST, 1): "1.5.0",
    (BuiltinOperator.CAST, 2): "2.7.0",
    (BuiltinOperator.CAST, 3): "2.8.0",
    (BuiltinOperator.CAST, 4): "2.9.0",
    (BuiltinOperator.CAST, 5): "2.12.0",
    (BuiltinOperator.CAST, 6): "2.15.0",
    (BuiltinOperator.CAST, 7): "2.17.0",
    (BuiltinOperator.CAST, 8): "2.21.0",
    (BuiltinOperator.CONCATENATION, 1): "1.5.0",
    (BuiltinOperator.CONCATENATION, 2): "1.14.0",
    (BuiltinOperator.CONCATENATION, 3): "2.3.0",
    (BuiltinOperator.CONCATENATION, 4): "2.14.0",
    (BuiltinOperator.CONCATENATION, 5): "2.21.0",
    (BuiltinOperator.DEPTH_TO_SPACE, 1): "2.1.0",
    (BuiltinOperator.DEPTH_TO_SPACE, 2): "2.5.0",
    (BuiltinOperator.EMBEDDING_LOOKUP, 1): "1.13.0",
    (BuiltinOperator.EMBEDDING_LOOKUP, 2): "1.14.0",
    (BuiltinOperator.EMBEDDING_LOOKUP, 3): "1.14.0",
    (BuiltinOperator.EMBEDDING_LOOKUP, 4): "2.18.0",
    (BuiltinOperator.EMBEDDING_LOOKUP, 5): "2.21.0",
    (BuiltinOperator.EMBEDDING_LOOKUP_SPARSE, 1): "1.5.0",
    (BuiltinOperator.FAKE_QUANT, 1): "1.5.0",
    (BuiltinOperator.FAKE_QUANT, 2): "1.10.0",
    (BuiltinOperator.FULLY_CONNECTED, 1): "1.5.0",
    (BuiltinOperator.FULLY_CONNECTED, 2): "1.10.0",
    (BuiltinOperator.FULLY_CONNECTED, 3): "1.14.0",
    (BuiltinOperator.FULLY_CONNECTED, 4): "1.14.0",
    (BuiltinOperator.FULLY_CONNECTED, 5): "2.0.0",
    (BuiltinOperator.FULLY_CONNECTED, 6): "2.1.0",
    (BuiltinOperator.FULLY_CONNECTED, 7): "2.3.0",
    (BuiltinOperator.FULLY_CONNECTED, 8): "2.3.0",
    (BuiltinOperator.FULLY_CONNECTED, 9): "2.3.0",
    (BuiltinOperator.FULLY_CONNECTED, 10): "2.11.0",
    (BuiltinOperator.FULLY_CONNECTED, 11): "2.15.0",
    (BuiltinOperator.FULLY_CONNECTED, 12): "2.17.0",
    (BuiltinOperator.FULLY_CONNECTED, 13): "2.18.0",
    (BuiltinOperator.FULLY_CONNECTED, 14): "2.21.0",
    (BuiltinOperator.GATHER, 1): "1.6.0",
    (BuiltinOperator.GATHER, 2): "1.14.0",
    (BuiltinOperator.GATHER, 3): "1.15.0",
    (BuiltinOperator.GATHER, 4): "2.4.0",
    (BuiltinOperator.GATHER, 5): "2.5.0",
    (BuiltinOperator.GATHER, 6): "2.13.0",
    (BuiltinOperator.GATHER, 7): "2.15.0",
    (BuiltinOperator.GATHER_ND, 1): "1.14.0",
    (BuiltinOperator.GATHER_ND, 2): "2.3.0",
    (BuiltinOperator.GATHER_ND, 3): "2.5.0",
    (BuiltinOperator.GATHER_ND, 4): "2.13.0",
    (BuiltinOperator.GATHER_ND, 5): "2.16.0",
    (BuiltinOperator.HASHTABLE_LOOKUP, 1): "1.5.0",
    (BuiltinOperator.SVDF, 1): "1.5.0",
    (BuiltinOperator.SVDF, 2): "1.14.0",
    (BuiltinOperator.SVDF, 3): "2.2.0",
    (BuiltinOperator.SVDF, 4): "2.3.0",
    (BuiltinOperator.L2_NORMALIZATION, 1): "1.5.0",
    (BuiltinOperator.L2_NORMALIZATION, 2): "1.14.0",
    (BuiltinOperator.L2_POOL_2D, 1): "1.5.0",
    (BuiltinOperator.LOCAL_RESPONSE_NORMALIZATION, 1): "1.5.0",
    (BuiltinOperator.MAX_POOL_2D, 1): "1.5.0",
    (BuiltinOperator.MAX_POOL_2D, 2): "1.14.0",
    (BuiltinOperator.MAX_POOL_2D, 3): "2.3.0",
    (BuiltinOperator.MAXIMUM, 1): "1.14.0",
    (BuiltinOperator.MAXIMUM, 2): "1.14.0",
    (BuiltinOperator.MAXIMUM, 3): "2.3.0",
    (BuiltinOperator.MAXIMUM, 4): "2.3.0",
    (BuiltinOperator.MINIMUM, 1): "1.14.0",
    (BuiltinOperator.MINIMUM, 2): "1.14.0",
    (BuiltinOperator.MINIMUM, 3): "2.3.0",
    (BuiltinOperator.MINIMUM, 4): "2.3.0",
    (BuiltinOperator.MUL, 1): "1.5.0",
    (BuiltinOperator.MUL, 2): "1.14.0",
    (BuiltinOperator.MUL, 3): "1.15.0",
    (BuiltinOperator.MUL, 4): "2.3.0",
    (BuiltinOperator.MUL, 5): "2.6.0",
    (BuiltinOperator.MUL, 6): "2.11.0",
    (BuiltinOperator.MUL, 7): "2.13.0",
    (BuiltinOperator.MUL, 8): "2.23.0",
    (BuiltinOperator.NON_MAX_SUPPRESSION_V4, 1): "2.1.0",
    (BuiltinOperator.NON_MAX_SUPPRESSION_V5, 1): "2.1.0",
    (BuiltinOperator.PAD, 1): "1.5.0",
    (BuiltinOperator.PAD, 2): "1.14.0",
    (BuiltinOperator.PAD, 3): "2.4.0",
    (BuiltinOperator.PAD, 4): "2.6.0",
    (BuiltinOperator.PAD, 5): "2.20.0",
    (BuiltinOperator.TILE, 1): "1.10.1",
    (BuiltinOperator.TILE, 2): "2.2.0",
    (BuiltinOperator.TILE, 3): "2.8.0",
    (BuiltinOperator.PADV2, 1): "1.9.0",
    (BuiltinOperator.PADV2, 2): "1.14.0",
    (BuiltinOperator.PADV2, 3): "2.4.0",
    (BuiltinOperator.PADV2, 4): "2.6.0",
    (BuiltinOperator.PADV2, 5): "2.20.0",
    (BuiltinOperator.RESHAPE, 1): "1.5.0",
    (BuiltinOperator.SOFTMAX, 1): "1.5.0",
    (BuiltinOperator.SOFTMAX, 2): "1.14.0",
    (BuiltinOperator.SOFTMAX, 3): "2.3.0",
    (BuiltinOperator.SPACE_TO_DEPTH, 1): "1.5.0",
    (BuiltinOperator.SPACE_TO_DEPTH, 2): "1.14.0",
    (BuiltinOperator.TRANSPOSE, 1): "1.6.0",
    (BuiltinOperator.TRANSPOSE, 2): "1.14.0",
    (BuiltinOperator.TRANSPOSE, 3): "1.15.0",
    (BuiltinOperator.TRANSPOSE, 4): "2.3.0",
    (BuiltinOperator.TRANSPOSE, 5): "2.4.0",
    (BuiltinOperator.TRANSPOSE, 6): "2.12.0",
    (BuiltinOperator.TRANSPOSE, 7): "2.14.4",
    (BuiltinOperator.TRANSPOSE, 8): "2.22.0",
    (BuiltinOperator.LSTM, 1): "1.7.0",
    (BuiltinOperator.LSTM, 2): "1.10.0",
    (BuiltinOperator.LSTM, 3): "1.14.0",
    (BuiltinOperator.LSTM, 4): "2.3.0",
    (BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, 1): "1.13.1",
    (BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, 2): "1.14.0",
    (BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, 3): "2.3.0",
    (BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, 4): "2.12.0",
    (BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM, 1): "1.14.0",
    (BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM, 2): "1.14.0",
    (BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM, 3): "1.14.0",
    (BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN, 1): "1.14.0",
    (BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN, 2): "1.14.0",
    (BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN, 3): "2.3.0",
    (BuiltinOperator.MEAN, 1): "1.6.0",
    (BuiltinOperator.MEAN, 2): "1.14.0",
    (BuiltinOperator.MEAN, 3): "2.4.0",
    (BuiltinOperator.SUM, 1): "1.10.0",
    (BuiltinOperator.SUM, 2): "1.15.0",
    (BuiltinOperator.REDUCE_MAX, 1): "1.11.0",
    (BuiltinOperator.REDUCE_MAX, 2): "1.14.0",
    (BuiltinOperator.REDUCE_MAX, 3): "2.5.0",
    (BuiltinOperator.REDUCE_MIN, 1): "1.11.0",
    (BuiltinOperator.REDUCE_MIN, 2): "1.14.0",
    (BuiltinOperator.REDUCE_MIN, 3): "2.5.0",
    (BuiltinOperator.REDUCE_PROD, 1): "1.11.0",
    (BuiltinOperator.REDUCE_PROD, 2): "2.6.0",
    (BuiltinOperator.REDUCE_ANY, 1): "1.11.0",
    (BuiltinOperator.RELU6, 1): "1.5.0",
    (BuiltinOperator.RELU6, 2): "1.14.0",
    (BuiltinOperator.RELU6, 3): "2.5.0",
    (BuiltinOperator.RESIZE_BILINEAR, 1): "1.7.0",
    (BuiltinOperator.RESIZE_BILINEAR, 2): "1.14.0",
    (BuiltinOperator.RESIZE_BILINEAR, 3): "2.2.0",
    (BuiltinOperator.RESIZE_BILINEAR, 4): "2.5.0",
    (BuiltinOperator.RESIZE_NEAREST_NEIGHBOR, 1): "1.13.1",
    (BuiltinOperator.RESIZE_NEAREST_NEIGHBOR, 2): "1.14.0",
    (BuiltinOperator.RESIZE_NEAREST_NEIGHBOR, 3): "2.3.0",
    (BuiltinOperator.RESIZE_NEAREST_NEIGHBOR, 4): "2.4.0",
    (BuiltinOperator.RNN, 1): "1.5.0",
    (BuiltinOperator.RNN, 2): "1.14.0",
    (BuiltinOperator.RNN, 3): "2.3.0",
    (BuiltinOperator.SKIP_GRAM, 1): "1.5.0",
    (BuiltinOperator.SQUEEZE, 1): "1.6.0",
    (BuiltinOperator.SQUEEZE, 2): "2.5.0",
    (BuiltinOperator.SPLIT, 1): "1.5.0",
    (BuiltinOperator.SPLIT, 2): "1.14.0",
    (BuiltinOperator.SPLIT, 3): "1.14.0",
    (BuiltinOperator.SPLIT, 4): "2.3.0",
    (BuiltinOperator.SPLIT_V, 1): "1.13.1",
    (BuiltinOperator.SPLIT_V, 2): "2.3.0",
    (BuiltinOperator.STRIDED_SLICE, 1): "1.6.0",
    (BuiltinOperator.STRIDED_SLICE, 2): "1.14.0",
    (BuiltinOperator.STRIDED_SLICE, 3): "2.1.0",
    (BuiltinOperator.STRIDED_SLICE, 4): "2.2.0",
    (BuiltinOperator.STRIDED_SLICE, 5): "2.5.0",
    (BuiltinOperator.STRIDED_SLICE, 6): "2.6.0",
    (BuiltinOperator.STRIDED_SLICE, 7): "2.14.0",
    (BuiltinOperator.STRIDED_SLICE, 8): "2.14.0",
    (BuiltinOperator.TOPK_V2, 1): "1.7.0",
    (BuiltinOperator.TOPK_V2, 2): "1.14.0",
    (BuiltinOperator.TOPK_V2, 3): "2.13.0",
    (BuiltinOperator.ARG_MAX, 1): "1.9.0",
    (BuiltinOperator.ARG_MAX, 2): "1.14.0",
    (BuiltinOperator.ARG_MAX, 3): "2.9.0",
    (BuiltinOperator.ARG_MIN, 1): "1.9.0",
    (BuiltinOperator.ARG_MIN, 2): "1.14.0",
    (BuiltinOperator.ARG_MIN, 3): "2.9.0",
    (BuiltinOperator.TRANSPOSE_CONV, 1): "1.9.0",
    (BuiltinOperator.TRANSPOSE_CONV, 2): "2.2.0",
    (BuiltinOperator.TRANSPOSE_CONV, 3): "2.3.0",
    (BuiltinOperator.TRANSPOSE_CONV, 4): "2.13.0",
    (BuiltinOperator.TRANSPOSE_CONV, 5): "2.15.0",
    (BuiltinOperator.SPARSE_TO_DENSE, 1): "1.9.0",
    (BuiltinOperator.SPARSE_TO_DENSE, 2): "1.14.0",
    (BuiltinOperator.SPARSE_TO_DENSE, 3): "1.15.0",
    (BuiltinOperator.EXPAND_DIMS, 1): "1.10.0",
    (BuiltinOperator.PACK, 1): "1.11.0",
    (BuiltinOperator.PACK, 2): "1.14.0",
    (BuiltinOperator.PACK, 3): "2.3.0",
    (BuiltinOperator.PACK, 4): "2.13.0",
    (BuiltinOperator.SHAPE, 1): "1.10.0",
    (BuiltinOperator.SLICE, 1): "1.14.0",
    (BuiltinOperator.SLICE, 2): "1.14.0",
    (BuiltinOperator.SLICE, 3): "1.14.0",
    (BuiltinOperator.SLICE, 4): "2.4.0",
    (BuiltinOperator.SLICE, 5): "2.5.0",
    (BuiltinOperator.SLICE, 6): "2.14.0",
    (BuiltinOperator.SLICE, 7): "2.21.0",
    (BuiltinOperator.TANH, 1): "1.14.0",
    (BuiltinOperator.TANH, 2): "1.14.0",
    (BuiltinOperator.TANH, 3): "2.3.0",
    (BuiltinOperator.ONE_HOT, 1): "1.11.0",
    (BuiltinOperator.UNPACK, 1): "1.11.0",
    (BuiltinOperator.UNPACK, 2): "1.14.0",
    (BuiltinOperator.UNPACK, 3): "2.2.0",
    (BuiltinOperator.UNPACK, 4): "2.3.0",
    (BuiltinOperator.UNPACK, 5): "2.22.0",
    (BuiltinOperator.LEAKY_RELU, 1): "1.13.1",
    (BuiltinOperator.LEAKY_RELU, 2): "2.3.0",
    (BuiltinOperator.LOGISTIC, 1): "1.14.0",
    (BuiltinOperator.LOGISTIC, 2): "1.14.0",
    (BuiltinOperator.LOGISTIC, 3): "2.3.0",
    (BuiltinOperator.LOG_SOFTMAX, 1): "1.14.0",
    (BuiltinOperator.LOG_SOFTMAX, 2): "1.14.0",
    (BuiltinOperator.LSH_PROJECTION, 1): "1.5.0",
    (BuiltinOperator.SQUARED_DIFFERENCE, 1): "1.13.1",
    (BuiltinOperator.SQUARED_DIFFERENCE, 2): "2.5.0",
    (BuiltinOperator.MIRROR_PAD, 1): "1.13.1",
    (BuiltinOperator.MIRROR_PAD, 2): "2.3.0",
    (BuiltinOperator.MIRROR_PAD, 3): "2.12.0",
    (BuiltinOperator.UNIQUE, 1): "1.14.0",
    (BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, 1): "1.14.0",
    (BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, 2): "1.14.0",
    (BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, 3): "2.3.0",
    (BuiltinOperator.WHERE, 1): "1.14.0",
    (BuiltinOperator.DEQUANTIZE, 1): "1.13.1",
    (BuiltinOperator.DEQUANTIZE, 2): "1.14.0",
    (BuiltinOperator.DEQUANTIZE, 3): "1.15.0",
    (BuiltinOperator.DEQUANTIZE, 4): "2.2.0",
    (BuiltinOperator.DEQUANTIZE, 5): "2.7.0",
    (BuiltinOperator.DEQUANTIZE, 6): "2.18.0",
    (BuiltinOperator.DEQUANTIZE, 7): "2.21.0",
    (BuiltinOperator.DEQUANTIZE, 8): "2.22.0",
    (BuiltinOperator.REVERSE_SEQUENCE, 1): "1.14.0",
    (BuiltinOperator.EQUAL, 1): "1.14.0",
    (BuiltinOperator.EQUAL, 2): "1.14.0",
    (BuiltinOperator.EQUAL, 3): "2.3.0",
    (BuiltinOperator.EQUAL, 4): "2.13.0",
    (BuiltinOperator.EQUAL, 5): "2.21.0",
    (BuiltinOperator.NOT_EQUAL, 1): "1.14.0",
    (BuiltinOperator.NOT_EQUAL, 2): "1.14.0",
    (BuiltinOperator.NOT_EQUAL, 3): "2.3.0",
    (BuiltinOperator.NOT_EQUAL, 4): "2.21.0",
    (BuiltinOperator.GREATER, 1): "1.14.0",
    (BuiltinOperator.GREATER, 2): "1.14.0",
    (BuiltinOperator.GREATER_EQUAL, 1): "1.14.0",
    (BuiltinOperator.GREATER_EQUAL, 2): "1.14.0",
    (BuiltinOperator.GREATER_EQUAL, 3): "2.13.0",
    (BuiltinOperator.LESS, 1): "1.14.0",
    (BuiltinOperator.LESS, 2): "1.14.0",
    (BuiltinOperator.LESS, 3): "2.13.0",
    (BuiltinOperator.LESS_EQUAL, 1): "1.14.0",
    (BuiltinOperator.LESS_EQUAL, 2): "1.14.0",
    (BuiltinOperator.SCATTER_ND, 1): "2.1.0",
    (BuiltinOperator.SEGMENT_SUM, 1): "2.2.0",
    (BuiltinOperator.SELECT, 1): "1.14.0",
    (BuiltinOperator.SELECT, 2): "1.14.0",
    (BuiltinOperator.SELECT, 3): "2.12.0",
    (BuiltinOperator.SELECT, 4): "2.12.0",
    (BuiltinOperator.SELECT_V2, 1): "2.2.0",
    (BuiltinOperator.SELECT_V2, 2): "2.12.0",
    (BuiltinOperator.IF, 1): "1.15.0",
    (BuiltinOperator.FLOOR_DIV, 1): "1.14.0",
    (BuiltinOperator.FLOOR_DIV, 2): "1.14.0",
    (BuiltinOperator.FLOOR_DIV, 3): "2.13.0",
    (BuiltinOperator.FLOOR, 1): "1.9.0",
    (BuiltinOperator.CEIL, 1): "1.14.0",
    (BuiltinOperator.MATRIX_DIAG, 1): "1.14.0",
    (BuiltinOperator.MATRIX_SET_DIAG, 1): "1.14.0",
    (BuiltinOperator.ELU, 1): "1.14.0",
    (BuiltinOperator.QUANTIZE, 1): "1.14.0",
    (BuiltinOperator.QUANTIZE, 2): "1.15.0",
    (BuiltinOperator.QUANTIZE, 3): "2.7.0",
    (BuiltinOperator.QUANTIZE, 4): "2.21.0",
    (BuiltinOperator.QUANTIZE, 5): "2.21.0",
    (BuiltinOperator.QUANTIZE, 6): "2.21.0",
    (BuiltinOperator.ROUND, 1): "1.14.0",
    (BuiltinOperator.RELU, 1): "1.5.0",
    (BuiltinOperator.RELU, 2): "2.1.0",
    (BuiltinOperator.RELU, 3): "2.5.0",
    (BuiltinOperator.RELU_N1_TO_1, 1): "1.5.0",
    (BuiltinOperator.RELU_0_TO_1, 1): "2.10.0",
    (BuiltinOperator.PRELU, 1): "1.8.0",
    (BuiltinOperator.EXP, 1): "1.7.0",
    (BuiltinOperator.EXP, 2): "2.12.0",
    (BuiltinOperator.COS, 1): "1.14.0",
    (BuiltinOperator.NEG, 1): "1.9.0",
    (BuiltinOperator.POW, 1): "1.10.0",
    (BuiltinOperator.LOGICAL_OR, 1): "1.11.0",
    (BuiltinOperator.LOGICAL_AND, 1): "1.11.0",
    (BuiltinOperator.LOGICAL_NOT, 1): "1.11.0",
    (BuiltinOperator.FLOOR_MOD, 1): "1.13.0",
    (BuiltinOperator.FLOOR_MOD, 2): "2.13.0",
    (BuiltinOperator.RANGE, 1): "1.13.0",
    (BuiltinOperator.RANGE, 2): "2.14.0",
    (BuiltinOperator.SIN, 1): "1.9.0",
    (BuiltinOperator.LOG, 1): "1.14.0",
    (BuiltinOperator.LOG, 2): "2.15.0",
    (BuiltinOperator.SQRT, 1): "1.10.0",
    (BuiltinOperator.SQRT, 2): "2.21.0",
    (BuiltinOperator.RSQRT, 1): "1.10.0",
    (BuiltinOperator.RSQRT, 2): "2.5.0",
    (BuiltinOperator.RSQRT, 3): "2.15.0",
    (BuiltinOperator.SQUARE, 1): "1.12.0",
    (BuiltinOperator.ZEROS_LIKE, 1): "1.12.0",
    (BuiltinOperator.ABS, 1): "1.13.0",
    (BuiltinOperator.ABS, 2): "2.4.0",
    (BuiltinOperator.ABS, 3): "2.5.0",
    (BuiltinOperator.ABS, 4): "2.6.0",
    (BuiltinOperator.ABS, 5): "2.12.0",
    (BuiltinOperator.HARD_SWISH, 1): "1.15.0",
    (BuiltinOperator.FILL, 1): "1.13.0",
    (BuiltinOperator.FILL, 2): "2.3.0",
    (BuiltinOperator.FILL, 3): "2.5.0",
    (BuiltinOperator.FILL, 4): "2.12.0",
    (BuiltinOperator.REVERSE_V2, 1): "1.14.0",
    (BuiltinOperator.REVERSE_V2, 2): "2.2.0",
    (BuiltinOperator.REVERSE_V2, 3): "2.5.0",
    (BuiltinOperator.RANK, 1): "1.14.0",
    (BuiltinOperator.WHILE, 1): "1.15.0",
    (BuiltinOperator.CUMSUM, 1): "2.4.0",
    (BuiltinOperator.CALL_ONCE, 1): "2.5.0",
    (BuiltinOperator.RFFT2D, 1): "2.5.0",
    (BuiltinOperator.CONV_3D, 1): "2.5.0",
    (BuiltinOperator.IMAG, 1): "2.5.0",
    (BuiltinOperator.REAL, 1): "2.5.0",
    (BuiltinOperator.COMPLEX_ABS, 1): "2.5.0",
    (BuiltinOperator.HASHTABLE, 1): "2.5.0",
    (BuiltinOperator.HASHTABLE_FIND, 1): "2.5.0",
    (BuiltinOperator.HASHTABLE_IMPORT, 1): "2.5.0",
    (BuiltinOperator.HASHTABLE_SIZE, 1): "2.5.0",
    (BuiltinOperator.REDUCE_ALL, 1): "2.6.0",
    (BuiltinOperator.CONV_3D_TRANSPOSE, 1): "2.6.0",
    (BuiltinOperator.VAR_HANDLE, 1): "2.6.0",
    (BuiltinOperator.READ_VARIABLE, 1): "2.6.0",
    (BuiltinOperator.ASSIGN_VARIABLE, 1): "2.6.0",
    (BuiltinOperator.BROADCAST_ARGS, 1): "2.6.0",
    (BuiltinOperator.RANDOM_STANDARD_NORMAL, 1): "2.8.0",
    (BuiltinOperator.BUCKETIZE, 1): "2.8.0",
    (BuiltinOperator.WHERE, 2): "2.8.0",
    (BuiltinOperator.RANDOM_UNIFORM, 1): "2.8.0",
    (BuiltinOperator.MULTINOMIAL, 1): "2.8.0",
    (BuiltinOperator.GELU, 1): "2.9.0",
    (BuiltinOperator.GELU, 2): "2.9.0",
    (BuiltinOperator.DYNAMIC_UPDATE_SLICE, 1): "2.9.0",
    (BuiltinOperator.DYNAMIC_UPDATE_SLICE, 2): "2.17.0",
    (BuiltinOperator.DYNAMIC_UPDATE_SLICE, 3): "2.19.0",
    (BuiltinOperator.DYNAMIC_UPDATE_SLICE, 4): "2.20.0",
    (BuiltinOperator.DYNAMIC_UPDATE_SLICE, 5): "2.21.0",
    (BuiltinOperator.DYNAMIC_UPDATE_SLICE, 6): "2.22.0",
    (BuiltinOperator.UNSORTED_SEGMENT_PROD, 1): "2.10.0",
    (BuiltinOperator.UNSORTED_SEGMENT_MAX, 1): "2.10.0",
    (BuiltinOperator.UNSORTED_SEGMENT_MIN, 1): "2.11.0",
    (BuiltinOperator.UNSORTED_SEGMENT_SUM, 1): "2.10.0",
    (BuiltinOperator.ATAN2, 1): "2.10.0",
    (BuiltinOperator.SIGN, 1): "2.11.0",
    (BuiltinOperator.SIGN, 2): "2.12.0",
    (BuiltinOperator.BITCAST, 1): "2.13.0",
    (BuiltinOperator.BITWISE_XOR, 1): "2.13.0",
    (BuiltinOperator.RIGHT_SHIFT, 1): "2.13.0",
    (BuiltinOperator.STABLEHLO_SCATTER, 1): "2.15.0",
    (BuiltinOperator.DILATE, 1): "2.15.0",
    (BuiltinOperator.STABLEHLO_RNG_BIT_GENERATOR, 1): "2.15.0",
    (BuiltinOperator.REDUCE_WINDOW, 1): "2.15.0",
    (BuiltinOperator.STABLEHLO_GATHER, 1): "2.16.0",
    (BuiltinOperator.STABLEHLO_ADD, 1): "2.16.0",
    (BuiltinOperator.STABLEHLO_MULTIPLY, 1): "2.16.0",
    (BuiltinOperator.STABLEHLO_REDUCE_WINDOW, 1): "2.16.0",
    (BuiltinOperator.STABLEHLO_MAXIMUM, 1): "2.16.0",
    (BuiltinOperator.STABLEHLO_MINIMUM, 1): "2.16.0",
    (BuiltinOperator.STABLEHLO_PAD, 1): "2.16.0",
    (BuiltinOperator.STABLEHLO_COMPOSITE, 1): "2.17.0",
    (BuiltinOperator.STABLEHLO_AND, 1): "2.17.0",
    (BuiltinOperator.STABLEHLO_SHIFT_LEFT, 1): "2.17.0",
    (BuiltinOperator.STABLEHLO_CBRT, 1): "2.17.0",
    (BuiltinOperator.STABLEHLO_CASE, 1): "2.17.0",
}

#: The (op, versions) each litedelegate release first ran, one line per op. The release being
#: developed is CURRENT_RELEASE: a kernel for a new (op, version) adds the version to its op's
#: line there (or a new line, by op name). Cutting a release turns that group's key into the
#: release's string and starts a new ``CURRENT_RELEASE: {}`` group below it.
LITEDELEGATE_RELEASES: dict[str, dict[BuiltinOperator, tuple[int, ...]]] = {
    CURRENT_RELEASE: {
        BuiltinOperator.ABS: (1, 4, 5),
        BuiltinOperator.ADD: (1, 2, 3, 4, 5),
        BuiltinOperator.ADD_N: (1,),
        BuiltinOperator.ARG_MAX: (1, 2, 3),
        BuiltinOperator.ARG_MIN: (1, 2, 3),
        BuiltinOperator.ASSIGN_VARIABLE: (1,),
        BuiltinOperator.ATAN2: (1,),
        BuiltinOperator.AVERAGE_POOL_2D: (1, 2, 3),
        BuiltinOperator.BATCH_MATMUL: (1, 2, 3, 4),
        BuiltinOperator.BATCH_TO_SPACE_ND: (1, 2, 3, 4),
        BuiltinOperator.BITCAST: (1,),
        BuiltinOperator.BITWISE_XOR: (1,),
        BuiltinOperator.BROADCAST_ARGS: (1,),
        BuiltinOperator.BROADCAST_TO: (2, 3),
        BuiltinOperator.BUCKETIZE: (1,),
        BuiltinOperator.CALL_ONCE: (1,),
        BuiltinOperator.CAST: (1, 2, 3, 4, 5),
        BuiltinOperator.CEIL: (1,),
        BuiltinOperator.CONCATENATION: (1, 2, 3, 4),
        BuiltinOperator.CONV_2D: (1, 2, 3, 4, 5, 6, 8),
        BuiltinOperator.COS: (1,),
        BuiltinOperator.CUMSUM: (1,),
        BuiltinOperator.DENSIFY: (1,),
        BuiltinOperator.DEPTHWISE_CONV_2D: (1, 2, 3, 4, 5, 6),
        BuiltinOperator.DEPTH_TO_SPACE: (1, 2),
        BuiltinOperator.DEQUANTIZE: (1, 2, 3, 4, 5),
        BuiltinOperator.DILATE: (1,),
        BuiltinOperator.DIV: (1, 2),
        BuiltinOperator.DYNAMIC_UPDATE_SLICE: (1, 2, 3, 4),
        BuiltinOperator.EMBEDDING_LOOKUP: (1, 2, 3, 4),
        BuiltinOperator.EMBEDDING_LOOKUP_SPARSE: (1,),
        BuiltinOperator.ELU: (1,),
        BuiltinOperator.EQUAL: (1, 2, 3, 4, 5),
        BuiltinOperator.EXP: (1,),
        BuiltinOperator.EXPAND_DIMS: (1,),
        BuiltinOperator.FAKE_QUANT: (1, 2),
        BuiltinOperator.FILL: (1, 2, 3, 4),
        BuiltinOperator.FLOOR: (1,),
        BuiltinOperator.FLOOR_DIV: (1, 2, 3),
        BuiltinOperator.FLOOR_MOD: (1, 2),
        BuiltinOperator.FULLY_CONNECTED: (1, 3, 4, 5, 6, 7, 9, 11, 12),
        BuiltinOperator.GATHER: (1, 2, 3, 4, 5, 6),
        BuiltinOperator.GATHER_ND: (1, 2, 3, 4, 5),
        BuiltinOperator.GELU: (1,),
        BuiltinOperator.GREATER: (1, 2),
        BuiltinOperator.GREATER_EQUAL: (1, 2, 3),
        BuiltinOperator.HARD_SWISH: (1,),
        BuiltinOperator.HASHTABLE: (1,),
        BuiltinOperator.HASHTABLE_FIND: (1,),
        BuiltinOperator.HASHTABLE_IMPORT: (1,),
        BuiltinOperator.HASHTABLE_LOOKUP: (1,),
        BuiltinOperator.HASHTABLE_SIZE: (1,),
        BuiltinOperator.IF: (1,),
        BuiltinOperator.L2_NORMALIZATION: (1,),
        BuiltinOperator.L2_POOL_2D: (1,),
        BuiltinOperator.LEAKY_RELU: (1, 2),
        BuiltinOperator.LESS: (1, 2, 3),
        BuiltinOperator.LESS_EQUAL: (1, 2),
        BuiltinOperator.LOCAL_RESPONSE_NORMALIZATION: (1,),
        BuiltinOperator.LOG: (1,),
        BuiltinOperator.LOGICAL_AND: (1,),
        BuiltinOperator.LOGICAL_NOT: (1,),
        BuiltinOperator.LOGICAL_OR: (1,),
        BuiltinOperator.LOGISTIC: (1, 2, 3),
        BuiltinOperator.LOG_SOFTMAX: (1, 2),
        BuiltinOperator.LSH_PROJECTION: (1,),
        BuiltinOperator.MATRIX_DIAG: (1,),
        BuiltinOperator.MATRIX_SET_DIAG: (1,),
        BuiltinOperator.MAXIMUM: (1, 2, 3, 4),
        BuiltinOperator.MAX_POOL_2D: (1, 2, 3),
        BuiltinOperator.MEAN: (1, 2, 3),
        BuiltinOperator.MINIMUM: (1, 2, 3, 4),
        BuiltinOperator.MIRROR_PAD: (1, 2, 3),
        BuiltinOperator.MUL: (1, 2, 3, 4, 5, 6, 7),
        BuiltinOperator.MULTINOMIAL: (1,),
        BuiltinOperator.NEG: (1,),
        BuiltinOperator.NOT_EQUAL: (1, 2, 3, 4),
        BuiltinOperator.ONE_HOT: (1,),
        BuiltinOperator.PACK: (1, 2, 3, 4),
        BuiltinOperator.PAD: (1, 2, 3, 4, 5),
        BuiltinOperator.PADV2: (1, 2, 3, 4, 5),
        BuiltinOperator.POW: (1,),
        BuiltinOperator.PRELU: (1,),
        BuiltinOperator.QUANTIZE: (1, 2, 3),
        BuiltinOperator.RANDOM_STANDARD_NORMAL: (1,),
        BuiltinOperator.RANDOM_UNIFORM: (1,),
        BuiltinOperator.RANGE: (1, 2),
        BuiltinOperator.RANK: (1,),
        BuiltinOperator.READ_VARIABLE: (1,),
        BuiltinOperator.REDUCE_ALL: (1,),
        BuiltinOperator.REDUCE_ANY: (1,),
        BuiltinOperator.REDUCE_MAX: (1, 2, 3),
        BuiltinOperator.REDUCE_MIN: (1, 2, 3),
        BuiltinOperator.REDUCE_PROD: (1,),
        BuiltinOperator.RELU: (1, 2, 3),
        BuiltinOperator.RELU6: (1, 2, 3),
        BuiltinOperator.RELU_0_TO_1: (1,),
        BuiltinOperator.RELU_N1_TO_1: (1,),
        BuiltinOperator.RESHAPE: (1,),
        BuiltinOperator.RESIZE_BILINEAR: (1, 2, 3, 4),
        BuiltinOperator.RESIZE_NEAREST_NEIGHBOR: (1, 2, 3, 4),
        BuiltinOperator.REVERSE_SEQUENCE: (1,),
        BuiltinOperator.REVERSE_V2: (1, 2, 3),
        BuiltinOperator.RIGHT_SHIFT: (1,),
        BuiltinOperator.ROUND: (1,),
        BuiltinOperator.RSQRT: (1,),
        BuiltinOperator.SCATTER_ND: (1,),
        BuiltinOperator.SEGMENT_SUM: (1,),
        BuiltinOperator.SELECT: (1, 3, 4),
        BuiltinOperator.SELECT_V2: (1, 2),
        BuiltinOperator.SHAPE: (1,),
        BuiltinOperator.SIGN: (1, 2),
        BuiltinOperator.SIN: (1,),
        BuiltinOperator.SKIP_GRAM: (1,),
        BuiltinOperator.SLICE: (1, 2, 3, 4, 5, 6),
        BuiltinOperator.SOFTMAX: (1, 2, 3),
        BuiltinOperator.SPACE_TO_BATCH_ND: (1, 2, 3, 4),
        BuiltinOperator.SPACE_TO_DEPTH: (1, 2),
        BuiltinOperator.SPARSE_TO_DENSE: (1, 2, 3),
        BuiltinOperator.SPLIT: (1, 2, 3, 4),
        BuiltinOperator.SPLIT_V: (1, 2),
        BuiltinOperator.SQRT: (1,),
        BuiltinOperator.SQUARE: (1,),
        BuiltinOperator.SQUARED_DIFFERENCE: (1, 2),
        BuiltinOperator.SQUEEZE: (1, 2),
        BuiltinOperator.STRIDED_SLICE: (1, 2, 3, 4, 5, 6, 7, 8),
        BuiltinOperator.SUB: (1, 2, 3, 4, 5),
        BuiltinOperator.SUM: (1, 2),
        BuiltinOperator.TANH: (1, 2, 3),
        BuiltinOperator.TILE: (1, 2, 3),
        BuiltinOperator.TRANSPOSE: (1, 2, 3, 4, 5, 6, 8),
        BuiltinOperator.TRANSPOSE_CONV: (1, 2, 3, 4, 5),
        BuiltinOperator.UNPACK: (1, 2, 3, 4, 5),
        BuiltinOperator.UNSORTED_SEGMENT_MAX: (1,),
        BuiltinOperator.UNSORTED_SEGMENT_MIN: (1,),
        BuiltinOperator.UNSORTED_SEGMENT_PROD: (1,),
        BuiltinOperator.UNSORTED_SEGMENT_SUM: (1,),
        BuiltinOperator.VAR_HANDLE: (1,),
        BuiltinOperator.WHERE: (1, 2),
        BuiltinOperator.WHILE: (1,),
        BuiltinOperator.ZEROS_LIKE: (1,),
    },
}

#: The first litedelegate release that runs (op, version): ``LITEDELEGATE_RELEASES`` by pair.
LITEDELEGATE_MIN_RUNTIME_VERSIONS: dict[tuple[BuiltinOperator, int], str] = {
    (op, version): release
    for release, ops in LITEDELEGATE_RELEASES.items()
    for op, versions in ops.items()
    for version in versions
}
# fmt: on


class UnknownOpVersionError(LookupError):
    """An (op, version) pair that a runtime-version table does not list."""

    def __init__(self, op: int, version: int) -> None:
        self.op = op
        self.version = version
        super().__init__(f"{_op_name(op)} version {version} is not in the runtime version table")


def _op_name(op: int) -> str:
    try:
        return BuiltinOperator(op).name
    except ValueError:
        return f"builtin operator {op}"


def _release_key(release: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in release.split("."))
    except ValueError:
        raise ValueError(f"not a release string (dot-separated integers): {release!r}") from None


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as release ``a`` is older than, the same as, or newer than ``b``.

    Components compare as integers ("1.9" < "1.13" < "1.14" < "1.14.1"). As in
    TFLite's ``CompareRuntimeVersion``, a strict prefix is older ("1.14" <
    "1.14.0"). ``""`` (no release yet) is newer than every release.

    Raises:
      ValueError: a component is not an integer.
    """
    if a == b:
        return 0
    if a == "":
        return 1
    if b == "":
        return -1
    key_a, key_b = _release_key(a), _release_key(b)
    return (key_a > key_b) - (key_a < key_b)


def release_adding(op: int, version: int, table: dict[tuple[BuiltinOperator, int], str]) -> str | None:
    """The release that added (op, version) in ``table``; ``""`` if not released yet, None if absent."""
    return table.get((op, version))


def get_min_runtime_version(
    op_versions: Iterable[tuple[int, int]],
    table: dict[tuple[BuiltinOperator, int], str] = TFLITE_MIN_RUNTIME_VERSIONS,
    *,
    strict: bool = False,
) -> str:
    """The oldest release that runs every (op, version) given: the max over the pairs.

    Default (``strict=False``) is TFLite's ``UpdateMinimumRuntimeVersionForModel``:
    a pair the table does not list is skipped, and so is a pair listed with ``""``
    (TFLite's lookup returns "" for both and skips them); when nothing is left the
    result is ``""``, which TFLite writes as an empty ``min_runtime_version``.

    ``strict=True`` refuses to guess: a pair the table does not list raises
    ``UnknownOpVersionError``, and a pair listed with ``""`` makes the result ``""``
    (no release runs it yet; ``""`` is newer than every release).
    """
    result = ""
    found_release = False
    for op, version in op_versions:
        release = table.get((op, version))
        if release is None:
            if strict:
                raise UnknownOpVersionError(op, version)
            continue
        if release == "":
            if strict:
                return ""
            continue
        if not found_release or compare_versions(result, release) < 0:
            result, found_release = release, True
    return result
