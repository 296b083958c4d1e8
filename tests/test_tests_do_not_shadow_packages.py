"""No folder of tests/ is named like a package of the project.

tests/ is on ``sys.path`` (tests/conftest.py puts it first, so that tests can ``import
oracle``), and a script run from tests/ has it there too. A folder without ``__init__.py``
named ``interpreter`` there is a namespace package: with the project installed in editable
mode (its import hook comes after the path search), ``import interpreter`` then found that
empty folder instead of the runtime ("cannot import name 'Interpreter' from 'interpreter'
(unknown location)"). The tests of each package live in ``tests/<package>_tests/``.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("schema", "delegate_sdk", "backends", "interpreter")


def test_no_folder_of_tests_is_named_like_a_package_of_the_project():
    shadowing = sorted(p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name in PACKAGES)
    assert not shadowing, f"rename tests/{shadowing[0]}/ (e.g. tests/{shadowing[0]}_tests/): it shadows the package"


def test_importing_the_packages_from_tests_finds_the_packages_or_nothing():
    """From tests/ without the root on the path: the installed packages (editable or not),
    or ModuleNotFoundError where none is installed, never a folder of tests."""
    script = (
        "import importlib, json\n"
        "found = {}\n"
        f"for name in {PACKAGES!r}:\n"
        "    try:\n"
        "        found[name] = getattr(importlib.import_module(name), '__file__', None) or 'a namespace package'\n"
        "    except ModuleNotFoundError:\n"
        "        found[name] = None\n"
        "print(json.dumps(found))\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], cwd=ROOT / "tests", capture_output=True, text=True,
                               env={"PATH": "", "PYTHONNOUSERSITE": "1"}, timeout=60)
    assert completed.returncode == 0, completed.stderr
    import json

    for name, where in json.loads(completed.stdout).items():
        assert where is None or where.endswith("__init__.py"), f"import {name} from tests/ found {where}"
