"""Every code block of README.md and docs/*.md runs as a test.

- ``python`` blocks run, in order, in one namespace per file, in a scratch directory that
  holds the ``model.tflite`` (and ``dilated.tflite``) they name: the example model. A block
  whose comments show an error (``# UnsupportedOperatorError: ...``) must raise that error;
  ``test_*`` functions a block defines are called. A block that needs a CUDA GPU runs again
  on the emulated device (``GpuDelegate(device="host")``) on a machine without one. In docs/API.md (generated) the signature blocks must parse as Python
  signatures, and the ``>>>`` examples run.
- Console transcripts (``$ litedelegate ...``) run the command and must give the exit code
  the transcript shows (``echo $?``, else 0) and every line it shows, except ``...`` and
  lines with timings (``ms``).
- ``bash`` blocks: commands that set up an environment (venv, pip) or would run the whole
  test suite or a GPU are checked, not run (the extras, modules and files they name must
  exist); ``python -m interpreter ...`` runs.
- The schema snippet in "Adding a parameter to an op" must be in ``schema/schema.fbs``.
"""

from __future__ import annotations

import os
import pathlib
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)\s*$")


@dataclass
class Block:
    path: pathlib.Path
    line: int
    lang: str
    text: str
    heading: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks_of(path: pathlib.Path) -> list[Block]:
    blocks, heading, inside = [], "", None
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, 1):
        if inside is None:
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
            match = FENCE.match(line)
            if match:
                inside = (number, match["indent"], match["lang"], [])
            continue
        start, indent, lang, body = inside
        if line.strip() == "```":
            text = "\n".join(b[len(indent):] if b.startswith(indent) else b.lstrip() for b in body)
            blocks.append(Block(path, start, lang, text, heading))
            inside = None
        else:
            body.append(line)
    assert inside is None, f"{path}: a code block opened at line {inside[0]} is not closed"
    return blocks


ALL_BLOCKS = [block for path in DOCUMENTS for block in blocks_of(path)]


