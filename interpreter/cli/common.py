"""What the subcommands share: loading a model, making a delegate, parsing options, inputs."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import pathlib
import sys
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from schema.enums import BuiltinOperator, builtin_operator_name
from schema.model import Model

EXAMPLE_LABEL = "example model (dilated depthwise classifier)"

#: ``--delegate`` choices. ``auto`` (analyze's default) is the GPU when one is usable,
#: else host emulation, and says which. Any other delegate is ``MODULE:CLASS[:KEY=VALUE,...]``.
DELEGATES = ("gpu", "gpu-host", "none")
DELEGATE_METAVAR = "gpu|gpu-host|none|MODULE:CLASS[:K=V,...]"
DELEGATE_HELP = (
    "gpu: GpuDelegate() on CUDA device 0; gpu-host: GpuDelegate(device='host'); none: CPU only; "
    "MODULE:CLASS[:KEY=VALUE,...]: any delegate, e.g. examples.toy_npu:ToyNpu or path/to/file.py:MyDelegate:"
    "min_nodes_per_partition=2 (CLASS is a delegate class or a function returning a delegate, called with the "
    "KEY=VALUE options, values read as Python literals; MODULE is imported from the current directory too)"
)


class UsageError(Exception):
    """A bad command line (exit code 2)."""


@dataclass
class LoadedModel:
    """A model's bytes, its read view and how to name it in output."""

    data: bytes
    model: Model
    label: str
    path: pathlib.Path | None


def load_model(path: str | None) -> LoadedModel:
    """The model at ``path``, or the example model shipped in the package when ``None``."""
    if path is None:
        from interpreter.example_model import build_example_model

        data = build_example_model()
        return LoadedModel(data, Model.from_bytes(data), EXAMPLE_LABEL, None)
    file = pathlib.Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no such model file: {path}")
    data = file.read_bytes()
    return LoadedModel(data, Model.from_bytes(data), str(path), file)


# -- options -------------------------------------------------------------------------------------

def parse_op(name: str) -> int:
    """``DEPTHWISE_CONV_2D`` (any case) or a builtin code number -> the code."""
    text = name.strip()
    if text.isdigit():
        return int(text)
    try:
        return int(BuiltinOperator[text.upper()])
    except KeyError:
        close = [op.name for op in BuiltinOperator if text.upper() in op.name][:5]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UsageError(f"unknown operator {name!r}{hint}") from None


def parse_caps(items: Sequence[str]) -> dict[int, int]:
    """``["DEPTHWISE_CONV_2D=1", ...]`` -> ``{op: max_version}``."""
    caps: dict[int, int] = {}
    for item in items:
        op, sep, version = item.partition("=")
        if not sep or not version.strip().isdigit():
            raise UsageError(f"--cap takes OP=VERSION (e.g. DEPTHWISE_CONV_2D=1), got {item!r}")
        caps[parse_op(op)] = int(version)
    return caps


def parse_release(text: str | None, option: str) -> str | None:
    if text is None:
        return None
    parts = text.split(".")
    if not text or not all(part.isdigit() for part in parts):
        raise UsageError(f"{option} takes a release like 1.14.0, got {text!r}")
    return text


def describe_caps(caps: dict[int | str, int]) -> str:
    """``OP<=vN`` for each cap: builtin ops by name, custom ops by their own name."""
    labels = sorted((op if isinstance(op, str) else builtin_operator_name(op), v) for op, v in caps.items())
    return ", ".join(f"{name}<=v{v}" for name, v in labels)


# -- delegates -----------------------------------------------------------------------------------

@dataclass
class DelegateChoice:
    """The delegate a command applies (None for ``none``) and a note on how it was chosen."""

    delegate: Any
    kind: str
    note: str = ""
    source: str = ""  #: ``MODULE:CLASS`` for a delegate named on the command line

    @property
    def name(self) -> str:
        if self.delegate is None:
            return "none"
        from interpreter.delegation import delegate_name

        return delegate_name(self.delegate)

    def describe(self) -> str:
        if self.delegate is None:
            return "none (CPU only)"
        device = getattr(getattr(self.delegate, "device", None), "name", "")
        text = f"{self.name} on {device}" if device else self.name
        if device == "host":
            text += " (host emulation: numpy stands in for the device)"
        if self.source:
            text += f" ({self.source})"
        return text


def is_delegate_spec(kind: str) -> bool:
    """``MODULE:CLASS[:OPTIONS]`` (anything with a colon) rather than a built-in name."""
    return ":" in kind


