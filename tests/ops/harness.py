"""Run one model in LiteRT (the oracle) and in gpulite, and compare every output.

On ``backend="webgpu"`` a case must also really run on the GPU: a node whose WebGPU kernel
is missing or declines it silently runs on the CPU fallback, and the comparison alone would
then pass without testing any GPU code. :func:`check_op` asserts the placement after the
values; ``tests/ops/conftest.py`` applies the same check (:func:`watch_webgpu`) to every
webgpu interpreter a webgpu case allocates, however the test builds it. Known gaps are
listed in ``tests/ops/expected_failures.py`` (``GPU_GAPS``) and fail with :class:`NotOnGpuError`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tests.compare import assert_same


class NotOnGpuError(AssertionError):
    """A webgpu case ran some of its nodes on the CPU fallback (or crossed between the two)."""


def placement_problem(plan: dict[str, Any]) -> str | None:
    """Why ``plan`` (``Interpreter.get_plan()`` on webgpu) is not all-GPU, or None when it is."""
    if "partitions" not in plan:
        return f"no partitions in the plan (backend {plan.get('backend')!r})"
    cpu = [p for p in plan["partitions"] if p["backend"] != "webgpu"]
    if plan.get("cpu_after_invoke"):  # nodes after a data-dependent shape run on the cpu after each invoke
        return f"nodes {plan['cpu_after_invoke']} on the cpu after each invoke"
    if cpu or plan["crossings"]:
        ops = {op: n for p in cpu for op, n in p["ops"].items()}
        return f"ops on the CPU fallback {ops}, {len(plan['crossings'])} crossing(s)"
    return None


class _FallbackLog(logging.Handler):
    """Collects the backend's "node N (OP) runs on the cpu: why" lines for failure messages."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextlib.contextmanager
def watch_webgpu() -> Iterator[list[tuple[dict[str, Any], list[str]]]]:
    """Record ``(plan, fallback reasons)`` after every successful ``allocate_tensors`` of a
    webgpu :class:`gpulite.Interpreter` inside the block (the class method is wrapped, so
    interpreters a test builds itself are seen too)."""
    from gpulite.interpreter import Interpreter

    seen: list[tuple[dict[str, Any], list[str]]] = []
    real = Interpreter.allocate_tensors
    log = logging.getLogger("gpulite.backends.webgpu")
    handler = _FallbackLog()

    def allocate_tensors(self: Any) -> None:
        start = len(handler.lines)
        real(self)
        if self.backend == "webgpu":
            plan = self.get_plan()
            if self._exe is not None and hasattr(self._exe, "parts"):
                plan["reduction_problems"] = reduction_problems(self._exe)
            seen.append((plan, handler.lines[start:]))

    old_level = log.level
    log.addHandler(handler)
    if not log.isEnabledFor(logging.INFO):
        log.setLevel(logging.INFO)
    Interpreter.allocate_tensors = allocate_tensors  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        Interpreter.allocate_tensors = real  # type: ignore[method-assign]
        log.removeHandler(handler)
        log.setLevel(old_level)


def check_watched(seen: list[tuple[dict[str, Any], list[str]]]) -> None:
    """Raise :class:`NotOnGpuError` for the first recorded webgpu plan that is not all-GPU;
    then AssertionError for the first whose reductions leave too much to one thread."""
    for plan, why in seen:
        problem = placement_problem(plan)
        if problem is not None:
            raise NotOnGpuError(f"webgpu case not on the GPU: {problem}" + "".join(f"\n  {w}" for w in why))
    for plan, _ in seen:
        if plan.get("reduction_problems"):
            raise AssertionError("webgpu reductions leave too much to one thread:\n  "
                                 + "\n  ".join(plan["reduction_problems"]))


def reduction_problems(exe: Any) -> list[str]:
    """What is wrong with the reduction and matrix-product dispatches of a compiled webgpu plan:
    one that declares no ``reduction_per_thread``, or leaves a thread more than
    ``MAX_REDUCTION_PER_THREAD`` elements."""
    from gpulite.backends.webgpu.instrument import reduction_work
    from tests.ops.expected_failures import MAX_REDUCTION_PER_THREAD

    problems = []
    for r in reduction_work(exe):
        where = f"node {r['node']} {r['op']}: {r['program']}"
        if r["per_thread"] <= 0:
            problems.append(f"{where} declares no reduction_per_thread")
        elif r["per_thread"] > MAX_REDUCTION_PER_THREAD:
            problems.append(f"{where} folds {r['per_thread']} elements per thread (at most "
                            f"{MAX_REDUCTION_PER_THREAD})")
    return problems


def _run(interp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Feed ``inputs`` in graph-input order through a tflite_runtime-style interpreter."""
    details = interp.get_input_details()
    if len(inputs) != len(details):
        raise ValueError(f"model has {len(details)} inputs, got {len(inputs)} arrays")
    resized = False
    for d, x in zip(details, inputs, strict=True):
        if tuple(d["shape"]) != np.shape(x):
            interp.resize_tensor_input(d["index"], list(np.shape(x)))
            resized = True
    if resized:
        details = interp.get_input_details()
    interp.allocate_tensors()
    for d, x in zip(details, inputs, strict=True):
        interp.set_tensor(d["index"], np.asarray(x))
    interp.invoke()
    # Copies: the interpreter may reuse output memory on the next invoke.
    return [np.array(interp.get_tensor(d["index"]), copy=True) for d in interp.get_output_details()]


def run_litert(model: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Outputs of ``model`` on ``inputs`` from ai_edge_litert's Interpreter, default options."""
    from ai_edge_litert.interpreter import Interpreter

    return _run(Interpreter(model_content=bytes(model)), inputs)


def run_gpulite(model: bytes, inputs: Sequence[np.ndarray], backend: str,
                num_threads: int | None = None) -> list[np.ndarray]:
    """Outputs of ``model`` on ``inputs`` from ``gpulite.Interpreter`` on ``backend``.

    (On webgpu the op suite's conftest checks the placement when the test body is done.)
    """
    from gpulite import Interpreter

    return _run(Interpreter(model_content=bytes(model), backend=backend, num_threads=num_threads), inputs)


def check_op(model: bytes, inputs: Sequence[np.ndarray], backend: str, *, rtol: float = 1e-5,
             int_tol: int = 0) -> None:
    """Run ``model`` in LiteRT and in gpulite on ``backend``; assert every output matches.

    Parameters
    ----------
    model : bytes
        A .tflite file (usually from :class:`gpulite.testing.tflite_writer.ModelBuilder`).
    inputs : sequence of ndarray
        One array per graph input, in order.
    backend : str
        ``"cpu"`` or ``"webgpu"``.
    rtol, int_tol : float, int
        Passed to :func:`tests.compare.assert_same` for every output.
    """
    expected = run_litert(model, inputs)
    with watch_webgpu() as seen:
        actual = run_gpulite(model, inputs, backend)
    if len(actual) != len(expected):
        raise AssertionError(f"gpulite gave {len(actual)} outputs, LiteRT {len(expected)}")
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert_same(a, e, rtol=rtol, int_tol=int_tol, what=f"output {i} ({backend})")
    if backend == "webgpu":  # values first: a listed gap still checks the CPU fallback's values
        check_watched(seen)
