"""Consistency across the versioning procedure (the project's "OpversionMissing" test).

Adding an op, or a parameter to an op, touches several places (schema, params, parser,
kernel registration, arity, recipe, op_version, runtime_version, delegate tables, the test
against LiteRT: docs/ADDING_AN_OP.md); these tests catch a missed step.
"""

from __future__ import annotations

import dataclasses

import pathlib

import pytest

from backends.cpu import builtin_op_resolver
from backends.gpu.ops import gpu_support_table
from delegate_sdk.recipes import VERSION_RECIPES
from interpreter.example_model import build_example_model
from schema.enums import BuiltinOperator
from schema.model import Model
from schema.op_arity import ARITY
from schema.versioning.op_signature import op_signature_from_tensors
from schema.versioning.op_version import get_builtin_operator_version
from schema.versioning.runtime_version import LITEDELEGATE_MIN_RUNTIME_VERSIONS, TFLITE_MIN_RUNTIME_VERSIONS

MODELS = pathlib.Path(__file__).parent / "data" / "models"


@pytest.fixture(scope="module")
def registered() -> set[tuple[int, int]]:
    return set(builtin_op_resolver().registered_builtins())


def name(pair) -> str:
    return f"{BuiltinOperator(pair[0]).name} v{pair[1]}"


#: Each custom op the CPU registers, and the test (``path::name``) that compares it with
#: LiteRT (or, for an op LiteRT lacks, with LiteRT running an equivalent builtin model).
CUSTOM_OP_TESTS: dict[str, str] = {
    "AudioSpectrogram": "tests/cpu/test_audio_custom_ops.py::test_audio_spectrogram_matches_litert",
    "Convolution2DTransposeBias": "tests/cpu/test_mediapipe_custom.py::test_matches_litert_on_the_equivalent_transpose_conv",
    # MediaPipe's attention face-mesh ops (LiteRT lacks them): direct ports of MediaPipe's loops.
    "Landmarks2TransformMatrix": "tests/cpu/test_mediapipe_attention.py::test_matrix_equals_mediapipes_loops_on_random_landmarks",
    "TransformLandmarks": "tests/cpu/test_mediapipe_attention.py::test_landmarks_equal_mediapipes_loops_on_random_matrices",
    "TransformTensorBilinear": "tests/cpu/test_mediapipe_attention.py::test_bilinear_equals_mediapipes_loops_on_random_matrices",
    "Mfcc": "tests/cpu/test_audio_custom_ops.py::test_mfcc_matches_litert",
    "TFLite_Detection_PostProcess": (
        "tests/cpu/test_detection_postprocess.py::test_ssd_model_ending_in_detection_postprocess_gives_litert_outputs"
    ),
}


def missing_steps(pair, compared_with_litert) -> list[str]:
    """What the registered builtin ``pair`` still lacks of docs/ADDING_AN_OP.md."""
    lacks = []
    if pair[0] not in ARITY:
        lacks.append("an arity entry (schema/op_arity.py, ARITY)")
    entry = VERSION_RECIPES.get(pair)
    if entry is None:
        lacks.append("a recipe (delegate_sdk/recipes/<family>.py)")
    elif entry.family == "dry run only":
        lacks.append("a recipe the CPU runs (move it from delegate_sdk/recipes/dry_run.py to its family's module)")
    if pair not in LITEDELEGATE_MIN_RUNTIME_VERSIONS:
        lacks.append("a release entry (schema/versioning/runtime_version.py, LITEDELEGATE_RELEASES[CURRENT_RELEASE])")
    if not compared_with_litert(pair):
        lacks.append("a test against LiteRT (tests/test_ops_against_litert.py runs its recipe, or NOT_COMPARED names one)")
    return lacks


def test_every_registered_op_version_has_an_arity_entry_a_recipe_a_release_and_a_test_against_litert(registered):
    from test_ops_against_litert import COMPARED, NOT_COMPARED

    def compared_with_litert(pair) -> bool:
        runnable = pair in VERSION_RECIPES and VERSION_RECIPES[pair].family != "dry run only"
        return (pair in COMPARED and runnable) or pair in NOT_COMPARED

    incomplete = {name(pair): lacks for pair in sorted(registered) if (lacks := missing_steps(pair, compared_with_litert))}
    assert not incomplete, "registered op versions with steps missing (docs/ADDING_AN_OP.md):\n" + "\n".join(
        f"  {pair}: lacks {', '.join(lacks)}" for pair, lacks in incomplete.items()
    )


def test_the_completeness_check_names_each_missing_step():
    never = BuiltinOperator.DELEGATE, 1  # not an op: no kernel, no recipe, no release entry, no arity entry
    assert missing_steps(never, lambda pair: False) == [
        "an arity entry (schema/op_arity.py, ARITY)",
        "a recipe (delegate_sdk/recipes/<family>.py)",
        "a release entry (schema/versioning/runtime_version.py, LITEDELEGATE_RELEASES[CURRENT_RELEASE])",
        "a test against LiteRT (tests/test_ops_against_litert.py runs its recipe, or NOT_COMPARED names one)",
    ]
    dry = (int(BuiltinOperator.FULLY_CONNECTED), 2)
    saved = VERSION_RECIPES[dry]
    VERSION_RECIPES[dry] = dataclasses.replace(saved, family="dry run only")
    try:
        assert "a recipe the CPU runs" in missing_steps(dry, lambda pair: True)[0]
    finally:
        VERSION_RECIPES[dry] = saved


def test_every_custom_op_the_cpu_registers_names_its_test_against_litert():
    customs = {op for op, _ in builtin_op_resolver().registered_customs()}
    assert customs == set(CUSTOM_OP_TESTS), f"list the test of each custom op in CUSTOM_OP_TESTS: {sorted(customs)}"
    for op, where in CUSTOM_OP_TESTS.items():
        path, test = where.split("::")
        assert f"def {test}(" in (pathlib.Path(__file__).parents[1] / path).read_text(encoding="utf-8"), f"{op}: no {where}"


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
