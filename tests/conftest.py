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


def cuda_device_status() -> tuple[bool, str]:
    """``(True, "")`` when CuPy sees a CUDA device, else ``(False, why)``: cupy missing,
    the error CuPy raised while counting devices (no driver...), or no device.
    ``LITEDELEGATE_TEST_DEVICE=emulated`` runs the ``gpu`` tests on the emulated CUDA
    device instead (``tests/gpu/conftest.py``), as the device check's ``--host`` does."""
    if os.environ.get("LITEDELEGATE_TEST_DEVICE") == "emulated":
        return True, ""
    try:
        import cupy
    except Exception as error:  # ImportError, or a broken install failing at import
        return False, f"cupy is not importable ({type(error).__name__}: {error})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # cupy raises CUDARuntimeError subclasses
        return False, f"no usable CUDA driver or device (cupy.cuda.runtime.getDeviceCount() raised {type(error).__name__}: {error})"
    if count <= 0:
        return False, "no CUDA device (cupy.cuda.runtime.getDeviceCount() is 0)"
    return True, ""


def require_gpu() -> bool:
    """``REQUIRE_GPU=1`` (any value but empty or ``0``): a missing device fails ``gpu`` tests."""
    return os.environ.get("REQUIRE_GPU", "") not in ("", "0")


class MissingDeviceFailure(pytest.Item):
    """Stands in for a ``gpu`` test under ``REQUIRE_GPU=1`` on a machine without a usable
    device: it fails with the reason, in the call phase (reported ``FAILED``, not skipped,
    not an error), and sets up none of the real test's fixtures (they would need the device)."""

    def __init__(self, *, reason: str, original: pytest.Item, **kwargs) -> None:
        super().__init__(**kwargs)
        self.reason = reason
        self._reportinfo = original.reportinfo()
        self.own_markers.extend(original.own_markers)  # still a `gpu` test for -m and plugins

    def runtest(self) -> None:
        pytest.fail(
            f"REQUIRE_GPU=1 but this machine has no usable CUDA device, so this gpu test cannot run: {self.reason}",
            pytrace=False,
        )

    def reportinfo(self):
        return self._reportinfo


@pytest.hookimpl(trylast=True)  # after -m/-k have deselected what they deselect
def pytest_collection_modifyitems(config, items):
    """Skip ``gpu`` tests without a device; with ``REQUIRE_GPU=1`` each of them fails instead."""
    gpu_items = [i for i, item in enumerate(items) if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    has_device, reason = cuda_device_status()
    if has_device:
        return
    for i in gpu_items:
        item = items[i]
        if require_gpu():
            items[i] = MissingDeviceFailure.from_parent(item.parent, name=item.name, reason=reason, original=item)
        else:
            item.add_marker(pytest.mark.skip(reason=f"needs a CUDA device: {reason} (REQUIRE_GPU=1 fails instead)"))
