"""A tiny persistent thread pool for CPU kernels that split work by rows, in Python.

Kernels built on the compiled loops use their C pool instead (``jit.Program``, ``loops.c``),
whose hand-off costs microseconds; this pool serves the numpy-only backend (no C compiler,
``GPULITE_CPU_JIT=0``) and only splits layers far bigger than the zoo's, since each hand-off
costs 50-100 us here.

numpy releases the GIL inside ufunc loops, ``einsum`` and BLAS calls, so kernels made of a
few large numpy calls per chunk (convs, depthwise convs) scale across cores with plain
threads. Workers are started on first need and reused, and run their BLAS calls
single-threaded. :func:`run_chunks` lets the calling thread and the workers take chunks
from a shared counter, so a worker that the OS starts late (another process has the core)
just takes fewer chunks instead of holding the op back; :func:`run_parallel` runs fixed
jobs. Both re-raise a worker's exception.

A worker's job is *claimed* by whichever thread gets to it first: the worker when it wakes,
or the caller once its own share is done. So a caller never waits for a worker that has not
started yet (on a loaded machine a wake-up can take a scheduler time slice, milliseconds):
it runs that job itself (for :func:`run_chunks`, a job that finds no chunk left), and the
worker, waking later, finds its job taken and goes back to the free list by itself.

Several threads may run kernels at once (one Interpreter each): every call takes idle workers
from a process-wide free list, under a lock, for itself alone and puts them back when they
are done, starting new ones when none are idle. So no two calls ever share a worker, and the
pool holds as many workers as the most ever needed at the same time.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Callable, Sequence

from gpulite.backends.cpu.blas import set_local_threads

_lock = threading.Lock()
_idle: list[_Worker] = []  # workers no call holds; guarded by _lock


class _Job:
    """One worker's share of a call, run by exactly one thread: see :meth:`claim`."""

    __slots__ = ("fn", "lock", "taken")

    def __init__(self, fn: Callable[[], None], lock: threading.Lock) -> None:
        self.fn, self.lock, self.taken = fn, lock, False

    def claim(self) -> bool:
        """Whether the calling thread is the one to run this job (True once, for the first)."""
        with self.lock:
            first, self.taken = not self.taken, True
        return first


class _Worker:
    def __init__(self) -> None:
        # Plain locks used as binary semaphores (created held): released by the other side.
        # They wake a waiting thread directly; threading.Semaphore goes through a Condition
        # in Python code, which adds tens of microseconds per hand-off.
        self.start, self.done = threading.Lock(), threading.Lock()
        self.start.acquire()
        self.done.acquire()
        self.job: _Job | None = None
        self.error: BaseException | None = None
        threading.Thread(target=self._loop, daemon=True, name="gpulite-cpu").start()

    def _loop(self) -> None:
        # Kernels split work between these threads themselves: BLAS calls made here must
        # not start OpenBLAS's own threads (which then spin, taking the cores from us).
        set_local_threads(1)
        while True:
            self.start.acquire()
            job = self.job
            assert job is not None
            if not job.claim():  # the caller ran it: nobody waits for this worker
                self.job = None
                _put_back([self])
                continue
            try:
                job.fn()
            except BaseException as e:  # handed to the caller, which re-raises it
                self.error = e
            self.done.release()


def _take_workers(n: int) -> list[_Worker]:
    """``n`` workers for the caller alone: idle ones first, new ones for the rest."""
    with _lock:
        taken = _idle[len(_idle) - min(n, len(_idle)):]
        del _idle[len(_idle) - len(taken):]
    return taken + [_Worker() for _ in range(n - len(taken))]


def _put_back(workers: list[_Worker]) -> None:
    with _lock:
        _idle.extend(workers)


def run_parallel(jobs: Sequence[Callable[[], None]]) -> None:
    """Run ``jobs`` concurrently (the first on this thread) and wait for all of them.

    Jobs must touch disjoint outputs and scratch. Safe to call from several threads at once.
    """
    if len(jobs) == 1:
        jobs[0]()
        return
    _dispatch(jobs[0], jobs[1:])


def run_chunks(chunks: Sequence[Sequence[Callable[[], None]]]) -> None:
    """Run every chunk once, spread over threads that take the next chunk when they are free.

    ``chunks[k][t]`` runs chunk ``k`` on thread ``t`` (variants differ only in the scratch
    they use); the number of variants is the number of threads. Chunks must touch disjoint
    outputs. Safe to call from several threads at once.
    """
    n = len(chunks)
    if n == 0:
        return
    threads = len(chunks[0])
    if threads == 1 or n == 1:
        for c in chunks:
            c[0]()
        return
    counter = itertools.count()  # next() is atomic: the GIL is held while it runs

    def work(t: int) -> None:
        for k in counter:
            if k >= n:
                return
            chunks[k][t]()
    _dispatch(functools.partial(work, 0), [functools.partial(work, t) for t in range(1, threads)])


def _dispatch(here: Callable[[], None], others: Sequence[Callable[[], None]]) -> None:
    """Run ``here`` on this thread and each of ``others`` on a worker thread at the same time;
    return when all are done, raising the first worker error (or ``here``'s own). A job whose
    worker has not woken by the time ``here`` returns runs on this thread instead."""
    workers = _take_workers(len(others))
    lock = threading.Lock()
    jobs = [_Job(fn, lock) for fn in others]
    for w, job in zip(workers, jobs, strict=True):
        w.job, w.error = job, None
        w.start.release()
    errors: list[BaseException] = []
    mine = [False] * len(jobs)  # jobs this thread claimed: their workers do not report back
    try:
        here()
        for k, job in enumerate(jobs):
            if job.claim():
                mine[k] = True
                job.fn()
    finally:
        for k, job in enumerate(jobs):  # after an error here: take the unstarted jobs off the workers
            if not mine[k] and job.claim():
                mine[k] = True
        finished: list[_Worker] = []
        try:
            for w, taken_here in zip(workers, mine, strict=True):
                if taken_here:
                    continue
                w.done.acquire()
                finished.append(w)
                if w.error is not None:
                    errors.append(w.error)
                w.job = w.error = None
        finally:
            _put_back(finished)  # only workers known idle: one still running is never handed out
    if errors:
        raise errors[0]
