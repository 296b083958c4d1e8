"""Runtime-version tables and helpers (TFLite's runtime_version.cc, and ours)."""

from __future__ import annotations

import itertools
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from schema.enums import BuiltinOperator
from schema.versioning.runtime_version import (
    CURRENT_RELEASE,
    LITEDELEGATE_MIN_RUNTIME_VERSIONS,
    LITEDELEGATE_RELEASES,
    TFLITE_MIN_RUNTIME_VERSIONS,
    UnknownOpVersionError,
    compare_versions,
    get_min_runtime_version,
    installed_release,
    release_adding,
)

B = BuiltinOperator

ORDERED_RELEASES = ["1.5.0", "1.9", "1.13", "1.14", "1.14.0", "1.14.1", "2.0.0", "2.14.4", "2.22.0", ""]


# ---------------------------------------------------------------------------
# compare_versions
# ---------------------------------------------------------------------------


def test_compare_versions_orders_components_numerically():
    assert compare_versions("1.9", "1.13") < 0
    assert compare_versions("1.13", "1.14") < 0
    assert compare_versions("1.14", "1.14.1") < 0
    assert compare_versions("2.9.0", "2.10.0") < 0


def test_compare_versions_of_equal_strings_is_zero():
    assert compare_versions("2.3.0", "2.3.0") == 0
    assert compare_versions("", "") == 0


def test_compare_versions_treats_a_strict_prefix_as_older_like_tflite():
    assert compare_versions("1.14", "1.14.0") < 0


def test_compare_versions_puts_the_empty_string_after_every_release():
    assert compare_versions("", "99.0.0") > 0
    assert compare_versions("0.1.0", "") < 0


@pytest.mark.parametrize("a, b", list(itertools.combinations(ORDERED_RELEASES, 2)))
def test_compare_versions_is_a_consistent_total_order(a, b):
    assert compare_versions(a, b) == -1 and compare_versions(b, a) == 1


def test_compare_versions_rejects_a_non_numeric_component():
    with pytest.raises(ValueError, match="2.x"):
        compare_versions("2.x", "2.1")


# ---------------------------------------------------------------------------
# get_min_runtime_version
# ---------------------------------------------------------------------------


def test_dilated_depthwise_conv_needs_tflite_1_12_0():
    assert get_min_runtime_version([(B.DEPTHWISE_CONV_2D, 2)]) == "1.12.0"


def test_model_minimum_is_the_newest_release_over_its_ops():
    pairs = [(B.CONV_2D, 1), (B.DEPTHWISE_CONV_2D, 2), (B.FULLY_CONNECTED, 4), (B.SOFTMAX, 1)]
    assert get_min_runtime_version(pairs) == "1.14.0"


def test_min_runtime_version_compares_numerically_not_as_text():
    assert get_min_runtime_version([(B.TILE, 1), (B.DEPTHWISE_CONV_2D, 2)]) == "1.12.0"  # "1.10.1" < "1.12.0"
    assert get_min_runtime_version([(B.RELU_0_TO_1, 1), (B.RELU, 3)]) == "2.10.0"  # "2.5.0" < "2.10.0"


def test_min_runtime_version_accepts_plain_integer_op_codes():
    assert get_min_runtime_version([(int(B.DEPTHWISE_CONV_2D), 2)]) == "1.12.0"


def test_an_op_version_missing_from_the_table_is_skipped_by_default_like_tflite():
    assert get_min_runtime_version([(B.DEPTHWISE_CONV_2D, 2), (B.CONV_2D, 99)]) == "1.12.0"


def test_only_unknown_op_versions_give_the_empty_string_like_tflite():
    assert get_min_runtime_version([(B.CONV_2D, 99)]) == ""


def test_a_model_without_ops_gives_the_empty_string():
    assert get_min_runtime_version([]) == ""


def test_strict_mode_raises_for_an_op_version_missing_from_the_table():
    with pytest.raises(UnknownOpVersionError, match="CONV_2D version 99"):
        get_min_runtime_version([(B.DEPTHWISE_CONV_2D, 2), (B.CONV_2D, 99)], strict=True)


def test_an_unreleased_entry_is_skipped_by_default():
    table = {(B.ADD, 1): "0.1.0", (B.ADD, 2): ""}
    assert get_min_runtime_version([(B.ADD, 1), (B.ADD, 2)], table) == "0.1.0"


def test_an_unreleased_entry_makes_the_strict_minimum_unreleased():
    table = {(B.ADD, 1): "0.1.0", (B.ADD, 2): ""}
    assert get_min_runtime_version([(B.ADD, 2), (B.ADD, 1)], table, strict=True) == ""


def test_min_runtime_version_can_use_the_litedelegate_table():
    assert get_min_runtime_version([(B.DEPTHWISE_CONV_2D, 2)], LITEDELEGATE_MIN_RUNTIME_VERSIONS) == "0.1.0"


# ---------------------------------------------------------------------------
# release_adding
# ---------------------------------------------------------------------------


