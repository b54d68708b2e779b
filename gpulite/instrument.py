"""The observer behind ``Interpreter.invoke`` for the ``debug`` and ``check_nans`` flags and ``profile``.

At every invoke the Interpreter asks :func:`observer` for one. While no flag asks for
anything and no ``gpulite.profile``/``time`` is recording there is none, and the executable
runs untouched (one flag check per invoke). Otherwise the executable calls the
:class:`NodeObserver` after each node (the ``Observer`` of :mod:`gpulite.backends.base`):
it logs the node on the ``gpulite.debug`` logger with its shapes, time and bytes (``debug``),
checks its float outputs for NaN (``check_nans``, raising :class:`~gpulite.errors.NaNError`
naming the node; skipped in ``prod`` mode) and records it for ``profile``. How a node is
timed is the executable's business: the CPU times each step; WebGPU makes every GPU node its
own submit followed by a wait (:mod:`gpulite.backends.webgpu.instrument`). Flags are read at
every invoke, so turning them on or off needs no new ``allocate_tensors``.
"""

from __future__ import annotations

import logging

import numpy as np

from gpulite import runtime
from gpulite.backends.base import ReadTensor
from gpulite.environment import env
from gpulite.errors import NaNError
from gpulite.graph.ir import Graph, Node

log = logging.getLogger(__name__)
_debug_log = logging.getLogger("gpulite.debug")


def debug_logger() -> logging.Logger:
    """The ``gpulite.debug`` logger, made visible when debug mode is on and logging is unconfigured.

    Debug mode is an explicit request to see every kernel (TF.js prints them); without any
    logging configuration an INFO record would be dropped, so a stderr handler is added once.
    """
    if not _debug_log.handlers and not logging.getLogger().handlers:
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("gpulite.debug: %(message)s"))
        _debug_log.addHandler(h)
    if _debug_log.level == logging.NOTSET or _debug_log.level > logging.INFO:
        _debug_log.setLevel(logging.INFO)
    return _debug_log


class NodeObserver:
    """The :class:`~gpulite.backends.base.Observer` of one ``Interpreter.invoke``: logs, checks
    for NaN and records each node for ``profile``, as the flags asked when it was made.

    Parameters
    ----------
    graph : Graph
        The graph the executable runs (the backend's prepared graph).
    kernels : str
        The backend name, for the records and the log.
    debug, check : bool
        Log every node; raise ``NaNError`` on a float output holding NaN.
    """

    def __init__(self, graph: Graph, kernels: str, *, debug: bool, check: bool) -> None:
        self.graph, self.kernels, self.debug, self.check = graph, kernels, debug, check

    def node_done(self, node: Node, ms: float, read: ReadTensor) -> None:
        g = self.graph
        ins = [g.tensors[i].shape for i in node.inputs if i >= 0 and not g.tensors[i].is_const]
        outs = [g.tensors[o].shape for o in node.outputs]
        nbytes = sum(g.tensors[o].nbytes for o in node.outputs)
        if self.check:
            for o in node.outputs:
                t = g.tensors[o]
                if t.dtype.kind != "f" or not t.nbytes:
                    continue
                value = read(o)
                if value is not None and np.isnan(value).any():
                    raise NaNError(f"node {node.index} ({node.op}) produced NaN in output tensor {o} ({t.name!r}, "
                                   f"{list(t.shape)}) with inputs {ins} (check_nans is on)")
        if runtime.profiling():
            runtime.record_kernel(runtime.KernelRecord(f"{node.op}#{node.index}", self.kernels, ins, outs, ms, nbytes))
        if self.debug:
            debug_logger().info("node %-4d %-22s %s %s -> %s  %.3f ms  %d B out", node.index, node.op, self.kernels,
                                ins, outs, ms, nbytes)


def checks() -> tuple[bool, bool]:
    """``(debug, check_nans)`` as the flags ask now; both off in ``prod`` mode. Read at every
    invoke and eager op, so turning a flag on or off needs no new ``allocate_tensors``."""
    e = env()
    prod = e.get("prod")
    return bool(e.get("debug") and not prod), bool(e.get("check_nans") and not prod)


def observer(graph: Graph, kernels: str) -> NodeObserver | None:
    """The observer for one invoke of ``graph`` on backend ``kernels``, or None when no flag asks
    for one and no ``profile``/``time`` is recording (the invoke then runs untouched)."""
    debug, check = checks()
    if not (debug or check or runtime.profiling()):
        return None
    return NodeObserver(graph, kernels, debug=debug, check=check)
