"""The order in which MediaPipe's ``std::sort`` leaves equal scores, for detections that must
match MediaPipe's where scores tie.

MediaPipe's ``NonMaxSuppressionCalculator`` sorts its candidates with ``std::sort`` by score,
descending. ``std::sort`` is not stable, so which of several equally scored boxes comes first
(and so survives suppression) is whatever the C++ library's algorithm makes of the input order.
Quantized detectors score in steps of 1/256, so ties are common, and a stable sort keeps another
box than MediaPipe does. mediapipe 1.2.2's ``libmediapipe.so`` is built with clang and libc++
(its strings name ``libcxxabi``), whose ``std::sort`` for a non-arithmetic element is the
pattern-defeating introsort of ``libcxx/include/__algorithm/sort.h``: insertion sort below 24
elements, Tukey's ninther pivot above 128, ``__partition_with_equals_on_right`` (or ``_left``
when the pivot equals the element before the range), the already-partitioned insertion-sort
shortcut, and heap sort after ``2 * floor(log2(n))`` levels. :func:`sort_descending` runs the
same steps on the scores and returns the permutation. (Its heap-sort fallback, reached only
after that many unbalanced partitions, is a plain heap sort and may order ties differently.)
"""

from __future__ import annotations

import numpy as np

_LIMIT = 24
_VECTOR = 512  # ranges longer than this are partitioned in numpy
_NINTHER = 128


def sort_descending(scores: np.ndarray, limit: int | None = None) -> np.ndarray:
    """Indices of ``scores`` in the order libc++'s ``std::sort`` with ``a.score > b.score`` leaves
    the pairs ``(index, score)`` made in index order.

    With ``limit``, only the first ``limit`` positions are sorted (the rest hold the remaining
    indices in no particular order): the subranges wholly past it are skipped, which changes
    nothing before it, since each step works inside its own subrange.
    """
    n = len(scores)
    s = _Sorter(np.asarray(scores, np.float32).tolist(), n if limit is None else limit)
    if n:
        s.introsort(0, n, 2 * (n.bit_length() - 1), True)
    return np.asarray(s.idx, np.intp)