def test_release_adding_names_the_release_of_a_listed_op_version():
    assert release_adding(B.DEPTHWISE_CONV_2D, 2, TFLITE_MIN_RUNTIME_VERSIONS) == "1.12.0"


def test_release_adding_is_none_for_an_op_version_not_listed():
    assert release_adding(B.DEPTHWISE_CONV_2D, 99, TFLITE_MIN_RUNTIME_VERSIONS) is None


def test_release_adding_is_the_empty_string_for_an_unreleased_entry():
    assert release_adding(B.ADD, 7, {(B.ADD, 7): ""}) == ""


# ---------------------------------------------------------------------------
# TFLite's table (facts from runtime_version.cc)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, version, release",
    [
        (B.CONV_2D, 1, "1.5.0"), (B.CONV_2D, 3, "1.14.0"), (B.CONV_2D, 8, "2.15.0"),
        (B.DEPTHWISE_CONV_2D, 3, "1.14.0"), (B.FULLY_CONNECTED, 4, "1.14.0"),
        (B.FULLY_CONNECTED, 14, "2.21.0"), (B.TRANSPOSE, 7, "2.14.4"), (B.TILE, 1, "1.10.1"),
        (B.BROADCAST_TO, 2, "2.5.0"), (B.WHERE, 2, "2.8.0"), (B.STABLEHLO_CASE, 1, "2.17.0"),
    ],
)
def test_tflite_table_holds_tflite_facts(op, version, release):
    assert TFLITE_MIN_RUNTIME_VERSIONS[(op, version)] == release


def test_tflite_table_has_no_broadcast_to_version_1():
    assert (B.BROADCAST_TO, 1) not in TFLITE_MIN_RUNTIME_VERSIONS


def _versions_by_op(table):
    by_op = defaultdict(dict)
    for (op, version), release in table.items():
        by_op[op][version] = release
    return by_op


def test_tflite_table_lists_consecutive_versions_of_each_op():
    for op, releases in _versions_by_op(TFLITE_MIN_RUNTIME_VERSIONS).items():
        first = 2 if op == B.BROADCAST_TO else 1
        assert sorted(releases) == list(range(first, first + len(releases))), B(op).name


def test_tflite_table_never_makes_a_higher_version_older():
    for op, releases in _versions_by_op(TFLITE_MIN_RUNTIME_VERSIONS).items():
        ordered = [releases[v] for v in sorted(releases)]
        assert all(compare_versions(a, b) <= 0 for a, b in zip(ordered, ordered[1:])), B(op).name


def test_tflite_table_keys_are_builtin_operators_and_values_are_release_strings():
    for (op, version), release in TFLITE_MIN_RUNTIME_VERSIONS.items():
        assert isinstance(op, BuiltinOperator) and isinstance(version, int) and version >= 1
        assert release == "" or compare_versions(release, "1.0") > 0


# ---------------------------------------------------------------------------
# litedelegate's table
# ---------------------------------------------------------------------------


def test_current_release_is_0_1_0():
    assert CURRENT_RELEASE == "0.1.0"


def test_current_release_matches_the_project_version():
    if sys.version_info < (3, 11):
        pytest.skip("tomllib needs Python 3.11")
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    assert tomllib.loads(pyproject.read_text())["project"]["version"] == CURRENT_RELEASE


def test_installed_release_is_a_release_string():
    assert compare_versions(installed_release(), "0.0.1") >= 0


def test_litedelegate_entries_are_released_no_later_than_the_current_release():
    for key, release in LITEDELEGATE_MIN_RUNTIME_VERSIONS.items():
        assert release == "" or compare_versions(release, CURRENT_RELEASE) <= 0, key


def test_litedelegate_table_only_lists_op_versions_tflite_defines():
    assert set(LITEDELEGATE_MIN_RUNTIME_VERSIONS) <= set(TFLITE_MIN_RUNTIME_VERSIONS)


def test_litedelegate_table_starts_with_depthwise_conv_2d_dilation():
    assert release_adding(B.DEPTHWISE_CONV_2D, 2, LITEDELEGATE_MIN_RUNTIME_VERSIONS) == "0.1.0"


def test_the_release_groups_list_each_op_version_once_by_op_name():
    seen: dict[tuple[int, int], str] = {}
    for release, ops in LITEDELEGATE_RELEASES.items():
        assert list(ops) == sorted(ops, key=lambda op: op.name), f"release {release}: keep its ops in name order"
        for op, versions in ops.items():
            assert versions and list(versions) == sorted(set(versions)), f"{op.name} in {release}: versions ascending, once"
            for version in versions:
                assert (op, version) not in seen, f"{op.name} v{version} is in release {seen[(op, version)]} and {release}"
                seen[(op, version)] = release
    assert seen == LITEDELEGATE_MIN_RUNTIME_VERSIONS


def test_new_op_versions_go_in_the_group_of_the_release_being_developed():
    assert list(LITEDELEGATE_RELEASES)[-1] == CURRENT_RELEASE
