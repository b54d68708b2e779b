"""The CPU backend: one numpy arena, one closure per node, nothing allocated per invoke.

``compile`` first fuses a copy of the graph as the CPU's kernels allow
(:func:`gpulite.graph.fusion.fuse` with :data:`.fusion_rules.CPU_RULES`: zero PADs folded
into convs, depthwise biases folded into the following 1x1 convs, residual ADDs and
activations run as conv epilogues; activations were fused at load), plans that graph's memory itself
(:func:`gpulite.graph.plan.plan_memory` with ``pinned``, keeping the interpreter's offsets for graph inputs and
outputs), lays every planned tensor out as a view into a single ``uint8`` arena, asks
each node's kernel factory for its ``run`` closure once, and ``invoke`` just calls the
closures in order. Kernels share scratch memory through one :class:`ScratchPool` per
executable (im2col patches, padded inputs, epilogue temporaries), since they run one
after another.

Threads: ``num_threads`` (None means 1, LiteRT's default) is the number of threads an
invoke uses. BLAS always runs single-threaded (OpenBLAS's own threads spin after each call
and would take the cores from the kernels); big convs and depthwise convs deal their row
chunks to the :mod:`.threads` pool instead.
"""

from __future__ import annotations

import os

import numpy as np

from gpulite.backends.cpu import blas
from gpulite.backends.cpu.fusion_rules import CPU_LOAD_RULES, CPU_RULES
from gpulite.backends.kernels import get_kernel
from gpulite.errors import UnsupportedOpError
from gpulite.graph import fusion
from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.graph.plan import MemoryPlan, plan_memory


class CpuContext:
    """What a CPU kernel factory sees: its node's tensors as arrays plus their metadata.

    ``input(i)`` is the array of the node's i-th input (an arena view, or the constant's
    value), ``output(i)`` the preallocated array to write into. ``in_info(i)`` and
    ``out_info(i)`` give shape, dtype and quantization. Kernels must write outputs in
    place (``out=`` or ``out[...] =``) and never rebind them.
    """

    def __init__(self, graph: Graph, node: Node, arrays: dict[int, np.ndarray], num_threads: int,
                 scratch: ScratchPool | None = None) -> None:
        self.graph, self.node, self._arrays = graph, node, arrays
        self.num_threads = max(1, int(num_threads or 1))
        self.scratch = scratch if scratch is not None else ScratchPool()

    @property
    def num_inputs(self) -> int:
        return len(self.node.inputs)

    def has_input(self, i: int) -> bool:
        return i < len(self.node.inputs) and self.node.inputs[i] >= 0

    def in_info(self, i: int) -> TensorInfo:
        return self.graph.tensors[self.node.inputs[i]]

    def out_info(self, i: int) -> TensorInfo:
        return self.graph.tensors[self.node.outputs[i]]

    def input(self, i: int) -> np.ndarray:
        return self._arrays[self.node.inputs[i]]

    def const(self, i: int) -> np.ndarray | None:
        """The constant value of input i, or None when it is computed at run time."""
        return self.in_info(i).const if self.has_input(i) else None

    def output(self, i: int) -> np.ndarray:
        return self._arrays[self.node.outputs[i]]


class ScratchPool:
    """Scratch memory shared by the kernels of one executable.

    Kernels run one after another, so a scratch buffer that a kernel only uses inside one
    ``run`` (im2col patches, an epilogue's temporary) can be the same memory for every
    node. ``get(key, shape, dtype)`` returns a view of the pool's buffer for ``key`` (use
    a distinct key per thread part and per purpose), growing it for a bigger request;
    buffers only grow, and a kernel keeps the views it was given, so an earlier, smaller
    buffer stays alive only as long as views of it do.
    """

    MIN_BYTES = 1 << 20

    def __init__(self) -> None:
        self._bufs: dict[object, np.ndarray] = {}

    def get(self, key: object, shape: tuple[int, ...] | int, dtype) -> np.ndarray:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        buf = self._bufs.get(key)
        if buf is None or buf.nbytes < nbytes:
            buf = np.empty(max(nbytes, self.MIN_BYTES if buf is None else 2 * buf.nbytes) + 64, np.uint8)
            self._bufs[key] = buf
        off = (-buf.ctypes.data) % 64  # cache-line aligned
        return buf[off:off + nbytes].view(dtype).reshape(shape)


