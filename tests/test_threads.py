"""Threads (issue 14): one Interpreter shared by threads refuses overlapping calls with
``ConcurrentUseError`` (LiteRT raises ``RuntimeError`` there) and never returns a wrong result or
aborts; separate Interpreters run in parallel, each result equal to the single-threaded one;
the CPU worker pool serves several threads at once.

The stress runs are subprocesses with a timeout: before the fix one aborted the process (webgpu,
a Rust panic on a still-mapped readback buffer) and one deadlocked (two cpu interpreters with
``num_threads=2`` sharing the worker pool).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from gpulite import ConcurrentUseError, Interpreter
from gpulite.backends.cpu import threads as pool
from tests.assets import model_path
from tests.webgpu.support import adapter_problem
from tests.webgpu.tiny_models import SHAPE, chain, chain_ref, x_of

ROOT = Path(__file__).resolve().parents[1]

# Threads run set_tensor/invoke/get_tensor on face_detection_short_range, on one shared Interpreter
# ("shared": no lock; "locked": the application's lock around each sequence) or one each
# ("separate"), and sort every result against the single-threaded references.
_STRESS = r"""
import json, sys, threading
import numpy as np
import gpulite

backend, mode, n_threads, rounds, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
# "webgpu+cpu": GPU partitions with the convolutions on the cpu (threaded kernels inside a GPU plan).
options = {"cpu_ops": ["CONV_2D"]} if backend == "webgpu+cpu" else {}
backend = backend.split("+")[0]

def make():
    it = gpulite.Interpreter(model_path=path, backend=backend, num_threads=2, **options)
    it.allocate_tensors()
    return it

xs = [np.random.default_rng(s).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32) for s in range(6)]
# "separate": the threads build their interpreters at the same time, on a device nothing has used yet.
shared = make() if mode != "separate" else None
app_lock, results_lock, barrier = threading.Lock(), threading.Lock(), threading.Barrier(n_threads)
results, errors, refused = [], [], []

def run(it, x):
    inp = it.get_input_details()[0]["index"]
    it.set_tensor(inp, x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]

def work(k):
    barrier.wait()
    try:
        it = shared or make()
    except Exception as e:
        errors.append(f"{type(e).__name__}: {e}"[:300])
        return
    for n in range(rounds):
        j = (k + n) % len(xs)
        try:
            if mode == "locked":
                with app_lock:
                    ys = run(it, xs[j])
            else:
                ys = run(it, xs[j])
        except gpulite.ConcurrentUseError:
            refused.append(j)
            continue
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}"[:300])
            continue
        with results_lock:
            results.append((j, ys))

workers = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
for t in workers:
    t.start()
for t in workers:
    t.join()

# The single-threaded references, from a fresh interpreter.
first = make()
refs = [run(first, x) for x in xs]

def same(a, b):
    return all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))

stats = {"right": 0, "other_input": 0, "wrong": 0, "refused": len(refused), "errors": errors}
for j, ys in results:
    # Without a lock another thread's set_tensor may come between this one's set_tensor and
    # invoke (the application's race, as in LiteRT): the result is then another input's, whole.
    stats["right" if same(ys, refs[j]) else "other_input" if any(same(ys, r) for r in refs) else "wrong"] += 1
print("STATS " + json.dumps(stats))
"""


def _stress(backend: str, mode: str, n_threads: int = 4, rounds: int = 12) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [backend, mode, str(n_threads), str(rounds), str(model_path("face_detection_short_range"))]
    done = subprocess.run([sys.executable, "-c", _STRESS, *args], capture_output=True, text=True, env=env,
                          timeout=180)  # a deadlock fails here
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stderr[-3000:]}"
    stats = json.loads(done.stdout.split("STATS ")[-1])
    assert stats["errors"] == [], stats["errors"]
    assert stats["wrong"] == 0, stats
    assert sum(stats[k] for k in ("right", "other_input", "refused")) == n_threads * rounds, stats
    return stats


_NO_ADAPTER = pytest.mark.skipif(adapter_problem() is not None, reason=str(adapter_problem()))
_BACKENDS = ["cpu", pytest.param("webgpu", marks=_NO_ADAPTER), pytest.param("webgpu+cpu", marks=_NO_ADAPTER)]


@pytest.mark.timeout(400)
@pytest.mark.parametrize("backend", _BACKENDS)
def test_separate_interpreters_in_threads_match_single_threaded(backend):
    stats = _stress(backend, "separate")
    assert stats["right"] == 4 * 12, stats


@pytest.mark.timeout(400)
@pytest.mark.parametrize("backend", _BACKENDS)
def test_shared_interpreter_is_refused_or_right_never_wrong(backend):
    _stress(backend, "shared")


@pytest.mark.timeout(400)
def test_shared_interpreter_under_the_applications_lock_is_always_right():
    stats = _stress("cpu", "locked")
    assert stats["right"] == 4 * 12, stats


# --- the refusal, step by step ------------------------------------------------------------------
class _Held:
    """Keeps a thread (named "holder") inside ``call`` (default ``it.invoke``), waiting in the
    executable's invoke, until released."""

    def __init__(self, it: Interpreter, call=None) -> None:
        self.inside, self.leave = threading.Event(), threading.Event()
        exe_invoke = it._exe.invoke

        def invoke(observer=None):
            self.inside.set()
            assert self.leave.wait(30)
            exe_invoke(observer)

        it._exe.invoke = invoke
        self.thread = threading.Thread(target=call or it.invoke, name="holder")
        self.thread.start()
        assert self.inside.wait(30)

    def release(self) -> None:
        self.leave.set()
        self.thread.join(30)
        assert not self.thread.is_alive()


