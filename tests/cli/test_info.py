"""``gpulite info``: the active backend and why, the ranking, kernels, flags, the precision in
force, and each WebGPU adapter with its type, features and the limits gpulite depends on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpulite import runtime
from gpulite.commands.info import info
from gpulite.environment import env
from tests.env.conftest import software_adapter

ROOT = Path(__file__).resolve().parents[2]


def _info(**env: str) -> str:
    """``python -m gpulite.cli info`` in a fresh process, no GPULITE_* variable but ``env``."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPULITE_")}
    e.update(env, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, "-m", "gpulite.cli", "info"], cwd=ROOT, env=e,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def adapters(monkeypatch) -> list[dict]:
    """adapter_info() as the subprocess sees it (no GPULITE_ADAPTER); [] without wgpu."""
    monkeypatch.delenv("GPULITE_ADAPTER", raising=False)
    try:
        from gpulite.backends.webgpu.device import adapter_info
    except ImportError:  # wgpu not installed: info says so, nothing to check per adapter
        return []
    return adapter_info()


def test_info_reports_cpu_active_precision_and_adapter_limits(adapters):
    out = _info(GPULITE_BACKEND="cpu")
    assert re.search(r"^active\s+cpu\b", out, re.M), out
    assert re.search(r"^ \*cpu\b", out, re.M), out  # the backends list marks it
    assert "precision  fp32 asked (flag precision, default); in force on the active backend (cpu): fp32" in out
    assert re.search(r"^\s+cpu\s+fp32\b", out, re.M), out
    webgpu = re.search(r"^\s+webgpu\s+(fp32|fp16|-) \(", out, re.M)
    assert webgpu, out
    for a in adapters:
        f16 = "yes" if a["shader_f16"] else "no"
        head = f"adapter {a['name']} [{a['adapter_type']}, {a['backend_type']}, shader-f16 {f16}"
        assert head in out, out
    if not adapters:
        return
    from gpulite.backends.webgpu.device import KEY_LIMITS

    # Each adapter's block: the header line, then its features and its key limits with their values.
    blocks = re.split(r"^\s+adapter ", out, flags=re.M)[1:]
    assert len(blocks) == len(adapters), out
    for a, block in zip(adapters, blocks, strict=True):
        assert f"features ({len(a['features'])})" in block
        for f in a["features"]:
            assert re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", block), (f, block)
        assert re.search(r"^\s+limits\s+max-storage-buffer-binding-size ", block, re.M), block
        for k in KEY_LIMITS:
            assert k in a["limits"], k  # every wgpu adapter reports the WebGPU core limits
            assert re.search(rf"(?<![\w-]){re.escape(k)} {a['limits'][k]}\b", block), (k, block)
    default = [a for a in adapters if a["default"]]
    assert len(default) <= 1
    if default:
        assert f"[{default[0]['adapter_type']}, {default[0]['backend_type']}, shader-f16 " in out
        assert f"{webgpu.group(1)} (on {default[0]['name']}; shader-f16 " in out


def test_info_precision_fp16_in_force_follows_shader_f16(adapters):
    adapters = [a for a in adapters if a["default"]]
    out = _info(GPULITE_BACKEND="cpu", GPULITE_PRECISION="fp16")
    assert ("precision  fp16 asked (flag precision, GPULITE_PRECISION); "
            "in force on the active backend (cpu): fp32") in out
    if adapters:
        want = "fp16" if adapters[0]["shader_f16"] else "fp32"
        assert re.search(rf"^\s+webgpu\s+{want} \(on ", out, re.M), out


def test_gpulite_backend_cpu_info_reports_cpu_active():
    out = _info(GPULITE_BACKEND="cpu")
    assert "active     cpu (GPULITE_BACKEND=cpu)" in out
    assert " *cpu " in out and " *webgpu" not in out


@pytest.mark.skipif(not software_adapter(), reason="the WebGPU adapter here is a hardware GPU (or absent)")
def test_info_says_auto_picks_litert_then_cpu_over_a_software_adapter_and_why():
    out = _info()
    active = next(line for line in out.splitlines() if line.startswith("active"))
    assert active.startswith("active     litert (auto: 'litert' is the highest-ranked backend that starts")
    assert "'cpu' ranks 1 because numpy kernels" in active
    assert "'webgpu' ranks 0 because its adapter" in active and "CPU type" in active
    assert "webgpu    priority 3 -> rank 0" in out
    assert re.search(r"^ \*litert\s+priority 2 -> rank 2, \d+ kernels; LiteRT [\d.]+'s XNNPACK kernels", out, re.M), out
    assert "in force on the active backend (litert): fp32" in out


@pytest.fixture
def clean_flags(monkeypatch):
    """Default flags and no active backend, before and after (the test sets a flag in this process)."""
    for name in env().flags():
        monkeypatch.delenv(f"GPULITE_{name.upper()}", raising=False)
    monkeypatch.delenv("GPULITE_BACKEND", raising=False)
    env().reset()
    runtime.reset_active()
    yield
    env().reset()
    runtime.reset_active()


def test_info_lists_backends_kernels_and_flags(clean_flags):
    env().set("check_nans", True)
    lines: list[str] = []
    info(out=lines.append)
    text = "\n".join(lines)
    assert "cpu       priority 1 -> rank 1" in text and "kernels" in text
    flags = next(line for line in lines if line.startswith("flags"))
    assert "check_nans=True [set]" in flags and "debug=False" in flags
