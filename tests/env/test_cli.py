"""``gpulite info``: the active backend and why, the ranking, kernels and flags."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpulite import cli
from gpulite.environment import env
from tests.env.conftest import software_adapter

ROOT = Path(__file__).resolve().parents[2]


def _info_subprocess(**env_vars: str) -> str:
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPULITE_")}
    e.update(env_vars, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "gpulite.cli", "info"], env=e, cwd=ROOT, capture_output=True,
                       text=True, timeout=120, check=True)
    return r.stdout


def test_gpulite_backend_cpu_info_reports_cpu_active():
    out = _info_subprocess(GPULITE_BACKEND="cpu")
    assert "active     cpu (GPULITE_BACKEND=cpu)" in out
    assert " *cpu " in out and " *webgpu" not in out


@pytest.mark.skipif(not software_adapter(), reason="the WebGPU adapter here is a hardware GPU (or absent)")
def test_info_says_auto_picks_cpu_over_a_software_adapter_and_why():
    out = _info_subprocess()
    active = next(line for line in out.splitlines() if line.startswith("active"))
    assert active.startswith("active     cpu (auto: 'cpu' is the highest-ranked backend that starts")
    assert "'webgpu' ranks 0 because its adapter" in active and "CPU type" in active
    assert "webgpu    priority 2 -> rank 0" in out


def test_info_lists_backends_kernels_and_flags():
    env().set("check_nans", True)
    lines: list[str] = []
    cli.info(out=lines.append)
    text = "\n".join(lines)
    assert "cpu       priority 1 -> rank 1" in text and "kernels" in text
    flags = next(line for line in lines if line.startswith("flags"))
    assert "check_nans=True [set]" in flags and "debug=False" in flags
