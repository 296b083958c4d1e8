"""Fixtures of the command-line tests (the helpers live in ``cli_helpers``)."""

from __future__ import annotations

import pathlib

import pytest

from cli_helpers import run_cli, write_built_models


@pytest.fixture
def cli():
    """``cli(*args)`` runs ``python -m interpreter *args`` and returns its exit code and output."""
    return run_cli


@pytest.fixture(scope="session")
def built_models(tmp_path_factory) -> dict[str, pathlib.Path]:
    """Models built for these tests (over-stamped, with a custom op, with IF), as files."""
    return write_built_models(tmp_path_factory.mktemp("cli_models"))
