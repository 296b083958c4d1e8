"""docs/GPU_OPS.md is generated from the GPU delegate's support table and op classes: the
committed file must equal a fresh generation, and list every op of the table."""

from __future__ import annotations

import importlib.util
import pathlib

from backends.gpu.ops import gpu_support_table
from schema.enums import builtin_operator_name

ROOT = pathlib.Path(__file__).resolve().parents[2]


def generator():
    spec = importlib.util.spec_from_file_location("generate_gpu_ops", ROOT / "docs" / "generate_gpu_ops.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_gpu_op_table_equals_a_fresh_generation():
    committed = (ROOT / "docs" / "GPU_OPS.md").read_text(encoding="utf-8")
    assert committed == generator().generate(), "docs/GPU_OPS.md is out of date: run `python docs/generate_gpu_ops.py`"


def test_the_table_lists_every_op_the_delegate_claims():
    text = (ROOT / "docs" / "GPU_OPS.md").read_text(encoding="utf-8")
    for op in gpu_support_table():
        assert f"| `{builtin_operator_name(op)}` |" in text
