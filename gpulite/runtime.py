"""The runtime owner (TF.js's ``Engine``): every piece of process-wide runtime state lives here.

- Backends: the started instance of each registered backend, the *active* backend and why it
  was chosen, each backend's eager executor (:mod:`gpulite.backends.registry` is only the
  name -> factory table this draws on).
- Tensor accounting: live tensors and bytes per backend, the ``tidy`` scopes (per thread),
  the recording ``profile``/``time`` calls. :mod:`gpulite.tensor` is a leaf: this module
  installs itself as its tracker (TF.js ``setTensorTracker``).
- The eager-op cache: compiled one-node graphs of :mod:`gpulite.ops`, per backend.

The public API over this state is ``gpulite.set_backend``/``get_backend``/... (re-exported
from here) and :mod:`gpulite.engine` (``tidy``, ``keep``, ``memory``, ``profile``, ``time``).

Until :func:`set_backend` is called the active backend is chosen automatically on first use:
``GPULITE_BACKEND`` if set, else the highest-ranked backend that starts (a backend's rank is
its priority, or what its probe says: a WebGPU adapter of CPU type ranks webgpu below the
numpy backend). :func:`backend_choice` says why the active backend was chosen.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from gpulite import tensor as _tensor
from gpulite.backends import registry
from gpulite.backends.base import Backend, EagerExecutor, GpuEagerExecutor
from gpulite.backends.kernels import get_kernels_for_backend
from gpulite.environment import env
from gpulite.errors import BackendError, BackendNotFoundError, FlagError
from gpulite.tensor import Tensor

log = logging.getLogger(__name__)

ENV_BACKEND = registry.ENV_BACKEND
_lock = threading.RLock()


# -- backends -------------------------------------------------------------------------------
@dataclass(frozen=True)
class BackendInfo:
    """One registered backend, as :func:`describe_backends` reports it.

    Attributes
    ----------
    name : str
    priority : int
        As registered.
    rank : int or None
        The priority automatic choice uses (None: it cannot start).
    note : str
        Why ``rank`` differs from ``priority``, or what the backend runs on.
    started : bool
        Whether the process-wide instance exists.
    active : bool
    kernels : int
        Kernels registered under this name.
    """

    name: str
    priority: int
    rank: int | None
    note: str
    started: bool
    active: bool
    kernels: int


_instances: dict[str, Backend] = {}
_eager: dict[str, EagerExecutor] = {}
_failures: dict[str, str] = {}
_active: str | None = None
_explicit = False  # chosen by set_backend or GPULITE_BACKEND, not automatically
_reason = ""


def _start(name: str) -> str:
    """Start ``name``'s process-wide instance; returns "" or why it cannot start."""
    if name in _instances:
        return ""
    e = registry.entry(name)
    if e.probe is not None:
        rank, note = registry.rank(e)
        if rank is None:
            _failures[name] = note
            return note
    try:
        inst = e.factory()
    except FlagError:  # a GPULITE_* variable with a bad value: the user's to fix, not the backend's failure
        raise
    except Exception as exc:  # any failure means "cannot start"; the reason is kept and logged
        _failures[name] = f"{type(exc).__name__}: {exc}"
        return _failures[name]
    _instances[name] = _named(inst, name)
    _failures.pop(name, None)
    return ""


def _named(inst: Backend, name: str) -> Backend:
    # Kernels are looked up under backend.name: a custom backend built from a stock class
    # (WebGpuBackend on the application's device) must look up its own registered name.
    if inst.name != name:
        inst.name = name
    if name not in ("cpu", "webgpu", "litert") and not get_kernels_for_backend(name):
        log.warning("backend %r has no kernels registered; inherit a backend's with "
                    "gpulite.copy_kernels('webgpu', %r)", name, name)
    return inst


def find_backend(name: str) -> Backend | None:
    """The started instance of ``name``, starting it if needed; None if it cannot start (TF.js ``tf.findBackend``)."""
    with _lock:
        why = _start(name)
    if why:
        log.warning("backend %r cannot start: %s", name, why)
        return None
    return _instances[name]


def set_backend(name: str) -> bool:
    """Make ``name`` the active backend (TF.js ``tf.setBackend``).

    Returns
    -------
    bool
        False when it cannot start (the reason is logged as a warning); the active backend
        is then unchanged.

    Raises
    ------
    BackendNotFoundError
        When ``name`` is not registered.
    """
    global _active, _explicit, _reason
    with _lock:
        why = _start(name)
        if why:
            log.warning("set_backend(%r) failed: the backend cannot start: %s", name, why)
            return False
        _active, _explicit, _reason = name, True, f"set_backend({name!r})"
    log.info("active backend: %s (%s)", name, _reason)
    return True


