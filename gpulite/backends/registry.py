"""The backend registry, TF.js style: ``register_backend``, ``set_backend``, ``get_backend``, ...

A backend is registered under a name with a *factory* and a *priority*. The factory makes
the backend object an :class:`~gpulite.Interpreter` compiles with (``compile(graph, order,
plan)``); it is called with keyword options: ``factory()`` for the process-wide instance
that eager ops (:mod:`gpulite.ops`) run on, ``factory(num_threads=..., **options)`` for each
Interpreter. Kernels are looked up under the registered name, so a custom backend registers
kernels of its own or inherits another's with :func:`gpulite.copy_kernels`.

The *active* backend is the one eager ops run on and ``Interpreter(backend=None)`` uses once
chosen explicitly. Until :func:`set_backend` is called it is chosen automatically on first
use: ``GPULITE_BACKEND`` if set, else the highest-priority backend that starts. Built-ins:
``webgpu`` (priority 2) and ``cpu`` (priority 1); a WebGPU adapter of CPU type (lavapipe,
SwiftShader) ranks webgpu at 0, below the numpy backend, because there the numpy backend is
faster. :func:`backend_choice` says why the active backend was chosen.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpulite.backends.kernels import get_kernels_for_backend
from gpulite.environment import env
from gpulite.errors import BackendError, BackendNotFoundError

log = logging.getLogger(__name__)

ENV_BACKEND = "GPULITE_BACKEND"
SOFTWARE_ADAPTER_PRIORITY = 0  # where a CPU-type WebGPU adapter ranks: below the cpu backend (1)
BackendFactory = Callable[..., Any]
Probe = Callable[[], tuple["int | None", str]]


@dataclass
class _Entry:
    name: str
    factory: BackendFactory
    priority: int
    probe: Probe | None = None
    order: int = 0
    instance: Any = None
    eager: Any = None
    failure: str = ""


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


_lock = threading.RLock()
_entries: dict[str, _Entry] = {}
_active: str | None = None
_explicit = False  # chosen by set_backend or GPULITE_BACKEND, not automatically
_reason = ""
_counter = 0


def register_backend(name: str, factory: BackendFactory, priority: int = 1, *, probe: Probe | None = None) -> bool:
    """Register a backend (TF.js ``tf.registerBackend``).

    Parameters
    ----------
    name : str
        The name kernels are registered under and ``set_backend`` takes.
    factory : callable
        ``factory(**options) -> backend``; the backend has ``compile(graph, order, plan)``
        (see :class:`~gpulite.backends.cpu.CpuBackend`) and, for GPU execution of eager ops,
        a ``gdev`` (:class:`~gpulite.backends.webgpu.GpuDevice`) as
        :class:`~gpulite.backends.webgpu.WebGpuBackend` has.
    priority : int
        Higher wins the automatic choice.
    probe : callable, optional
        ``probe() -> (rank, note)``: the priority automatic choice should use (None: it cannot
        start) without starting the backend, and why.

    Returns
    -------
    bool
        False (with a warning) when ``name`` is taken, as in TF.js.
    """
    global _counter
    if not isinstance(name, str) or not name:
        raise TypeError(f"backend name must be a non-empty str, got {name!r}")
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {type(factory).__name__}")
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"priority must be an int, got {type(priority).__name__} {priority!r}")
    with _lock:
        if name in _entries:
            log.warning("backend %r is already registered; remove_backend(%r) first", name, name)
            return False
        _counter += 1
        _entries[name] = _Entry(name, factory, priority, probe, _counter)
    return True


def remove_backend(name: str) -> None:
    """Unregister a backend and dispose of its instance and its eager tensors (TF.js ``tf.removeBackend``).

    Tensors whose data lived only on it are disposed; if it was active, the next use chooses
    again.
    """
    global _active, _explicit, _reason
    with _lock:
        entry = _entries.pop(name, None)
        if entry is None:
            raise BackendNotFoundError(f"backend {name!r} is not registered; registered: {list_backends()}")
        if _active == name:
            _active, _explicit, _reason = None, False, ""
    from gpulite import engine
    from gpulite.ops import dispatch
    engine.forget_backend(name)
    dispatch.clear_cache(name)
    if entry.eager is not None:
        entry.eager.close()


def list_backends() -> list[str]:
    """Registered backend names, highest priority first."""
    with _lock:
        return [e.name for e in sorted(_entries.values(), key=lambda e: (-e.priority, e.order))]


def _entry(name: str) -> _Entry:
    e = _entries.get(name)
    if e is None:
        raise BackendNotFoundError(f"backend {name!r} is not registered; registered: {list_backends()}")
    return e


def _start(e: _Entry) -> str:
    """Start ``e``'s process-wide instance; returns "" or why it cannot start."""
    if e.instance is not None:
        return ""
    if e.probe is not None:
        rank, note = e.probe()
        if rank is None:
            e.failure = note
            return note
    try:
        inst = e.factory()
    except Exception as exc:  # any failure means "cannot start"; the reason is kept and logged
        e.failure = f"{type(exc).__name__}: {exc}"
        return e.failure
    _name(inst, e.name)
    e.instance, e.failure = inst, ""
    return ""


def _name(inst: Any, name: str) -> None:
    # Kernels are looked up under backend.name: a custom backend built from a stock class
    # (WebGpuBackend on the application's device) must look up its own registered name.
    if getattr(inst, "name", None) != name:
        try:
            inst.name = name
        except AttributeError:
            log.warning("backend %r: its object does not take a name; kernels are looked up under %r",
                        name, getattr(inst, "name", None))
    if name not in ("cpu", "webgpu") and not get_kernels_for_backend(name):
        log.warning("backend %r has no kernels registered; inherit a backend's with "
                    "gpulite.copy_kernels('webgpu', %r)", name, name)


