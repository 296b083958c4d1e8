"""libstdc++'s heap algorithms, step for step, for the kernels whose tie order is whatever
LiteRT's ``std::priority_queue`` or ``std::partial_sort`` leaves (NON_MAX_SUPPRESSION_V4/V5,
``TFLite_Detection_PostProcess``).

Equal keys come out of a binary heap in an order that depends on how the heap was built
and sifted. LiteRT is built against libstdc++ (GCC's ``<bits/stl_heap.h>`` and
``<bits/stl_algo.h>``), so these functions repeat its moves exactly: same child chosen on
a tie, same hole walk. ``less(a, b)`` is the C++ comparator; every heap starts at index 0
of the list it is in.
"""

from __future__ import annotations

from typing import Callable, MutableSequence, TypeVar

Item = TypeVar("Item")
Less = Callable[[Item, Item], bool]


def _push_up(heap: MutableSequence, hole: int, top: int, value, less: Less) -> None:
    """``std::__push_heap``: move ``value`` up from ``hole`` while its parent is less."""
    parent = (hole - 1) // 2
    while hole > top and less(heap[parent], value):
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = value


def _adjust(heap: MutableSequence, hole: int, length: int, value, less: Less) -> None:
    """``std::__adjust_heap``: walk the hole down to a leaf along the larger child (the
    right one unless the left is larger), then push ``value`` up from there."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(heap[child], heap[child - 1]):
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    _push_up(heap, hole, top, value, less)


def _pop_into(heap: MutableSequence, length: int, result: int, less: Less) -> None:
    """``std::__pop_heap(first, first + length, first + result)``: the top goes to
    ``result``, whose old value is sifted into the heap of ``length``."""
    value = heap[result]
    heap[result] = heap[0]
    _adjust(heap, 0, length, value, less)


def make_heap(heap: MutableSequence, length: int, less: Less) -> None:
    """``std::make_heap(first, first + length)``."""
    if length < 2:
        return
    for parent in range((length - 2) // 2, -1, -1):
        _adjust(heap, parent, length, heap[parent], less)


def heap_push(heap: list, value, less: Less) -> None:
    """``std::priority_queue::push``: ``push_back`` then ``std::push_heap``."""
    heap.append(value)
    _push_up(heap, len(heap) - 1, 0, value, less)


def heap_pop(heap: list, less: Less):
    """``std::priority_queue::top`` then ``pop``: ``std::pop_heap`` then ``pop_back``."""
    if len(heap) > 1:
        _pop_into(heap, len(heap) - 1, len(heap) - 1, less)
    return heap.pop()


def partial_sort(items: list, middle: int, less: Less) -> None:
    """``std::partial_sort(first, first + middle, last)``: the ``middle`` least items by
    ``less``, sorted, at the front (``__heap_select`` then ``__sort_heap``)."""
    make_heap(items, middle, less)
    for i in range(middle, len(items)):
        if less(items[i], items[0]):
            _pop_into(items, middle, i, less)
    for end in range(middle - 1, 0, -1):
        _pop_into(items, end, end, less)
