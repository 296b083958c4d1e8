"""Operator versioning: which version a node needs, and which release runs it.

- ``op_signature``: what the rules look at (``OpSignature``, ``op_signature_from_tensors``);
- ``op_version``: ``get_builtin_operator_version``, TFLite's rules in TFLite's order;
- ``runtime_version``: the (op, version) -> first release tables and their helpers.
"""

from schema.versioning.op_signature import (
    OpSignature,
    QuantizationSignature,
    TensorSignature,
    op_signature_from_tensors,
)
from schema.versioning.op_version import get_builtin_operator_version
from schema.versioning.runtime_version import (
    CURRENT_RELEASE,
    LITEDELEGATE_MIN_RUNTIME_VERSIONS,
    TFLITE_MIN_RUNTIME_VERSIONS,
    UnknownOpVersionError,
    compare_versions,
    get_min_runtime_version,
    release_adding,
)

__all__ = [
    "CURRENT_RELEASE",
    "LITEDELEGATE_MIN_RUNTIME_VERSIONS",
    "OpSignature",
    "QuantizationSignature",
    "TFLITE_MIN_RUNTIME_VERSIONS",
    "TensorSignature",
    "UnknownOpVersionError",
    "compare_versions",
    "get_builtin_operator_version",
    "get_min_runtime_version",
    "op_signature_from_tensors",
    "release_adding",
]
