"""Solutions' ``backend="auto"`` by measurement (gpulite.solutions.auto): a slowed backend is never chosen."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

import gpulite
from gpulite import measure, runtime
from gpulite.backends import registry
from gpulite.environment import env
from gpulite.solutions import FaceDetector, auto
from tests import slow_backend

SLOW_S = 0.05  # added to every invoke of the slowed backend: far above face detection's few ms


def _load(monkeypatch, per_core):
    """The load average this test's auto sees, per core."""
    monkeypatch.setattr(measure.os, "getloadavg", lambda: (per_core * (os.cpu_count() or 1),) * 3)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache directory (the short-range face detector ships in the package), nothing chosen
    explicitly, an idle machine (the load class is in the cache key: the real load average could
    cross it between two solutions of a test)."""
    monkeypatch.setenv("GPULITE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPULITE_BACKEND", raising=False)
    _load(monkeypatch, 0.1)
    runtime.reset_active()
    yield tmp_path / auto.CACHE_FILE
    runtime.reset_active()


def _slow(monkeypatch, name):
    """Register a slowed copy of backend ``name`` under its own name for this test."""
    e = registry.entry(name)
    monkeypatch.setitem(registry._entries, name, dataclasses.replace(e, factory=slow_backend.slowed(e.factory, SLOW_S)))


def _fake_times(monkeypatch, ms, other):
    """Measurements that say ``ms`` (``other`` for the rest of the candidates) without timing anything."""
    def fake(make, names, rounds):
        return {n: [ms.get(n, other)] for n in names}, []
    monkeypatch.setattr(measure, "time_rounds", fake)


def _no_measuring(monkeypatch):
    monkeypatch.setattr(measure, "time_rounds", lambda *a: pytest.fail("measured"))


def _needs_two():
    names, _ = auto.candidates()
    if not {"litert", "cpu"} <= set(names):
        pytest.skip(f"needs the litert and cpu backends as candidates, have {names}")


@pytest.mark.parametrize("slow, fast", [("litert", "cpu"), ("cpu", "litert")])
def test_auto_never_chooses_the_backend_it_measured_slower(cache, monkeypatch, slow, fast):
    _needs_two()
    _slow(monkeypatch, slow)
    with FaceDetector(model="short") as fd:
        assert fd.backend == fast, fd.backend_reason
        assert "measured just now" in fd.backend_reason
    entry = next(iter(json.loads(cache.read_text()).values()))
    assert auto.split(entry["chosen"])[0] == fast
    slowed = [n for n in entry["ms"] if auto.split(n)[0] == slow]  # litert: also litert@1, one thread
    fastest = min(v for n, v in entry["ms"].items() if n not in slowed)
    assert slowed and all(entry["ms"][n] > fastest + SLOW_S * 1e3 / 2 for n in slowed)  # timed, and slow
    assert entry["subject"] == "FaceDetector(model='short')"


def test_the_measurement_is_kept_and_reused(cache, monkeypatch):
    _needs_two()
    _slow(monkeypatch, "litert")
    with FaceDetector(model="short") as fd:
        first = fd.backend
    _no_measuring(monkeypatch)
    with FaceDetector(model="short") as fd:
        assert fd.backend == first == "cpu"
        assert "measured on " in fd.backend_reason and str(cache) in fd.backend_reason
    lines = []
    from gpulite.commands.info import info
    info(lines.append)
    assert any("FaceDetector(model='short')" in ln and "cpu" in ln for ln in lines), lines


def test_a_different_configuration_is_measured_on_its_own(cache, monkeypatch):
    _needs_two()
    _fake_times(monkeypatch, {}, 1.0)
    FaceDetector(model="short").close()
    FaceDetector(model="short", min_detection_confidence=0.7).close()
    _no_measuring(monkeypatch)
    FaceDetector(model="short", min_detection_confidence=0.7).close()
    subjects = sorted(e["subject"] for e in json.loads(cache.read_text()).values())
    assert subjects == ["FaceDetector(min_detection_confidence=0.7, model='short')", "FaceDetector(model='short')"]


def test_explicit_choices_skip_the_measurement(cache, monkeypatch):
    _no_measuring(monkeypatch)
    with FaceDetector(model="short", backend="cpu") as fd:
        assert fd.backend_reason == "requested"
    monkeypatch.setenv("GPULITE_BACKEND", "cpu")
    runtime.reset_active()
    with FaceDetector(model="short") as fd:
        assert (fd.backend, fd.backend_reason) == ("cpu", "automatic: GPULITE_BACKEND=cpu")
    monkeypatch.delenv("GPULITE_BACKEND")
    runtime.reset_active()
    monkeypatch.setenv("GPULITE_AUTO_MEASURE", "0")
    env().reset()
    try:
        with FaceDetector(model="short") as fd:
            assert fd.backend == gpulite.get_backend() and fd.backend_reason.startswith("automatic: auto:")
    finally:
        monkeypatch.delenv("GPULITE_AUTO_MEASURE")
        env().reset()
    assert not cache.exists()


def test_an_unreadable_cache_is_measured_again(cache, monkeypatch):
    _needs_two()
    cache.write_text("{not json")
    _fake_times(monkeypatch, {"cpu": 2.0}, 3.0)
    with FaceDetector(model="short") as fd:
        assert fd.backend == "cpu"
    assert next(iter(json.loads(cache.read_text()).values()))["ms"]["cpu"] == 2.0


def _inference_threads(sol):
    return [dict(n.options or {}).get("num_threads") if isinstance(n.options, dict) else n.options.num_threads
            for n in sol._session.graph.config.nodes if n.calculator == "Inference"]


def test_one_litert_thread_is_a_candidate_and_reaches_every_inference_node(cache, monkeypatch):
    _needs_two()
    from gpulite.pipeline.calculators.inference import LITERT_THREADS

    if LITERT_THREADS < 2:
        pytest.skip("one core: litert runs one thread anyway")
    names, _ = auto.candidates()
    assert "litert@1" in names
    _fake_times(monkeypatch, {"litert@1": 1.0}, 2.0)
    with FaceDetector(model="short") as fd:
        assert (fd.backend, fd.inference_threads) == ("litert", 1)
        assert _inference_threads(fd) == [1]
    _no_measuring(monkeypatch)
    with FaceDetector(model="short") as fd:  # from the cache
        assert (fd.backend, fd.inference_threads) == ("litert", 1) and _inference_threads(fd) == [1]
    with FaceDetector(model="short", backend="litert") as fd:  # explicit: the default threads
        assert fd.inference_threads is None and _inference_threads(fd) == [None]


def test_a_measurement_is_reused_only_under_the_load_it_was_taken_under(cache, monkeypatch):
    """Measured in a quiet minute with litert slowed, cpu wins; under load, with cpu slowed
    instead, auto measures again rather than reuse the quiet minute's choice, and keeps both:
    each load class gets its own measurement, and neither picks what it measured slower."""
    _needs_two()
    _load(monkeypatch, 0.1)
    with monkeypatch.context() as m:
        _slow(m, "litert")
        with FaceDetector(model="short") as fd:
            assert fd.backend == "cpu" and "measured just now" in fd.backend_reason
            assert "(idle: load average 0.10 per core)" in fd.backend_reason
    _load(monkeypatch, 2.0)
    monkeypatch.setattr(measure, "ROUNDS_BUSY", measure.ROUNDS)  # the rounds are not what this test is about
    with monkeypatch.context() as m:
        _slow(m, "cpu")
        with FaceDetector(model="short") as fd:
            assert fd.backend == "litert" and "measured just now" in fd.backend_reason, fd.backend_reason
            assert "(busy: load average 2.00 per core)" in fd.backend_reason
    entries = json.loads(cache.read_text()).values()
    assert sorted((e["machine"]["load"], auto.split(e["chosen"])[0]) for e in entries) == [("busy", "litert"),
                                                                                           ("idle", "cpu")]
    _no_measuring(monkeypatch)
    for per_core, backend in ((0.3, "cpu"), (0.9, "litert")):
        _load(monkeypatch, per_core)
        with FaceDetector(model="short") as fd:
            assert fd.backend == backend and "measured on " in fd.backend_reason, (per_core, fd.backend_reason)


def test_load_classes(monkeypatch):
    assert [measure.load_class(x) for x in (None, 0.0, 0.49, 0.5, 3.0)] == ["unknown", "idle", "idle", "busy", "busy"]

    def missing():
        raise OSError("no load average")
    monkeypatch.setattr(measure.os, "getloadavg", missing)
    assert measure.load_per_core() is None
