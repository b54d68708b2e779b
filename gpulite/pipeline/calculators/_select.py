"""Choosing a calculator's implementation: ``"cpu"``, ``"webgpu"`` or ``"auto"`` (MediaPipe's selector).

Every fallback is logged (never printed) with the reason, once per node.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("gpulite.pipeline.calculators")

BACKENDS = ("auto", "cpu", "webgpu")


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


def select_backend(requested: str, node: str, calculator: str) -> str:
    """Resolve ``requested`` to ``"cpu"`` or ``"webgpu"`` for one node, logging any fallback.

    ``"auto"`` takes WebGPU only where the backend registry ranks it above numpy (a real GPU,
    not a software adapter); ``"webgpu"`` falls back to the CPU, with a warning, when no
    adapter can start.
    """
    if requested == "cpu":
        return "cpu"
    usable, preferred, why = webgpu_status()
    if requested == "webgpu":
        if usable:
            return "webgpu"
        log.warning("node %r (%s): webgpu requested but unavailable (%s); running on the cpu", node, calculator, why)
        return "cpu"
    if preferred:
        return "webgpu"
    log.info("node %r (%s): backend auto chose the cpu (webgpu: %s)", node, calculator, why)
    return "cpu"
