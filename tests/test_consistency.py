"""Consistency across the versioning procedure (the project's "OpversionMissing" test).

Adding a parameter to an op touches several places (schema, params, parser, kernel
registration, op_version, runtime_version, delegate tables); these tests catch a
missed step.
"""

from __future__ import annotations

import pathlib

import pytest

from backends.cpu import builtin_op_resolver
from backends.gpu.ops import gpu_support_table
from interpreter.example_model import build_example_model
from schema.enums import BuiltinOperator
from schema.model import Model
from schema.versioning.op_signature import op_signature_from_tensors
from schema.versioning.op_version import get_builtin_operator_version
from schema.versioning.runtime_version import LITEDELEGATE_MIN_RUNTIME_VERSIONS, TFLITE_MIN_RUNTIME_VERSIONS

MODELS = pathlib.Path(__file__).parent / "data" / "models"


@pytest.fixture(scope="module")
def registered() -> set[tuple[int, int]]:
    return set(builtin_op_resolver().registered_builtins())


def name(pair) -> str:
    return f"{BuiltinOperator(pair[0]).name} v{pair[1]}"


def test_every_registered_op_version_has_a_litedelegate_release(registered):
    missing = sorted(registered - set(LITEDELEGATE_MIN_RUNTIME_VERSIONS))
    assert not missing, f"add these to LITEDELEGATE_MIN_RUNTIME_VERSIONS: {[name(p) for p in missing]}"


def test_every_litedelegate_release_entry_is_registered(registered):
    stale = sorted(set(LITEDELEGATE_MIN_RUNTIME_VERSIONS) - registered)
    assert not stale, f"no kernel runs these, remove them: {[name(p) for p in stale]}"


def test_every_registered_op_version_exists_in_tflite(registered):
    unknown = sorted(registered - set(TFLITE_MIN_RUNTIME_VERSIONS))
    assert not unknown, f"TFLite has no such op version: {[name(p) for p in unknown]}"


def signature_versions(model: Model):
    for subgraph in model.subgraphs:
        for op in subgraph.operators:
            if op.builtin_code == BuiltinOperator.CUSTOM:
                continue
            signature = op_signature_from_tensors(
                BuiltinOperator(op.builtin_code),
                op.params,
                [subgraph.tensors[i] if i >= 0 else None for i in op.inputs],
                [subgraph.tensors[i] for i in op.outputs],
            )
            yield op, get_builtin_operator_version(signature)


FLOAT_MODELS = sorted(MODELS.glob("converter/*_float32.tflite")) + [MODELS / "real" / "mp_face_detection_short_range.tflite"]


@pytest.mark.parametrize("path", FLOAT_MODELS, ids=lambda p: p.stem)
def test_versions_computed_for_float_models_are_registered(registered, path):
    for op, version in signature_versions(Model.from_path(path)):
        assert (op.builtin_code, version) in registered, f"get_builtin_operator_version gives {op.op_name} v{version}, which no kernel runs"


def test_versions_computed_for_the_example_model_are_registered(registered):
    for op, version in signature_versions(Model.from_bytes(build_example_model())):
        assert (op.builtin_code, version) in registered


def test_the_gpu_delegate_claims_no_version_the_cpu_cannot_fall_back_to(registered):
    for op, entry in gpu_support_table().items():
        for version in (range(1, entry + 1) if isinstance(entry, int) else entry):
            if (op, version) in TFLITE_MIN_RUNTIME_VERSIONS:
                assert (op, version) in registered, f"GpuDelegate claims {name((op, version))} but the CPU has no kernel for it"
