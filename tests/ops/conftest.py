"""The ``backend`` fixture: every op test runs once per backend.

``webgpu`` cases skip while the backend package does not exist, and skip loudly when it
exists but the machine has no WebGPU adapter. A ``webgpu`` case must run every node of
every webgpu interpreter it allocates on the GPU (checked after the test body, see
``tests/ops/harness.py``), with ``GPULITE_WEBGPU_QUANTIZED=exact`` so quantized cases keep
LiteRT's integer results. Cases listed in ``tests/ops/expected_failures.py`` are marked
``xfail(strict=True)``; ``GPU_GAPS`` entries only with ``raises=NotOnGpuError``.
"""

from __future__ import annotations

import functools
import importlib

import pytest

from tests.ops.expected_failures import EXPECTED_FAILURES, GPU_GAPS, gpu_gap
from tests.ops.harness import NotOnGpuError, check_watched, watch_webgpu

# "cpu_numpy" is the CPU backend with its compiled loops off (GPULITE_CPU_JIT=0): the numpy
# kernels are the reference and the fallback where numba is missing, so they stay tested.
BACKENDS = ("cpu", "cpu_numpy", "webgpu")
NO_ADAPTER = "NO WEBGPU ADAPTER: WebGPU op suite not run"


@functools.cache
def _webgpu_unavailable() -> str | None:
    """Why webgpu cases cannot run here, or None when they can."""
    try:
        module = importlib.import_module("gpulite.backends.webgpu")
    except ModuleNotFoundError as e:
        # Only a missing package means "not built yet"; any other import failure is a bug
        # in the backend and must surface as an error, not a skip.
        if e.name == "wgpu":
            return "wgpu is not installed"
        if e.name == "gpulite.backends.webgpu":
            return "webgpu backend not built yet"
        raise
    # A directory without __init__.py imports as a namespace package: still being written.
    if getattr(module, "__file__", None) is None or not hasattr(module, "WebGpuBackend"):
        return "webgpu backend not built yet"
    import wgpu

    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as e:  # wgpu raises various errors when no driver/adapter exists
        return f"{NO_ADAPTER} ({type(e).__name__}: {e})"
    return None if adapter is not None else NO_ADAPTER


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """The backend name a test runs on: ``"cpu"`` (for both CPU variants) or ``"webgpu"``."""
    if request.param == "webgpu":
        why = _webgpu_unavailable()
        if why is not None:
            pytest.skip(why)
        # The suite compares quantized cases exactly: webgpu keeps LiteRT's integer arithmetic
        # (quantized="exact"); the GPU's float path is tests/webgpu/test_quantized.py's.
        from gpulite.environment import env

        monkeypatch.setenv("GPULITE_WEBGPU_QUANTIZED", "exact")
        env().reset()
        yield request.param
        env().reset()
        return
    if request.param != "cpu_numpy":
        yield request.param
        return
    from gpulite.backends.cpu import jit
    from gpulite.environment import env

    monkeypatch.setenv("GPULITE_CPU_JIT", "0")
    env().reset()
    assert not jit.available()
    yield "cpu"
    env().reset()  # read again (without the variable) on next use


def base_name(item: pytest.Item, backend_name: str) -> str:
    """The node name with the backend's id removed: ``test_x[a-cpu]`` -> ``test_x[a]``."""
    name = item.name
    if "[" not in name or not name.endswith("]"):
        return name
    func, ids = name[:-1].split("[", 1)
    parts = ids.split("-")
    if backend_name in parts:
        parts.remove(backend_name)
    return f"{func}[{'-'.join(parts)}]" if parts else func


def _backend_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("backend") if callspec is not None else None


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselection, so the stale check sees every case
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    used, functions = set(), set()
    for item in items:
        backend_name = _backend_of(item)
        if backend_name is None:
            continue
        name = base_name(item, backend_name)
        qualified = f"{item.path.name}::{name}"
        functions.add(qualified.split("[", 1)[0])
        reason = EXPECTED_FAILURES.get((name, "cpu" if backend_name == "cpu_numpy" else backend_name))
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
        elif backend_name == "webgpu" and (gap := gpu_gap(qualified)) is not None:
            used.add(gap[0])
            item.add_marker(pytest.mark.xfail(strict=True, raises=NotOnGpuError, reason=f"WebGPU gap: {gap[1]}"))
    # An entry is stale when its file's tests were collected and it matched none of them
    # (checked per file, so running one file does not flag the other files' entries).
    files = {f.split("::", 1)[0] for f in functions}
    stale = [p for p, _ in GPU_GAPS if p not in used and p.split("::", 1)[0] in files]
    if stale and not any("::" in str(a) for a in config.args):  # node ids select only some cases
        raise pytest.UsageError(f"tests/ops/expected_failures.py: GPU_GAPS entries match no case: {stale}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """On webgpu, after the body: every allocated webgpu interpreter ran all nodes on the GPU."""
    if _backend_of(item) != "webgpu":
        return (yield)
    with watch_webgpu() as seen:
        result = yield
    check_watched(seen)
    return result


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    # A missing adapter must not pass quietly as a few "s" characters.
    skipped = terminalreporter.stats.get("skipped", [])
    if any(NO_ADAPTER in str(getattr(r, "longrepr", "")) for r in skipped):
        terminalreporter.write_sep("!", NO_ADAPTER, red=True, bold=True)
