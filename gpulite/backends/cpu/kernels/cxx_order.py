"""The order in which libstdc++'s heap algorithms leave equal keys.

LiteRT's NMS kernels pick boxes with ``std::priority_queue`` (NON_MAX_SUPPRESSION_V4/V5) and
``std::partial_sort`` (TFLite_Detection_PostProcess's fast NMS). Neither is stable, so
which of two equal scores comes first is whatever the heap leaves there; with quantized
(uint8) scores ties are common and change which boxes are output. These functions run the
same sift steps as libstdc++'s ``bits/stl_heap.h`` and ``bits/stl_algo.h`` on Python lists,
so gpulite breaks ties as LiteRT does. ``less(a, b)`` is the C++ comparator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Less = Callable[[Any, Any], bool]


def _push_up(a: list, hole: int, top: int, value: Any, less: Less) -> None:
    parent = (hole - 1) // 2
    while hole > top and less(a[parent], value):
        a[hole] = a[parent]
        hole = parent
        parent = (hole - 1) // 2
    a[hole] = value


def _adjust(a: list, hole: int, length: int, value: Any, less: Less) -> None:
    """``std::__adjust_heap`` on the heap ``a[:length]``: sift the hole down, then ``value`` up."""
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[child], a[child - 1]):
            child -= 1
        a[hole] = a[child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[hole] = a[child - 1]
        hole = child - 1
    _push_up(a, hole, top, value, less)


def _pop_into(a: list, length: int, result: int, less: Less) -> None:
    """``std::__pop_heap(first, first + length, result)``: the top goes to ``result``."""
    value = a[result]
    a[result] = a[0]
    _adjust(a, 0, length, value, less)


def make_heap(a: list, length: int, less: Less) -> None:
    if length < 2:
        return
    for parent in range((length - 2) // 2, -1, -1):
        _adjust(a, parent, length, a[parent], less)


def push_heap(a: list, value: Any, less: Less) -> None:
    """``c.push_back(value); std::push_heap(c.begin(), c.end())``."""
    a.append(value)
    _push_up(a, len(a) - 1, 0, value, less)


def pop_heap(a: list, less: Less) -> Any:
    """``std::pop_heap(c.begin(), c.end()); c.pop_back()``: returns the former top."""
    if len(a) > 1:
        _pop_into(a, len(a) - 1, len(a) - 1, less)
    return a.pop()


def partial_sort(a: list, middle: int, less: Less) -> None:
    """``std::partial_sort(a.begin(), a.begin() + middle, a.end(), less)`` in place."""
    make_heap(a, middle, less)
    for i in range(middle, len(a)):
        if less(a[i], a[0]):
            _pop_into(a, middle, i, less)
    for end in range(middle - 1, 0, -1):  # std::__sort_heap
        _pop_into(a, end, end, less)
