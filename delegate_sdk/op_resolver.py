"""Op resolvers: which registration runs (op, version), and which (op, version) cannot run.

``MutableOpResolver`` stores one registration per (op, version): ``add_builtin(op,
registration, min_version, max_version)`` registers the range. ``capped`` and
``as_of_release`` derive a resolver that behaves like an older runtime, so a user
can check whether a deployed older runtime would run a model. ``list_ops`` lists what a
resolver runs: every builtin and custom op, its versions, and the kernels behind them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, Sequence

from schema.enums import BuiltinOperator, builtin_operator_name
from schema.versioning.runtime_version import (
    LITEDELEGATE_MIN_RUNTIME_VERSIONS,
    TFLITE_MIN_RUNTIME_VERSIONS,
    compare_versions,
)
from delegate_sdk.registration import Registration

_RUNTIME_TABLES = {
    "litedelegate": LITEDELEGATE_MIN_RUNTIME_VERSIONS,
    "tflite": TFLITE_MIN_RUNTIME_VERSIONS,
}


class OpResolver:
    """Read-only interface: ``find_op`` / ``find_custom`` return a Registration or None."""

    def find_op(self, op: int, version: int) -> Registration | None:
        raise NotImplementedError

    def find_custom(self, name: str, version: int) -> Registration | None:
        raise NotImplementedError

    def builtin_versions(self, op: int) -> tuple[int, ...]:
        """Versions of ``op`` this resolver can run, ascending (empty if none)."""
        raise NotImplementedError

    def custom_versions(self, name: str) -> tuple[int, ...]:
        raise NotImplementedError


class MutableOpResolver(OpResolver):
    """An op resolver that registrations are added to (TFLite's ``MutableOpResolver``)."""

    def __init__(self, description: str = "") -> None:
        self.description = description
        self._builtins: dict[tuple[int, int], Registration] = {}
        self._customs: dict[tuple[str, int], Registration] = {}

    # -- adding ---------------------------------------------------------------------------
    def add_builtin(self, op: int, registration: Registration, min_version: int = 1, max_version: int = 1) -> None:
        """Register ``registration`` for versions ``min_version..max_version`` of ``op``."""
        _check_range(min_version, max_version, builtin_operator_name(op))
        for version in range(min_version, max_version + 1):
            self._builtins[(int(op), version)] = dataclasses.replace(
                registration, builtin_code=int(op), custom_name=None, version=version
            )

    def add_custom(self, name: str, registration: Registration, min_version: int = 1, max_version: int = 1) -> None:
        """Register a custom op ``name`` for versions ``min_version..max_version``."""
        _check_range(min_version, max_version, name)
        for version in range(min_version, max_version + 1):
            self._customs[(name, version)] = dataclasses.replace(
                registration, builtin_code=int(BuiltinOperator.CUSTOM), custom_name=name, version=version
            )

    def add_all(self, other: "MutableOpResolver") -> None:
        """Add every registration of ``other`` (later additions win)."""
        self._builtins.update(other._builtins)
        self._customs.update(other._customs)

    # -- finding --------------------------------------------------------------------------
    def find_op(self, op: int, version: int) -> Registration | None:
        return self._builtins.get((int(op), version))

    def find_custom(self, name: str, version: int) -> Registration | None:
        return self._customs.get((name, version))

    def builtin_versions(self, op: int) -> tuple[int, ...]:
        return tuple(sorted(v for (code, v) in self._builtins if code == int(op)))

    def custom_versions(self, name: str) -> tuple[int, ...]:
        return tuple(sorted(v for (n, v) in self._customs if n == name))

    def registered_builtins(self) -> list[tuple[int, int]]:
        """Every (op, version) pair registered, sorted."""
        return sorted(self._builtins)

    def registered_customs(self) -> list[tuple[str, int]]:
        """Every (custom op name, version) pair registered, sorted."""
        return sorted(self._customs)

    def list_ops(self) -> list["OpListing"]:
        """Every op this resolver runs: the builtin ops by name, then the custom ops by name,
        each with its versions and, per kernel, the versions that kernel runs (from the
        registrations' ``kernels``; empty for registrations that name none)."""
        builtins: dict[int, dict[int, Registration]] = {}
        for (op, version), registration in self._builtins.items():
            builtins.setdefault(op, {})[version] = registration
        customs: dict[str, dict[int, Registration]] = {}
        for (name, version), registration in self._customs.items():
            customs.setdefault(name, {})[version] = registration
        listed = [_listing(builtin_operator_name(op), op, None, by_version) for op, by_version in builtins.items()]
        listed.sort(key=lambda entry: entry.name)
        custom = [_listing(name, int(BuiltinOperator.CUSTOM), name, by_version) for name, by_version in customs.items()]
        return listed + sorted(custom, key=lambda entry: entry.name)

    # -- deriving older runtimes ----------------------------------------------------------
    def capped(self, max_versions: Mapping[int, int], description: str | None = None) -> "MutableOpResolver":
        """A copy that runs at most ``max_versions[op]`` of each listed op."""
        result = MutableOpResolver(description or f"{self.description} capped at {_format_caps(max_versions)}")
        result._customs = dict(self._customs)
        result._builtins = {
            (op, version): registration
            for (op, version), registration in self._builtins.items()
            if version <= max_versions.get(op, version)
        }
        return result

    def as_of_release(self, release: str, runtime: str = "litedelegate") -> "MutableOpResolver":
        """A copy that runs only the (op, version) pairs that ``runtime`` release ``release`` ran.

        ``runtime`` is ``"litedelegate"`` (this project's releases) or ``"tflite"``
        (TensorFlow Lite's, from its runtime-version table). A pair the table does
        not know is dropped: no release is known to run it.
        """
        try:
            table = _RUNTIME_TABLES[runtime]
        except KeyError:
            raise ValueError(f"unknown runtime {runtime!r}; expected one of {sorted(_RUNTIME_TABLES)}") from None
        result = MutableOpResolver(f"{self.description} as of {runtime} {release}")
        result._customs = dict(self._customs)
        result._builtins = {
            key: registration
            for key, registration in self._builtins.items()
            if table.get(key) and compare_versions(table[key], release) <= 0
        }
        return result


@dataclass(frozen=True)
class OpListing:
    """One op a resolver runs (``MutableOpResolver.list_ops``).

    ``name`` is the ``BuiltinOperator`` name, or the custom op's name (then ``custom_name``
    is set and ``builtin_code`` is ``CUSTOM``); ``versions`` ascending; ``kernels`` pairs
    each kernel's dotted name with the versions it runs, in the order of their first
    version, then by name (a version run by a float and a quantized kernel appears under both)."""

    name: str
    builtin_code: int
    custom_name: str | None
    versions: tuple[int, ...]
    kernels: tuple[tuple[str, tuple[int, ...]], ...]

    @property
    def is_custom(self) -> bool:
        return self.custom_name is not None

    def to_json(self) -> dict:
        """Plain data: ``{"op", "custom", "versions", "kernels": [{"kernel", "versions"}]}``."""
        return {
            "op": self.name,
            "custom": self.is_custom,
            "versions": list(self.versions),
            "kernels": [{"kernel": kernel, "versions": list(versions)} for kernel, versions in self.kernels],
        }


def _listing(name: str, code: int, custom_name: str | None, by_version: Mapping[int, Registration]) -> OpListing:
    kernels: dict[str, list[int]] = {}
    for version in sorted(by_version):
        for kernel in sorted(by_version[version].kernels):  # (not registration order: import order varies)
            kernels.setdefault(kernel, []).append(version)
    return OpListing(name, code, custom_name, tuple(sorted(by_version)),
                     tuple((kernel, tuple(versions)) for kernel, versions in kernels.items()))


def _check_range(min_version: int, max_version: int, name: str) -> None:
    if not 1 <= min_version <= max_version:
        raise ValueError(f"bad version range {min_version}..{max_version} for {name}")


def _format_caps(max_versions: Mapping[int, int]) -> str:
    return ", ".join(f"{builtin_operator_name(op)}<=v{v}" for op, v in max_versions.items())


@dataclass(frozen=True)
class UnresolvedOperator:
    """One node that the resolver cannot run, with what would fix it."""

    subgraph: int
    node: int
    op_name: str
    builtin_code: int
    version: int
    supported_versions: tuple[int, ...]
    added_in_litedelegate: str | None
    added_in_tflite: str | None

    def describe(self) -> str:
        where = f"subgraph {self.subgraph} node {self.node}" if self.subgraph else f"node {self.node}"
        if self.builtin_code not in BuiltinOperator._value2member_map_:
            return (
                f"{where}: unknown builtin operator code {self.builtin_code} (version {self.version}); "
                "the model needs a newer schema than this runtime knows"
            )
        supported = (
            f"this runtime supports {self.op_name} versions {_format_versions(self.supported_versions)}"
            if self.supported_versions
            else f"this runtime has no kernel for {self.op_name}"
        )
        if self.added_in_litedelegate:
            fix = f"litedelegate {self.added_in_litedelegate} added it"
        elif self.added_in_tflite:
            fix = f"TFLite {self.added_in_tflite} added it; no litedelegate release supports it yet"
        else:
            fix = "no known release of litedelegate or TFLite supports it"
        return f"{where}: {self.op_name} version {self.version}: {supported}; {fix}"


def _format_versions(versions: Sequence[int]) -> str:
    if list(versions) == list(range(versions[0], versions[-1] + 1)):
        return f"{versions[0]}..{versions[-1]}" if len(versions) > 1 else str(versions[0])
    return ", ".join(map(str, versions))


class UnsupportedOperatorError(ValueError):
    """The model has nodes that the op resolver cannot run; lists every one of them."""

    def __init__(self, unresolved: Sequence[UnresolvedOperator], resolver_description: str = "") -> None:
        self.unresolved = list(unresolved)
        by = f" ({resolver_description})" if resolver_description else ""
        lines = [f"the model has {len(self.unresolved)} node(s) that this op resolver{by} cannot run:"]
        lines += [f"  - {entry.describe()}" for entry in self.unresolved]
        lines.append("Fix: use a newer litedelegate release, or re-convert the model for an older runtime.")
        super().__init__("\n".join(lines))


def find_unresolved_operators(model, resolver: OpResolver) -> list[UnresolvedOperator]:
    """Every operator of every subgraph of ``model`` (a ``schema.model.Model``) that
    ``resolver`` cannot run at its version."""
    missing = []
    for subgraph in model.subgraphs:
        for operator in subgraph.operators:
            if resolve_operator(operator, resolver) is not None:
                continue
            is_custom = operator.builtin_code == BuiltinOperator.CUSTOM
            supported = (
                resolver.custom_versions(operator.custom_name) if is_custom else resolver.builtin_versions(operator.builtin_code)
            )
            key = (operator.builtin_code, operator.version)
            missing.append(
                UnresolvedOperator(
                    subgraph=subgraph.index,
                    node=operator.index,
                    op_name=operator.op_name,
                    builtin_code=operator.builtin_code,
                    version=operator.version,
                    supported_versions=supported,
                    added_in_litedelegate=None if is_custom else LITEDELEGATE_MIN_RUNTIME_VERSIONS.get(key) or None,
                    added_in_tflite=None if is_custom else TFLITE_MIN_RUNTIME_VERSIONS.get(key) or None,
                )
            )
    return missing


def resolve_operator(operator, resolver: OpResolver) -> Registration | None:
    """The registration that runs ``operator`` (a ``schema.model.Operator``), or None."""
    if operator.builtin_code == _CUSTOM:
        return resolver.find_custom(operator.custom_name, operator.version)
    return resolver.find_op(operator.builtin_code, operator.version)


def resolve_model(model, resolver: OpResolver) -> list[list[Registration]]:
    """Registrations for every node, per subgraph; raises ``UnsupportedOperatorError``
    listing *every* node the resolver cannot run."""
    resolved = [[resolve_operator(op, resolver) for op in subgraph.operators] for subgraph in model.subgraphs]
    if any(None in registrations for registrations in resolved):
        raise UnsupportedOperatorError(find_unresolved_operators(model, resolver), getattr(resolver, "description", ""))
    return resolved


_CUSTOM = int(BuiltinOperator.CUSTOM)
