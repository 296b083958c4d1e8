"""The ``gpu`` marker policy of ``tests/conftest.py``, run in a child pytest on a tiny test
file: without a device a ``gpu`` test is skipped, and with ``REQUIRE_GPU=1`` it FAILS
(exit code 1) saying why, instead of passing as skipped or xfailed.

The child loads the hook from our own ``tests/conftest.py``, so the policy tested is the
one the suite runs under. The device is hidden from the child (``CUDA_VISIBLE_DEVICES=``,
and no ``LITEDELEGATE_TEST_DEVICE``), so this also runs on a GPU machine, unless the device
cannot be hidden there. With a device, the child's ``gpu`` test runs on the device the
suite runs on: a CUDA device, or the emulated one under ``LITEDELEGATE_TEST_DEVICE=emulated``
(through the ``cuda_device`` fixture of ``tests/gpu/conftest.py``).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

OUR_CONFTEST = pathlib.Path(__file__).with_name("conftest.py")
OUR_GPU_CONFTEST = pathlib.Path(__file__).parent / "gpu" / "conftest.py"
PROJECT_ROOT = pathlib.Path(__file__).parents[1]

CHILD_CONFTEST = f"""
import importlib.util

_spec = importlib.util.spec_from_file_location("litedelegate_tests_conftest", {str(OUR_CONFTEST)!r})
_ours = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ours)
pytest_collection_modifyitems = _ours.pytest_collection_modifyitems
"""

CHILD_INI = """[pytest]
markers =
    gpu: needs a real CUDA device
"""

CHILD_TESTS = """
import pytest


@pytest.fixture
def device():
    raise AssertionError("the fixture of a gpu test must not be set up without a device")


@pytest.mark.gpu
def test_needs_a_gpu(device):
    pass


def test_runs_anywhere():
    pass
"""


def _our_conftest():
    spec = importlib.util.spec_from_file_location("litedelegate_tests_conftest_for_check", OUR_CONFTEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _child_env(require_gpu: str | None) -> dict[str, str]:
    hidden = ("REQUIRE_GPU", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "LITEDELEGATE_TEST_DEVICE")
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    env["CUDA_VISIBLE_DEVICES"] = ""  # no device for the child, even on a GPU machine (nor the emulated one)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if require_gpu is not None:
        env["REQUIRE_GPU"] = require_gpu
    return env


@pytest.fixture(scope="module")
def child_dir(tmp_path_factory) -> pathlib.Path:
    if _our_conftest().cuda_device_status()[0]:
        # A device here: check that the child cannot see it, else this test cannot run.
        seen = subprocess.run(
            [sys.executable, "-c", f"import importlib.util as u; s = u.spec_from_file_location('c', {str(OUR_CONFTEST)!r}); "
             "m = u.module_from_spec(s); s.loader.exec_module(m); print(m.cuda_device_status()[0])"],
            env=_child_env(None), capture_output=True, text=True, timeout=120,
        )
        if seen.stdout.strip() != "False":
            pytest.skip(f"this machine has a CUDA device that CUDA_VISIBLE_DEVICES= does not hide ({seen.stdout.strip()!r})")
    directory = tmp_path_factory.mktemp("require_gpu")
    (directory / "conftest.py").write_text(CHILD_CONFTEST)
    (directory / "pytest.ini").write_text(CHILD_INI)
    (directory / "test_child.py").write_text(CHILD_TESTS)
    return directory


def run_child(directory: pathlib.Path, require_gpu: str | None, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(directory / "pytest.ini"),
         "--rootdir", str(directory), "-rfs", "-q", *args, str(directory / "test_child.py")],
        cwd=directory, env=_child_env(require_gpu), capture_output=True, text=True, timeout=300,
    )


def test_require_gpu_makes_a_gpu_test_fail_without_a_device(child_dir):
    result = run_child(child_dir, "1")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "1 failed, 1 passed" in output, output
    assert "FAILED test_child.py::test_needs_a_gpu" in output, output
    assert "REQUIRE_GPU=1 but this machine has no usable CUDA device" in output, output
    # the reason says what is missing: cupy, or the error CuPy raised, or no device
    assert any(why in output for why in ("cupy is not importable", "getDeviceCount() raised", "getDeviceCount() is 0")), output
    assert "xfail" not in output and "error" not in output.splitlines()[-1], output  # FAILED, not an error at set-up
    assert "must not be set up" not in output, output


def test_require_gpu_fails_the_gpu_tests_that_m_gpu_selects(child_dir):
    result = run_child(child_dir, "1", "-m", "gpu")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "1 failed, 1 deselected" in output, output


def test_without_require_gpu_a_gpu_test_is_skipped_and_the_run_passes(child_dir):
    for require_gpu in (None, "0"):
        result = run_child(child_dir, require_gpu)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        assert "1 passed, 1 skipped" in output, output
        assert "SKIPPED" in output and "needs a CUDA device" in output and "REQUIRE_GPU=1 fails instead" in output, output


CHILD_DEVICE_CONFTEST = CHILD_CONFTEST + f"""
_gpu_spec = importlib.util.spec_from_file_location("litedelegate_tests_gpu_conftest", {str(OUR_GPU_CONFTEST)!r})
_gpu = importlib.util.module_from_spec(_gpu_spec)
_gpu_spec.loader.exec_module(_gpu)
cuda_device = _gpu.cuda_device
"""

CHILD_DEVICE_TEST = """
import numpy as np
import pytest


@pytest.mark.gpu
def test_sees_the_device(cuda_device):
    device = cuda_device()
    with device.active():
        values = device.upload(np.arange(4, dtype=np.float32))
        assert device.download(values * 2).tolist() == [0.0, 2.0, 4.0, 6.0]
"""


@pytest.mark.gpu
def test_with_a_device_a_gpu_test_runs_under_require_gpu(tmp_path):
    (tmp_path / "conftest.py").write_text(CHILD_DEVICE_CONFTEST)
    (tmp_path / "pytest.ini").write_text(CHILD_INI)
    (tmp_path / "test_child.py").write_text(CHILD_DEVICE_TEST)
    env = _child_env("1")
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    else:
        del env["CUDA_VISIBLE_DEVICES"]
    if "LITEDELEGATE_TEST_DEVICE" in os.environ:  # the device this suite runs its gpu tests on
        env["LITEDELEGATE_TEST_DEVICE"] = os.environ["LITEDELEGATE_TEST_DEVICE"]
    env["PYTHONPATH"] = os.pathsep.join([str(PROJECT_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(tmp_path / "pytest.ini"),
         "--rootdir", str(tmp_path), "-q", str(tmp_path / "test_child.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "1 passed" in output, output
