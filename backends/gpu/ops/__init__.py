"""Array-namespace (xp) implementations of the ops the GPU delegate supports.

Every module here is imported by :func:`gpu_op_classes`; each ``GpuOp`` subclass
declares ``ops = {op: max_version}`` (or ``{op: frozenset(versions)}`` where versions in between
are not implemented), which becomes the delegate's support table.
"""

from __future__ import annotations

import importlib
import pkgutil

from backends.gpu.ops.base import GpuOp


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def gpu_op_classes() -> dict[int, type[GpuOp]]:
    """op -> the GpuOp class that implements it (each op claimed by exactly one class)."""
    for module in pkgutil.iter_modules(__path__):
        if module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")
    table: dict[int, type[GpuOp]] = {}
    for cls in _subclasses(GpuOp):
        for op in cls.ops:
            if op in table and table[op] is not cls:
                raise RuntimeError(f"op {op} is claimed by both {table[op].__name__} and {cls.__name__}")
            table[op] = cls
    return table


def gpu_support_table() -> dict[int, int]:
    """op -> highest version the GPU kernels implement."""
    return {op: cls.ops[op] for op, cls in gpu_op_classes().items()}