def make_delegate(kind: str, caps: dict[int, int] | None = None, excluded: Sequence[int] = (),
                  placement: str = "all") -> DelegateChoice:
    """``gpu`` (a CUDA device, or GpuUnavailableError), ``gpu-host``, ``none``, ``auto``
    (the GPU when usable, else host emulation with a note saying why), or
    ``MODULE:CLASS[:KEY=VALUE,...]`` (any delegate: see :func:`load_delegate_spec`).
    ``placement`` is the GPU delegate's (``all`` or ``auto``)."""
    caps = dict(caps or {})
    if placement != "all" and (kind == "none" or is_delegate_spec(kind)):
        raise UsageError("--placement is the GPU delegate's: use it with --delegate gpu or gpu-host")
    if is_delegate_spec(kind):
        return load_delegate_spec(kind, caps, excluded)
    if kind == "none":
        if caps or excluded:
            raise UsageError("--cap and --exclude need a delegate (--delegate gpu, gpu-host or MODULE:CLASS)")
        return DelegateChoice(None, "none")
    if kind not in (*DELEGATES, "auto"):
        raise UsageError(
            f"unknown delegate {kind!r}; expected one of {', '.join(DELEGATES)}, or MODULE:CLASS[:KEY=VALUE,...] "
            "for any other delegate (e.g. examples.toy_npu:ToyNpu)"
        )
    from backends.gpu import GpuDelegate, GpuUnavailableError

    options = {"version_caps": caps, "excluded_ops": tuple(excluded), "placement": placement}
    if kind == "gpu":
        return DelegateChoice(GpuDelegate(**options), "gpu")
    if kind == "gpu-host":
        return DelegateChoice(GpuDelegate(device="host", **options), "gpu-host")
    try:
        return DelegateChoice(GpuDelegate(**options), "gpu")
    except GpuUnavailableError as error:
        cause = str(error).split("; ")[0]
        note = f"no usable GPU ({cause}); analyzing GPU compatibility with host emulation (gpu-host)"
        return DelegateChoice(GpuDelegate(device="host", **options), "gpu-host", note)


def parse_delegate_options(text: str, spec: str) -> dict[str, Any]:
    """``a=1,b='x',c=[1, 2]`` -> ``{"a": 1, "b": "x", "c": [1, 2]}``: values are Python
    literals (``ast.literal_eval``), or plain strings when they are plain words; a value
    that looks like a dict, list or tuple but is not a literal (its quotes removed by the
    shell: ``version_caps={CONV_2D:2}``) is a usage error saying so."""
    options: dict[str, Any] = {}
    for item in _split_top_level(text):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise UsageError(f"--delegate {spec}: options are KEY=VALUE separated by commas, got {item.strip()!r}")
        try:
            options[key] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            text = value.strip()
            if text[:1] in "{[(" or text[-1:] in "}])":
                raise UsageError(
                    f"--delegate {spec}: the value of {key}, {text!r}, is not a Python literal (values are read with "
                    f"ast.literal_eval; a shell removes the quotes inside an unquoted argument: quote the whole "
                    f"option, e.g. --delegate 'MODULE:CLASS:{key}={{\"CONV_2D\": 2}}')"
                ) from None
            options[key] = text  # a plain word: read as a string
    return options


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _import_module(name: str, spec: str):
    """Import ``name`` (a module, or a ``.py`` file); the current directory counts, as for
    ``python -m``."""
    if name.endswith(".py") or os.sep in name or "/" in name:
        path = pathlib.Path(name)
        if not path.is_file():
            raise UsageError(f"--delegate {spec}: no such file: {name}")
        module_name = f"_litedelegate_cli_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.path.insert(0, str(path.resolve().parent))  # its own imports of sibling modules
        sys.modules[module_name] = module
        loader_spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        top = name.split(".")[0]
        here = os.getcwd()
        if error.name not in (name, top) and not name.startswith(f"{error.name}."):
            raise  # the delegate's own module is missing an import: show it as it is
        if here not in sys.path and "" not in sys.path:
            sys.path.insert(0, here)
            try:
                return importlib.import_module(name)
            except ModuleNotFoundError as retry:
                if retry.name not in (name, top) and not name.startswith(f"{retry.name}."):
                    raise
        raise UsageError(
            f"--delegate {spec}: no module named {name!r} (looked in the Python path and the current directory "
            f"{here}; give MODULE as a dotted name importable from there, or a file: path/to/file.py:CLASS)"
        ) from None


