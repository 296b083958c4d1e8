"""docs/API.md is generated from the docstrings: the committed file must equal a fresh generation."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_generator():
    spec = importlib.util.spec_from_file_location("generate_api", ROOT / "docs" / "generate_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_api_reference_equals_a_fresh_generation():
    committed = (ROOT / "docs" / "API.md").read_text(encoding="utf-8")
    assert committed == load_generator().generate(), (
        "docs/API.md is out of date with the docstrings: run `python docs/generate_api.py` and commit the result"
    )


def test_the_reference_covers_the_public_api():
    text = (ROOT / "docs" / "API.md").read_text(encoding="utf-8")
    for name in ("interpreter.Interpreter", "interpreter.SignatureRunner", "interpreter.DelegationReport",
                 "Interpreter.modify_graph_with_delegate", "Interpreter.invoke_profiled", "delegate_sdk.SimpleDelegate",
                 "delegate_sdk.MutableOpResolver", "MutableOpResolver.as_of_release", "delegate_sdk.testing.single_op_model",
                 "backends.gpu.GpuDelegate", "backends.cpu.builtin_op_resolver", "schema.model.Model",
                 "schema.builder.ModelBuilder", "schema.versioning.get_builtin_operator_version",
                 "schema.versioning.get_min_runtime_version", "schema.custom_options.FlexbufferMap",
                 "interpreter.batch.Predictor", "interpreter.batch.run_batch"):
        assert f"`{name}" in text, name
