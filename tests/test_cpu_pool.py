"""The compiled loops' thread pool (``loops.c``, :class:`gpulite.backends.cpu.jit.Program`):
stages run in order, each chunk exactly once on one of its variants, several programs at once
from Python threads, after a fork, and an idle process takes no CPU.

Values of the kernels built on it are checked against LiteRT by the op suite (``cpu``) and by
tests/ops/test_conv.py's threaded cases."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from gpulite.backends.cpu import jit

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not jit.available(), reason="the compiled loops are unavailable here")


def _marking_program(n: int, variants: int) -> tuple[jit.Program, np.ndarray]:
    """Stage 1 zeroes a (n, variants) table; in stage 2 chunk k on thread t sets cell (k, t) to 1."""
    table = np.full((n, variants), 7.0, np.float32)
    clear = [[[jit.fill_task(table, 0.0)]] * variants]
    marks = [[[jit.fill_task(table[k:k + 1, t:t + 1], 1.0)] for t in range(variants)] for k in range(n)]
    return jit.program([clear, marks]), table


@pytest.mark.timeout(120)
def test_stages_run_in_order_and_every_chunk_once():
    program, table = _marking_program(64, 3)
    for _ in range(300):
        table.fill(7.0)
        program()
        # a 7 left: stage 1 did not finish first, or a chunk never ran; a row summing to 2: it ran twice
        assert set(np.unique(table)) <= {0.0, 1.0}, np.unique(table)
        assert (table.sum(axis=1) == 1).all(), table.sum(axis=1)


@pytest.mark.timeout(120)
def test_programs_from_several_threads_at_once():
    """One program holds the pool at a time; the others run their stages on their own thread."""
    failures: list[str] = []

    def caller(k: int) -> None:
        program, table = _marking_program(32, 2)
        for r in range(200):
            program()
            if not (table.sum(axis=1) == 1).all():
                failures.append(f"thread {k} round {r}: {table.sum(axis=1).tolist()}")
                return

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a program is stuck"
    assert failures == []


def test_a_stage_needs_the_same_variants_in_every_chunk():
    table = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match="same number of variants"):
        jit.program([[[[jit.fill_task(table, 1.0)]], [[jit.fill_task(table, 1.0)]] * 2]])


_CHILD = r"""
import os, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from tests.test_cpu_pool import _marking_program
program, table = _marking_program(16, 2)
program()  # the pool's worker now exists in this process
if sys.argv[2] == "fork":
    pid = os.fork()
    if pid == 0:  # the child has no worker thread: the pool starts a new one
        program()
        os._exit(0 if (table.sum(axis=1) == 1).all() else 3)
    _, status = os.waitpid(pid, 0)
    print("CHILD", os.waitstatus_to_exitcode(status))
else:
    time.sleep(0.2)  # past the workers' spin: they sleep now
    t0 = time.process_time()
    time.sleep(0.5)
    print("IDLE_CPU", time.process_time() - t0)
"""


@pytest.mark.timeout(120)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_runs_programs():
    done = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), "fork"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "CHILD 0" in done.stdout, done.stdout + done.stderr


@pytest.mark.timeout(120)
def test_idle_workers_take_no_cpu():
    done = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), "idle"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    cpu = float(done.stdout.split("IDLE_CPU")[1])
    assert cpu < 0.05, f"{cpu:.3f} s of CPU in 0.5 s idle: a worker is still spinning"


def test_numpy_openblas_is_found_when_opencv_maps_its_own_first(monkeypatch):
    """opencv-python bundles OpenBLAS 0.3.3, mapped into the process with cv2, sometimes before
    numpy's in /proc/self/maps: GEMMs and thread control must go to numpy's (the version
    ``np.show_config`` reports) whatever the order; another OpenBLAS gives other sums in the
    last bits (a Ray test saw its driver disagree with its workers)."""
    import glob

    import cv2

    from gpulite.backends.cpu import blas

    site = Path(cv2.__file__).resolve().parents[1]
    theirs = sorted(glob.glob(str(site / "opencv*.libs" / "*openblas*")))
    if not theirs:
        pytest.skip("this OpenCV bundles no OpenBLAS")
    real = blas._candidates()
    monkeypatch.setattr(blas, "_candidates", lambda: theirs + real)
    monkeypatch.setattr(blas, "_lib", False)
    monkeypatch.setattr(blas, "_set_local", None)
    lib = blas._load()
    assert lib is not None and blas._numpy_openblas() is not None
    assert blas._version(lib) == blas._numpy_openblas(), (lib, blas._version(lib), blas._numpy_openblas())
