"""The backend table, TF.js style: a name -> (factory, priority, probe) registration per backend.

A backend is registered under a name with a *factory* and a *priority*. The factory makes
an object satisfying :class:`~gpulite.backends.base.Backend`; it is called with keyword
options: ``factory()`` for the process-wide instance that eager ops (:mod:`gpulite.ops`) run
on, ``factory(num_threads=..., **options)`` for each Interpreter. Kernels are looked up under
the registered name, so a custom backend registers kernels of its own or inherits another's
with :func:`gpulite.copy_kernels`.

This module is only the table: which backend is started and active, and everything made
from the table, belongs to :mod:`gpulite.runtime` (``gpulite.set_backend`` and friends). A
probe ranks a backend without starting it; built-ins: ``webgpu`` (priority 3), ``litert``
(priority 2: LiteRT's kernels, when the ai-edge-litert package can be imported) and ``cpu``
(priority 1, numpy); a WebGPU adapter of CPU type (lavapipe, SwiftShader) ranks webgpu at 0,
below the numpy backend, because there the numpy backend is faster. So ``auto`` takes a
real GPU first, then LiteRT, then numpy.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpulite.environment import env
from gpulite.errors import BackendNotFoundError

log = logging.getLogger(__name__)

ENV_BACKEND = "GPULITE_BACKEND"
SOFTWARE_ADAPTER_PRIORITY = 0  # where a CPU-type WebGPU adapter ranks: below the cpu backend (1)
BackendFactory = Callable[..., Any]
Probe = Callable[[], tuple["int | None", str]]


@dataclass(frozen=True)
class Entry:
    """One registration: ``order`` breaks ties between equal priorities (first registered wins)."""

    name: str
    factory: BackendFactory
    priority: int
    probe: Probe | None = None
    order: int = 0


_lock = threading.RLock()
_entries: dict[str, Entry] = {}
_counter = 0


def register_backend(name: str, factory: BackendFactory, priority: int = 1, *, probe: Probe | None = None) -> bool:
    """Register a backend (TF.js ``tf.registerBackend``).

    Parameters
    ----------
    name : str
        The name kernels are registered under and ``set_backend`` takes.
    factory : callable
        ``factory(**options) -> backend``, an object satisfying
        :class:`~gpulite.backends.base.Backend` (see docs/architecture.md, "Adding a backend").
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
        _entries[name] = Entry(name, factory, priority, probe, _counter)
    return True


def unregister(name: str) -> Entry:
    """Take ``name`` out of the table (``gpulite.remove_backend`` also disposes what was made from it)."""
    with _lock:
        e = _entries.pop(name, None)
    if e is None:
        raise BackendNotFoundError(f"backend {name!r} is not registered; registered: {list_backends()}")
    return e


def entries() -> list[Entry]:
    """Every registration, highest priority first."""
    with _lock:
        return sorted(_entries.values(), key=lambda e: (-e.priority, e.order))


def list_backends() -> list[str]:
    """Registered backend names, highest priority first."""
    return [e.name for e in entries()]


def entry(name: str) -> Entry:
    """The registration of ``name``; ``BackendNotFoundError`` naming the registered ones otherwise."""
    with _lock:
        e = _entries.get(name)
    if e is None:
        raise BackendNotFoundError(f"backend {name!r} is not registered; registered: {list_backends()}")
    return e


def rank(e: Entry) -> tuple[int | None, str]:
    """``(rank, note)`` of a registration for the automatic choice: its probe's, else its priority."""
    return (e.priority, "") if e.probe is None else e.probe()


def clear_probes() -> None:
    """Forget cached probe results (after ``GPULITE_ADAPTER`` changed)."""
    _probe_cache.clear()


# -- built-ins ------------------------------------------------------------------------------
def _cpu_factory(num_threads: int | None = None, **options: Any) -> Any:
    from gpulite.backends.cpu import CpuBackend
    if options:
        raise TypeError(f"backend 'cpu' takes no options, got {sorted(options)}")
    return CpuBackend(num_threads=num_threads if num_threads is not None else env().get("num_threads"))


def _litert_factory(num_threads: int | None = None, **options: Any) -> Any:
    from gpulite.backends.litert import LiteRtBackend
    if options:
        raise TypeError(f"backend 'litert' takes no options, got {sorted(options)}")
    return LiteRtBackend(num_threads=num_threads if num_threads is not None else env().get("num_threads"))


def _litert_probe() -> tuple[int | None, str]:
    import importlib.util
    from importlib.metadata import PackageNotFoundError, version

    if importlib.util.find_spec("ai_edge_litert") is None:
        return None, "ai-edge-litert is not installed (pip install 'gpulite[litert]')"
    try:
        release = version("ai-edge-litert")
    except PackageNotFoundError:
        release = "of unknown version"
    return 2, f"LiteRT {release}'s XNNPACK kernels: below a real GPU, above numpy"


def _cpu_probe() -> tuple[int | None, str]:
    return 1, "numpy kernels, the portable reference: below a real GPU and LiteRT"


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
    return 3, f"adapter {kind.name!r} ({kind.adapter_type}, {kind.backend_type}): a real GPU ranks first"


register_backend("webgpu", _webgpu_factory, 3, probe=_webgpu_probe)
register_backend("litert", _litert_factory, 2, probe=_litert_probe)
register_backend("cpu", _cpu_factory, 1, probe=_cpu_probe)