def load_delegate_spec(spec: str, caps: dict[int, int] | None = None, excluded: Sequence[int] = ()) -> DelegateChoice:
    """The delegate ``MODULE:CLASS[:KEY=VALUE,...]`` names: ``CLASS`` (a delegate class, a
    function returning a delegate, or a delegate object) from ``MODULE`` (a dotted module
    name, or a ``.py`` file), called with the options; ``--cap``/``--exclude`` become its
    ``version_caps``/``excluded_ops`` options."""
    module_name, _, rest = spec.partition(":")
    attribute, _, option_text = rest.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"--delegate takes MODULE:CLASS[:KEY=VALUE,...] for another delegate, got {spec!r}")
    options = parse_delegate_options(option_text, spec)
    module = _import_module(module_name, spec)
    target = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            found = _delegates_in(module)
            hint = f"; it has {', '.join(found)}" if found else ""
            raise UsageError(f"--delegate {spec}: {module_name} has no {attribute!r}{hint}")
        target = getattr(target, part)
    if caps:
        options.setdefault("version_caps", dict(caps))
    if excluded:
        options.setdefault("excluded_ops", tuple(excluded))
    if callable(getattr(target, "prepare", None)) and not isinstance(target, type):
        if options:
            raise UsageError(f"--delegate {spec}: {attribute} is a delegate object, which takes no options")
        delegate = target
    elif callable(target):
        try:
            inspect.signature(target).bind(**options)
        except TypeError as error:
            raise UsageError(f"--delegate {spec}: {attribute}{_signature(target)} does not take these options ({error})") from None
        except ValueError:  # no signature to check (a builtin): let the call say
            pass
        delegate = target(**options)
    else:
        raise UsageError(f"--delegate {spec}: {attribute} is not a delegate, a delegate class or a function returning one")
    if not callable(getattr(delegate, "prepare", None)):
        raise UsageError(
            f"--delegate {spec}: {attribute}(...) gave {type(delegate).__name__}, not a delegate (a delegate has a "
            "prepare(context) method: a delegate_sdk.Delegate or SimpleDelegate)"
        )
    return DelegateChoice(delegate, "custom", source=f"{module_name}:{attribute}")


def _signature(target: Any) -> str:
    try:
        return str(inspect.signature(target))
    except (TypeError, ValueError):
        return "(...)"


def _delegates_in(module: Any) -> list[str]:
    names = []
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if (isinstance(value, type) and callable(getattr(value, "prepare", None)) and not hasattr(value, "eval")
                and value.__module__ == module.__name__):  # delegates, not their kernels
            names.append(name)
    return names


# -- inputs --------------------------------------------------------------------------------------

def random_value(detail: dict, rng: np.random.Generator) -> np.ndarray:
    """A random value for an input: uniform [-1, 1) floats, small integers, booleans."""
    dtype, shape = np.dtype(detail["dtype"]), tuple(int(d) for d in detail["shape"])
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -128), min(info.max, 127) + 1, size=shape).astype(dtype)
    raise ValueError(f"cannot make a random value for input {detail['name']!r} of type {dtype}; give it with --input")


def parse_inputs(items: Sequence[str]) -> dict[str, np.ndarray]:
    """``["NAME=FILE.npy", ...]`` -> ``{name: array}``."""
    given = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--input takes NAME=FILE.npy, got {item!r}")
        given[name] = np.load(path, allow_pickle=False)
    return given


def set_inputs(interpreter, given: dict[str, np.ndarray], seed: int) -> dict[str, str]:
    """Set every input of the main subgraph from ``given`` or at random; returns name -> source."""
    given = dict(given)
    rng = np.random.default_rng(seed)
    sources = {}
    details = interpreter.get_input_details()
    names = {d["name"] for d in details}
    unknown = sorted(set(given) - names)
    if unknown:
        raise UsageError(f"the model has no input named {', '.join(map(repr, unknown))}; its inputs are {sorted(names)}")
    for detail in details:
        value = given.pop(detail["name"], None)
        if value is None:
            value, sources[detail["name"]] = random_value(detail, rng), "random"
        else:
            sources[detail["name"]] = "file"
        interpreter.set_tensor(detail["index"], value)
    return sources


def safe_file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "output"


PLACEMENT_HELP = (
    "the GPU delegate's placement: all (default: every supported partition on the device) or auto (each partition "
    "timed on the device and on the CPU; it stays on the CPU where the device does not win)"
)


def placement_lines(delegate: Any) -> list[str]:
    """What ``GpuDelegate(placement="auto")`` decided (empty for other delegates and "all")."""
    report = getattr(delegate, "placement_report", None)
    return list(report()) if callable(report) else []


def tactic_lines(delegate: Any) -> list[str]:
    """The kernel each GPU node chose among its candidates, the runner-up with both times,
    and the candidates that failed their check (``GpuDelegate.tactic_report``; empty for
    other delegates)."""
    report = getattr(delegate, "tactic_report", None)
    return list(report()) if callable(report) else []
