"""Arena planning: intermediate tensors share memory once their last reader has run.

Each ARENA tensor lives from the plan step that writes it to the last step that
reads it (inclusive; subgraph inputs and outputs live for the whole plan). Tensors
are placed greedily, largest first, at the lowest offset that does not overlap a
placed tensor whose lifetime intersects (TFLite's greedy-by-size strategy).
"""

from __future__ import annotations

import bisect
import math
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

ALIGNMENT = 64
_FALLBACK_LIMIT = 8 << 30


class ArenaLimitError(RuntimeError):
    """``allocate_tensors`` would need more memory for a subgraph's tensors than the
    interpreter's arena limit allows (or than the machine could give)."""


def default_arena_limit() -> int:
    """Half of the machine's physical memory (8 GiB where it cannot be read): a model whose
    tensors need more is refused with a clear error instead of exhausting the machine."""
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return _FALLBACK_LIMIT
    return physical // 2 if physical > 0 else _FALLBACK_LIMIT


def format_bytes(count: int) -> str:
    if count >= 1 << 60:
        return f"{count / (1 << 50):.3g} PiB"
    for unit, shift in (("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.1f} {unit}"
    return f"{count} bytes"


@dataclass(frozen=True)
class Placement:
    tensor: int
    offset: int
    size: int
    first_step: int
    last_step: int


def plan_arena(
    sizes: dict[int, int],
    lifetimes: dict[int, tuple[int, int]],
    share_memory: bool = True,
) -> tuple[list[Placement], int]:
    """Offsets for every tensor in ``sizes``; returns (placements, arena size).

    With ``share_memory=False`` every tensor gets its own region (for
    ``experimental_preserve_all_tensors``).
    """
    order = sorted(sizes, key=lambda t: (-sizes[t], lifetimes[t][0], t))
    placed: list[Placement] = []
    by_offset: list[tuple[int, int, int, int]] = []  # (offset, end, first, last), in offset order
    total = 0
    for tensor in order:
        size = _aligned(max(sizes[tensor], 1))
        first, last = lifetimes[tensor]
        # The lowest offset where the tensor fits between those placed whose lifetimes
        # overlap its own (all of them without sharing), scanned in offset order.
        offset = 0
        for other_offset, other_end, other_first, other_last in by_offset:
            if share_memory and (other_first > last or first > other_last):
                continue
            if offset + size <= other_offset:
                break
            if other_end > offset:
                offset = other_end
        placed.append(Placement(tensor, offset, size, first, last))
        bisect.insort(by_offset, (offset, offset + size, first, last))
        total = max(total, offset + size)
    return placed, total


def tensor_lifetimes(
    arena_tensors: set[int],
    plan_inputs: Sequence[Sequence[int]],
    plan_outputs: Sequence[Sequence[int]],
    whole_plan_tensors: set[int],
) -> dict[int, tuple[int, int]]:
    """(first step, last step) for each arena tensor, from the plan's reads and writes."""
    last_step = max(len(plan_inputs) - 1, 0)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for step, (inputs, outputs) in enumerate(zip(plan_inputs, plan_outputs)):
        for tensor in outputs:
            if tensor in arena_tensors:
                first.setdefault(tensor, step)
                last[tensor] = max(last.get(tensor, step), step)
        for tensor in inputs:
            if tensor in arena_tensors:
                first.setdefault(tensor, step)
                last[tensor] = step
    lifetimes = {}
    for tensor in arena_tensors:
        if tensor in whole_plan_tensors:
            lifetimes[tensor] = (0, last_step)
        else:
            lifetimes[tensor] = (first.get(tensor, 0), last.get(tensor, first.get(tensor, 0)))
    return lifetimes


def make_views(arena: np.ndarray, offset: int, shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """A numpy array of ``shape``/``dtype`` backed by ``arena[offset:]``."""
    count = math.prod(map(int, shape))
    return arena[offset : offset + count * dtype.itemsize].view(dtype).reshape(shape)


def _aligned(size: int) -> int:
    return (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
