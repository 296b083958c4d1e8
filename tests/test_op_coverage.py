"""Issue 32, item 5: every (op, version) LiteRT's resolver runs, litedelegate's CPU runs too,
or it is a known gap.

``docs/litert_ops.json`` holds what ai-edge-litert's default and reference resolvers register
(``litedelegate ops --compare-litert``: one one-node model per op and version, refused with
"Didn't find op for builtin opcode" where no kernel is registered). These tests check it
against the installed LiteRT and against ``builtin_op_resolver()``: an (op, version) LiteRT
registers that no CPU kernel runs must be in ``KNOWN_GAPS`` (StableHLO ops:
``KNOWN_STABLEHLO_GAPS``, custom ops: ``KNOWN_CUSTOM_GAPS``), and every entry there must still
be a gap, so that the lists only shrink. ``docs/OPS.md`` and the README's totals are
generated from the same data (``python docs/generate_ops.py``).
"""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: Builtin (op, versions) LiteRT registers and the CPU does not run.
KNOWN_GAPS: dict[str, tuple[int, ...]] = {}

#: The StableHLO builtins LiteRT's resolver registers (the other StableHLO ops of the schema
#: it does not run either) that the CPU does not run.
KNOWN_STABLEHLO_GAPS: dict[str, tuple[int, ...]] = {}

#: LiteRT's default custom ops the CPU does not run.
KNOWN_CUSTOM_GAPS: dict[str, tuple[int, ...]] = {}

GAPS = {"builtin": KNOWN_GAPS, "stablehlo": KNOWN_STABLEHLO_GAPS, "custom": KNOWN_CUSTOM_GAPS}
LIST_NAMES = {"builtin": "KNOWN_GAPS", "stablehlo": "KNOWN_STABLEHLO_GAPS", "custom": "KNOWN_CUSTOM_GAPS"}


def load_generator():
    spec = importlib.util.spec_from_file_location("generate_ops", ROOT / "docs" / "generate_ops.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator():
    return load_generator()


@pytest.fixture(scope="module")
def listed(generator) -> dict:
    """``litedelegate ops --json``."""
    return generator.ours()


@pytest.fixture(scope="module")
def comparison(generator, listed) -> dict:
    from interpreter.cli.ops import compare

    return compare(listed, generator.litert_table())


def pairs(rows, key: str) -> set[tuple[str, int]]:
    return {(row["op"], version) for row in rows for version in row[key]}


# -- the table of LiteRT's versions is LiteRT's --------------------------------------------------------


def test_the_litert_table_is_what_the_installed_litert_registers(generator):
    from interpreter.cli.litert_ops import probe_litert

    committed = generator.litert_table()
    probed = probe_litert().to_json()
    assert probed["builtins"] == committed["builtins"] and probed["custom"] == committed["custom"], (
        f"docs/litert_ops.json ({committed['package']}) differs from what the installed {probed['package']} registers: "
        "run `python docs/generate_ops.py --probe-litert`, then close or list the new gaps"
    )


def test_the_litert_table_holds_the_ops_litert_is_known_to_run(generator):
    """A probe that found nothing (every model refused for another reason) would pass the
    coverage tests; these are known facts of LiteRT 2.x."""
    table = generator.litert_table()
    assert table["builtins"]["CONV_2D"]["builtin"][:6] == [1, 2, 3, 4, 5, 6]
    assert table["builtins"]["ADD_N"]["builtin"] == [1]
    assert "CEIL" in table["builtins"] and table["builtins"]["CEIL"]["builtin_ref"] == []  # no reference CEIL
    assert "STABLEHLO_ABS" not in table["builtins"]
    assert set(table["custom"]) == {"AudioSpectrogram", "Mfcc", "TFLite_Detection_PostProcess"}
    assert len(table["builtins"]) > 150


# -- every (op, version) LiteRT runs runs here, or is a known gap --------------------------------------


@pytest.mark.parametrize("kind", sorted(GAPS))
def test_every_op_version_litert_runs_runs_here_or_is_a_known_gap(comparison, kind):
    rows = [row for row in comparison["ops"] if row["kind"] == kind]
    missing = pairs(rows, "missing")
    known = {(op, version) for op, versions in GAPS[kind].items() for version in versions}
    new = sorted(missing - known)
    assert not new, (
        f"LiteRT runs these {kind} op versions and no CPU kernel does: {new}; implement them "
        f"(docs/ADDING_AN_OP.md) or list them in {LIST_NAMES[kind]}"
    )


@pytest.mark.parametrize("kind", sorted(GAPS))
def test_every_known_gap_is_still_a_gap(comparison, kind):
    rows = {row["op"]: row for row in comparison["ops"]}
    closed, unknown = [], []
    for op, versions in GAPS[kind].items():
        for version in versions:
            row = rows.get(op)
            if row is None or version not in row["litert"]:
                unknown.append((op, version))
            elif version in row["litedelegate"]:
                closed.append((op, version))
    assert not closed, f"these run here now: remove them from {LIST_NAMES[kind]}: {closed}"
    assert not unknown, f"LiteRT does not register these: remove them from {LIST_NAMES[kind]}: {unknown}"


def test_the_gap_lists_are_sorted_within_their_groups_and_hold_each_op_once():
    assert list(KNOWN_STABLEHLO_GAPS) == sorted(KNOWN_STABLEHLO_GAPS)
    assert list(KNOWN_CUSTOM_GAPS) == sorted(KNOWN_CUSTOM_GAPS)
    for versions in (*KNOWN_GAPS.values(), *KNOWN_STABLEHLO_GAPS.values(), *KNOWN_CUSTOM_GAPS.values()):
        assert versions and list(versions) == sorted(set(versions))


# -- the generated table and the README's totals -------------------------------------------------------


def test_the_committed_op_table_equals_a_fresh_generation(generator, listed, comparison):
    committed = (ROOT / "docs" / "OPS.md").read_text(encoding="utf-8")
    assert committed == generator.generate(listed, comparison), "docs/OPS.md is out of date: run `python docs/generate_ops.py`"


def test_the_readme_gives_the_table_totals(generator, comparison):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert generator.readme_with_totals(readme, generator.readme_totals(comparison)) == readme, (
        "the totals in README.md are out of date: run `python docs/generate_ops.py`"
    )


def test_the_table_lists_every_op_the_cpu_runs(listed):
    text = (ROOT / "docs" / "OPS.md").read_text(encoding="utf-8")
    for entry in (*listed["builtins"], *listed["custom"]):
        assert f"| `{entry['op']}` |" in text