def _ranked() -> list[tuple[int, registry.Entry, str]]:
    out = []
    for e in registry.entries():
        rank, note = registry.rank(e)
        if rank is not None:
            out.append((rank, e, note))
        else:
            _failures[e.name] = note
    return sorted(out, key=lambda r: (-r[0], r[1].order))


def _choose() -> None:
    global _active, _explicit, _reason
    wanted = os.environ.get(ENV_BACKEND, "").strip()
    if wanted and wanted != "auto":
        why = _start(wanted)
        if why:
            raise BackendError(f"{ENV_BACKEND}={wanted} names a backend that cannot start: {why}")
        _active, _explicit, _reason = wanted, True, f"{ENV_BACKEND}={wanted}"
        return
    ranked = _ranked()
    unstartable = [f"{e.name!r} cannot start: {_failures[e.name]}" for e in registry.entries()
                   if _failures.get(e.name) and all(e is not r[1] for r in ranked)]
    skipped: list[str] = []
    for rank, e, _ in ranked:
        why = _start(e.name)
        if why:
            skipped.append(f"{e.name!r} (priority {rank}) cannot start: {why}")
            continue
        lower = [f"{e2.name!r} ranks {r2}" + (f" because {n2}" if n2 else "")
                 for r2, e2, n2 in ranked if e2 is not e and r2 <= rank]
        _active, _explicit = e.name, False
        _reason = "; ".join([f"auto: {e.name!r} is the highest-ranked backend that starts (rank {rank})",
                             *skipped, *lower, *unstartable])
        return
    raise BackendError(f"no registered backend starts: {'; '.join(skipped + unstartable) or list_backends()}")


def get_backend() -> str:
    """The active backend's name, choosing it on first use (TF.js ``tf.getBackend``)."""
    with _lock:
        if _active is None:
            _choose()
            log.info("active backend: %s (%s)", _active, _reason)
        assert _active is not None
        return _active


def ready() -> str:
    """Start the active backend (choosing it if needed) and return its name (TF.js ``await tf.ready()``).

    gpulite's backends start synchronously, so this returns once the backend is usable.
    """
    name = get_backend()
    with _lock:
        why = _start(name)
    if why:
        raise BackendError(f"the active backend {name!r} cannot start: {why}")
    return name


def backend_choice() -> str:
    """Why the active backend is active (``set_backend``, ``GPULITE_BACKEND`` or the automatic ranking)."""
    get_backend()
    return _reason


def chosen_explicitly() -> bool:
    """Whether ``set_backend`` or ``GPULITE_BACKEND`` chose the active backend."""
    if _active is None and os.environ.get(ENV_BACKEND, "").strip() not in ("", "auto"):
        get_backend()
    return _explicit


def reset_active() -> None:
    """Forget the active backend (and whether it was chosen explicitly); the next use chooses again.

    Started backends stay started. For tests, and after changing ``GPULITE_BACKEND`` or
    ``GPULITE_ADAPTER`` in a running process.
    """
    global _active, _explicit, _reason
    with _lock:
        _active, _explicit, _reason = None, False, ""
        registry.clear_probes()


def list_backends() -> list[str]:
    """Registered backend names, highest priority first."""
    return registry.list_backends()


def remove_backend(name: str) -> None:
    """Unregister a backend and dispose of its instance and its eager tensors (TF.js ``tf.removeBackend``).

    Tensors whose data lived only on it are disposed; if it was active, the next use chooses
    again.
    """
    global _active, _explicit, _reason
    with _lock:
        registry.unregister(name)
        if _active == name:
            _active, _explicit, _reason = None, False, ""
        inst, eager = _instances.pop(name, None), _eager.pop(name, None)
        _failures.pop(name, None)
    _forget_tensors(name)
    clear_cache(name)
    if eager is not None:
        eager.close()
    if inst is not None:
        inst.close()


def describe_backends() -> list[BackendInfo]:
    """Every registered backend with its rank, state and kernel count (for ``gpulite info``)."""
    with _lock:
        out = []
        for e in registry.entries():
            rank, note = registry.rank(e)
            out.append(BackendInfo(e.name, e.priority, rank, note or _failures.get(e.name, ""), e.name in _instances,
                                   e.name == _active, len(get_kernels_for_backend(e.name))))
        return out