class CpuExecutable:
    """Runs the compiled steps; BLAS calls made by the invoking thread use ``num_threads``
    threads meanwhile (1 unless :data:`BLAS_THREADS`)."""

    def __init__(self, arena: np.ndarray, arrays: dict[int, np.ndarray], steps: list,
                 plan: MemoryPlan | None = None, step_names: list[str] | None = None,
                 num_threads: int = 1) -> None:
        self.arena, self.arrays, self.steps = arena, arrays, steps
        self.plan, self.step_names, self.num_threads = plan, step_names, num_threads
        self._blas = blas.local_thread_setter()

    def write(self, i: int, arr: np.ndarray) -> None:
        """Set tensor i (an input) from ``arr``, already checked for dtype and shape."""
        np.copyto(self.arrays[i], arr)

    def read(self, i: int) -> np.ndarray:
        """A copy of tensor i."""
        return self.arrays[i].copy()

    def invoke(self) -> None:
        setter, n = self._blas, self.num_threads
        prev = setter(n) if setter is not None else n
        try:
            for run in self.steps:
                run()
        finally:
            if prev != n:
                setter(prev)


# Whether BLAS may use num_threads threads itself for the GEMMs that the kernels do not
# split over the backend's own thread pool (True), or always runs single-threaded (False).
BLAS_THREADS = False


class CpuBackend:
    """numpy kernels. ``num_threads`` (None: 1, as LiteRT's default) bounds the threads an
    invoke uses, BLAS included; set ``GPULITE_CPU_FUSE=0`` to run the graph without
    the fusions made at compile (for comparisons)."""

    name = "cpu"

    def __init__(self, num_threads: int | None = None) -> None:
        self.num_threads = max(1, num_threads or 1)
        blas.fix_core()

    def prepare_graph(self, graph: Graph) -> Graph:
        """The graph fused at load (the Interpreter calls this once): activations into their
        producers; the rest waits for ``compile`` (:mod:`.fusion_rules`)."""
        return fusion.fuse(graph, CPU_LOAD_RULES)

    def check_support(self, graph: Graph, order: list[Node]) -> None:
        for n in order:
            if get_kernel(n.op, self.name) is None:
                raise UnsupportedOpError(n.op, n.index, self.name)

    def compile(self, graph: Graph, order: list[Node], plan: MemoryPlan) -> CpuExecutable:
        self.check_support(graph, order)
        prev = blas.set_local_threads(1)  # weight transforms: small BLAS calls, no thread start-up
        try:
            return self._compile(graph, order, plan)
        finally:
            if prev is not None and prev != 1:
                blas.set_local_threads(prev)

    def _compile(self, graph: Graph, order: list[Node], plan: MemoryPlan) -> CpuExecutable:
        if os.environ.get("GPULITE_CPU_FUSE", "1") != "0":
            graph = fusion.fuse(graph, CPU_RULES)
            order = graph.nodes
        pinned = {i: plan.offsets[i] for i in (*graph.inputs, *graph.outputs) if i in plan.offsets}
        plan = plan_memory(graph, order, pinned=pinned)
        arena = np.zeros(max(plan.arena_bytes, 1), np.uint8)
        arrays: dict[int, np.ndarray] = {}
        for t in graph.tensors:
            if t.const is not None:
                arrays[t.index] = t.const
            elif t.index in plan.offsets:
                off = plan.offsets[t.index]
                arrays[t.index] = arena[off : off + t.nbytes].view(t.dtype).reshape(t.shape)
        scratch = ScratchPool()
        steps, names = [], []
        for n in order:
            factory = get_kernel(n.op, self.name)
            run = factory(n, CpuContext(graph, n, arrays, self.num_threads, scratch))
            steps.append(run)
            extra = "".join(f"+{step.kind}" for step in n.epilogue)
            names.append(f"{n.op}#{n.index}{'+pad' if n.pads is not None else ''}{extra}")
        exe = CpuExecutable(arena, arrays, steps, plan, names, self.num_threads if BLAS_THREADS else 1)
        exe.cpu_run = (graph, order)  # the rewritten graph the steps run (for instrument)
        return exe
