"""Lower over-stamped operator versions to the minimum each node needs, and prove nothing else changed.

Edits go through the generated object API (``schema.schema_generated.ModelT``). Operator
codes are shared between nodes, so the code table is rebuilt: each (op, custom name,
version) that some node needs gets one entry, in the order of the original table, and
every node points at the entry of its new version (a code two nodes shared is split when
they need different versions). A node is never stamped below its minimum, and a node
stamped *below* the minimum the rules give (an older converter's file) is left as it is.
The ``min_runtime_version`` metadata is recomputed (TFLite's table, as its converter does).

:func:`verify` reloads the result and checks: every node's version is its target; every
tensor, buffer, input, output and option is unchanged; and, when the CPU kernels can run
the model, both files give identical outputs on the same random inputs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np

from schema import schema_generated as fb
from schema.enums import BuiltinOperator
from schema.model import FILE_IDENTIFIER, Model
from schema.versioning import get_min_runtime_version

MIN_RUNTIME_VERSION = "min_runtime_version"
MIN_RUNTIME_VERSION_BYTES = 16  # TFLite reserves 16 bytes for the string
BUFFER_ALIGNMENT = 16


class RewriteError(RuntimeError):
    """The model cannot be rewritten, or the rewritten model failed verification."""


def rewrite_versions(data: bytes, targets: dict[tuple[int, int], int]) -> bytes:
    """``data`` with node (subgraph, index) stamped ``targets[...]`` and the metadata updated."""
    model = fb.ModelT.InitFromPackedBuf(data, 0)
    for i, buffer in enumerate(model.buffers or []):
        if buffer.offset > 1 or buffer.size > 0:
            raise RewriteError(f"buffer {i} is stored outside the flatbuffer (offset/size); rewriting such files is not supported")
    old_codes = list(model.operatorCodes or [])
    users: dict[int, list[Any]] = {i: [] for i in range(len(old_codes))}
    for s, subgraph in enumerate(model.subgraphs or []):
        for n, operator in enumerate(subgraph.operators or []):
            version = targets.get((s, n), old_codes[operator.opcodeIndex].version)
            users[operator.opcodeIndex].append((operator, version))
    new_codes: list[Any] = []
    index_of: dict[tuple, int] = {}
    for i, code in enumerate(old_codes):
        versions = list(dict.fromkeys(v for _, v in users[i])) or [code.version]
        for version in versions:
            key = (max(code.builtinCode, code.deprecatedBuiltinCode), _text(code.customCode), version)
            if key not in index_of:
                entry = copy.copy(code)
                entry.version = version
                index_of[key] = len(new_codes)
                new_codes.append(entry)
        for operator, version in users[i]:
            operator.opcodeIndex = index_of[(max(code.builtinCode, code.deprecatedBuiltinCode), _text(code.customCode), version)]
    model.operatorCodes = new_codes
    pairs = {
        (max(code.builtinCode, code.deprecatedBuiltinCode), code.version)
        for code in (new_codes[op.opcodeIndex] for subgraph in model.subgraphs or [] for op in subgraph.operators or [])
        if code.customCode is None and max(code.builtinCode, code.deprecatedBuiltinCode) != BuiltinOperator.CUSTOM
    }
    _set_metadata(model, MIN_RUNTIME_VERSION, get_min_runtime_version(pairs).encode("ascii").ljust(MIN_RUNTIME_VERSION_BYTES, b"\0"))
    model.buffers = [_aligned(buffer) for buffer in model.buffers or []]
    builder = flatbuffers.Builder(max(1024, len(data)))
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())


def _text(value: Any) -> str | None:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _set_metadata(model: Any, name: str, value: bytes) -> None:
    for entry in model.metadata or []:
        if _text(entry.name) == name:
            model.buffers[entry.buffer].data = np.frombuffer(value, dtype=np.uint8)
            return
    buffer = fb.BufferT()
    buffer.data = np.frombuffer(value, dtype=np.uint8)
    model.buffers.append(buffer)
    entry = fb.MetadataT()
    entry.name = name
    entry.buffer = len(model.buffers) - 1
    model.metadata = list(model.metadata or []) + [entry]


class _AlignedBufferT(fb.BufferT):
    """A buffer whose data starts on a ``BUFFER_ALIGNMENT`` boundary (as the builder writes them)."""

    def Pack(self, builder):  # noqa: N802 (generated-code naming)
        offset = None
        if self.data is not None and len(self.data):
            payload = np.ascontiguousarray(self.data, dtype=np.uint8).tobytes()
            builder.StartVector(1, len(payload), BUFFER_ALIGNMENT)
            builder.head -= len(payload)
            builder.Bytes[builder.head : builder.head + len(payload)] = payload
            builder.vectorNumElems = len(payload)
            offset = builder.EndVector()
        fb.BufferStart(builder)
        if offset is not None:
            fb.BufferAddData(builder, offset)
        return fb.BufferEnd(builder)


def _aligned(buffer: Any) -> Any:
    result = _AlignedBufferT()
    result.data = buffer.data
    return result


# -- verification ---------------------------------------------------------------------------------

@dataclass
class Verification:
    versions_ok: bool = False
    structure_ok: bool = False
    outputs: str = "not compared"  #: "identical", "differ: ...", or why they were not compared
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.versions_ok and self.structure_ok and not self.outputs.startswith("differ")

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "versions": self.versions_ok, "structure": self.structure_ok, "outputs": self.outputs,
                "problems": self.problems}


def verify(original: bytes, rewritten: bytes, targets: dict[tuple[int, int], int], seed: int = 0) -> Verification:
    """Reload ``rewritten``; check versions, structure and (when the CPU runs it) outputs."""
    result = Verification()
    before, after = Model.from_bytes(original), Model.from_bytes(rewritten)
    for s, (a, b) in enumerate(zip(before.subgraphs, after.subgraphs)):
        for op_a, op_b in zip(a.operators, b.operators):
            want = targets.get((s, op_a.index), op_a.version)
            if op_b.version != want:
                result.problems.append(f"subgraph {s} node {op_a.index}: {op_b.op_name} is v{op_b.version}, expected v{want}")
    result.versions_ok = not result.problems
    structure = _structure_differences(before, after)
    result.problems += structure
    result.structure_ok = not structure
    result.outputs = _compare_outputs(original, rewritten, seed)
    if result.outputs.startswith("differ"):
        result.problems.append(f"outputs {result.outputs}")
    return result


def _tensor_key(tensor) -> tuple:
    """Everything about a tensor that a version rewrite must not change."""
    data = tensor.data
    if data is None:
        value = None
    elif data.dtype == object:  # strings
        value = ("strings", data.shape, tuple(data.flat))
    else:
        value = (data.dtype.str, data.shape, data.tobytes())
    q = tensor.quantization
    quantization = None if q is None else (q.scale.tobytes(), q.zero_point.tobytes(), q.quantized_dimension)
    return (tensor.name, tensor.type, tensor.shape, tensor.shape_signature, tensor.is_variable, value, quantization)


def _operator_key(operator) -> tuple:
    """Everything about a node but its version."""
    return (operator.builtin_code, operator.custom_name, operator.inputs, operator.outputs, operator.intermediates,
            operator.custom_options, repr(operator.params))


def _signature_key(model: Model) -> list:
    return [(s.key, s.subgraph_index, dict(s.inputs), dict(s.outputs)) for s in model.signature_defs]


def _other_metadata(model: Model) -> dict[str, bytes]:
    return {name: value for name, value in model.metadata.items() if name != MIN_RUNTIME_VERSION}


def _structure_differences(a: Model, b: Model) -> list[str]:
    """What differs between the two models besides node versions and min_runtime_version."""
    if len(a.subgraphs) != len(b.subgraphs):
        return [f"{len(b.subgraphs)} subgraphs instead of {len(a.subgraphs)}"]
    problems = []
    for sa, sb in zip(a.subgraphs, b.subgraphs):
        where = f"subgraph {sa.index}"
        shape_a = (sa.inputs, sa.outputs, len(sa.tensors), len(sa.operators))
        if shape_a != (sb.inputs, sb.outputs, len(sb.tensors), len(sb.operators)):
            problems.append(f"{where}: inputs, outputs or counts changed")
            continue
        for ta, tb in zip(sa.tensors, sb.tensors):
            if _tensor_key(ta) != _tensor_key(tb):
                problems.append(f"{where} tensor {ta.index} ({ta.name!r}) changed")
        for oa, ob in zip(sa.operators, sb.operators):
            if _operator_key(oa) != _operator_key(ob):
                problems.append(f"{where} node {oa.index} ({oa.op_name}) changed beyond its version")
    if _signature_key(a) != _signature_key(b):
        problems.append("signature defs changed")
    if _other_metadata(a) != _other_metadata(b):
        problems.append("metadata other than min_runtime_version changed")
    return problems


def _compare_outputs(original: bytes, rewritten: bytes, seed: int) -> str:
    from interpreter import Interpreter
    from interpreter.cli.common import random_value

    try:
        first = Interpreter(model_content=original)
    except Exception as error:
        return f"not compared: the CPU cannot run the original model ({type(error).__name__}: {str(error).splitlines()[0]})"
    try:
        second = Interpreter(model_content=rewritten)
    except Exception as error:
        return f"differ: the rewritten model does not load ({type(error).__name__}: {str(error).splitlines()[0]})"
    results = []
    try:
        for interpreter in (first, second):
            interpreter.allocate_tensors()
            rng = np.random.default_rng(seed)
            for detail in interpreter.get_input_details():
                interpreter.set_tensor(detail["index"], random_value(detail, rng))
            interpreter.invoke()
            results.append([interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()])
    except Exception as error:
        if len(results) == 0:
            return f"not compared: the original model fails on the CPU ({type(error).__name__}: {str(error).splitlines()[0]})"
        return f"differ: the rewritten model fails ({type(error).__name__}: {str(error).splitlines()[0]})"
    for i, (a, b) in enumerate(zip(*results)):
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            return f"differ: output {i}"
    return f"identical ({len(results[0])} output(s), seed {seed})"
