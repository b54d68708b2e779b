"""The ``backend`` fixture: every op test runs once per backend.

``webgpu`` cases skip while the backend package does not exist, and skip loudly when it
exists but the machine has no WebGPU adapter. Cases listed in
``tests/ops/expected_failures.py`` are marked ``xfail(strict=True)``.
"""

from __future__ import annotations

import functools
import importlib

import pytest

from tests.ops.expected_failures import EXPECTED_FAILURES

BACKENDS = ("cpu", "webgpu")
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
def backend(request: pytest.FixtureRequest) -> str:
    """The backend name a test runs on: ``"cpu"`` or ``"webgpu"``."""
    if request.param == "webgpu":
        why = _webgpu_unavailable()
        if why is not None:
            pytest.skip(why)
    return request.param


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "backend" not in callspec.params:
            continue
        key = (base_name(item, callspec.params["backend"]), callspec.params["backend"])
        reason = EXPECTED_FAILURES.get(key)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    # A missing adapter must not pass quietly as a few "s" characters.
    skipped = terminalreporter.stats.get("skipped", [])
    if any(NO_ADAPTER in str(getattr(r, "longrepr", "")) for r in skipped):
        terminalreporter.write_sep("!", NO_ADAPTER, red=True, bold=True)