def test_the_documents_have_code_blocks():
    kinds = {(b.path.name, b.lang) for b in ALL_BLOCKS}
    assert ("README.md", "python") in kinds and ("WRITING_A_DELEGATE.md", "python") in kinds


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A directory holding the files the examples name, as the current directory."""
    from interpreter.example_model import build_example_model

    model = build_example_model()
    for name in ("model.tflite", "dilated.tflite"):
        (tmp_path / name).write_bytes(model)
    for name in ("tests", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))  # `from examples.toy_npu import ...`, as from the repository root
    return tmp_path


@pytest.fixture
def keep_recipes():
    from delegate_sdk.recipes import VERSION_RECIPES

    saved = dict(VERSION_RECIPES)
    yield
    VERSION_RECIPES.clear()
    VERSION_RECIPES.update(saved)


# -- python ----------------------------------------------------------------------------------------


def _expected_errors(code: str) -> set[str]:
    return set(re.findall(r"^\s*#\s*([A-Z]\w*(?:Error|Exception)):", code, flags=re.M))


def _host_gpu_delegate(*args, **kwargs):
    """``GpuDelegate`` on the emulated device, for the GPU examples on a machine without one."""
    from backends.gpu import GpuDelegate

    if not args:
        kwargs.setdefault("device", "host")
    return GpuDelegate(*args, **kwargs)


def run_python(block: Block, namespace: dict) -> None:
    from backends.gpu import GpuUnavailableError

    before = set(namespace)
    expected = _expected_errors(block.text)
    code = block.text
    try:
        exec(compile(code, block.id, "exec"), namespace)  # noqa: S102 (the documentation's own code)
    except GpuUnavailableError:
        # No usable GPU here: run the block again on the emulated device (host emulation).
        namespace["_host_gpu_delegate"] = _host_gpu_delegate
        code = re.sub(r"\bGpuDelegate\(", "_host_gpu_delegate(", code)
        exec(compile(code, block.id + " (host emulation)", "exec"), namespace)  # noqa: S102
    except Exception as error:  # noqa: BLE001
        if type(error).__name__ in expected:
            return
        raise AssertionError(f"{block.id} ({block.heading!r}) raised {type(error).__name__}: {error}") from error
    assert not expected, f"{block.id}: its comments show {sorted(expected)}, but it raised nothing"
    for name in sorted(set(namespace) - before):
        if name.startswith("test_") and callable(namespace[name]):
            namespace[name]()


def python_documents() -> list[pathlib.Path]:
    return [p for p in DOCUMENTS if p.name != "API.md" and any(b.lang == "python" for b in blocks_of(p))]


@pytest.mark.parametrize("path", python_documents(), ids=lambda p: p.name)
def test_python_blocks_run(path, scratch, keep_recipes):
    namespace: dict = {"__name__": f"docs_{path.stem}"}
    for block in blocks_of(path):
        if block.lang == "python":
            run_python(block, namespace)


API_BLOCKS = [b for b in ALL_BLOCKS if b.path.name == "API.md" and b.lang == "python"]


@pytest.mark.parametrize("block", API_BLOCKS, ids=lambda b: b.id)
def test_api_reference_blocks_are_python(block, scratch):
    if block.text.lstrip().startswith(">>>"):
        code = "\n".join(line[4:] for line in block.text.splitlines() if line.startswith((">>> ", "... ")))
        namespace: dict = {"np": np}
        exec("from schema.builder import *\nfrom schema.enums import *\nfrom schema.params import *", namespace)
        exec(compile(code, block.id, "exec"), namespace)  # noqa: S102
        return
    signature = re.sub(r"\s+#.*$", "", block.text.strip())  # "Allocation  # enum"
    if signature.isidentifier():
        compile(f"class {signature}:\n    ...", block.id, "exec")
        return
    name = signature.split("(", 1)[0]
    assert name.isidentifier(), f"{block.id}: not a signature: {signature[:60]!r}"
    signature = re.sub(r"<[^<>]*>", "...", signature)  # reprs in defaults: <factory>, <BuiltinOperator.ADD: 0>
    compile(f"def {signature}:\n    ...", block.id, "exec")


# -- the README's delegate on a model with fused activations ----------------------------------------


def _writing_a_delegate_code() -> str:
    (block,) = [b for b in ALL_BLOCKS if b.path.name == "README.md" and b.heading == "Writing a delegate"
                and "class AddMulDelegate" in b.text]
    return block.text


def fused_model() -> bytes:
    from schema.builder import ModelBuilder
    from schema.enums import ActivationFunctionType as A
    from schema.enums import BuiltinOperator as B
    from schema.params import AddParams, MulParams

    builder = ModelBuilder()
    g = builder.subgraph()
    a, b, c = (g.add_input(n, [1, 4, 4, 3]) for n in "abc")
    t1, t2, t3, out = (g.add_tensor(n, [1, 4, 4, 3]) for n in ("t1", "t2", "t3", "out"))
    g.add_operator(B.ADD, [a, b], [t1], AddParams(fused_activation_function=A.RELU))
    g.add_operator(B.MUL, [t1, c], [t2], MulParams(fused_activation_function=A.RELU))
    g.add_operator(B.ADD, [t2, a], [t3], AddParams(fused_activation_function=A.RELU6))  # refused: RELU6
    g.add_operator(B.MUL, [t3, b], [out], MulParams())
    g.add_output(out)
    return builder.build()


def test_the_readme_delegate_gives_the_cpu_outputs_on_a_model_with_fused_activations():
    from interpreter.testing import assert_matches_cpu

    namespace: dict = {"__name__": "readme_delegate"}
    exec(compile(_writing_a_delegate_code(), "README.md (Writing a delegate)", "exec"), namespace)  # noqa: S102
    interpreter = assert_matches_cpu(fused_model(), namespace["AddMulDelegate"], rtol=0, atol=0, invokes=3)
    placements = interpreter.node_placements()
    assert [p.runs_on for p in placements] == ["AddMulDelegate", "AddMulDelegate", "CPU", "AddMulDelegate"]
    assert placements[2].rejections == ("ADD v1: fused activation RELU6 is not supported",)


def test_the_example_file_behaves_as_its_outline(monkeypatch):
    from interpreter.testing import assert_matches_cpu

    monkeypatch.syspath_prepend(str(ROOT))
    from examples.add_mul_delegate import AddMulDelegate

    interpreter = assert_matches_cpu(fused_model(), AddMulDelegate, rtol=0, atol=0, invokes=2)
    assert [p.runs_on for p in interpreter.node_placements()] == ["AddMulDelegate", "AddMulDelegate", "CPU", "AddMulDelegate"]


def test_a_delegate_that_drops_the_fused_activation_is_caught():
    """What the issue saw: the README's old outline ignored the activation."""
    from interpreter.testing import assert_matches_cpu

    code = _writing_a_delegate_code().replace("activation(result)", "result")
    namespace: dict = {"__name__": "readme_delegate_without_activation"}
    exec(compile(code, "README.md (without the activation)", "exec"), namespace)  # noqa: S102
    with pytest.raises(AssertionError, match="invoke 1, output 0 'out'"):
        assert_matches_cpu(fused_model(), namespace["AddMulDelegate"], rtol=0, atol=0, invokes=1)


def test_the_params_table_of_the_delegate_guide_is_the_params_dataclasses():
    import dataclasses

    from schema import params

    text = (ROOT / "docs" / "WRITING_A_DELEGATE.md").read_text()
    rows = re.findall(r"^\| ([A-Z_0-9, ]+) \| (`\w+`(?:, `\w+`)*) \| (`\w+`(?:, `\w+`)*) \|$", text, flags=re.M)
    assert len(rows) >= 10
    for ops, classes, fields in rows:
        names = re.findall(r"`(\w+)`", fields)
        for class_name in re.findall(r"`(\w+)`", classes):
            declared = [f.name for f in dataclasses.fields(getattr(params, class_name))]
            assert names == declared, f"{ops}: {class_name} has {declared}, the guide says {names}"


