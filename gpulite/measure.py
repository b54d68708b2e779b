"""``backend="auto"`` by measurement: time each usable backend once per machine, keep the fastest.

Shared by ``Interpreter(backend="auto")`` (a model: :func:`gpulite.interpreter.measured_backend`)
and the solutions (:mod:`gpulite.solutions.auto`). Each says what it measures (a *subject*: a
solution configuration, or a model's digest with its input shapes and options) and how to run it
once on a candidate backend (a :class:`Runner`); this module times the candidates and keeps the
result in ``$GPULITE_CACHE_DIR/auto_backend.json`` (default ``~/.cache/gpulite``), reused by every
later process on the machine.

Timing (:func:`time_rounds`): every candidate is built and runs :data:`WARMUP` untimed calls;
then up to :data:`ROUNDS` rounds (:data:`ROUNDS_BUSY` on a busy machine: there 9 rounds ranked
FaceMesh's candidates at random, 150 the same way every time) go round the candidates in turn,
so a busy phase of the machine hits them alike, stopped after :data:`BUDGET_S` seconds per
candidate (at least one round). A
candidate's time is the lower quartile of its rounds (:func:`low_quantile`): other work on the
machine only ever adds time, so a low quantile is what the candidate costs when it is let run,
where a median moves with how many rounds a burst of load happened to hit (which differs from
candidate to candidate), and the quartile rather than the fastest round, which a multi-threaded
candidate can owe to one moment when the other cores happened to be free. The winner has the
lowest time: ``auto`` never picks a backend it measured slower than another.

Key (:func:`machine`): the subject, gpulite's and numpy's versions, the CPU model and core count,
the ``num_threads`` flag, each candidate's probe note (the WebGPU adapter and driver, the LiteRT
version; wgpu's version where webgpu is measured), and the load class (:func:`load_class`:
``idle`` below :data:`IDLE_LOAD` of 1-minute load average per core, else ``busy``). It is measured
again when one changes: a choice measured while the machine was busy is not reused once it is
quiet (nor the reverse; the winner depends on the load: litert on several threads wins on free
cores and loses where other processes hold them), and each load class is measured once. The
entry keeps the load average it was measured under. Processes measuring the same key take turns
on a lock file, so concurrent workers (Ray actors) measure once and the others read the result.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import os
import platform
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulite.environment import cache_dir

log = logging.getLogger(__name__)

WARMUP = 1  # untimed calls per candidate (compilation, first-dispatch costs)
ROUNDS = 9  # timed calls per candidate at most
ROUNDS_BUSY = 45  # the same on a busy machine, where a call's time swings with the other processes' turns
BUDGET_S = 2.0  # timing stops after this many seconds per candidate (at least one round)
CACHE_FILE = "auto_backend.json"
FORMAT = 2  # in the key: entries before it (median of rounds) are measured again
# The 1-minute load average per core below which the machine counts as idle (a core free on
# average beside the measuring process): see load_class
IDLE_LOAD = 0.5


@dataclass
class Runner:
    """One candidate ready to time: ``run()`` is one call (an invoke and its outputs read, a frame),
    ``close()`` releases what was built."""

    run: Callable[[], object]
    close: Callable[[], object] = lambda: None


@dataclass(frozen=True)
class Choice:
    """What :func:`choose` measured or found cached: the candidate, why (for ``backend_reason``), the entry."""

    name: str
    reason: str
    entry: dict[str, Any]


def cache_path() -> Path:
    """``$GPULITE_CACHE_DIR/auto_backend.json`` (default ``~/.cache/gpulite/auto_backend.json``)."""
    return cache_dir(CACHE_FILE)


def enabled() -> bool:
    """The ``auto_measure`` flag (``GPULITE_AUTO_MEASURE``): off, ``auto`` follows the registry's ranking."""
    from gpulite.environment import env

    return bool(env().get("auto_measure"))


