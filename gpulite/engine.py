"""Memory management for eager tensors, TF.js style: ``tidy``, ``keep``, ``memory``, ``profile``, ``time``.

Every :class:`~gpulite.tensor.Tensor` is counted here from creation to ``dispose()`` (or to
garbage collection, which disposes it too). ``tidy`` opens a scope: every tensor created
inside is disposed when it closes, except what the function returns and what was passed to
:func:`keep`; returned tensors move to the enclosing scope. Scopes are per thread.

``memory()`` counts tensors and bytes per backend, the bytes that sit on a GPU, and the GPU
bytes allocated (pooled buffers, free ones included, and compiled eager ops). ``profile()``
and ``time()`` record every kernel run inside them, eager ops and ``Interpreter.invoke``
alike; GPU kernels are then waited for one by one so each gets its own time.

(The module is ``engine``, TF.js's name for where this lives, because ``gpulite.memory`` is
the function.)
"""

from __future__ import annotations

import threading
import time as _time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpulite.errors import DisposedTensorError

# -- counters -------------------------------------------------------------------------------
_lock = threading.RLock()
_stats: dict[str, list[int]] = {}  # backend -> [num_tensors, num_bytes, num_bytes_on_gpu]
_live: dict[str, weakref.WeakSet] = {}  # backend -> its tensors, for remove_backend
_local = threading.local()
_profilers: list[_Profile] = []


def _scopes() -> list[list[Any]]:
    s = getattr(_local, "scopes", None)
    if s is None:
        s = _local.scopes = []
    return s


def track(t: Any) -> None:
    """Count a new tensor and put it into the innermost ``tidy`` scope (called by Tensor)."""
    with _lock:
        st = _stats.get(t._home)
        if st is None:
            st = _stats[t._home] = [0, 0, 0]
            _live[t._home] = weakref.WeakSet()
        st[0] += 1
        st[1] += t.nbytes
        _live[t._home].add(t)
    scopes = _scopes()
    if scopes:
        scopes[-1].append(t)
    if _profilers:
        _peak()


def untrack(t: Any) -> None:
    """Uncount a disposed tensor."""
    with _lock:
        st = _stats.get(t._home)
        if st is not None:
            st[0] -= 1
            st[1] -= t.nbytes
            if t._buf is not None:
                st[2] -= t.nbytes
            live = _live.get(t._home)
            if live is not None:
                live.discard(t)


def gpu_changed(t: Any, on_gpu: bool) -> None:
    """A tensor's GPU copy appeared (``on_gpu``) or went away."""
    with _lock:
        st = _stats.get(t._home)
        if st is not None:
            st[2] += t.nbytes if on_gpu else -t.nbytes
    if _profilers and on_gpu:
        _peak()


def moved(t: Any, new_home: str) -> None:
    """Re-count a tensor under another backend (its data moved there)."""
    with _lock:
        untrack(t)
        t._home = new_home
        st = _stats.get(new_home)
        if st is None:
            st = _stats[new_home] = [0, 0, 0]
            _live[new_home] = weakref.WeakSet()
        st[0] += 1
        st[1] += t.nbytes
        if t._buf is not None:
            st[2] += t.nbytes
        _live[new_home].add(t)


def forget_backend(name: str) -> None:
    """Dispose every tensor homed on backend ``name`` (it is being removed)."""
    with _lock:
        live = list(_live.get(name, ()))
    for t in live:
        t._drop_backend()
    with _lock:
        _stats.pop(name, None)
        _live.pop(name, None)


# -- tidy / keep ------------------------------------------------------------------------------
def _tensors_in(obj: Any, out: set[int], depth: int = 0) -> None:
    from gpulite.tensor import Tensor
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
        self.tensors: list[Any] = []

    def __enter__(self) -> _TidyScope:
        _scopes().append(self.tensors)
        return self

    def close(self, result: Any = None) -> None:
        scopes = _scopes()
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
    from gpulite.tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"keep() takes a gpulite Tensor, got {type(t).__name__}")
    if t._disposed:
        raise DisposedTensorError(f"keep() of {t!r}: the tensor is already disposed")
    t._kept = True
    return t


