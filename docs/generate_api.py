"""Write ``docs/API.md``, the API reference, from the docstrings of the public API.

    python docs/generate_api.py           # rewrite docs/API.md
    python docs/generate_api.py --check   # exit 1 if docs/API.md is not what this would write

Only the standard library (``inspect``): every documented object is listed in ``SECTIONS``,
classes with their constructor and their own public methods and properties, in the order
they are defined. A test (tests/cli/test_api_docs.py) checks that the committed file equals
a fresh generation: after changing a public docstring or signature, run this script.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import pathlib
import re
import sys
from typing import Any, Iterator

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "API.md"

#: (module, names, what the section is for). ``None`` for names: the module's ``__all__``.
SECTIONS: list[tuple[str, list[str] | None, str]] = [
    ("interpreter", ["Interpreter", "SignatureRunner", "DelegationReport", "NodePlacement", "DelegateError"],
     "The runtime and its LiteRT-compatible API."),
    ("delegate_sdk", None, "The contract kernels and delegates are written against."),
    ("delegate_sdk.testing", ["single_op_model", "recipe", "recipes_for", "register_recipe", "rule_version", "Recipe",
                              "RecipeError", "plan_delegation", "DelegationPlan", "assert_declared_caps", "CapReport",
                              "CapRow", "assert_takes_versions_up_to", "VersionCheck", "typed_recipes",
                              "ReferenceDelegate", "ReferenceDelegateKernel"],
     "Testing helpers for delegate authors that run no model: version recipes, dry runs, cap checks."),
    ("interpreter.testing", ["assert_matches_cpu", "check_delegate", "run_model", "Tolerance", "diff", "DiffReport",
                             "OutputDiff", "NodeDiff", "quantized_reference", "QuantizedReference"],
     "Testing helpers that run models: a delegate against the CPU path."),
    ("interpreter.batch", ["Predictor", "run_batch", "BatchSummary", "WorkerReport", "SourcePredictor"],
     "Batch inference over a dataset: the predictor, and jobs on the local or the Ray engine."),
    ("backends.gpu", ["GpuDelegate", "GpuUnavailableError"], "The CuPy GPU delegate."),
    ("backends.cpu", ["builtin_op_resolver"], "The numpy kernels, as an op resolver."),
    ("schema.model", ["Model", "Subgraph", "Tensor", "Operator", "OperatorCode", "SignatureDef", "Quantization"],
     "The typed, validated read view of a .tflite file."),
    ("schema.builder", ["ModelBuilder", "SubgraphBuilder", "quantization"], "Writing .tflite files."),
    ("schema.custom_options", None, "The FlexBuffer custom options of custom ops, read as TFLite reads them."),
    ("schema.versioning", None, "Which version a node needs, and which release runs it."),
]

HEADER = """\
# API reference