class _Sorter:
    """The array (``key``: scores, ``idx``: where each came from) and libc++'s steps on it;
    ``comp(a, b)`` is ``key[a] > key[b]``."""

    def __init__(self, key: list[float], limit: int) -> None:
        self.key = key
        self.idx = list(range(len(key)))
        self.limit = limit

    def swap(self, i: int, j: int) -> None:
        k, x = self.key, self.idx
        k[i], k[j] = k[j], k[i]
        x[i], x[j] = x[j], x[i]

    def sort3(self, x: int, y: int, z: int) -> None:
        k = self.key
        if not k[y] > k[x]:
            if not k[z] > k[y]:
                return
            self.swap(y, z)
            if k[y] > k[x]:
                self.swap(x, y)
            return
        if k[z] > k[y]:
            self.swap(x, z)
            return
        self.swap(x, y)
        if k[z] > k[y]:
            self.swap(y, z)

    def sort4(self, a: int, b: int, c: int, d: int) -> None:
        k = self.key
        self.sort3(a, b, c)
        if k[d] > k[c]:
            self.swap(c, d)
            if k[c] > k[b]:
                self.swap(b, c)
                if k[b] > k[a]:
                    self.swap(a, b)

    def sort5(self, a: int, b: int, c: int, d: int, e: int) -> None:
        k = self.key
        self.sort4(a, b, c, d)
        if k[e] > k[d]:
            self.swap(d, e)
            if k[d] > k[c]:
                self.swap(c, d)
                if k[c] > k[b]:
                    self.swap(b, c)
                    if k[b] > k[a]:
                        self.swap(a, b)

    def insertion_sort(self, first: int, last: int, guarded: bool = True) -> None:
        k, x = self.key, self.idx
        for i in range(first + 1, last):
            j = i - 1
            if k[i] > k[j]:
                t, tx = k[i], x[i]
                kk = j
                j = i
                while True:
                    k[j], x[j] = k[kk], x[kk]
                    j = kk
                    if guarded and j == first:
                        break
                    kk -= 1
                    if not t > k[kk]:
                        break
                k[j], x[j] = t, tx

    def insertion_sort_incomplete(self, first: int, last: int) -> bool:
        n = last - first
        if n < 2:
            return True
        if n == 2:
            if self.key[last - 1] > self.key[first]:
                self.swap(first, last - 1)
            return True
        if n == 3:
            self.sort3(first, first + 1, last - 1)
            return True
        if n == 4:
            self.sort4(first, first + 1, first + 2, last - 1)
            return True
        if n == 5:
            self.sort5(first, first + 1, first + 2, first + 3, last - 1)
            return True
        k, x = self.key, self.idx
        j = first + 2
        self.sort3(first, first + 1, j)
        count = 0
        i = j + 1
        while i != last:
            if k[i] > k[j]:
                t, tx = k[i], x[i]
                kk = j
                j = i
                while True:
                    k[j], x[j] = k[kk], x[kk]
                    j = kk
                    if j == first:
                        break
                    kk -= 1
                    if not t > k[kk]:
                        break
                k[j], x[j] = t, tx
                count += 1
                if count == 8:
                    return i + 1 == last
            j = i
            i += 1
        return True

    def partition_right(self, first: int, last: int) -> tuple[int, bool]:
        """``__partition_with_equals_on_right``: (pivot position, already partitioned)."""
        if last - first > _VECTOR:
            return self.partition_right_numpy(first, last)
        k, x = self.key, self.idx
        begin = first
        p, px = k[first], x[first]
        first += 1
        while k[first] > p:
            first += 1
        if begin == first - 1:
            while first < last:
                last -= 1
                if k[last] > p:
                    break
        else:
            last -= 1
            while not k[last] > p:
                last -= 1
        done = first >= last
        while first < last:
            self.swap(first, last)
            first += 1
            while k[first] > p:
                first += 1
            last -= 1
            while not k[last] > p:
                last -= 1
        pos = first - 1
        if begin != pos:
            k[begin], x[begin] = k[pos], x[pos]
        k[pos], x[pos] = p, px
        return pos, done

    def partition_right_numpy(self, first: int, last: int) -> tuple[int, bool]:
        """:meth:`partition_right` in numpy, for long ranges. Its scans swap the j-th element not
        above the pivot from the left (``low[j]``) with the j-th one above it from the right
        (``high[j]``) while ``low[j] < high[j]``; the scans stop where the next pair would cross."""
        key = np.array(self.key[first:last])
        idx = np.array(self.idx[first:last])
        p = key[0]
        rest = key[1:]
        low = np.flatnonzero(~(rest > p)) + 1  # ascending, relative to first
        high = (np.flatnonzero(rest > p) + 1)[::-1]  # descending
        done = not (high.size and high[0] > low[0])
        m = 0
        if not done:
            n = min(low.size, high.size)
            m = int(np.argmin(low[:n] < high[:n])) if not (low[:n] < high[:n]).all() else n
        if m:
            a, b = low[:m], high[:m]
            key[a], key[b] = key[b], key[a].copy()
            idx[a], idx[b] = idx[b], idx[a].copy()
            end = min(int(low[m]) if m < low.size else len(key), int(high[m - 1]))
        else:
            end = int(low[0])
        pos = end - 1
        if pos != 0:
            key[0], idx[0] = key[pos], idx[pos]
        key[pos], idx[pos] = p, self.idx[first]
        self.key[first:last] = key.tolist()
        self.idx[first:last] = idx.tolist()
        return first + pos, done

    def partition_left(self, first: int, last: int) -> int:
        """``__partition_with_equals_on_left``: returns the position after the pivot."""
        k, x = self.key, self.idx
        begin = first
        p, px = k[first], x[first]
        if p > k[last - 1]:
            first += 1
            while not p > k[first]:
                first += 1
        else:
            first += 1
            while first < last and not p > k[first]:
                first += 1
        if first < last:
            last -= 1
            while p > k[last]:
                last -= 1
        while first < last:
            self.swap(first, last)
            first += 1
            while not p > k[first]:
                first += 1
            last -= 1
            while p > k[last]:
                last -= 1
        pos = first - 1
        if begin != pos:
            k[begin], x[begin] = k[pos], x[pos]
        k[pos], x[pos] = p, px
        return first

    def heap_sort(self, first: int, last: int) -> None:
        order = sorted(range(first, last), key=lambda i: -self.key[i])  # see the module docstring
        self.key[first:last] = [self.key[i] for i in order]
        self.idx[first:last] = [self.idx[i] for i in order]

    def introsort(self, first: int, last: int, depth: int, leftmost: bool) -> None:
        k = self.key
        while True:
            n = last - first
            if n < 2 or first >= self.limit:
                return
            if n == 2:
                if k[last - 1] > k[first]:
                    self.swap(first, last - 1)
                return
            if n == 3:
                self.sort3(first, first + 1, last - 1)
                return
            if n == 4:
                self.sort4(first, first + 1, first + 2, last - 1)
                return
            if n == 5:
                self.sort5(first, first + 1, first + 2, first + 3, last - 1)
                return
            if n < _LIMIT:
                self.insertion_sort(first, last, guarded=leftmost)
                return
            if depth == 0:
                self.heap_sort(first, last)
                return
            depth -= 1
            half = n // 2
            if n > _NINTHER:
                self.sort3(first, first + half, last - 1)
                self.sort3(first + 1, first + half - 1, last - 2)
                self.sort3(first + 2, first + half + 1, last - 3)
                self.sort3(first + half - 1, first + half, first + half + 1)
                self.swap(first, first + half)
            else:
                self.sort3(first + half, first, last - 1)
            if not leftmost and not k[first - 1] > k[first]:
                first = self.partition_left(first, last)
                continue
            i, done = self.partition_right(first, last)
            if done:
                fs = self.insertion_sort_incomplete(first, i)
                # past the limit the right side's outcome changes nothing before it: skip it
                if i + 1 >= self.limit or self.insertion_sort_incomplete(i + 1, last):
                    if fs:
                        return
                    last = i
                    continue
                if fs:
                    first = i + 1
                    continue
            self.introsort(first, i, depth, leftmost)
            leftmost = False
            first = i + 1