# -- console transcripts -------------------------------------------------------------------------------


TRANSCRIPTS = [b for b in ALL_BLOCKS if not b.lang and b.text.lstrip().startswith("$ ")]


def _commands(text: str) -> list[tuple[list[str], list[str], int]]:
    """[(argv, expected output lines, expected exit code)]."""
    commands: list[list] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            argv = shlex.split(line[2:])
            if argv == ["echo", "$?"]:
                commands[-1].append("exit")
                continue
            commands.append([argv, []])
        elif commands and len(commands[-1]) == 3:  # the line after `echo $?`
            commands[-1][2] = int(line.strip())
        elif commands:
            commands[-1][1].append(line)
    return [(c[0], c[1], c[2] if len(c) == 3 and isinstance(c[2], int) else 0) for c in commands]


def _normal(line: str) -> str:
    return " ".join(line.split())


def _shown_in(line: str, actual: list[str]) -> bool:
    """``line`` is printed; one that ends with ``...`` is the start of a printed line."""
    if line.endswith("..."):
        return any(printed.startswith(line[:-3].rstrip()) for printed in actual)
    return line in actual


@pytest.mark.parametrize("block", TRANSCRIPTS, ids=lambda b: b.id)
def test_console_transcripts_give_what_they_show(block, scratch):
    for argv, shown, code in _commands(block.text):
        assert argv[0] == "litedelegate", f"{block.id}: transcripts run litedelegate, not {argv[0]}"
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("LITEDELEGATE_RICH", None)
        result = subprocess.run([sys.executable, "-m", "interpreter", *argv[1:]], cwd=scratch, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == code, f"{block.id}: {' '.join(argv)} exited {result.returncode}:\n{result.stderr}"
        actual = [_normal(line) for line in result.stdout.splitlines()]
        volatile = r"\bms\b" if argv[1] != "bench" else r"\bms\b|\d\.\d"  # timings (bench: every decimal)
        checked = [line for line in shown if line.strip() not in ("", "...") and not re.search(volatile, line)]
        missing = [line for line in checked if not _shown_in(_normal(line), actual)]
        assert not missing, f"{block.id}: {' '.join(argv)} did not print:\n" + "\n".join(missing) + \
            f"\n--- it printed:\n{result.stdout}"


# -- bash blocks and the schema snippet ----------------------------------------------------------------


BASH = [b for b in ALL_BLOCKS if b.lang == "bash"]


def _extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["optional-dependencies"])


def check_command(command: str, block: Block) -> str:
    """Run or check one shell command; returns what was done (for the assertion messages)."""
    import importlib.util

    words = shlex.split(command)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value prefixes
        words = words[1:]
    if not words:
        return "empty"
    if words[0] in (".", "source") or words[:3] == ["python3", "-m", "venv"]:
        return "environment setup: not run"
    if words[0] == "pip":
        for word in words:
            for extras in re.findall(r"\[([\w,-]+)\]", word):
                unknown = set(extras.split(",")) - _extras()
                assert not unknown, f"{block.id}: pip extras {unknown} are not in pyproject.toml"
        return "pip: the extras exist (not run: no network)"
    if words[0] in ("python", "python3") and words[1:2] == ["-m"]:
        module = words[2]
        assert importlib.util.find_spec(module) is not None, f"{block.id}: no module {module}"
        if module == "interpreter":
            result = subprocess.run([sys.executable, *words[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300)
            assert result.returncode == 0, f"{block.id}: {command} failed:\n{result.stderr}"
            return "ran"
        return f"module {module} exists (not run: it is the test suite, or rewrites the repository)"
    if words[0] in ("python", "python3"):
        assert (ROOT / words[1]).is_file(), f"{block.id}: no file {words[1]}"
        return f"{words[1]} exists (not run: a GPU-only or long-running command)"
    raise AssertionError(f"{block.id}: no rule to run or check {command!r}")


@pytest.mark.parametrize("block", BASH, ids=lambda b: b.id)
def test_bash_blocks_name_what_exists_and_run_what_they_can(block):
    for line in block.text.splitlines():
        for command in line.split("&&"):
            check_command(command.strip(), block)


OTHER = [b for b in ALL_BLOCKS if b not in TRANSCRIPTS and b not in BASH and b.lang not in ("python",)]


@pytest.mark.parametrize("block", OTHER, ids=lambda b: b.id)
def test_other_blocks_are_quotes_of_the_sources(block):
    """The schema snippet of "Adding a parameter to an op" is what schema.fbs says."""
    schema = _normal((ROOT / "schema" / "schema.fbs").read_text())
    assert "dilation_w_factor" in block.text, f"{block.id}: a code block of an unknown kind"
    assert _normal(block.text) in schema, f"{block.id}: the snippet is not in schema/schema.fbs"


def test_every_block_is_covered():
    covered = set(map(id, TRANSCRIPTS + BASH + OTHER + API_BLOCKS))
    covered |= {id(b) for b in ALL_BLOCKS if b.lang == "python"}
    assert {id(b) for b in ALL_BLOCKS} == covered