@pytest.mark.timeout(120)
def test_a_call_while_another_thread_invokes_raises_concurrent_use_error():
    it = Interpreter(model_content=chain(), backend="cpu")
    it.allocate_tensors()
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    it.set_tensor(i, x_of(1))
    held = _Held(it)
    try:
        calls = {"set_tensor": lambda: it.set_tensor(i, x_of(2)), "invoke": it.invoke,
                 "get_tensor": lambda: it.get_tensor(o), "allocate_tensors": it.allocate_tensors,
                 "resize_tensor_input": lambda: it.resize_tensor_input(i, [1, 3, 3, 4]), "close": it.close}
        for name, call in calls.items():
            with pytest.raises(ConcurrentUseError) as e:
                call()
            assert f"Interpreter.{name}() was called in thread 'MainThread'" in str(e.value)
            assert "thread 'holder' is inside Interpreter.invoke()" in str(e.value)
            assert "not thread-safe" in str(e.value)
        assert isinstance(e.value, RuntimeError)  # what LiteRT raises there
    finally:
        held.release()
    # Nothing the refused calls tried took effect: the held invoke ran on input 1.
    np.testing.assert_allclose(it.get_tensor(o), chain_ref(x_of(1)), rtol=1e-5, atol=1e-6)
    assert it.get_tensor(i).shape == SHAPE
    it.set_tensor(i, x_of(2))  # and once it is done, any thread may call again
    it.invoke()
    np.testing.assert_allclose(it.get_tensor(o), chain_ref(x_of(2)), rtol=1e-5, atol=1e-6)


@pytest.mark.timeout(120)
def test_a_signature_runner_call_is_one_exclusive_call():
    # The runner holds the Interpreter for its whole set/invoke/get (the calls it makes nest), so
    # no other thread's set_tensor comes between them.
    from gpulite.testing.tflite_writer import ModelBuilder

    mb = ModelBuilder()
    x = mb.input("x", (1, 4), np.float32)
    y = mb.tensor("y", (1, 4), np.float32)
    mb.op("RELU", [x], [y])
    mb.output(y)
    it = Interpreter(model_content=mb.build(("serving_default", {"x": x}, {"y": y})), backend="cpu")
    runner, value = it.get_signature_runner(), np.array([[-1, 2, -3, 4]], np.float32)
    np.testing.assert_array_equal(runner(x=value)["y"], [[0, 2, 0, 4]])
    out = {}
    held = _Held(it, lambda: out.update(runner(x=value)))
    try:
        with pytest.raises(ConcurrentUseError, match=r"thread 'holder' is inside SignatureRunner.__call__\(\)"):
            it.set_tensor(it.get_input_details()[0]["index"], -value)
    finally:
        held.release()
    np.testing.assert_array_equal(out["y"], [[0, 2, 0, 4]])


# --- the CPU worker pool --------------------------------------------------------------------
@pytest.mark.timeout(120)  # the shared pool deadlocked or raised "release unlocked lock" here
def test_worker_pool_serves_several_threads_at_once(monkeypatch):
    n_threads, rounds, width = 4, 100, 3
    failures: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(f"in a worker: {args.exc_value!r}"))

    def caller(k: int) -> None:
        for r in range(rounds):
            # Jobs that must all run at the same time: each waits for the others at a barrier, so
            # a worker handed to two callers at once (one job lost) breaks it.
            out, barrier = np.zeros(width, np.int64), threading.Barrier(width)

            def job(t: int, out=out, barrier=barrier, r=r) -> None:
                barrier.wait(10)
                out[t] = k * 1_000_000 + r * 1000 + t

            try:
                pool.run_parallel([lambda t=t: job(t) for t in range(width)])
            except threading.BrokenBarrierError:
                failures.append(f"thread {k} round {r}: a job never ran")
                return
            if not np.array_equal(out, k * 1_000_000 + r * 1000 + np.arange(width)):
                failures.append(f"thread {k} round {r}: {out.tolist()}")

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a caller of the worker pool is stuck"
    assert failures == []


@pytest.mark.timeout(60)
def test_worker_error_is_raised_and_the_pool_still_works():
    def boom() -> None:
        raise ValueError("kernel chunk failed")

    with pytest.raises(ValueError, match="kernel chunk failed"):
        pool.run_parallel([lambda: None, boom, lambda: None])
    done = []
    pool.run_parallel([lambda: done.append(0), lambda: done.append(1), lambda: done.append(2)])
    assert sorted(done) == [0, 1, 2]


@pytest.mark.timeout(60)
def test_chunks_run_once_each_and_a_variant_on_one_thread_at_a_time():
    # Short chunks: the caller often finishes before a worker wakes and runs the worker's
    # share itself (threads.py); each chunk must still run exactly once, and variant t (thread
    # t's scratch) never on two threads at once.
    n, width = 40, 3
    for _ in range(200):
        ran: list[int] = []
        busy = [threading.Lock() for _ in range(width)]

        def chunk(k: int, t: int, ran=ran, busy=busy) -> None:
            assert busy[t].acquire(blocking=False), f"variant {t} ran on two threads at once"
            ran.append(k)
            busy[t].release()

        pool.run_chunks([[lambda k=k, t=t: chunk(k, t) for t in range(width)] for k in range(n)])
        assert sorted(ran) == list(range(n))
