"""The CPU backend's compiled loops (gpulite/backends/cpu/jit.py): bounds checked before any
call is bound, a machine without a C compiler falls back to numpy with a warning, and the
cached library is verified before it is loaded (digest, owner, mode), rebuilt otherwise.
Their values are checked by the whole op suite, which runs every case with the loops
(``cpu``) and without (``cpu_numpy``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpulite.backends.cpu import jit

ROOT = Path(__file__).resolve().parents[1]


def test_depthwise_call_out_of_bounds_is_refused():
    src = np.zeros(100, np.float32)
    out = np.zeros((2, 8), np.float32)
    wt, bt = np.zeros((9, 8), np.float32), np.zeros(8, np.float32)
    jit.check_rows(src, np.zeros(9, np.int64), 10, wt, bt, out, 8)  # inside: fine
    with pytest.raises(ValueError, match="inconsistent plan"):
        jit.check_rows(src, np.full(9, 90, np.int64), 10, wt, bt, out, 8)  # reads past the end
    with pytest.raises(ValueError, match="inconsistent plan"):
        jit.check_rows(src, np.zeros(8, np.int64), 10, wt[:8], bt, out, 8)  # not a multiple of 9 taps


def test_im2col_call_out_of_bounds_is_refused():
    src = np.zeros((5, 5, 3), np.float32)
    dst = np.zeros((4 * 5, 27), np.float32)
    jit.check_im2col(src, dst[:15], 0, 5, 1, 1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="inconsistent plan"):
        jit.check_im2col(src, dst, 2, 5, 1, 1, 1, 1, 3, 3)  # rows 2..5 with a 3x3 window leave the image


def test_no_compiler_falls_back_to_numpy(tmp_path):
    code = (
        "import logging, numpy as np, gpulite\n"
        "from gpulite.backends.cpu import jit\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "assert not jit.available()\n"
        "it = gpulite.Interpreter(model_path=gpulite.zoo.resolve('face_detection_short_range'), backend='cpu')\n"
        "it.allocate_tensors()\n"
        "d = it.get_input_details()[0]\n"
        "it.set_tensor(d['index'], np.zeros(d['shape'], np.float32))\n"
        "it.invoke()\n"
        "print('ran')\n"
    )
    env = dict(os.environ, GPULITE_CACHE_DIR=str(tmp_path / "cache"),
               PATH=str(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("GPULITE_CC", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ran" in done.stdout
    assert "compiled loops unavailable, using numpy only" in done.stderr


# --- the cache: verified before loading (issue 14) ---------------------------------------------
# Each run is a fresh process (a library, once loaded, stays loaded; a bad one may crash it).
_RUN_LOOPS = (
    "import logging, numpy as np\n"
    "from gpulite.backends.cpu import jit\n"
    "logging.basicConfig(level=logging.INFO)\n"
    "assert jit.available()\n"
    "src = np.arange(64, dtype=np.float32)\n"
    "offs, wt = np.arange(9, dtype=np.int64), np.arange(36, dtype=np.float32).reshape(9, 4)\n"
    "bt, out = np.ones(4, np.float32), np.zeros((2, 8), np.float32)\n"
    "jit.depthwise_rows(src, offs, 16, wt, bt, out, 4)()\n"
    "m = np.arange(8)\n"
    "want = [bt[m % 4] + sum(src[r * 16 + t + m] * wt[t, m % 4] for t in range(9)) for r in range(2)]\n"
    "np.testing.assert_array_equal(out, np.array(want, np.float32))\n"
    "print('entry', jit.cache_entry(jit.compiler()))\n"
)
_CONSTRUCTOR = ("#include <stdio.h>\n"
                "__attribute__((constructor)) static void hit(void) { fclose(fopen(\"%s\", \"w\")); }\n")


def _run_loops(tmp_path: Path, **env_vars: str) -> tuple[subprocess.CompletedProcess, Path]:
    env = dict(os.environ, GPULITE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), **env_vars)
    env.pop("GPULITE_CPU_JIT", None)
    done = subprocess.run([sys.executable, "-c", _RUN_LOOPS], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    entry = Path(done.stdout.split("entry ")[-1].strip())
    return done, entry


def _foreign_library(tmp_path: Path) -> tuple[bytes, Path]:
    """A shared library whose constructor creates a marker file when it is loaded."""
    marker = tmp_path / "constructor-ran"
    (tmp_path / "foreign.c").write_text(_CONSTRUCTOR % marker)
    cmd = [jit.compiler(), "-shared", "-fPIC", "-o", str(tmp_path / "foreign.so"), str(tmp_path / "foreign.c")]
    subprocess.run(cmd, check=True, timeout=120)
    return (tmp_path / "foreign.so").read_bytes(), marker


def _digest_file(lib: Path) -> Path:
    return lib.with_name(lib.name + ".sha256")


needs_cc = pytest.mark.skipif(not jit.available(), reason="no C compiler: the compiled loops are not built")


@needs_cc
def test_truncated_cached_library_is_rebuilt(tmp_path):
    _, lib = _run_loops(tmp_path)
    good = lib.read_bytes()
    lib.write_bytes(good[: len(good) // 2])  # loaded as it is, this crashes the process (SIGBUS)
    done, _ = _run_loops(tmp_path)
    assert "do not match their digest, rebuilding" in done.stderr
    assert len(lib.read_bytes()) == len(good)


@needs_cc
def test_foreign_library_at_the_cached_name_is_not_loaded(tmp_path):
    _, lib = _run_loops(tmp_path)
    foreign, marker = _foreign_library(tmp_path)
    lib.write_bytes(foreign)  # the old digest stays: it no longer matches
    done, _ = _run_loops(tmp_path)
    assert not marker.exists(), "the foreign library's constructor ran"
    assert "do not match their digest" in done.stderr
    _digest_file(lib).unlink()  # no digest at all: rebuilt too
    lib.write_bytes(foreign)
    _run_loops(tmp_path)
    assert not marker.exists(), "the foreign library's constructor ran"


@needs_cc
def test_cache_writable_by_others_is_not_trusted(tmp_path):
    import hashlib

    _, lib = _run_loops(tmp_path)
    foreign, marker = _foreign_library(tmp_path)
    lib.write_bytes(foreign)  # with a matching digest: only owner and mode can tell
    _digest_file(lib).write_text(hashlib.sha256(foreign).hexdigest())
    lib.parent.chmod(0o777)
    done, _ = _run_loops(tmp_path)
    assert not marker.exists(), "a library from a world-writable directory was loaded"
    assert "not using the compiled-loops cache" in done.stderr and "writable by group or others" in done.stderr
    lib.parent.chmod(0o700)
    lib.chmod(0o666)  # the file itself writable by others
    done, _ = _run_loops(tmp_path)
    assert not marker.exists(), "a world-writable library was loaded"
    assert "writable by group or others" in done.stderr
    assert lib.read_bytes() != foreign


@needs_cc
def test_compiler_comes_from_gpulite_cc_only(tmp_path):
    _run_loops(tmp_path, CC=str(tmp_path / "no-such-cc"))  # CC is not read
    env = dict(os.environ, GPULITE_CACHE_DIR=str(tmp_path / "cache2"), GPULITE_CC=str(tmp_path / "no-such-cc"),
               PYTHONPATH=str(ROOT))
    code = "from gpulite.backends.cpu import jit\nprint(jit.available())\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    assert "GPULITE_CC=" in done.stderr and "is not an executable" in done.stderr
