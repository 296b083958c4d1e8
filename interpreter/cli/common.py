"""What the subcommands share: loading a model, making a delegate, parsing options, inputs."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from schema.enums import BuiltinOperator, builtin_operator_name
from schema.model import Model

EXAMPLE_LABEL = "example model (dilated depthwise classifier)"

#: ``--delegate`` choices. ``auto`` (analyze's default) is the GPU when one is usable,
#: else host emulation, and says which.
DELEGATES = ("gpu", "gpu-host", "none")


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

    @property
    def name(self) -> str:
        return getattr(self.delegate, "name", "none") if self.delegate is not None else "none"

    def describe(self) -> str:
        if self.delegate is None:
            return "none (CPU only)"
        device = getattr(getattr(self.delegate, "device", None), "name", "")
        text = f"{self.name} on {device}" if device else self.name
        if device == "host":
            text += " (host emulation: numpy stands in for the device)"
        return text


def make_delegate(kind: str, caps: dict[int, int] | None = None, excluded: Sequence[int] = ()) -> DelegateChoice:
    """``gpu`` (a CUDA device, or GpuUnavailableError), ``gpu-host``, ``none``, or ``auto``
    (the GPU when usable, else host emulation with a note saying why)."""
    caps = dict(caps or {})
    if kind == "none":
        if caps or excluded:
            raise UsageError("--cap and --exclude need a delegate (--delegate gpu or gpu-host)")
        return DelegateChoice(None, "none")
    from backends.gpu import GpuDelegate, GpuUnavailableError

    options = {"version_caps": caps, "excluded_ops": tuple(excluded)}
    if kind == "gpu":
        return DelegateChoice(GpuDelegate(**options), "gpu")
    if kind == "gpu-host":
        return DelegateChoice(GpuDelegate(device="host", **options), "gpu-host")
    if kind == "auto":
        try:
            return DelegateChoice(GpuDelegate(**options), "gpu")
        except GpuUnavailableError as error:
            cause = str(error).split("; ")[0]
            note = f"no usable GPU ({cause}); analyzing GPU compatibility with host emulation (gpu-host)"
            return DelegateChoice(GpuDelegate(device="host", **options), "gpu-host", note)
    raise UsageError(f"unknown delegate {kind!r}; expected one of {', '.join(DELEGATES)}")


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