def find_backend(name: str) -> Any:
    """The started instance of ``name``, starting it if needed; None if it cannot start (TF.js ``tf.findBackend``)."""
    with _lock:
        e = _entry(name)
        why = _start(e)
    if why:
        log.warning("backend %r cannot start: %s", name, why)
        return None
    return e.instance


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
        e = _entry(name)
        why = _start(e)
        if why:
            log.warning("set_backend(%r) failed: the backend cannot start: %s", name, why)
            return False
        _active, _explicit, _reason = name, True, f"set_backend({name!r})"
    log.info("active backend: %s (%s)", name, _reason)
    return True


def _ranked() -> list[tuple[int, _Entry, str]]:
    out = []
    for e in _entries.values():
        rank, note = (e.priority, "") if e.probe is None else e.probe()
        if rank is not None:
            out.append((rank, e, note))
        else:
            e.failure = note
    return sorted(out, key=lambda r: (-r[0], r[1].order))


def _choose() -> None:
    global _active, _explicit, _reason
    wanted = os.environ.get(ENV_BACKEND, "").strip()
    if wanted and wanted != "auto":
        e = _entry(wanted)
        why = _start(e)
        if why:
            raise BackendError(f"{ENV_BACKEND}={wanted} names a backend that cannot start: {why}")
        _active, _explicit, _reason = wanted, True, f"{ENV_BACKEND}={wanted}"
        return
    ranked = _ranked()
    unstartable = [f"{e.name!r} cannot start: {e.failure}" for e in _entries.values()
                   if e.failure and all(e is not r[1] for r in ranked)]
    skipped: list[str] = []
    for rank, e, _ in ranked:
        why = _start(e)
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
        why = _start(_entries[name])
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
        _probe_cache.clear()


def describe_backends() -> list[BackendInfo]:
    """Every registered backend with its rank, state and kernel count (for ``gpulite info``)."""
    with _lock:
        out = []
        for name in list_backends():
            e = _entries[name]
            rank, note = (e.priority, "") if e.probe is None else e.probe()
            out.append(BackendInfo(name, e.priority, rank, note or e.failure, e.instance is not None,
                                   name == _active, len(get_kernels_for_backend(name))))
        return out


def make_backend(name: str | None, *, num_threads: int | None = None, options: dict[str, Any] | None = None
                 ) -> tuple[str, Any]:
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
    with _lock:
        e = _entries.get(name)
    if e is None:
        raise BackendNotFoundError(f"unknown backend {name!r}; expected 'auto' or one of {list_backends()}")
    kw = dict(options or {})
    threads = num_threads if num_threads is not None else env().get("num_threads")
    if threads is not None:
        kw["num_threads"] = threads
    inst = e.factory(**kw)
    _name(inst, name)
    return name, inst


def eager_executor(name: str | None = None) -> Any:
    """The eager-op executor of backend ``name`` (default: the active one), made on first use."""
    name = name or get_backend()
    with _lock:
        e = _entry(name)
        if e.eager is None:
            why = _start(e)
            if why:
                raise BackendError(f"backend {name!r} cannot start: {why}")
            e.eager = _make_eager(name, e.instance)
        return e.eager


def eager_executors() -> dict[str, Any]:
    """Every eager executor made so far, by backend name."""
    with _lock:
        return {n: e.eager for n, e in _entries.items() if e.eager is not None}


def _make_eager(name: str, inst: Any) -> Any:
    make = getattr(inst, "eager_executor", None)
    if callable(make):
        return make()
    if getattr(inst, "gdev", None) is not None:
        from gpulite.backends.webgpu.eager import WebGpuEager
        return WebGpuEager(inst.gdev, name)
    from gpulite.backends.cpu.eager import CpuEager
    return CpuEager(name, num_threads=getattr(inst, "num_threads", None))


# -- built-ins ------------------------------------------------------------------------------
def _cpu_factory(num_threads: int | None = None, **options: Any) -> Any:
    from gpulite.backends.cpu import CpuBackend
    if options:
        raise TypeError(f"backend 'cpu' takes no options, got {sorted(options)}")
    return CpuBackend(num_threads=num_threads if num_threads is not None else env().get("num_threads"))


def _webgpu_factory(**options: Any) -> Any:
    from gpulite.backends.webgpu import WebGpuBackend
    options.setdefault("precision", env().get("precision"))
    return WebGpuBackend(**options)


_probe_cache: dict[str, tuple[int | None, str]] = {}


def _webgpu_probe() -> tuple[int | None, str]:
    key = os.environ.get("GPULITE_ADAPTER", "")
    if key not in _probe_cache:
        _probe_cache[key] = _probe_webgpu()
    return _probe_cache[key]


def _probe_webgpu() -> tuple[int | None, str]:
    try:
        from gpulite.backends.webgpu.probe import adapter_kind
    except ImportError as e:
        return None, f"wgpu is not installed ({e})"
    try:
        kind = adapter_kind()
    except Exception as e:  # NoAdapterError and driver failures alike: webgpu cannot start
        return None, f"{type(e).__name__}: {e}"
    if kind.is_software:
        return SOFTWARE_ADAPTER_PRIORITY, (
            f"its adapter {kind.name!r} is of CPU type (software {kind.backend_type}), slower than the numpy backend")
    return 2, f"adapter {kind.name!r} ({kind.adapter_type}, {kind.backend_type})"


register_backend("webgpu", _webgpu_factory, 2, probe=_webgpu_probe)
register_backend("cpu", _cpu_factory, 1)