def dispose(obj: Any) -> None:
    """Dispose every tensor in ``obj`` (a tensor, or lists/tuples/dicts of them) (TF.js ``tf.dispose``)."""
    from gpulite.tensor import Tensor
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
    from gpulite.backends import registry
    execs = registry.eager_executors()
    with _lock:
        names = sorted(set(_stats) | set(execs))
        per = {}
        for n in names:
            st = _stats.get(n, [0, 0, 0])
            ex = execs.get(n)
            per[n] = BackendMemory(st[0], st[1], st[2], ex.allocated_bytes() if ex else 0, ex.free_bytes() if ex else 0)
    return MemoryInfo(sum(b.num_tensors for b in per.values()), sum(b.num_bytes for b in per.values()),
                      sum(b.num_bytes_on_gpu for b in per.values()),
                      sum(b.num_bytes_allocated_on_gpu for b in per.values()), per)


def _total_bytes() -> int:
    with _lock:
        return sum(st[1] for st in _stats.values())


def _total_tensors() -> int:
    with _lock:
        return sum(st[0] for st in _stats.values())


# -- profile() / time() -----------------------------------------------------------------------
@dataclass(frozen=True)
class KernelRecord:
    """One kernel run inside :func:`profile` or :func:`time`.

    Attributes
    ----------
    name : str
        The op (``"CONV_2D"``); for a model node, with its index (``"CONV_2D#12"``).
    backend : str
    input_shapes, output_shapes : list of tuple
    time_ms : float
        Wall time of the kernel; on a GPU measured up to the kernel's completion.
    bytes_added : int
        Bytes of the tensors it created (eager ops) or wrote (model nodes).
    """

    name: str
    backend: str
    input_shapes: list[tuple[int, ...]]
    output_shapes: list[tuple[int, ...]]
    time_ms: float
    bytes_added: int


@dataclass
class _Profile:
    start_bytes: int
    start_tensors: int
    peak: int
    kernels: list[KernelRecord] = field(default_factory=list)


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


def profiling() -> bool:
    """Whether a ``profile``/``time`` is recording (kernels are then synchronised one by one)."""
    return bool(_profilers)


def record_kernel(rec: KernelRecord) -> None:
    """Add a kernel run to every active profile (called by ops and the interpreter hook)."""
    for p in _profilers:
        p.kernels.append(rec)


def _peak() -> None:
    now = _total_bytes()
    for p in _profilers:
        if now > p.peak:
            p.peak = now


def _wait_gpus() -> None:
    from gpulite.backends import registry
    for ex in registry.eager_executors().values():
        ex.wait()


def _run_profiled(fn: Callable[[], Any]) -> tuple[_Profile, Any, float]:
    if not callable(fn):
        raise TypeError(f"expected a callable, got {type(fn).__name__}")
    p = _Profile(_total_bytes(), _total_tensors(), _total_bytes())
    _profilers.append(p)
    try:
        t0 = _time.perf_counter()
        result = fn()
        _wait_gpus()
        wall = (_time.perf_counter() - t0) * 1e3
    finally:
        _profilers.remove(p)
    return p, result, wall


def profile(fn: Callable[[], Any]) -> ProfileInfo:
    """Run ``fn`` and report its kernels, time, peak bytes and new tensors (TF.js ``tf.profile``)."""
    p, result, wall = _run_profiled(fn)
    return ProfileInfo(_total_bytes() - p.start_bytes, _total_tensors() - p.start_tensors, p.peak,
                       list(p.kernels), wall, result)


def time(fn: Callable[[], Any]) -> TimeInfo:
    """Run ``fn`` and report its wall time and kernel time in ms (TF.js ``tf.time``).

    GPU work is waited for, both per kernel (for ``kernel_ms``) and at the end (for ``wall_ms``).
    """
    p, _, wall = _run_profiled(fn)
    return TimeInfo(wall, sum(k.time_ms for k in p.kernels), len(p.kernels))
