"""``Interpreter(backend="auto")`` by measurement, and the timing/load rules it shares with the solutions
(gpulite.measure): a deliberately slow backend is never chosen, the choice is cached and reused by a later
process, explicit choices skip it, a low quantile of the rounds decides, and each load class (idle,
busy) has its own measurement, so a choice made under load is not reused on a quiet machine."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import pytest

import gpulite
from gpulite import measure, runtime
from gpulite.backends import registry
from gpulite.backends.cpu import CpuBackend
from gpulite.environment import env
from tests import slow_backend
from tests.env.models import clean

SLOW_S = 0.03  # added to every invoke of the slowed backend: far above the model's microseconds


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty auto cache, and an idle machine (the load class is in the key: the real load average could
    cross it between two Interpreters of a test)."""
    monkeypatch.setenv("GPULITE_CACHE_DIR", str(tmp_path))
    _load(monkeypatch, measure.IDLE_LOAD / 5)
    yield tmp_path / measure.CACHE_FILE


def _entries(cache):
    return list(json.loads(cache.read_text()).values())


def _run(it):
    """The model's output for a fixed input (the backend computes it, wherever it was chosen)."""
    it.allocate_tensors()
    x = np.linspace(-2, 2, 128, dtype=np.float32).reshape(1, 4, 4, 8)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


@pytest.mark.parametrize("slowed", ["slow", "cpu"])
def test_auto_never_picks_the_backend_it_measured_slower(cache, monkeypatch, temp_backend, slowed):
    """``slow``: a fake backend ranked above every other (the ranking would take it); ``cpu``: the numpy
    backend slowed, beside an unslowed copy of it ranked last (the ranking would never take that)."""
    if slowed == "slow":
        temp_backend("slow", slow_backend.slowed(lambda **kw: CpuBackend(**kw), SLOW_S), 100, kernels_from="cpu")
        assert gpulite.get_backend() == "slow"  # what the ranking would give
    else:
        slow_factory = slow_backend.slowed(registry._cpu_factory, SLOW_S)
        slow_cpu = dataclasses.replace(registry.entry("cpu"), factory=slow_factory)
        monkeypatch.setitem(registry._entries, "cpu", slow_cpu)
        temp_backend("fast", lambda **kw: CpuBackend(**kw), -1, kernels_from="cpu")
    model = clean()
    it = gpulite.Interpreter(model_content=model, backend="auto")
    assert it.backend != slowed, it.backend_reason
    assert "auto: measured just now" in it.backend_reason and f"{slowed} " in it.backend_reason
    (entry,) = _entries(cache)
    assert entry["chosen"] == it.backend and entry["unit"] == "invoke"
    assert len(entry["ms"]) >= 2 and slowed in entry["ms"]
    fastest_other = min(v for n, v in entry["ms"].items() if n != slowed)
    assert entry["ms"][slowed] > fastest_other + SLOW_S * 1e3 / 2  # it was timed, and it was slow
    assert entry["ms"][slowed] == pytest.approx(measure.low_quantile(entry["rounds"][slowed]), abs=1e-3)
    assert it.get_plan()["backend_reason"] == it.backend_reason
    np.testing.assert_allclose(_run(it), _run(gpulite.Interpreter(model_content=model, backend="cpu")), rtol=1e-6)


