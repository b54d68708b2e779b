"""The CPU backend: one numpy arena, one closure per node, nothing allocated per invoke.

``prepare`` returns the graph fused as the CPU's kernels allow (:func:`gpulite.graph.fusion.fuse`
with :data:`.fusion_rules.CPU_RULES`: RELU-family nodes into their producers, zero PADs folded
into convs, depthwise biases folded into the following 1x1 convs, residual ADDs and
activations run as conv epilogues). ``compile`` lays every tensor of the memory plan out as
a view into a single ``uint8`` arena, asks each node's kernel factory for its ``run``
closure once, and ``invoke`` just calls the closures in order (timing each for an observer,
if given).
Kernels share scratch memory through one :class:`ScratchPool` per executable (im2col
patches, padded inputs, epilogue temporaries), since they run one after another.

Threads: ``num_threads`` (None means 1, LiteRT's default) is the number of threads an
invoke uses. BLAS always runs single-threaded (OpenBLAS's own threads spin after each call
and would take the cores from the kernels); big convs and depthwise convs deal their row
chunks to the :mod:`.threads` pool instead.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from gpulite.backends.base import DeviceKind, GpuControl, GpuIO, Observer, copy_graph
from gpulite.backends.cpu import blas
from gpulite.backends.cpu.context import CpuContext, Resources, ScratchPool
from gpulite.backends.cpu.eager import CpuEager
from gpulite.backends.cpu.fusion_rules import CPU_RULES
from gpulite.backends.kernels import get_kernel
from gpulite.errors import OutOfMemoryError, UnsupportedOpError
from gpulite.graph import fusion
from gpulite.graph.ir import Graph, Node
from gpulite.graph.plan import MemoryPlan, plan_memory
from gpulite.model.opdefs import Op


class CpuExecutable:
    """Runs the compiled steps; BLAS calls made by the invoking thread use ``num_threads``
    threads meanwhile (1 unless :data:`BLAS_THREADS`)."""

    gpu_io: GpuIO | None = None

    def __init__(self, arena: np.ndarray, arrays: dict[int, np.ndarray], nodes: list[Node], steps: list,
                 plan: MemoryPlan, step_names: list[str], num_threads: int = 1) -> None:
        self.arena, self.arrays, self.nodes, self.steps = arena, arrays, nodes, steps
        self.plan, self.step_names, self.num_threads = plan, step_names, num_threads
        self._blas = blas.local_thread_setter()

    def stores(self, i: int) -> bool:
        return i in self.plan.offsets

    def write(self, i: int, arr: np.ndarray) -> None:
        """Set tensor i (an input) from ``arr``, already checked for dtype and shape."""
        np.copyto(self.arrays[i], arr)

    def read(self, i: int) -> np.ndarray:
        """A copy of tensor i."""
        return self.arrays[i].copy()

    def invoke(self, observer: Observer | None = None) -> None:
        setter, n = self._blas, self.num_threads
        prev = setter(n) if setter is not None else n
        try:
            if observer is None:
                for run in self.steps:
                    run()
            else:
                read = self.arrays.get
                for node, run in zip(self.nodes, self.steps, strict=True):
                    t0 = time.perf_counter()
                    run()
                    observer.node_done(node, (time.perf_counter() - t0) * 1e3, read)
        finally:
            if prev != n:
                setter(prev)

    def wait(self) -> None:
        """Nothing runs asynchronously."""

    def close(self) -> None:
        """Nothing to release: the arena goes with the object."""

    def describe(self) -> dict[str, Any]:
        return {}


# Whether BLAS may use num_threads threads itself for the GEMMs that the kernels do not
# split over the backend's own thread pool (True), or always runs single-threaded (False).
BLAS_THREADS = False


class CpuBackend:
    """numpy kernels. ``num_threads`` (None: 1, as LiteRT's default) bounds the threads an
    invoke uses, BLAS included; set ``GPULITE_CPU_FUSE=0`` to run the graph unfused (for
    comparisons)."""

    name = "cpu"
    device_kind: DeviceKind = "cpu"
    gpu_control: GpuControl | None = None

    def __init__(self, num_threads: int | None = None) -> None:
        self.num_threads = max(1, num_threads or 1)
        blas.fix_core()

    def prepare(self, graph: Graph) -> Graph:
        if os.environ.get("GPULITE_CPU_FUSE", "1") == "0":
            return copy_graph(graph)
        return fusion.fuse(graph, CPU_RULES)

    def compile(self, graph: Graph, plan: MemoryPlan, resources: Resources | None = None) -> CpuExecutable:
        """``resources``: the resource variables to share (a subgraph run by a control-flow node
        shares its caller's); by default the executable has its own."""
        for n in graph.nodes:
            if get_kernel(n.op, self.name) is None:
                raise UnsupportedOpError(n.op, n.index, self.name)
        prev = blas.set_local_threads(1)  # weight transforms: small BLAS calls, no thread start-up
        try:
            return self._compile(graph, plan, Resources() if resources is None else resources)
        finally:
            if prev is not None and prev != 1:
                blas.set_local_threads(prev)

    def _compile(self, graph: Graph, plan: MemoryPlan, resources: Resources) -> CpuExecutable:
        try:
            arena = np.zeros(max(plan.arena_bytes, 1), np.uint8)
        except MemoryError:
            raise OutOfMemoryError(f"the plan's arena of {plan.arena_bytes} bytes cannot be allocated") from None
        arrays: dict[int, np.ndarray] = {}
        for t in graph.tensors:
            if t.const is not None:
                arrays[t.index] = t.const
            elif t.index in plan.offsets:
                off = plan.offsets[t.index]
                arrays[t.index] = arena[off : off + t.nbytes].view(t.dtype).reshape(t.shape)
        scratch = ScratchPool()
        steps, names = [], []
        for n in graph.nodes:
            if _computes_nothing(graph, n):  # as on webgpu; the kernels assume some work (a conv's row chunks)
                run = _nothing
            else:
                factory = get_kernel(n.op, self.name)
                run = factory(n, CpuContext(graph, n, arrays, self.num_threads, scratch, resources, plan.extents))
            steps.append(run)
            extra = "".join(f"+{step.kind}" for step in n.epilogue)
            names.append(f"{n.op}#{n.index}{'+pad' if n.pads is not None else ''}{extra}")
        return CpuExecutable(arena, arrays, list(graph.nodes), steps, plan, names,
                             self.num_threads if BLAS_THREADS else 1)

    def eager(self) -> CpuEager:
        return CpuEager(self.name, num_threads=self.num_threads)

    def close(self) -> None:
        """Nothing is held beyond the Python objects."""

    def describe(self) -> dict[str, Any]:
        return {}


# Ops with effects beyond their outputs (subgraphs, resources, a generator's state): they run even
# when every output is empty.
_EFFECTS = frozenset({"CALL", "IF", "WHILE", "CALL_ONCE", "STABLEHLO_WHILE", "STABLEHLO_CASE", "STABLEHLO_CUSTOM_CALL",
                      "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "HASHTABLE", "HASHTABLE_FIND",
                      "HASHTABLE_IMPORT", "HASHTABLE_SIZE", "RANDOM_STANDARD_NORMAL", "RANDOM_UNIFORM", "MULTINOMIAL"})


def _computes_nothing(graph: Graph, n: Node) -> bool:
    """Every output of ``n`` has no elements (a batch, or an image side, of 0), and the op has no
    other effect."""
    return (bool(n.outputs) and isinstance(n.op, Op) and n.op.value not in _EFFECTS  # a custom op may have effects
            and all(0 in graph.tensors[i].shape for i in n.outputs if i >= 0))


def _nothing() -> None:
    pass


def compile_subgraph(graph: Graph, num_threads: int, resources: Resources) -> CpuExecutable:
    """``graph`` (a subgraph a control-flow kernel runs) prepared, planned and compiled on its own,
    sharing the caller's ``resources``."""
    backend = CpuBackend(num_threads)
    prepared = backend.prepare(graph)
    exe = backend.compile(prepared, plan_memory(prepared, prepared.nodes), resources)
    for t in prepared.tensors:  # the arena starts zeroed: only initial values and nonzero resets need writing
        if t.is_variable and exe.stores(t.index):
            value = t.initial if t.initial is not None else t.reset_value()
            if value.any():
                exe.write(t.index, value)
    return exe


__all__ = ["BLAS_THREADS", "CpuBackend", "CpuContext", "CpuExecutable", "ScratchPool", "compile_subgraph"]