def candidates(allowed: Collection[str] | None = None) -> tuple[list[str], list[str]]:
    """``(names, notes)``: the registered backends (of ``allowed``, if given) that can start, in
    ranking order, and why each other one is not measured.

    A WebGPU adapter of CPU type (lavapipe, SwiftShader, ranked below numpy) is not measured: it
    is never faster than the numpy backend on the same cores, and compiling its shaders would
    dominate the first use.
    """
    from gpulite import runtime

    names, notes = [], []
    for b in runtime.describe_backends():
        if allowed is not None and b.name not in allowed:
            continue
        if b.rank is None:
            notes.append(f"{b.name} cannot start ({b.note})")
        elif b.name == "webgpu" and b.rank < 1:
            notes.append(f"webgpu not measured ({b.note})")
        else:
            names.append(b.name)
    return names, notes


def _cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine(names: Collection[str], per_core: float | None = None) -> dict[str, Any]:
    """What a measurement depends on besides its subject: versions, CPU, cores, each candidate's note,
    and the load class of ``per_core`` (the load average per core)."""
    from importlib.metadata import PackageNotFoundError, version

    import numpy as np

    from gpulite import runtime
    from gpulite.environment import env
    from gpulite.version import __version__

    bases = {n.partition("@")[0] for n in names}
    notes = {b.name: b.note for b in runtime.describe_backends() if b.name in bases}
    libraries = {"numpy": np.__version__}
    if "webgpu" in bases:
        with contextlib.suppress(PackageNotFoundError):
            libraries["wgpu"] = version("wgpu")
    return {"format": FORMAT, "gpulite": __version__, "cpu": _cpu_name(), "cores": os.cpu_count(),
            "num_threads": env().get("num_threads"), "libraries": libraries, "backends": notes,
            "load": load_class(per_core)}


def key(subject: Any, mach: dict[str, Any]) -> str:
    """The cache key of ``subject`` (anything JSON can write) measured on ``mach``."""
    return hashlib.sha256(json.dumps([subject, mach], sort_keys=True, default=str).encode()).hexdigest()[:24]


def load_per_core() -> float | None:
    """The 1-minute load average over the CPU count (runnable threads per core); None where unknown."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (OSError, AttributeError):  # no getloadavg (Windows) or no /proc/loadavg
        return None


def load_class(per_core: float | None) -> str:
    """``"idle"`` below :data:`IDLE_LOAD` per core, else ``"busy"``; ``"unknown"`` without a load average."""
    if per_core is None:
        return "unknown"
    return "idle" if per_core < IDLE_LOAD else "busy"


def read_cache(path: Path | None = None) -> dict[str, Any]:
    """The cached measurements (an empty dict when there are none or the file is unreadable)."""
    path = path or cache_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        log.warning("ignoring the unreadable auto-backend cache %s (%s); measuring again", path, e)
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold ``path.lock`` (an advisory lock; nothing where fcntl is missing or the lock file
    cannot be made: a read-only cache folder only costs the cache)."""
    try:
        import fcntl
    except ImportError:  # not on Linux/macOS: measure without taking turns
        yield
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path.with_name(path.name + ".lock"), "a")  # closed by the with below
    except OSError as e:
        log.warning("cannot keep auto-backend measurements in %s (%s); measuring without a cache", path.parent, e)
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def time_rounds(make: Callable[[str], Runner], names: list[str], rounds: int
                ) -> tuple[dict[str, list[float]], list[str]]:
    """Milliseconds of each timed call on each candidate, and why any failed.

    Every candidate is built (``make(name)``) and warmed up first; then the timed calls go round
    the candidates in turn, so a slow phase of a busy machine hits them alike. Timing stops after
    ``rounds`` rounds or :data:`BUDGET_S` seconds per candidate (at least one round).
    """
    runners: dict[str, Runner] = {}
    failed: list[str] = []
    times: dict[str, list[float]] = {}
    try:
        for name in names:
            try:
                runners[name] = make(name)
                for _ in range(WARMUP):
                    runners[name].run()
                times[name] = []
            except Exception as e:  # a backend that fails here is not chosen; why is kept
                failed.append(f"{name} failed while measured ({type(e).__name__}: {e})")
        stop = time.perf_counter() + BUDGET_S * max(1, len(times))
        for r in range(rounds):
            if r and time.perf_counter() > stop:
                break
            for name in list(times):
                t0 = time.perf_counter()
                try:
                    runners[name].run()
                except Exception as e:
                    failed.append(f"{name} failed while measured ({type(e).__name__}: {e})")
                    del times[name]
                    continue
                times[name].append((time.perf_counter() - t0) * 1e3)
    finally:
        for runner in runners.values():
            with contextlib.suppress(Exception):
                runner.close()
    return times, failed