def test_the_choice_is_cached_and_a_later_process_reuses_it(cache, monkeypatch):
    names, _ = measure.candidates()
    if len(names) < 2:
        pytest.skip(f"needs two usable backends, have {names}")
    want = names[-1]  # the lowest ranked: what the ranking would not pick
    monkeypatch.setattr(measure, "time_rounds", lambda make, names, rounds: ({n: [1.0 if n == want else 2.0]
                                                                             for n in names}, []))
    path = str(gpulite.zoo.resolve("face_detection_short_range"))
    assert gpulite.Interpreter(model_path=path, backend="auto").backend == want
    monkeypatch.setattr(measure, "time_rounds", lambda *a: pytest.fail("measured twice"))
    with open(path, "rb") as f:  # the same bytes: the same model, however it is given
        it = gpulite.Interpreter(model_content=f.read(), backend="auto")
    assert it.backend == want and "auto: measured on " in it.backend_reason
    code = ("import gpulite; from gpulite import measure\n"
            "measure.time_rounds = None  # measuring again would fail\n"
            f"measure.load_per_core = lambda: {measure.load_per_core()!r}  # the parent's load class\n"
            f"it = gpulite.Interpreter(model_path={path!r}, backend='auto')\n"
            "print(it.backend); print(it.backend_reason)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                       env={**os.environ, "GPULITE_CACHE_DIR": str(cache.parent)})
    assert r.returncode == 0, r.stderr[-3000:]
    backend, reason = r.stdout.strip().splitlines()[-2:]
    assert backend == want and reason.startswith("auto: measured on "), r.stdout
    assert len(_entries(cache)) == 1


def test_a_cache_folder_that_cannot_be_written_costs_only_the_cache(tmp_path, monkeypatch):
    """A read-only or missing-parent cache folder: "auto" still measures and chooses, and says it kept
    nothing (the lock file's mkdir raised FileNotFoundError out of Interpreter())."""
    names, _ = measure.candidates()
    if len(names) < 2:
        pytest.skip(f"needs two usable backends, have {names}")
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("GPULITE_CACHE_DIR", str(tmp_path / "file" / "cache"))  # under a file: never a folder
    _fake(monkeypatch, {n: 1.0 if n == names[-1] else 2.0 for n in names})
    it = gpulite.Interpreter(model_path=str(gpulite.zoo.resolve("face_detection_short_range")), backend="auto")
    assert it.backend == names[-1]
    assert it.backend_reason.startswith("auto: measured just now") and "(not cached: " in it.backend_reason


def test_other_input_shapes_or_options_are_measured_on_their_own(cache, monkeypatch):
    names, _ = measure.candidates()
    if len(names) < 2:
        pytest.skip(f"needs two usable backends, have {names}")
    calls = _fake(monkeypatch, dict.fromkeys(names, 1.0))
    gpulite.Interpreter(model_content=clean(), backend="auto")
    gpulite.Interpreter(model_content=clean(), backend="auto", num_threads=1)
    gpulite.Interpreter(model_content=clean(), backend="auto")
    assert len(calls) == 2 and len(_entries(cache)) == 2


def test_explicit_choices_skip_the_measurement(cache, monkeypatch):
    monkeypatch.setattr(measure, "time_rounds", lambda *a: pytest.fail("measured"))
    model = clean()
    it = gpulite.Interpreter(model_content=model, backend="cpu")
    assert (it.backend, it.backend_reason) == ("cpu", "requested")
    it = gpulite.Interpreter(model_content=model)
    assert it.backend == "cpu" and it.backend_reason.startswith("not given: 'cpu', as tflite_runtime")
    monkeypatch.setenv("GPULITE_BACKEND", "cpu")
    runtime.reset_active()
    it = gpulite.Interpreter(model_content=model, backend="auto")
    assert (it.backend, it.backend_reason) == ("cpu", "auto: GPULITE_BACKEND=cpu")
    monkeypatch.delenv("GPULITE_BACKEND")
    runtime.reset_active()
    assert gpulite.set_backend("cpu")
    it = gpulite.Interpreter(model_content=model, backend="auto")
    assert (it.backend, it.backend_reason) == ("cpu", "auto: set_backend('cpu')")
    runtime.reset_active()
    env().set("auto_measure", False)
    it = gpulite.Interpreter(model_content=model, backend="auto")
    assert it.backend == gpulite.get_backend()
    assert it.backend_reason.startswith("auto (the auto_measure flag is off, so the ranking decides): auto: ")
    assert not cache.exists()


# -- the shared core: statistic and load --------------------------------------------------------
class _Sleeper:
    """A candidate whose calls sleep ``normal`` seconds, ``burst`` on the timed calls listed."""

    def __init__(self, normal, burst=0.0, bursts=()):
        self.normal, self.burst, self.bursts, self.calls = normal, burst, set(bursts), 0

    def run(self):
        time.sleep(self.burst if self.calls in self.bursts else self.normal)
        self.calls += 1


def test_a_busy_machine_gets_more_rounds(cache, monkeypatch):
    seen = []
    monkeypatch.setattr(measure, "time_rounds", lambda make, names, rounds: (seen.append(rounds), {"a": [1.0]}, [])[1:])
    for per_core in (measure.IDLE_LOAD / 5, measure.IDLE_LOAD * 5):
        _load(monkeypatch, per_core)
        measure.choose("rounds", ["a", "b"], [], lambda n: None, unit="call")
    assert seen == [measure.ROUNDS, measure.ROUNDS_BUSY]


def test_a_low_quantile_decides_not_a_median_that_bursts_of_load_move(cache, monkeypatch):
    """A burst of other work hit five of the nine timed calls of the faster candidate: its median
    says it is slower, the lower quartile of its rounds says what it costs."""
    monkeypatch.setattr(measure, "WARMUP", 1)
    monkeypatch.setattr(measure, "ROUNDS", 9)
    sleepers = {"a": _Sleeper(0.002, 0.06, bursts=(1, 3, 4, 6, 8)), "b": _Sleeper(0.02)}  # call 0: the warm-up
    choice = measure.choose("sleepers", ["a", "b"], [], lambda n: measure.Runner(sleepers[n].run), unit="call")
    rounds = choice.entry["rounds"]
    assert [len(v) for v in rounds.values()] == [9, 9]
    assert min(rounds, key=lambda n: statistics.median(rounds[n])) == "b"  # what a median would have chosen
    assert choice.name == "a", choice.reason
    assert "lower quartile of 9 round(s), ms per call" in choice.reason


def test_the_lower_quartile_is_not_one_lucky_round():
    assert measure.low_quantile([5.0]) == 5.0
    assert measure.low_quantile([9.0, 1.0, 8.0, 7.0, 9.5]) == 7.0  # 5 rounds: the 2nd fastest
    assert measure.low_quantile([1.0, *[10.0] * 8]) == 10.0  # 9 rounds: the 3rd fastest


def _fake(monkeypatch, ms):
    calls = []

    def fake(make, names, rounds):
        calls.append(names)
        return {n: [ms[n]] for n in names}, []
    monkeypatch.setattr(measure, "time_rounds", fake)
    return calls


def _load(monkeypatch, per_core):
    monkeypatch.setattr(measure, "load_per_core", lambda: per_core)


def test_a_choice_measured_while_busy_is_not_reused_once_the_machine_is_idle(cache, monkeypatch):
    """Each load class is measured once, and a process takes its own class's choice."""
    names, _ = measure.candidates()
    if len(names) < 2:
        pytest.skip(f"needs two usable backends, have {names}")
    busy, idle = measure.IDLE_LOAD * 6, measure.IDLE_LOAD / 5
    _load(monkeypatch, busy)
    calls = _fake(monkeypatch, {n: 1.0 if n == names[0] else 2.0 for n in names})
    it = gpulite.Interpreter(model_content=clean(), backend="auto")
    assert it.backend == names[0] and f"(busy: load average {busy:.2f} per core)" in it.backend_reason
    _load(monkeypatch, idle)
    calls = _fake(monkeypatch, {n: 1.0 if n == names[-1] else 2.0 for n in names})
    it = gpulite.Interpreter(model_content=clean(), backend="auto")
    assert len(calls) == 1 and it.backend == names[-1] and "measured just now" in it.backend_reason
    assert f"(idle: load average {idle:.2f} per core)" in it.backend_reason
    monkeypatch.setattr(measure, "time_rounds", lambda *a: pytest.fail("measured again"))
    for per_core, backend in ((busy, names[0]), (idle, names[-1]), (measure.IDLE_LOAD, names[0])):
        _load(monkeypatch, per_core)
        it = gpulite.Interpreter(model_content=clean(), backend="auto")
        assert it.backend == backend and "measured on " in it.backend_reason, (per_core, it.backend_reason)
    assert sorted(e["machine"]["load"] for e in _entries(cache)) == ["busy", "idle"]
    from gpulite.commands.info import info
    lines = []
    info(lines.append)
    assert sum("(sha256 " in ln and "per invoke" in ln for ln in lines) == 2, lines


def test_without_a_load_average_the_class_is_unknown(cache, monkeypatch):
    calls = _fake(monkeypatch, {"a": 2.0, "b": 1.0})
    _load(monkeypatch, None)
    first = measure.choose("no load average", ["a", "b"], [], lambda n: None, unit="call")
    measure.choose("no load average", ["a", "b"], [], lambda n: None, unit="call")
    assert len(calls) == 1 and first.entry["load"] is None and first.entry["machine"]["load"] == "unknown"
    assert "(unknown: no load average)" in first.reason


def test_when_every_candidate_fails_the_ranking_decides_and_says_why(cache, monkeypatch):
    def make(name):
        raise RuntimeError(f"{name} does not run here")
    choice = measure.choose("failing", ["a", "b"], ["c not measured (why)"], make, unit="call")
    assert choice.name == "" and "a failed while measured (RuntimeError: a does not run here)" in choice.reason
    assert "b does not run here" in choice.reason and "c not measured (why)" in choice.reason
    assert not cache.exists()  # nothing cached: measured again next time
    names, _ = measure.candidates()
    if len(names) < 2:
        return
    monkeypatch.setattr(measure, "time_rounds", lambda make, names, rounds: ({}, [f"{n} failed while measured (E: no)"
                                                                                  for n in names]))
    it = gpulite.Interpreter(model_content=clean(), backend="auto")
    assert it.backend == gpulite.get_backend()
    assert it.backend_reason.startswith(f"auto (every candidate failed while measured: {names[0]} failed while "
                                        "measured (E: no)"), it.backend_reason
