"""Facts read from a model file alone: tensors, each node's minimum version, the runtime
versions it needs, size statistics. Nothing here needs a kernel."""

from __future__ import annotations

from collections import Counter
from typing import Any

from schema.enums import BuiltinOperator, builtin_operator_name
from schema.model import Model, Operator, Subgraph, Tensor
from schema.versioning import (
    LITEDELEGATE_MIN_RUNTIME_VERSIONS,
    TFLITE_MIN_RUNTIME_VERSIONS,
    UnknownOpVersionError,
    get_builtin_operator_version,
    get_min_runtime_version,
    op_signature_from_tensors,
)

RUNTIME_TABLES = {"litedelegate": LITEDELEGATE_MIN_RUNTIME_VERSIONS, "tflite": TFLITE_MIN_RUNTIME_VERSIONS}


def tensor_info(tensor: Tensor | None) -> dict[str, Any] | None:
    if tensor is None:
        return None
    quantization = tensor.quantization
    return {
        "index": tensor.index,
        "name": tensor.name,
        "type": tensor.type_name,
        "shape": list(tensor.shape),
        "constant": tensor.is_constant,
        "quantized": bool(quantization is not None and quantization.is_quantized),
    }


def node_tensors(subgraph: Subgraph, operator: Operator) -> tuple[list[Tensor | None], list[Tensor]]:
    inputs = [subgraph.tensors[i] if i >= 0 else None for i in operator.inputs]
    return inputs, [subgraph.tensors[i] for i in operator.outputs]


def minimum_version(subgraph: Subgraph, operator: Operator) -> int | None:
    """The version ``get_builtin_operator_version`` gives this node (None for custom ops
    and for codes this schema does not know)."""
    if operator.builtin_code == BuiltinOperator.CUSTOM or operator.builtin_code not in BuiltinOperator._value2member_map_:
        return None
    inputs, outputs = node_tensors(subgraph, operator)
    signature = op_signature_from_tensors(BuiltinOperator(operator.builtin_code), operator.params, inputs, outputs)
    return get_builtin_operator_version(signature)


def op_version_pairs(model: Model) -> set[tuple[int, int]]:
    return {
        (op.builtin_code, op.version)
        for subgraph in model.subgraphs
        for op in subgraph.operators
        if op.builtin_code != BuiltinOperator.CUSTOM
    }


def litedelegate_min_release(pairs: set[tuple[int, int]]) -> dict[str, Any]:
    """The first litedelegate release that runs every pair, or why there is none."""
    try:
        release = get_min_runtime_version(pairs, LITEDELEGATE_MIN_RUNTIME_VERSIONS, strict=True)
    except UnknownOpVersionError as error:
        return {"release": None, "note": f"no litedelegate release runs {builtin_operator_name(error.op)} v{error.version}"}
    if release == "":
        return {"release": None, "note": "needs an op version that is not in a release yet"}
    return {"release": release, "note": ""}


def min_runtime_versions(model: Model) -> dict[str, Any]:
    """``min_runtime_version``: the file's metadata, TFLite's (what its converter writes for
    these op versions) and litedelegate's."""
    pairs = op_version_pairs(model)
    return {
        "metadata": model.min_runtime_version,
        "tflite": get_min_runtime_version(pairs) or None,
        "litedelegate": litedelegate_min_release(pairs),
    }


def size_statistics(model: Model) -> dict[str, Any]:
    """Bytes of the file, of constant data, of metadata; parameters and activations per subgraph."""
    constant_buffers: dict[int, int] = {}
    weights_by_type: Counter[str] = Counter()
    subgraphs = []
    for subgraph in model.subgraphs:
        parameters = activations = constants = 0
        for tensor in subgraph.tensors:
            if tensor.is_constant:
                constants += 1
                parameters += int(tensor.data.size)
                if tensor.buffer not in constant_buffers:
                    constant_buffers[tensor.buffer] = int(tensor.data.nbytes)
                    weights_by_type[tensor.type_name] += int(tensor.data.nbytes)
            elif tensor.dtype is not None and all(d >= 0 for d in tensor.shape):
                size = 1
                for d in tensor.shape:
                    size *= d
                activations += size * tensor.dtype.itemsize
        ops = Counter(f"{op.op_name} v{op.version}" for op in subgraph.operators)
        subgraphs.append({
            "index": subgraph.index,
            "name": subgraph.name,
            "nodes": len(subgraph.operators),
            "tensors": len(subgraph.tensors),
            "constant_tensors": constants,
            "parameters": parameters,
            "activation_bytes": activations,
            "ops": dict(sorted(ops.items())),
        })
    total = len(model.model_bytes)
    data = sum(constant_buffers.values())
    metadata = sum(len(v) for v in model.metadata.values())
    return {
        "file_bytes": total,
        "constant_data_bytes": data,
        "metadata_bytes": metadata,
        "structure_bytes": max(total - data - metadata, 0),
        "constant_bytes_by_type": dict(sorted(weights_by_type.items())),
        "operator_codes": len(model.operator_codes),
        "buffers": model.num_buffers,
        "subgraphs": subgraphs,
    }
