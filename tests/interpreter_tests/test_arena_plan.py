"""The arena plan (``interpreter.arena.plan_arena``): greedy by size, each tensor at the
lowest offset free for its whole lifetime; no two tensors alive at once share a byte."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from interpreter.arena import _aligned, plan_arena


def greedy_reference(sizes, lifetimes, share_memory=True):
    """The plan written plainly: for each tensor (largest first), the tensors already placed
    whose lifetimes overlap its own, by offset; the first gap that holds it."""
    order = sorted(sizes, key=lambda t: (-sizes[t], lifetimes[t][0], t))
    placed, total = {}, 0
    for tensor in order:
        size = _aligned(max(sizes[tensor], 1))
        first, last = lifetimes[tensor]
        conflicts = sorted(
            (offset, end) for other, (offset, end) in placed.items()
            if not share_memory or (lifetimes[other][0] <= last and first <= lifetimes[other][1])
        )
        offset = 0
        for other_offset, other_end in conflicts:
            if offset + size <= other_offset:
                break
            offset = max(offset, other_end)
        placed[tensor] = (offset, offset + size)
        total = max(total, offset + size)
    return placed, total


@settings(max_examples=60, deadline=None)
@given(
    tensors=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 30), st.integers(0, 30)), min_size=1, max_size=60),
    share=st.booleans(),
)
def test_the_plan_is_the_greedy_one_and_no_live_tensors_overlap(tensors, share):
    sizes = {i: size for i, (size, _, _) in enumerate(tensors)}
    lifetimes = {i: (min(a, b), max(a, b)) for i, (_, a, b) in enumerate(tensors)}
    placements, total = plan_arena(sizes, lifetimes, share_memory=share)
    expected, expected_total = greedy_reference(sizes, lifetimes, share)
    assert {p.tensor: (p.offset, p.offset + p.size) for p in placements} == expected
    assert total == expected_total
    for a in placements:
        for b in placements:
            alive_together = not share or (a.first_step <= b.last_step and b.first_step <= a.last_step)
            if a.tensor < b.tensor and alive_together:
                assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset
