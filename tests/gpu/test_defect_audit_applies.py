"""The device-defect audit (``tests/gpu/put_defects_back.py``, listed in tests/gpu/README.md)
stays repeatable: each defect's one-line edit still finds its line exactly once in the
current code, and the tests it names exist. Running the audit itself takes minutes; this
only checks that it can run, so a change to the delegate cannot silently retire a defect."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("put_defects_back", ROOT / "tests" / "gpu" / "put_defects_back.py")
audit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(audit)


@pytest.mark.parametrize("name", sorted(audit.DEFECTS))
def test_each_defect_edit_applies_exactly_once(name):
    path, line, defect, tests = audit.DEFECTS[name]
    source = (ROOT / path).read_text(encoding="utf-8")
    assert source.count(line) == 1, f"{name}: {path} has {source.count(line)} copies of {line.strip()!r}: update DEFECTS"
    assert defect != line
    for test in tests:
        assert (ROOT / test.split("::")[0]).is_file(), f"{name}: {test} does not exist"