def make_backend(name: str | None, *, num_threads: int | None = None, options: dict[str, Any] | None = None
                 ) -> tuple[str, Backend]:
    """A new backend object for one Interpreter: ``(resolved name, backend)``.

    Parameters
    ----------
    name : str or None
        A registered name; ``"auto"`` for the active backend (chosen automatically unless
        ``set_backend``/``GPULITE_BACKEND`` chose it); None for the explicitly chosen
        backend if there is one, else ``"cpu"`` (as ``tflite_runtime``).
    num_threads : int, optional
        Passed on when given, or from the ``num_threads`` flag.
    options : dict, optional
        Backend options, passed to the factory as keywords.
    """
    if name is None:
        name = get_backend() if chosen_explicitly() else "cpu"
    elif name == "auto":
        name = get_backend()
    if not isinstance(name, str):
        raise TypeError(f"backend must be a str or None, got {type(name).__name__}")
    if name not in registry.list_backends():
        raise BackendNotFoundError(f"unknown backend {name!r}; expected 'auto' or one of {list_backends()}")
    kw = dict(options or {})
    threads = num_threads if num_threads is not None else env().get("num_threads")
    if threads is not None:
        kw["num_threads"] = threads
    return name, _named(registry.entry(name).factory(**kw), name)


def eager_executor(name: str | None = None) -> EagerExecutor:
    """The eager-op executor of backend ``name`` (default: the active one), made on first use."""
    name = name or get_backend()
    with _lock:
        ex = _eager.get(name)
        if ex is None:
            why = _start(name)
            if why:
                raise BackendError(f"backend {name!r} cannot start: {why}")
            ex = _eager[name] = _instances[name].eager()
        return ex


def eager_executors() -> dict[str, EagerExecutor]:
    """Every eager executor made so far, by backend name."""
    with _lock:
        return dict(_eager)


def gpu_executor(name: str | None = None) -> GpuEagerExecutor:
    """The eager executor of GPU backend ``name``; default: the active backend if it is a GPU
    backend, else the highest-priority registered GPU backend that starts.

    Raises
    ------
    ValueError
        When ``name`` is not a GPU backend, or no GPU backend starts.
    """
    if name is not None:
        exe = eager_executor(name)
        if exe.device_kind != "gpu":
            raise ValueError(f"backend {name!r} is not a GPU backend")
        return cast(GpuEagerExecutor, exe)  # the contract: a "gpu" executor is a GpuEagerExecutor
    active = eager_executor()
    if active.device_kind == "gpu":
        return cast(GpuEagerExecutor, active)
    for n in list_backends():
        inst = find_backend(n)
        if inst is not None and inst.device_kind == "gpu":
            return cast(GpuEagerExecutor, eager_executor(n))
    raise ValueError(f"no GPU backend starts; registered: {list_backends()}")


# -- tensor accounting ------------------------------------------------------------------------
_stats: dict[str, list[int]] = {}  # backend -> [num_tensors, num_bytes, num_bytes_on_gpu]
_live: dict[str, weakref.WeakSet[Tensor]] = {}  # backend -> its tensors, for remove_backend
_local = threading.local()


@dataclass(frozen=True)
class KernelRecord:
    """One kernel run inside ``gpulite.profile`` or ``gpulite.time``.

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
class Recording:
    """One ``profile``/``time`` in progress: where it started, its peak and its kernels."""

    start_bytes: int
    start_tensors: int
    peak: int
    kernels: list[KernelRecord] = field(default_factory=list)


_profilers: list[Recording] = []


def scopes() -> list[list[Tensor]]:
    """This thread's open ``tidy`` scopes, innermost last: the tensors each has seen."""
    s: list[list[Tensor]] | None = getattr(_local, "scopes", None)
    if s is None:
        s = _local.scopes = []
    return s


def _count(t: Tensor, home: str, sign: int, *, gpu: bool = True) -> None:
    st = _stats.get(home)
    if st is None:
        if sign < 0:
            return
        st = _stats[home] = [0, 0, 0]
        _live[home] = weakref.WeakSet()
    st[0] += sign
    st[1] += sign * t.nbytes
    if gpu and t.on_gpu:
        st[2] += sign * t.nbytes
    if sign > 0:
        _live[home].add(t)
    else:
        _live[home].discard(t)