def low_quantile(times: list[float]) -> float:
    """The lower quartile of a candidate's rounds (the fastest of up to 4, the 3rd fastest of 9): see the
    module docstring."""
    return sorted(times)[(len(times) - 1) // 4]


def measure(make: Callable[[str], Runner], names: list[str], notes: list[str], load: str) -> dict[str, Any]:
    """Time ``names`` under load class ``load``; the entry :func:`choose` caches (``ms`` each candidate's
    time, ``chosen`` the fastest)."""
    t0 = time.perf_counter()
    rounds, failed = time_rounds(make, names, ROUNDS_BUSY if load == "busy" else ROUNDS)
    ms = {n: low_quantile(v) for n, v in rounds.items() if v}
    chosen = min(ms, key=ms.__getitem__) if ms else ""
    log.info("auto backend: measured %s in %.1f s, chose %s", ms, time.perf_counter() - t0, chosen)
    return {"ms": ms, "rounds": {n: [round(t, 4) for t in v] for n, v in rounds.items()}, "chosen": chosen,
            "failed": failed, "not_measured": notes,
            "measured": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}


def load_text(entry: dict[str, Any], named: bool = True) -> str:
    """``"busy: load average 2.10 per core"``: the load class (``named``) and load an entry was measured under."""
    per_core = entry.get("load")
    text = "no load average" if per_core is None else f"load average {per_core:.2f} per core"
    return f"{entry.get('machine', {}).get('load', 'unknown')}: {text}" if named else text


def describe(entry: dict[str, Any], path: Path, fresh: bool) -> str:
    """``backend_reason`` of a measured choice: when, the load, each candidate's time, the winner."""
    ms = ", ".join(f"{n} {v:.2f} ms" for n, v in sorted(entry["ms"].items(), key=lambda kv: kv[1]))
    when = "just now" if fresh else f"on {entry['measured']}"
    n = max((len(v) for v in entry.get("rounds", {}).values()), default=0)
    parts = [f"auto: measured {when} on this machine ({load_text(entry)}), lower quartile of {n} round(s), ms "
             f"per {entry.get('unit', 'call')}: {ms}; {entry['chosen']!r} is the fastest "
             + (f"(cached in {path})" if path.is_file() else f"(not cached: {path} cannot be written)")]
    parts += entry.get("failed", []) + entry.get("not_measured", [])
    return "; ".join(parts)


def choose(subject: str, names: list[str], notes: list[str], make: Callable[[str], Runner], *,
           unit: str, identity: Any = None) -> Choice | None:
    """The fastest of ``names`` for ``subject``, measured now or cached; None when there is nothing to
    measure (fewer than two candidates) or measurement is off, a Choice named ``""`` (its reason says
    why each failed; nothing is cached) when every candidate failed: rank decides then.

    ``subject`` names what is measured (``gpulite info`` shows it); ``identity`` (default: the
    subject) is what the measurement depends on besides the machine, e.g. a model's digest and
    input shapes, and keys the cache with :func:`machine`; ``unit`` is what one call is ("invoke").
    """
    if not enabled() or len(names) < 2:
        return None
    per_core = load_per_core()
    mach = machine(names, per_core)
    k, path = key(subject if identity is None else identity, mach), cache_path()
    entry = read_cache(path).get(k)
    fresh = False
    if entry is None:
        with _locked(path):
            entry = read_cache(path).get(k)  # another process may have measured meanwhile
            if entry is None:
                entry = measure(make, names, notes, mach["load"])
                entry.update(subject=subject, machine=mach, unit=unit,
                             load=None if per_core is None else round(per_core, 3))
                if entry["ms"]:
                    data = read_cache(path)
                    data[k] = entry
                    try:
                        _write_cache(path, data)
                    except OSError as e:
                        log.warning("could not keep the auto-backend measurement in %s (%s)", path, e)
                fresh = True
    if not entry.get("ms"):
        return Choice("", "; ".join(entry.get("failed", []) + entry.get("not_measured", [])), entry)
    return Choice(entry["chosen"], describe(entry, path, fresh), entry)
