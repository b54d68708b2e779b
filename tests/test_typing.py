"""mypy: clean on the typed core (the model reader, the graph IR, the backend contract, the runtime
owner), and every backend's parts satisfy the contract's protocols structurally."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TYPED = ["gpulite/model", "gpulite/graph", "gpulite/backends/base.py", "gpulite/runtime.py"]

CONFORMANCE = '''
from gpulite.backends.base import Backend, EagerExecutor, Executable, GpuControl, GpuEagerExecutor, GpuIO
from gpulite.backends.cpu.backend import CpuBackend, CpuExecutable
from gpulite.backends.cpu.eager import CpuEager
from gpulite.backends.litert.backend import LiteRtBackend, LiteRtExecutable
from gpulite.backends.webgpu.backend import WebGpuBackend
from gpulite.backends.webgpu.eager import WebGpuEager
from gpulite.backends.webgpu.executable import WebGpuExecutable
from tests.env.test_custom_backend import TraceBackend, TraceEager, TraceExecutable


def backends(cpu: CpuBackend, webgpu: WebGpuBackend, trace: TraceBackend, litert: LiteRtBackend) -> list[Backend]:
    return [cpu, webgpu, trace, litert]


def executables(cpu: CpuExecutable, webgpu: WebGpuExecutable, trace: TraceExecutable,
                litert: LiteRtExecutable) -> list[Executable]:
    return [cpu, webgpu, trace, litert]


def eager(cpu: CpuEager, webgpu: WebGpuEager, trace: TraceEager) -> list[EagerExecutor]:
    return [cpu, webgpu, trace]


def gpu_parts(e: WebGpuEager, x: WebGpuExecutable, b: WebGpuBackend) -> tuple[GpuEagerExecutor, GpuIO, GpuControl]:
    return e, x, b
'''


def _mypy(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "mypy_cache"), "MYPYPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=600)


def test_mypy_is_clean_on_the_typed_core(tmp_path):
    # Errors are reported for the typed core only: the modules it imports are analysed for their
    # types (silently), whether mypy finds them through the checkout or an installed copy.
    r = _mypy(["--follow-imports=silent", *TYPED], tmp_path)
    assert r.returncode == 0, f"mypy found errors (mypy is in the 'test' extra):\n{r.stdout}{r.stderr}"


def test_every_backend_satisfies_the_contract(tmp_path):
    check = tmp_path / "conformance.py"
    check.write_text(CONFORMANCE)
    r = _mypy(["--follow-imports=silent", str(check)], tmp_path)
    assert r.returncode == 0, f"a backend does not satisfy gpulite.backends.base:\n{r.stdout}{r.stderr}"
