"""A tiny persistent thread pool for CPU kernels that split work by rows.

numpy releases the GIL inside ufunc loops, ``einsum`` and BLAS calls, so kernels made of a
few large numpy calls per chunk (depthwise conv) scale across cores with plain threads.
Workers are started once per process and reused; :func:`run_parallel` runs one job on the
calling thread and the others on workers, and re-raises a worker's exception. Workers run
their BLAS calls single-threaded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from gpulite.backends.cpu.blas import set_local_threads

_lock = threading.Lock()
_workers: list[_Worker] = []


class _Worker:
    def __init__(self) -> None:
        # Plain locks used as binary semaphores (created held): released by the other side.
        # They wake a waiting thread directly; threading.Semaphore goes through a Condition
        # in Python code, which adds tens of microseconds per hand-off.
        self.start, self.done = threading.Lock(), threading.Lock()
        self.start.acquire()
        self.done.acquire()
        self.job: Callable[[], None] | None = None
        self.error: BaseException | None = None
        threading.Thread(target=self._loop, daemon=True, name="gpulite-cpu").start()

    def _loop(self) -> None:
        # Kernels split work between these threads themselves: BLAS calls made here must
        # not start OpenBLAS's own threads (which then spin, taking the cores from us).
        set_local_threads(1)
        while True:
            self.start.acquire()
            try:
                self.job()  # type: ignore[misc]
            except BaseException as e:  # handed to the caller, which re-raises it
                self.error = e
            self.done.release()


def _get_workers(n: int) -> list[_Worker]:
    with _lock:
        while len(_workers) < n:
            _workers.append(_Worker())
        return _workers[:n]


def run_parallel(jobs: Sequence[Callable[[], None]]) -> None:
    """Run ``jobs`` concurrently (the first on this thread) and wait for all of them.

    Jobs must touch disjoint outputs and scratch. Not re-entrant: kernels call it from the
    interpreter's thread only.
    """
    if len(jobs) == 1:
        jobs[0]()
        return
    workers = _get_workers(len(jobs) - 1)
    for w, job in zip(workers, jobs[1:], strict=True):
        w.job, w.error = job, None
        w.start.release()
    try:
        jobs[0]()
    finally:
        for w in workers:
            w.done.acquire()
    for w in workers:
        if w.error is not None:
            raise w.error
