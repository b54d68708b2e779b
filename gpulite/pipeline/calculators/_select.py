"""Choosing a calculator's implementation: ``"cpu"``, ``"webgpu"``, ``"litert"`` or ``"auto"`` (MediaPipe's selector).

``"litert"`` is LiteRT's kernels for the calculators that run models (Inference); every other
calculator of a ``"litert"`` graph runs on the cpu.

Every fallback is logged (never printed) with the reason, once per node.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("gpulite.pipeline.calculators")

BACKENDS = ("auto", "cpu", "webgpu", "litert")


def check_backend(value: str, where: str) -> str:
    if value not in BACKENDS:
        raise ValueError(f"{where}: backend must be one of {BACKENDS}, got {value!r}")
    return value


def requested_backend(cc: Any, option: str) -> str:
    """The node's ``BACKEND`` side input when connected (a graph-wide switch), else its option."""
    side = cc.side_inputs.get("BACKEND")
    return check_backend(side if side is not None else option, f"node {cc.node_name!r}")


def webgpu_status() -> tuple[bool, bool, str]:
    """(usable, preferred over numpy, why): whether the WebGPU pipeline kernels can run here."""
    try:
        from gpulite.backends.webgpu import pipeline  # noqa: F401  (wgpu importable)
        from gpulite.runtime import describe_backends
    except ImportError as e:
        return False, False, f"wgpu is not importable ({e})"
    ranks = {b.name: (b.rank, b.note) for b in describe_backends()}
    rank, note = ranks.get("webgpu", (None, "not registered"))
    if rank is None:
        return False, False, note
    return True, rank > (ranks.get("cpu", (1, ""))[0] or 0), note


def litert_status() -> tuple[bool, str]:
    """(usable, why): whether the registry ranks the ``litert`` backend (ai-edge-litert importable)."""
    from gpulite.runtime import describe_backends

    rank, note = next(((b.rank, b.note) for b in describe_backends() if b.name == "litert"), (None, "not registered"))
    return rank is not None, note


def select_backend(requested: str, node: str, calculator: str, *, models: bool = False) -> str:
    """Resolve ``requested`` to ``"cpu"``, ``"webgpu"`` or (``models``: a calculator that runs
    models) ``"litert"`` for one node, logging any fallback.

    ``"auto"`` takes WebGPU only where the backend registry ranks it above numpy (a real GPU,
    not a software adapter), else LiteRT for models where it can be imported, else the CPU;
    ``"webgpu"`` and ``"litert"`` fall back to the CPU, with a warning, when they cannot start.
    """
    if requested == "cpu" or (requested == "litert" and not models):
        return "cpu"
    if requested == "litert":
        usable, why = litert_status()
        if usable:
            return "litert"
        log.warning("node %r (%s): litert requested but unavailable (%s); running on the cpu", node, calculator, why)
        return "cpu"
    usable, preferred, why = webgpu_status()
    if requested == "webgpu":
        if usable:
            return "webgpu"
        log.warning("node %r (%s): webgpu requested but unavailable (%s); running on the cpu", node, calculator, why)
        return "cpu"
    if preferred:
        return "webgpu"
    if models and litert_status()[0]:
        return "litert"
    log.info("node %r (%s): backend auto chose the cpu (webgpu: %s)", node, calculator, why)
    return "cpu"