class _Tracker:
    """What :mod:`gpulite.tensor` calls back into (its ``TensorTracker``)."""

    def track(self, t: Tensor) -> None:
        with _lock:
            _count(t, t.backend, +1, gpu=False)  # a new tensor's GPU copy is counted by gpu_changed
        s = scopes()
        if s:
            s[-1].append(t)
        if _profilers:
            _peak()

    def untrack(self, t: Tensor) -> None:
        with _lock:
            _count(t, t.backend, -1)

    def gpu_changed(self, t: Tensor, on_gpu: bool) -> None:
        with _lock:
            st = _stats.get(t.backend)
            if st is not None:
                st[2] += t.nbytes if on_gpu else -t.nbytes
        if _profilers and on_gpu:
            _peak()

    def moved(self, t: Tensor, new_home: str) -> None:
        with _lock:
            _count(t, t.backend, -1)
            t._home = new_home
            _count(t, new_home, +1)

    def forget_weight(self, tensor_id: int) -> None:
        forget_weight(tensor_id)

    def active_backend(self) -> str:
        return get_backend()

    def gpu_store(self, backend: str | None) -> GpuEagerExecutor:
        return gpu_executor(backend)


def _forget_tensors(name: str) -> None:
    """Dispose every tensor homed on backend ``name`` (it is being removed)."""
    with _lock:
        live = list(_live.get(name, ()))
    for t in live:
        t._drop_backend()
    with _lock:
        _stats.pop(name, None)
        _live.pop(name, None)


def tensor_stats() -> dict[str, tuple[int, int, int]]:
    """``backend -> (num_tensors, num_bytes, num_bytes_on_gpu)`` of the live tensors."""
    with _lock:
        return {n: (st[0], st[1], st[2]) for n, st in _stats.items()}


def total_bytes() -> int:
    with _lock:
        return sum(st[1] for st in _stats.values())


def total_tensors() -> int:
    with _lock:
        return sum(st[0] for st in _stats.values())


def _peak() -> None:
    now = total_bytes()
    for p in _profilers:
        if now > p.peak:
            p.peak = now


def start_recording() -> Recording:
    """Begin a ``profile``/``time``: kernels run from now on are recorded (GPU ones waited for one by one)."""
    now = total_bytes()
    p = Recording(now, total_tensors(), now)
    _profilers.append(p)
    return p


def stop_recording(p: Recording) -> None:
    _profilers.remove(p)


def profiling() -> bool:
    """Whether a ``profile``/``time`` is recording (kernels are then synchronised one by one)."""
    return bool(_profilers)


def record_kernel(rec: KernelRecord) -> None:
    """Add a kernel run to every active recording (called by eager ops and the model observer)."""
    for p in _profilers:
        p.kernels.append(rec)


# -- the eager-op cache -----------------------------------------------------------------------
MAX_CACHED = 512


@dataclass
class CachedOp:
    """One compiled eager op: the executor that runs it (the active one, or a CPU fallback),
    what it compiled to, its output's shape and dtype, the backend its outputs belong to, and
    the ids of the tensors compiled into it as weights."""

    exe: EagerExecutor
    compiled: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    home: str
    weights: tuple[int, ...]


_cache: OrderedDict[tuple, CachedOp] = OrderedDict()
_by_weight: dict[int, set[tuple]] = {}


def cached_op(key: tuple, make: Callable[[], CachedOp]) -> CachedOp:
    """The cached op under ``key`` (its first element the backend name), made by ``make()`` on a miss."""
    with _lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
            return entry
    entry = make()
    with _lock:
        _cache[key] = entry
        for w in entry.weights:
            _by_weight.setdefault(w, set()).add(key)
        while len(_cache) > MAX_CACHED:
            _evict(next(iter(_cache)))
    return entry


def _evict(key: tuple) -> None:
    entry = _cache.pop(key, None)
    if entry is None:
        return
    for w in entry.weights:
        keys = _by_weight.get(w)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del _by_weight[w]
    entry.exe.discard(entry.compiled)


def forget_weight(tensor_id: int) -> None:
    """Evict every cached op compiled with tensor ``tensor_id`` as a weight (it was disposed)."""
    with _lock:
        for key in list(_by_weight.get(tensor_id, ())):
            _evict(key)


def clear_cache(backend: str | None = None) -> None:
    """Evict every cached op (of one backend)."""
    with _lock:
        for key in [k for k in _cache if backend is None or k[0] == backend]:
            _evict(key)


def cache_size() -> int:
    """Compiled eager ops in the cache."""
    return len(_cache)


_tensor.set_tensor_tracker(_Tracker())
