"""Array-namespace (xp) implementations of the ops the GPU delegate supports.

Every module here is imported by :func:`gpu_op_classes`. Each ``GpuOp`` subclass declares
``ops = {op: max_version}`` (or ``{op: frozenset(versions)}`` where versions in between
are not implemented). Several classes may implement one op (the float kernels and the
quantized ones of ADD, say), even at one version: an op's version does not always say
its types (uint8 ADD is version 1, like float ADD). The delegate gives a node to the
first class that claims its version and accepts it (:func:`select_op_class`); the
union of the claims is the delegate's support table.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Sequence

from backends.gpu.ops.base import GpuOp


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def claimed_versions(cls: type[GpuOp], op: int) -> frozenset[int]:
    """The versions of ``op`` that ``cls`` implements."""
    claim = cls.ops[op]
    return frozenset(range(1, claim + 1)) if isinstance(claim, int) else frozenset(claim)


def gpu_op_classes() -> dict[int, tuple[type[GpuOp], ...]]:
    """op -> the GpuOp classes that implement it, in a fixed order (module, then class name)."""
    for module in pkgutil.iter_modules(__path__):
        if module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")
    table: dict[int, list[type[GpuOp]]] = {}
    for cls in sorted(_subclasses(GpuOp), key=lambda c: (c.__module__, c.__qualname__)):
        for op in cls.__dict__.get("ops", {}):
            table.setdefault(op, []).append(cls)
    return {op: tuple(classes) for op, classes in table.items()}


def gpu_support_table() -> dict[int, int | frozenset[int]]:
    """op -> the versions the GPU kernels implement: the highest, when every version up
    to it is implemented, else the set."""
    table: dict[int, int | frozenset[int]] = {}
    for op, classes in gpu_op_classes().items():
        versions = frozenset().union(*(claimed_versions(cls, op) for cls in classes))
        top = max(versions)
        table[op] = top if versions == frozenset(range(1, top + 1)) else versions
    return table


def select_op_class(classes: Sequence[type[GpuOp]], node, op: int, version: int, tensors) -> tuple[type[GpuOp] | None, str | None]:
    """The first class that claims ``version`` and accepts the node, or (None, the reasons
    of those that claim it but refuse it)."""
    claiming = [cls for cls in classes if version in claimed_versions(cls, op)]
    reasons = []
    for cls in claiming or classes:  # none claims the version: still say what else is wrong
        reason = cls.rejection_reason(node, op, version, tensors)
        if reason is None and cls in claiming:
            return cls, None
        if reason is not None:
            reasons.append(reason)
    if not claiming:
        reasons.insert(0, f"no GPU kernel implements version {version}")
    return None, "; ".join(dict.fromkeys(reasons))
