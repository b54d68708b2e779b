"""The CPU backend's compiled loops (gpulite/backends/cpu/jit.py): bounds checked before any
call is bound, and a machine without a C compiler falls back to numpy with a warning.
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
    env = dict(os.environ, CC=str(tmp_path / "no-such-cc"), GPULITE_CACHE_DIR=str(tmp_path / "cache"),
               PATH=str(tmp_path), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ran" in done.stdout
    assert "compiled loops unavailable, using numpy only" in done.stderr
