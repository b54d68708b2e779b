"""Helpers for the WebGPU tests: the loud no-adapter skip and LiteRT comparisons."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pytest

from tests.compare import assert_same

NO_ADAPTER = "NO WEBGPU ADAPTER: the WebGPU backend tests did not run"


@functools.cache
def adapter_problem() -> str | None:
    """Why no WebGPU adapter exists here, or None when one does.

    Only "no adapter at all" skips; an adapter that then fails is a test failure. (Any other
    import error of the backend is a bug and propagates.)
    """
    try:
        from gpulite.backends.webgpu.device import enumerate_adapters
    except ModuleNotFoundError as e:
        if e.name != "wgpu":
            raise
        return f"{NO_ADAPTER} (wgpu is not installed)"
    return None if enumerate_adapters() else NO_ADAPTER


def require_adapter() -> None:
    """Skip the calling test module, loudly, when the machine has no WebGPU adapter at all."""
    why = adapter_problem()
    if why is not None:
        pytest.skip(why, allow_module_level=True)


def usable_backend(name: str) -> str:
    """``name`` for a test parametrized over backends: skips where ``litert`` (ai-edge-litert) is not
    installed or, for ``webgpu``, where there is no adapter (:func:`adapter_problem`)."""
    if name == "litert":
        pytest.importorskip("ai_edge_litert.interpreter")
    if name == "webgpu":
        why = adapter_problem()
        if why is not None:
            pytest.skip(why)
    return name


def run(interp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), inputs, strict=True):
        interp.set_tensor(d["index"], np.asarray(x))
    interp.invoke()
    return [np.array(interp.get_tensor(d["index"]), copy=True) for d in interp.get_output_details()]


def gpu_only(plan: dict) -> None:
    """Assert every node ran on the GPU, so a comparison cannot pass on the CPU fallback."""
    parts = plan["partitions"]
    assert [p["backend"] for p in parts] == ["webgpu"], f"expected one webgpu partition, got {parts}"
    assert plan["crossings"] == []


def check_gpu(model: bytes, inputs: Sequence[np.ndarray], *, rtol: float = 1e-5) -> dict:
    """Run ``model`` on WebGPU and in LiteRT; assert all nodes ran on the GPU and outputs match.

    Returns the interpreter's plan (``get_plan()``).
    """
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from gpulite import Interpreter

    expected = run(LiteRT(model_content=bytes(model)), inputs)
    it = Interpreter(model_content=bytes(model), backend="webgpu")
    actual = run(it, inputs)
    plan = it.get_plan()
    gpu_only(plan)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert_same(a, e, rtol=rtol, what=f"output {i}")
    return plan
