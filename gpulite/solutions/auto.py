"""``backend="auto"`` for solutions, by measurement: time each usable backend once per machine, keep the fastest.

On the first ``auto`` use of a solution configuration (its class and arguments) on a machine
(gpulite version, CPU, core count, each candidate backend's adapter/driver or library version)
under a load (:func:`load_class`: ``idle`` or ``busy``), the solution is built on each
candidate backend and runs :data:`WARMUP` + up to :data:`FRAMES` frames (:data:`FRAMES_BUSY`
on a busy machine; the timed ones round the candidates in turn, so a busy phase hits them
alike) of the bundled sample image
(``gpulite/data/astronaut.png``, 320x320, one face) in the mode the caller asked for; the
backend with the lowest median frame time wins. The result goes to
``$GPULITE_CACHE_DIR/auto_backend.json`` (default ``~/.cache/gpulite``) and is reused by every
later process on that machine under the same load class: the measurement is never repeated
until something in the key changes (a driver update, a new gpulite, the load class). The load
is in the key because the winner depends on it: on the 2-core machine, litert with two XNNPACK
threads beat one thread while the other core was free and ran at 0.6x of it while other
processes held that core; a choice measured in a quiet minute and reused under load (or the
reverse) picked the slower backend. ``gpulite info`` lists what was measured; the solution's
``backend_reason`` says what was measured for it.

Candidates are the pipeline backends (``webgpu``, ``litert``, ``cpu``) that the backend registry
says can start (``litert`` twice on a multi-core machine: with one XNNPACK thread per core and as
``litert@1`` with one, see :func:`candidates`), except a WebGPU adapter of CPU type (lavapipe,
SwiftShader: never faster than the numpy backend on the same cores, and compiling its shaders
would dominate the first use).
The rule: ``auto`` never picks a backend that it measured slower than another on that machine.
``backend="cpu"/"webgpu"/"litert"``, ``gpulite.set_backend`` and ``GPULITE_BACKEND`` skip the
measurement; the ``auto_measure`` flag (``GPULITE_AUTO_MEASURE=0``) turns it off, and the choice
falls back to the registry's ranking.

First-use cost, bounded: per candidate, building the solution (model load, pipeline compile) and
``WARMUP + FRAMES`` frames (``FRAMES_BUSY``), with timing stopped after :data:`BUDGET_S` seconds per
backend (at least one timed frame). On a 2-core machine that is about 1-3 s for face detection or
face mesh, once per load class.
Processes measuring the same key at once take turns on a lock file, so concurrent workers (Ray
actors) measure once and the others read the result.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import hashlib
import json
import logging
import os
import platform
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpulite.environment import cache_dir

log = logging.getLogger(__name__)

PIPELINE_BACKENDS = ("webgpu", "litert", "cpu")
WARMUP = 1  # untimed frames per backend (pipeline compilation, first-dispatch costs)
FRAMES = 9  # timed frames per backend at most
FRAMES_BUSY = 45  # the same on a busy machine, where a frame's time swings with the other processes' turns
# The 1-minute load average per core below which the machine counts as idle (a core free on
# average beside the measuring process): see load_class
IDLE_LOAD = 0.5
BUDGET_S = 2.0  # timing stops after this many seconds per backend (at least one frame)
CACHE_FILE = "auto_backend.json"
# Inference threads for solutions built in this context (what build() measures with); None: the default
INFERENCE_THREADS: contextvars.ContextVar[int | None] = contextvars.ContextVar("inference_threads", default=None)


def cache_path() -> Path:
    """``$GPULITE_CACHE_DIR/auto_backend.json`` (default ``~/.cache/gpulite/auto_backend.json``)."""
    return cache_dir(CACHE_FILE)


def candidates() -> tuple[list[str], list[str]]:
    """``(names, notes)``: the pipeline backends to measure, and why each other one is not measured.

    ``litert`` is measured twice where it would use several threads: with its default (one
    XNNPACK thread per core, up to 4) and as ``litert@1``, one thread (MediaPipe's default),
    which wins for small models and on busy machines.
    """
    from gpulite import runtime
    from gpulite.environment import env
    from gpulite.pipeline.calculators.inference import LITERT_THREADS

    names, notes = [], []
    for b in runtime.describe_backends():
        if b.name not in PIPELINE_BACKENDS:
            continue
        if b.rank is None:
            notes.append(f"{b.name} cannot start ({b.note})")
        elif b.name == "webgpu" and b.rank < 1:
            notes.append(f"webgpu not measured ({b.note})")
        else:
            names.append(b.name)
            if b.name == "litert" and LITERT_THREADS > 1 and env().get("num_threads") is None:
                names.append("litert@1")
    return names, notes


def split(name: str) -> tuple[str, int | None]:
    """``"litert@1"`` -> ``("litert", 1)``; ``"cpu"`` -> ``("cpu", None)``: backend and Inference threads."""
    backend, _, threads = name.partition("@")
    return backend, int(threads) if threads else None


def _cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def load() -> float | None:
    """The 1-minute load average per core, or None where the system has none (Windows)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (AttributeError, OSError):
        return None


def load_class(per_core: float | None) -> str:
    """``"idle"`` below :data:`IDLE_LOAD` per core, else ``"busy"``; ``"unknown"`` without a load average."""
    if per_core is None:
        return "unknown"
    return "idle" if per_core < IDLE_LOAD else "busy"


def machine(names: list[str], per_core: float | None = None) -> dict[str, Any]:
    """What a measurement depends on besides the solution: gpulite, CPU, cores, each candidate's
    note, and the load class of ``per_core`` (the load average per core)."""
    from gpulite import runtime
    from gpulite.environment import env
    from gpulite.version import __version__

    notes = {b.name: b.note for b in runtime.describe_backends() if b.name in names}
    return {"gpulite": __version__, "cpu": _cpu_name(), "cores": os.cpu_count(),
            "num_threads": env().get("num_threads"), "backends": notes, "load": load_class(per_core)}


def subject(cls: type, arguments: dict[str, Any]) -> str:
    """The solution configuration measured: its class and its arguments but ``backend``."""
    args = ", ".join(f"{k}={v!r}" for k, v in sorted(arguments.items()) if k != "backend")
    return f"{cls.__name__}({args})"


def _key(subj: str, mach: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([subj, mach], sort_keys=True, default=str).encode()).hexdigest()[:24]


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
    """Hold ``path.lock`` (an advisory lock; nothing where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # not on Linux/macOS: measure without taking turns
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def sample_image() -> Any:
    """The bundled sample image, RGB uint8 (what the measurement processes)."""
    import numpy as np
    from PIL import Image

    with Image.open(Path(__file__).resolve().parents[1] / "data" / "astronaut.png") as im:
        return np.asarray(im.convert("RGB"))


def build(cls: type, arguments: dict[str, Any], name: str) -> Any:
    """The solution on candidate ``name`` (``"litert@1"``: litert, Inference on one thread)."""
    backend, threads = split(name)
    token = INFERENCE_THREADS.set(threads)
    try:
        return cls(**{**arguments, "backend": backend})
    finally:
        INFERENCE_THREADS.reset(token)


def time_candidates(cls: type, arguments: dict[str, Any], names: list[str], image: Any
                    ) -> tuple[dict[str, float], list[str]]:
    """Median milliseconds per ``process`` on each candidate, and why any failed.

    Every candidate is built and warmed up first; then the timed frames go round the
    candidates in turn, so a slow phase of a busy machine hits them alike. Timing stops after
    :data:`FRAMES` rounds (:data:`FRAMES_BUSY` on a busy machine: there 9 rounds ranked
    FaceMesh's candidates at random, 150 the same way every time) or :data:`BUDGET_S` seconds
    per candidate (at least one round).
    """
    rounds = FRAMES_BUSY if load_class(load()) == "busy" else FRAMES
    sols: dict[str, Any] = {}
    failed: list[str] = []
    times: dict[str, list[float]] = {}
    try:
        for name in names:
            try:
                sols[name] = build(cls, arguments, name)
                for _ in range(WARMUP):
                    sols[name].process(image)
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
                    sols[name].process(image)
                except Exception as e:
                    failed.append(f"{name} failed while measured ({type(e).__name__}: {e})")
                    del times[name]
                    continue
                times[name].append((time.perf_counter() - t0) * 1e3)
    finally:
        for sol in sols.values():
            sol.close()
    return {n: statistics.median(v) for n, v in times.items()}, failed


def _describe(entry: dict[str, Any], path: Path, fresh: bool) -> str:
    ms = ", ".join(f"{n} {v:.2f} ms" for n, v in sorted(entry["ms"].items(), key=lambda kv: kv[1]))
    when = "just now" if fresh else f"on {entry['measured']}"
    load = entry.get("machine", {}).get("load", "unknown")
    parts = [f"auto: measured {when} on this machine ({load}: {_load_text(entry.get('load'))}), median ms per "
             f"frame of the sample image: {ms}; {entry['chosen']!r} is the fastest (cached in {path})"]
    parts += entry.get("failed", []) + entry.get("not_measured", [])
    return "; ".join(parts)


def choose(cls: type, arguments: dict[str, Any]) -> tuple[str, str, int | None] | None:
    """``(backend, reason, inference threads)`` measured (or cached) for a solution configuration;
    None when there is nothing to measure (fewer than two candidates) or measurement is off:
    rank decides then."""
    from gpulite.environment import env

    if not env().get("auto_measure"):
        return None
    names, notes = candidates()
    if len(names) < 2:
        return None
    per_core = load()
    subj, mach = subject(cls, arguments), machine(names, per_core)
    key, path = _key(subj, mach), cache_path()
    entry = read_cache(path).get(key)
    fresh = False
    if entry is None:
        with _locked(path):
            entry = read_cache(path).get(key)  # another process may have measured meanwhile
            if entry is None:
                entry = measure(cls, arguments, names, notes)
                entry.update(subject=subj, machine=mach, load=per_core)
                if entry["ms"]:
                    data = read_cache(path)
                    data[key] = entry
                    try:
                        _write_cache(path, data)
                    except OSError as e:
                        log.warning("could not keep the auto-backend measurement in %s (%s)", path, e)
                fresh = True
    if not entry.get("ms"):
        return None
    backend, threads = split(entry["chosen"])
    return backend, _describe(entry, path, fresh), threads


def _load_text(per_core: float | None) -> str:
    return "no load average" if per_core is None else f"load average {per_core:.2f} per core"


def measure(cls: type, arguments: dict[str, Any], names: list[str], notes: list[str]) -> dict[str, Any]:
    """Time the solution on each of ``names``; the entry that :func:`choose` caches."""
    t0 = time.perf_counter()
    ms, failed = time_candidates(cls, arguments, names, sample_image())
    chosen = min(ms, key=ms.__getitem__) if ms else ""
    log.info("auto backend for %s: measured %s in %.1f s, chose %s", cls.__name__, ms, time.perf_counter() - t0, chosen)
    return {"ms": ms, "chosen": chosen, "failed": failed, "not_measured": notes,
            "measured": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}
