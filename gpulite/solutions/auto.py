"""``backend="auto"`` for solutions, by measurement: time each usable backend once per machine, keep the fastest.

On the first ``auto`` use of a solution configuration (its class and arguments) on a machine,
the solution is built on each candidate backend and processes the bundled sample image
(``gpulite/data/astronaut.png``, 320x320, one face) in the mode the caller asked for: one
warm-up frame, then up to 9 timed rounds going round the candidates in turn; the backend with the
lowest lower quartile of its frame times wins, cached in ``$GPULITE_CACHE_DIR/auto_backend.json``
and reused by every later process on that machine under the same load class (``idle`` or
``busy``) until the key changes (a driver update, a new gpulite). The load is in the key because
the winner depends on it: on the 2-core machine, litert with two XNNPACK threads beat one thread
while the other core was free and ran at 0.6x of it while other processes held that core. The
timing, the key, the load classes and the cache are :mod:`gpulite.measure`'s, shared with
``Interpreter(backend="auto")``; this module says what a solution measures. ``gpulite info``
lists what was measured; the solution's ``backend_reason`` says what was measured for it.

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
up to 10 frames, with timing stopped after 2 s per candidate (at least one timed frame). On a
2-core machine that is about 1-3 s for face detection or face mesh, once.
"""

from __future__ import annotations

import contextvars
from pathlib import Path
from typing import Any

from gpulite import measure
from gpulite.measure import CACHE_FILE, cache_path, read_cache

PIPELINE_BACKENDS = ("webgpu", "litert", "cpu")
UNIT = "frame of the sample image"
# Inference threads for solutions built in this context (what build() measures with); None: the default
INFERENCE_THREADS: contextvars.ContextVar[int | None] = contextvars.ContextVar("inference_threads", default=None)


def candidates() -> tuple[list[str], list[str]]:
    """``(names, notes)``: the pipeline backends to measure, and why each other one is not measured.

    ``litert`` is measured twice where it would use several threads: with its default (one
    XNNPACK thread per core, up to 4) and as ``litert@1``, one thread (MediaPipe's default),
    which wins for small models and on busy machines.
    """
    from gpulite.environment import env
    from gpulite.pipeline.calculators.inference import LITERT_THREADS

    names, notes = measure.candidates(PIPELINE_BACKENDS)
    if "litert" in names and LITERT_THREADS > 1 and env().get("num_threads") is None:
        names.insert(names.index("litert") + 1, "litert@1")
    return names, notes


def split(name: str) -> tuple[str, int | None]:
    """``"litert@1"`` -> ``("litert", 1)``; ``"cpu"`` -> ``("cpu", None)``: backend and Inference threads."""
    backend, _, threads = name.partition("@")
    return backend, int(threads) if threads else None


def subject(cls: type, arguments: dict[str, Any]) -> str:
    """The solution configuration measured: its class and its arguments but ``backend``."""
    args = ", ".join(f"{k}={v!r}" for k, v in sorted(arguments.items()) if k != "backend")
    return f"{cls.__name__}({args})"


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


def choose(cls: type, arguments: dict[str, Any]) -> tuple[str, str, int | None] | None:
    """``(backend, reason, inference threads)`` measured (or cached) for a solution configuration;
    None when there is nothing to measure (fewer than two candidates) or measurement is off:
    rank decides then."""
    if not measure.enabled():
        return None
    names, notes = candidates()
    image: list[Any] = []  # read once, only when something is measured

    def make(name: str) -> measure.Runner:
        image[:] = image or [sample_image()]
        sol = build(cls, arguments, name)
        return measure.Runner(lambda: sol.process(image[0]), sol.close)

    choice = measure.choose(subject(cls, arguments), names, notes, make, unit=UNIT)
    if choice is None or not choice.name:
        return None
    backend, threads = split(choice.name)
    return backend, choice.reason, threads


__all__ = ["CACHE_FILE", "INFERENCE_THREADS", "build", "cache_path", "candidates", "choose", "read_cache",
           "sample_image", "split", "subject"]