Generated from the docstrings by `python docs/generate_api.py`; do not edit by hand (a test
checks that this file equals a fresh generation). The command line is described in the
README ("Command line").
"""


SECTION = re.compile(r"^(Args|Arguments|Returns|Raises|Yields|Options|Attributes|Example|Examples):\s*$")
ITEM = re.compile(r"^  (\S[^:]*?):\s(.*)$")


def _clean(doc: str | None) -> str:
    return _markdown(inspect.cleandoc(doc)) if doc else ""


def _markdown(doc: str) -> str:
    """Google-style sections as bold headings with bullet lists; doctest lines as code."""
    out: list[str] = []
    in_section = in_doctest = False
    for line in doc.splitlines():
        if line.startswith(">>>") or (in_doctest and line.startswith("...")):
            if not in_doctest:
                out += ["", "```python"] if out and out[-1] != "" else ["```python"]
                in_doctest = True
            out.append(line)
            continue
        if in_doctest:
            out += ["```", ""]
            in_doctest = False
        match = SECTION.match(line)
        if match:
            out += ["", f"**{match.group(1)}:**", ""] if out and out[-1] != "" else [f"**{match.group(1)}:**", ""]
            in_section = True
            continue
        if in_section:
            item = ITEM.match(line)
            if item:
                out.append(f"- `{item.group(1)}`: {item.group(2)}")
                continue
            if line.startswith("    ") and out and out[-1].startswith("- "):
                out[-1] += " " + line.strip()
                continue
            if not line.strip():
                in_section = False
        out.append(line)
    if in_doctest:
        out.append("```")
    return "\n".join(out).strip()


def _own_doc(obj: Any) -> str:
    """The object's docstring, without the ones Python makes up (dataclass signatures, enums)."""
    doc = obj.__doc__ if (inspect.isclass(obj) and "__doc__" in obj.__dict__) or not inspect.isclass(obj) else None
    doc = _clean(doc)
    if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("):
        return ""
    return doc


def _default(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    text = repr(value)
    if type(value).__name__ == "_HAS_DEFAULT_FACTORY_CLASS":
        return "<factory>"  # a dataclass field with default_factory, as dataclasses shows it
    if " at 0x" in text or text.startswith("<"):
        return f"<{type(value).__name__}>"
    return text


def _annotation(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation)


def signature(obj: Any, name: str, skip_self: bool = False) -> str:
    """``name(params) -> return`` with annotations as written and stable defaults."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return f"{name}(...)"
    parts: list[str] = []
    seen_keyword_only = False
    previous_kind = None
    for i, parameter in enumerate(sig.parameters.values()):
        if skip_self and i == 0 and parameter.name in ("self", "cls"):
            continue
        kind = parameter.kind
        if previous_kind == inspect.Parameter.POSITIONAL_ONLY and kind != inspect.Parameter.POSITIONAL_ONLY:
            parts.append("/")
        if kind == inspect.Parameter.KEYWORD_ONLY and not seen_keyword_only:
            parts.append("*")
        if kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_POSITIONAL):
            seen_keyword_only = True
        text = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}.get(kind, "") + parameter.name
        if parameter.annotation is not inspect.Parameter.empty:
            text += f": {_annotation(parameter.annotation)}"
        if parameter.default is not inspect.Parameter.empty:
            annotated = parameter.annotation is not inspect.Parameter.empty
            text += f" = {_default(parameter.default)}" if annotated else f"={_default(parameter.default)}"
        parts.append(text)
        previous_kind = kind
    if previous_kind == inspect.Parameter.POSITIONAL_ONLY:
        parts.append("/")
    returns = f" -> {_annotation(sig.return_annotation)}" if sig.return_annotation is not inspect.Signature.empty else ""
    one_line = f"{name}({', '.join(parts)}){returns}"
    if len(one_line) <= 100:
        return one_line
    return f"{name}(\n" + "".join(f"    {part},\n" for part in parts) + f"){returns}"


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9_ -]", "", text.lower()).replace(" ", "-")


def _members(cls: type) -> Iterator[tuple[str, str, Any]]:
    """(kind, name, object) of the public methods and properties defined in ``cls`` itself."""
    for name, value in cls.__dict__.items():
        if name.startswith("_") and name != "__call__":
            continue
        if isinstance(value, property):
            yield "property", name, value
        elif isinstance(value, (classmethod, staticmethod)):
            yield type(value).__name__, name, value.__func__
        elif inspect.isfunction(value):
            yield "method", name, value


def document_class(module: str, name: str, cls: type) -> list[str]:
    bases = [b for b in cls.__bases__ if b is not object]
    lines = [f"### class `{module}.{name}`", ""]
    if bases:
        lines += ["Bases: " + ", ".join(f"`{b.__module__}.{b.__qualname__}`" for b in bases), ""]
    if issubclass(cls, enum.Enum):
        lines += ["```python", f"{name}  # enum", "```", ""]
    elif issubclass(cls, BaseException):
        lines += ["```python", f"{name}(message)", "```", ""] if "__init__" not in cls.__dict__ else [
            "```python", signature(cls, name), "```", ""]
    else:
        lines += ["```python", signature(cls, name), "```", ""]
    doc = _own_doc(cls)
    if doc:
        lines += [doc, ""]
    for kind, member_name, member in _members(cls):
        if kind == "property":
            lines += [f"#### `{name}.{member_name}` (property)", ""]
            doc = _clean(member.__doc__)
        else:
            skip = kind != "staticmethod"
            lines += [f"#### `{name}.{member_name}`" + (f" ({kind})" if kind != "method" else ""), "",
                      "```python", signature(member, member_name, skip_self=skip), "```", ""]
            doc = _clean(member.__doc__)
        if doc:
            lines += [doc, ""]
    return lines


def document(module_name: str, names: list[str] | None, purpose: str) -> list[str]:
    module = importlib.import_module(module_name)
    names = list(module.__all__) if names is None else names
    lines = [f"## `{module_name}`", "", purpose, ""]
    module_doc = _clean(module.__doc__)
    if module_doc:
        lines += [module_doc, ""]
    for name in names:
        obj = getattr(module, name)
        if inspect.isclass(obj):
            lines += document_class(module_name, name, obj)
        elif callable(obj):
            lines += [f"### `{module_name}.{name}`", "", "```python", signature(obj, name), "```", ""]
            doc = _own_doc(obj)
            if doc:
                lines += [doc, ""]
        else:
            description = f"`{type(obj).__name__}`"
            if isinstance(obj, dict):
                description += " mapping (op, version) to a release string" if name.endswith("_VERSIONS") else ""
            lines += [f"### `{module_name}.{name}`", "", f"A constant: {description}.", ""]
    return lines


def generate() -> str:
    """The text of docs/API.md."""
    lines = [HEADER, "## Contents", ""]
    lines += [f"- [`{module}`](#{_anchor(module)}): {purpose}" for module, _, purpose in SECTIONS]
    lines.append("")
    for module, names, purpose in SECTIONS:
        lines += document(module, names, purpose)
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/API.md differs from a fresh generation")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run python docs/generate_api.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
