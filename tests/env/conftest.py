"""Fixtures for the TF.js-style runtime API tests: a clean registry and flags per test, both backends."""

from __future__ import annotations

import pytest

import gpulite
from gpulite import runtime
from gpulite.environment import env
from tests.webgpu.support import adapter_problem


@pytest.fixture(autouse=True)
def clean_state(monkeypatch):
    """Every test starts and ends with default flags and no active backend chosen."""
    monkeypatch.delenv("GPULITE_BACKEND", raising=False)
    for name in env().flags():
        monkeypatch.delenv(f"GPULITE_{name.upper()}", raising=False)
    env().reset()
    runtime.reset_active()
    yield
    env().reset()
    runtime.reset_active()


def use_backend(name: str) -> str:
    """Make ``name`` active; skip (loudly) a webgpu case on a machine without any adapter."""
    if name == "webgpu" and adapter_problem():
        pytest.skip(adapter_problem())
    assert gpulite.set_backend(name), f"backend {name!r} did not start"
    return name


@pytest.fixture(params=["cpu", "webgpu"])
def backend(request) -> str:
    """Each test using it runs once on the numpy backend and once on WebGPU."""
    return use_backend(request.param)


def software_adapter() -> bool:
    """Whether the WebGPU adapter here is of CPU type (lavapipe, SwiftShader)."""
    if adapter_problem():
        return False
    from gpulite.backends.webgpu.probe import adapter_kind
    return adapter_kind().is_software


@pytest.fixture
def temp_backend():
    """Register backends for one test and remove them, and their kernels, afterwards.
    ``kernels_from``: copy that backend's kernels to the new one (a fake backend on real kernels)."""
    names = []

    def register(name, factory, priority=1, kernels_from=None, **kw):
        assert gpulite.register_backend(name, factory, priority, **kw)
        if kernels_from is not None:
            gpulite.copy_kernels(kernels_from, name)
        names.append(name)
        return name
    yield register
    for n in names:
        if n in gpulite.list_backends():
            gpulite.remove_backend(n)
        for op in list(gpulite.get_kernels_for_backend(n)):
            gpulite.unregister_kernel(op, n)
