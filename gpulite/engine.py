"""Memory management for eager tensors, TF.js style: ``tidy``, ``keep``, ``memory``, ``profile``, ``time``.

Every :class:`~gpulite.tensor.Tensor` is counted (by :mod:`gpulite.runtime`) from creation
to ``dispose()`` (or to garbage collection, which disposes it too). ``tidy`` opens a scope:
every tensor created inside is disposed when it closes, except what the function returns
and what was passed to :func:`keep`; returned tensors move to the enclosing scope. Scopes
are per thread.

``memory()`` counts tensors and bytes per backend, the bytes that sit on a GPU, and the GPU
bytes allocated (pooled buffers, free ones included, and compiled eager ops). ``profile()``
and ``time()`` record every kernel run inside them, eager ops and ``Interpreter.invoke``
alike; GPU kernels are then waited for one by one so each gets its own time.

The state behind these (counters, scopes, recordings) is :mod:`gpulite.runtime`'s; this
module is the public API over it. (The module is ``engine``, TF.js's name for where this
lives, because ``gpulite.memory`` is the function.)
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpulite import runtime
from gpulite.errors import DisposedTensorError
from gpulite.runtime import KernelRecord, Recording
from gpulite.tensor import Tensor


# -- tidy / keep ------------------------------------------------------------------------------
def _tensors_in(obj: Any, out: set[int], depth: int = 0) -> None:
    if isinstance(obj, Tensor):
        out.add(id(obj))
    elif depth < 16 and isinstance(obj, (list, tuple, set, frozenset)):
        for x in obj:
            _tensors_in(x, out, depth + 1)
    elif depth < 16 and isinstance(obj, dict):
        for x in obj.values():
            _tensors_in(x, out, depth + 1)


class _TidyScope:
    """The scope ``tidy()`` opens; a context manager."""

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.tensors: list[Tensor] = []

    def __enter__(self) -> _TidyScope:
        runtime.scopes().append(self.tensors)
        return self

    def close(self, result: Any = None) -> None:
        scopes = runtime.scopes()
        if scopes and scopes[-1] is self.tensors:
            scopes.pop()
        else:  # closed out of order (a generator, an exception): remove it wherever it is
            for i in range(len(scopes) - 1, -1, -1):
                if scopes[i] is self.tensors:
                    del scopes[i]
                    break
        keep_ids: set[int] = set()
        if result is not None:
            _tensors_in(result, keep_ids)
        outer = scopes[-1] if scopes else None
        for t in self.tensors:
            if t._disposed:
                continue
            if t._kept or id(t) in keep_ids:
                if outer is not None:
                    outer.append(t)
            else:
                t.dispose()
        self.tensors = []

    def __exit__(self, *exc: object) -> None:
        self.close()


def tidy(fn: Callable[[], Any] | None = None, *, name: str | None = None) -> Any:
    """Dispose every tensor created inside except what is returned or kept (TF.js ``tf.tidy``).

    Parameters
    ----------
    fn : callable, optional
        Called with no arguments; tensors anywhere in its result (nested lists, tuples and
        dict values included) survive and move to the enclosing ``tidy``. Without ``fn``,
        ``tidy()`` is a context manager (``with gpulite.tidy(): ...``) that disposes every
        tensor created inside except those passed to :func:`keep`.
    name : str, optional
        For debugging only.

    Returns
    -------
    Any
        ``fn()``'s result, or the context manager.
    """
    if fn is None:
        return _TidyScope(name)
    if not callable(fn):
        raise TypeError(f"tidy() takes a callable (or nothing, as a context manager), got {type(fn).__name__}")
    scope = _TidyScope(name).__enter__()
    result = None
    try:
        result = fn()
        return result
    finally:
        scope.close(result)


def keep(t: Any) -> Any:
    """Exempt ``t`` from every enclosing ``tidy`` (TF.js ``tf.keep``); returns ``t``."""
    if not isinstance(t, Tensor):
        raise TypeError(f"keep() takes a gpulite Tensor, got {type(t).__name__}")
    if t._disposed:
        raise DisposedTensorError(f"keep() of {t!r}: the tensor is already disposed")
    t._kept = True
    return t


def dispose(obj: Any) -> None:
    """Dispose every tensor in ``obj`` (a tensor, or lists/tuples/dicts of them) (TF.js ``tf.dispose``)."""
    if isinstance(obj, Tensor):
        obj.dispose()
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for x in obj:
            dispose(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            dispose(x)


# -- memory() ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class BackendMemory:
    """One backend's share of :func:`memory`.

    Attributes
    ----------
    num_tensors, num_bytes : int
        Live tensors homed on this backend and their bytes.
    num_bytes_on_gpu : int
        Bytes of those tensors that have a GPU copy.
    num_bytes_allocated_on_gpu : int
        GPU bytes this backend's eager executor holds: pooled buffers (in use and free) and
        compiled ops (arenas, uniforms).
    num_bytes_in_pool : int
        Of those, free pooled buffers waiting for reuse.
    """

    num_tensors: int = 0
    num_bytes: int = 0
    num_bytes_on_gpu: int = 0
    num_bytes_allocated_on_gpu: int = 0
    num_bytes_in_pool: int = 0


@dataclass(frozen=True)
class MemoryInfo:
    """What :func:`memory` returns: totals, and ``backends`` by name."""

    num_tensors: int
    num_bytes: int
    num_bytes_on_gpu: int
    num_bytes_allocated_on_gpu: int
    backends: dict[str, BackendMemory] = field(default_factory=dict)


def memory() -> MemoryInfo:
    """Tensors and bytes now, in total and per backend (TF.js ``tf.memory``)."""
    execs = runtime.eager_executors()
    stats = runtime.tensor_stats()
    per = {}
    for n in sorted(set(stats) | set(execs)):
        st = stats.get(n, (0, 0, 0))
        ex = execs.get(n)
        per[n] = BackendMemory(st[0], st[1], st[2], ex.allocated_bytes() if ex else 0, ex.free_bytes() if ex else 0)
    return MemoryInfo(sum(b.num_tensors for b in per.values()), sum(b.num_bytes for b in per.values()),
                      sum(b.num_bytes_on_gpu for b in per.values()),
                      sum(b.num_bytes_allocated_on_gpu for b in per.values()), per)


# -- profile() / time() -----------------------------------------------------------------------
@dataclass(frozen=True)
class ProfileInfo:
    """What :func:`profile` returns (TF.js ``tf.profile``'s ``newBytes``, ``newTensors``, ``peakBytes``, ``kernels``).

    Attributes
    ----------
    new_bytes, new_tensors : int
        Growth of live tensor bytes and count over the call (negative when it freed more).
    peak_bytes : int
        The most live tensor bytes seen during the call.
    kernels : list of KernelRecord
    wall_ms : float
    result : Any
        What the function returned.
    """

    new_bytes: int
    new_tensors: int
    peak_bytes: int
    kernels: list[KernelRecord]
    wall_ms: float
    result: Any


@dataclass(frozen=True)
class TimeInfo:
    """What :func:`time` returns (TF.js ``tf.time``): wall time and the time spent in kernels."""

    wall_ms: float
    kernel_ms: float
    kernels: int


def _wait_gpus() -> None:
    for ex in runtime.eager_executors().values():
        ex.wait()


def _run_profiled(fn: Callable[[], Any]) -> tuple[Recording, Any, float]:
    if not callable(fn):
        raise TypeError(f"expected a callable, got {type(fn).__name__}")
    p = runtime.start_recording()
    try:
        t0 = _time.perf_counter()
        result = fn()
        _wait_gpus()
        wall = (_time.perf_counter() - t0) * 1e3
    finally:
        runtime.stop_recording(p)
    return p, result, wall


def profile(fn: Callable[[], Any]) -> ProfileInfo:
    """Run ``fn`` and report its kernels, time, peak bytes and new tensors (TF.js ``tf.profile``)."""
    p, result, wall = _run_profiled(fn)
    return ProfileInfo(runtime.total_bytes() - p.start_bytes, runtime.total_tensors() - p.start_tensors, p.peak,
                       list(p.kernels), wall, result)


def time(fn: Callable[[], Any]) -> TimeInfo:
    """Run ``fn`` and report its wall time and kernel time in ms (TF.js ``tf.time``).

    GPU work is waited for, both per kernel (for ``kernel_ms``) and at the end (for ``wall_ms``).
    """
    p, _, wall = _run_profiled(fn)
    return TimeInfo(wall, sum(k.time_ms for k in p.kernels), len(p.kernels))


__all__ = ["BackendMemory", "KernelRecord", "MemoryInfo", "ProfileInfo", "TimeInfo", "dispose", "keep", "memory",
           "profile", "tidy", "time"]
