"""The hook behind ``Interpreter.invoke`` for the ``debug`` and ``check_nans`` flags and ``profile``.

``Interpreter.allocate_tensors`` calls :func:`attach` on each compiled executable. While no
flag asks for anything and no ``gpulite.profile``/``time`` is recording, ``invoke`` runs the
executable untouched (one flag check per invoke). Otherwise each node is wrapped: timed,
logged on the ``gpulite.debug`` logger with its shapes, time and bytes (``debug``), its float
outputs checked for NaN (``check_nans``, raising :class:`~gpulite.errors.NaNError` naming
the node; skipped in ``prod`` mode) and recorded for ``profile``. On the CPU backend the
executable's step list is wrapped; on WebGPU every GPU node becomes its own submit followed by
a probe (:mod:`gpulite.backends.webgpu.instrument`), so GPU nodes are waited for one by one.
Flags are read at every invoke, so turning them on or off needs no new ``allocate_tensors``.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from gpulite import engine
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


class _Hook:
    def __init__(self, exe: Any, graph: Graph, order: list[Node], kernels: str) -> None:
        # A weak reference and the class's method: exe.invoke holds this hook, so a strong
        # reference back would make a cycle that keeps a plan's arena alive until a GC pass.
        self._exe, self._invoke = weakref.ref(exe), type(exe).invoke
        self.graph, self.order, self.kernels = graph, order, kernels
        self.debug = self.check = False
        self.t_prev = 0.0
        self._counts: dict[int, Any] = {}
        self._steps: list | None = None

    @property
    def exe(self) -> Any:
        exe = self._exe()
        if exe is None:
            raise RuntimeError("the compiled plan this hook belongs to is gone")
        return exe

    def orig(self) -> None:
        self._invoke(self.exe)

    # -- per node ---------------------------------------------------------------------------
    def after(self, node: Node, ms: float, read: Callable[[int], np.ndarray] | None) -> None:
        g = self.graph
        ins = [g.tensors[i].shape for i in node.inputs if i >= 0 and not g.tensors[i].is_const]
        outs = [g.tensors[o].shape for o in node.outputs]
        nbytes = sum(g.tensors[o].nbytes for o in node.outputs)
        if self.check and read is not None:
            for o in node.outputs:
                t = g.tensors[o]
                if t.dtype.kind != "f" or not t.nbytes:
                    continue
                value = read(o)
                if value is not None and np.isnan(value).any():
                    raise NaNError(f"node {node.index} ({node.op}) produced NaN in output tensor {o} ({t.name!r}, "
                                   f"{list(t.shape)}) with inputs {ins} (check_nans is on)")
        if engine.profiling():
            engine.record_kernel(engine.KernelRecord(f"{node.op}#{node.index}", self.kernels, ins, outs, ms, nbytes))
        if self.debug:
            debug_logger().info("node %-4d %-22s %s %s -> %s  %.3f ms  %d B out", node.index, node.op, self.kernels,
                                ins, outs, ms, nbytes)

    def _cpu_step(self, node: Node, run: Callable[[], None]) -> Callable[[], None]:
        arrays = self.exe.arrays

        def step() -> None:
            t0 = time.perf_counter()
            run()
            now = time.perf_counter()
            self.after(node, (now - t0) * 1e3, arrays.get)
            self.t_prev = time.perf_counter()
        return step

    def _gpu_probe(self, nodes: list[Node]) -> Callable[[], None]:
        from gpulite.backends.webgpu.instrument import read_tensor

        def probe() -> None:
            self.exe.wait()
            ms = (time.perf_counter() - self.t_prev) * 1e3 / len(nodes)
            for n in nodes:
                self.after(n, ms, lambda i: read_tensor(self.exe, i))
            self.t_prev = time.perf_counter()
        return probe

    # -- per invoke -------------------------------------------------------------------------
    def invoke(self) -> None:
        e = env()
        prod = e.get("prod")
        self.debug = e.get("debug") and not prod
        self.check = e.get("check_nans") and not prod
        if not (self.debug or self.check or engine.profiling()):
            self.orig()
            return
        self.t_prev = time.perf_counter()
        exe = self.exe
        steps = getattr(exe, "steps", None)
        if isinstance(steps, list) and len(steps) == len(self.order):  # the CPU executable
            if self._steps is None:
                self._steps = [self._cpu_step(n, run) for n, run in zip(self.order, steps, strict=True)]
            exe.steps = self._steps
            try:
                self.orig()
            finally:
                exe.steps = steps
            return
        if hasattr(exe, "gdev"):
            from gpulite.backends.webgpu import instrument as wi
            if wi.can_probe(exe):
                plan = wi.split_plan(exe, self.kernels, self._gpu_probe, self._cpu_step, self._counts)
                with wi.probing(exe, plan):
                    self.orig()
                return
        self._whole()

    def _whole(self) -> None:
        """An executable of unknown structure: one record for the whole invoke."""
        t0 = time.perf_counter()
        self.orig()
        if hasattr(self.exe, "wait"):
            self.exe.wait()
        ms = (time.perf_counter() - t0) * 1e3
        g = self.graph
        read = getattr(self.exe, "read", None) or self.exe.arrays.get
        whole = Node(-1, "invoke", tuple(g.inputs), tuple(g.outputs))
        self.after(whole, ms, read)


def attach(exe: Any, graph: Graph, order: list[Node], kernels: str) -> Any:
    """Route ``exe.invoke`` through the hook (see the module docstring); returns ``exe``.

    Parameters
    ----------
    exe : executable
        What the backend's ``compile`` returned.
    graph, order : the compiled graph and its node order.
    kernels : str
        The backend name kernels were looked up under.
    """
    try:
        exe.invoke = _Hook(exe, graph, order, kernels).invoke
    except AttributeError:  # an executable with __slots__: it runs, uninstrumented
        log.warning("%s takes no invoke hook: debug, check_nans and profile do not see its kernels",
                    type(exe).__name__)
    return exe
