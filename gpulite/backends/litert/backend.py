"""The ``litert`` backend: LiteRT's own kernels (XNNPACK) behind gpulite's Interpreter, as tfjs-node is
TF.js's native backend. It needs the ``ai-edge-litert`` package (``pip install 'gpulite[litert]'``).

``prepare`` fuses nothing (LiteRT does its own fusing). ``compile`` cuts the graph into
partitions (:mod:`.partition`): each run of nodes LiteRT can run is written as its own
``.tflite`` and loaded into its own ``ai_edge_litert`` Interpreter (``num_threads`` passed on,
but one thread for a partition of small nodes in a cut graph: :func:`partition_threads`);
the nodes it cannot run (three of MediaPipe's custom ops, ops a user declared) run on
gpulite's ``cpu`` kernels, a partition whose kernels are all compiled loops (MediaPipe's
ops) as one call. Tensors cross without copies where the arrays allow: a cpu kernel reads a LiteRT
partition's output through LiteRT's ``tensor()`` view and writes its own output straight
into the view of the LiteRT input that reads it; only a tensor read by a second LiteRT
partition is copied there.

The host arena (what ``Interpreter.tensor()`` views, ``plan``) holds the graph's inputs and
outputs, nothing else of LiteRT's: LiteRT keeps its intermediates to itself, so
``get_tensor`` of an intermediate says the plan holds no data for it. When one LiteRT
partition runs the whole graph (every model LiteRT can run alone), the arena is LiteRT's own
memory, the range holding the graph's inputs and outputs, and an invoke copies nothing.
Otherwise it is a host array that also holds what only cpu kernels use; an invoke then copies
each graph input from it into the LiteRT partitions that read it, and each graph output a
LiteRT partition makes back into it.

With an observer (``debug``, ``check_nans``, ``gpulite.profile``), a cpu partition reports
each node with its own time; a LiteRT partition runs as one call, so its nodes are reported
when it has finished, its whole time on its last node (0 on the others), and only tensors
that leave the partition can be read.

Eager ops run on the cpu backend's eager executor and kernels (copied under this backend's name).
Interpreters are made by :func:`.quiet.allocated`: LiteRT's XNNPACK INFO line stays off stderr.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from gpulite.backends.base import DeviceKind, GpuControl, GpuIO, Observer, copy_graph
from gpulite.backends.cpu import jit
from gpulite.backends.cpu.context import CpuContext, ScratchPool
from gpulite.backends.cpu.eager import CpuEager
from gpulite.backends.kernels import copy_kernels, get_kernel
from gpulite.backends.litert import partition as pt
from gpulite.backends.litert.quiet import allocated
from gpulite.errors import BackendError, UnsupportedOpError
from gpulite.graph import cost
from gpulite.graph.ir import Graph
from gpulite.graph.plan import ALIGN, MemoryPlan

NAME = "litert"
# A LiteRT partition whose nodes average fewer floating-point operations than this runs on one
# thread when the graph is cut: XNNPACK splits every node over its threads, and a node of a few
# microseconds of work (the attention model's 16x16 crops: 76 kFLOP a node) costs more in the
# hand-offs than it gains, far more when another process holds the other core.
SMALL_NODE_FLOPS = 250_000


def litert_interpreter_class() -> Any:
    """``ai_edge_litert.interpreter.Interpreter``, or a :class:`BackendError` saying how to get it."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError as e:
        raise BackendError(
            f"backend 'litert' needs the ai-edge-litert package, which cannot be imported ({e}); "
            "install it with `pip install 'gpulite[litert]'`, or use backend='cpu'") from None
    return Interpreter


@dataclass
class _Step:
    """One partition at invoke time: copies in, the work, copies out."""

    part: pt.Partition
    before: list[tuple[int, np.ndarray, np.ndarray]] = field(default_factory=list)  # (tensor, source, destination)
    after: list[tuple[int, np.ndarray, np.ndarray]] = field(default_factory=list)
    runs: list[Callable[[], None]] = field(default_factory=list)  # LiteRT: one Invoke; cpu: one per node
    fused: bool = False  # a cpu partition whose kernels are all compiled tasks, run by one call
    threads: int = 1  # LiteRT's num_threads for this partition
    litert: Any = None  # the partition's ai_edge_litert Interpreter (kept alive with its views)
    views_in: dict[int, np.ndarray] = field(default_factory=dict)  # LiteRT's input buffers, by graph tensor
    views_out: dict[int, np.ndarray] = field(default_factory=dict)
    own_ports: bool = False  # some views are host arrays of the step's own (0-d tensors), not LiteRT's


class LiteRtExecutable:
    """Runs the partitions in order over LiteRT's buffers and a small host arena (module docstring)."""

    gpu_io: GpuIO | None = None

    def __init__(self, plan: MemoryPlan, arena: np.ndarray, arrays: dict[int, np.ndarray], steps: list[_Step],
                 graph: Graph, arena_kind: str) -> None:
        self.plan, self.arena, self.arrays, self.steps, self.graph = plan, arena, arrays, steps, graph
        self.arena_kind = arena_kind  # "litert": LiteRT's own buffer; "host": a host array
        self.calls = _calls(steps)  # an invoke without an observer: these, in order

    def stores(self, i: int) -> bool:
        return i in self.arrays

    def write(self, i: int, arr: np.ndarray) -> None:
        np.copyto(self.arrays[i], arr)

    def read(self, i: int) -> np.ndarray:
        return self.arrays[i].copy()

    def invoke(self, observer: Observer | None = None) -> None:
        if observer is None:
            for call in self.calls:
                call()
            return
        read = self.arrays.get
        for s in self.steps:
            t0 = time.perf_counter()
            for _, src, dst in s.before:
                np.copyto(dst, src)
            if s.litert is None:
                for node, run in zip(s.part.nodes, s.runs, strict=True):
                    run()
                    observer.node_done(node, (time.perf_counter() - t0) * 1e3, read)
                    t0 = time.perf_counter()
                continue
            s.runs[0]()
            for _, src, dst in s.after:
                np.copyto(dst, src)
            ms = (time.perf_counter() - t0) * 1e3
            for node in s.part.nodes:
                observer.node_done(node, ms if node is s.part.nodes[-1] else 0.0, read)

    def wait(self) -> None:
        """Nothing runs asynchronously."""

    def close(self) -> None:
        for s in self.steps:
            s.litert = None
        self.steps, self.arrays, self.calls = [], {}, []

    def describe(self) -> dict[str, Any]:
        copies = [{"into_partition": k, "tensor": t, "bytes": int(dst.nbytes)}
                  for k, s in enumerate(self.steps) for t, _, dst in s.before if t not in self.graph.inputs]
        return {
            "partitions": [{"backend": s.part.backend, "nodes": [n.index for n in s.part.nodes],
                            "inputs": list(s.part.inputs), "outputs": list(s.part.outputs),
                            **({"num_threads": s.threads} if s.litert is not None else {"one_call": s.fused})}
                           for s in self.steps],
            "copies_between_partitions": copies,
            "arena": self.arena_kind,
            "copies_per_invoke": sum(len(s.before) + len(s.after) for s in self.steps),
        }


class LiteRtBackend:
    """LiteRT's kernels, cpu kernels for the ops LiteRT cannot run (module docstring)."""

    name = NAME
    device_kind: DeviceKind = "cpu"
    gpu_control: GpuControl | None = None

    def __init__(self, num_threads: int | None = None) -> None:
        self.num_threads = max(1, num_threads or 1)
        self._interpreter = partial(allocated, litert_interpreter_class())  # made and allocated quietly

    def prepare(self, graph: Graph) -> Graph:
        return copy_graph(graph)

    def compile(self, graph: Graph, plan: MemoryPlan) -> LiteRtExecutable:
        """``plan`` lays out every tensor; LiteRT places its own, so the executable's plan is that of
        its host arena (graph inputs and outputs, cpu-only tensors)."""
        parts = pt.partition(graph, self._interpreter)
        for p in parts:
            if p.backend == pt.CPU:
                for n in p.nodes:
                    if get_kernel(n.op, "cpu") is None:
                        raise UnsupportedOpError(n.op, n.index, self.name,
                                                 "LiteRT cannot run it and gpulite has no cpu kernel for it")
        steps = [self._litert_step(graph, p, k) if p.backend == pt.LITERT else _Step(p) for k, p in enumerate(parts)]
        # Where each tensor lives during an invoke: LiteRT's output buffer for what LiteRT makes; the
        # first LiteRT input reading it for what a cpu kernel makes (unless it is a graph output);
        # the host arena for graph inputs and outputs and what only cpu kernels use.
        home: dict[int, np.ndarray] = {}
        for s in steps:
            home.update(s.views_out)
        boundary = set(graph.inputs) | set(graph.outputs)
        for s in steps:
            for t, view in s.views_in.items():
                if t not in boundary:
                    home.setdefault(t, view)
        shared = _litert_arena(graph, steps)
        if shared is None:
            host = [t for t in _host_tensors(graph, parts) if t not in home or t in boundary]
            arena, slots, offsets = _arena(graph, host)
        else:
            arena, slots, offsets = shared
        arrays = {**home, **slots}
        for s in steps:  # LiteRT-made graph outputs in a host arena are copied there after their partition
            s.after = [(t, home[t], slots[t]) for t in s.views_out if t in slots and slots[t] is not home[t]]
        kernel_arrays = {**slots, **home}
        kernel_arrays.update({t.index: t.const for t in graph.tensors if t.const is not None})
        scratch = ScratchPool()
        for s in steps:
            if s.litert is None:
                s.runs = [get_kernel(n.op, "cpu")(n, CpuContext(graph, n, kernel_arrays, self.num_threads, scratch))
                          for n in s.part.nodes]
                s.fused = all(isinstance(r, jit.Task) for r in s.runs)
                continue
            s.before = [(t, kernel_arrays[t], view) for t, view in s.views_in.items() if kernel_arrays[t] is not view]
        sizes = {t: graph.tensors[t].nbytes for t in offsets}
        host_plan = MemoryPlan(offsets, sizes, int(arena.size), sum(sizes.values()), {})
        return LiteRtExecutable(host_plan, arena, arrays, steps, graph, "host" if shared is None else "litert")

    def _litert_step(self, graph: Graph, part: pt.Partition, k: int) -> _Step:
        model, index = pt.write_partition(graph, part, f"{graph.name or 'main'}_part{k}")
        threads = partition_threads(graph, part, self.num_threads)
        try:
            lite = self._interpreter(model_content=model, num_threads=threads)
        except (RuntimeError, ValueError) as e:
            n = part.nodes[0]
            raise UnsupportedOpError(n.op, n.index, self.name,
                                     f"LiteRT cannot prepare the partition of nodes "
                                     f"{[x.index for x in part.nodes]}: {e}") from None
        s = _Step(part, litert=lite, threads=threads)
        # Views into LiteRT's buffers, held for the executable's life. Its Python Interpreter refuses to
        # invoke while views exist (they would dangle after a reallocation, which never happens here: the
        # partition is allocated once), so the executable calls the wrapped C++ Invoke directly.
        # A 0-d tensor has no view (LiteRT hands out a numpy scalar), nor has a dynamic one (LiteRT
        # allocates it in each Invoke): each gets a host array of its own, set before and read after
        # each Invoke. An empty tensor has no data at all: an empty array.
        pushed: list[tuple[int, np.ndarray]] = []
        pulled: list[tuple[int, np.ndarray]] = []
        for ports, copies, views in ((part.inputs, pushed, s.views_in), (part.outputs, pulled, s.views_out)):
            for t in ports:
                info = graph.tensors[t]
                view = _view(lite, index[t]) if info.nbytes else np.zeros(info.shape, info.dtype)
                if view is None:
                    view = np.zeros(info.shape, info.dtype)
                    copies.append((index[t], view))
                views[t] = view
        s.own_ports = bool(pushed or pulled) or any(
            graph.tensors[t].nbytes == 0 for t in (*part.inputs, *part.outputs))
        invoke = lite._interpreter.Invoke
        if not s.own_ports:
            s.runs = [invoke]
            return s

        def run() -> None:
            for i, value in pushed:
                lite.set_tensor(i, value)
            invoke()
            for i, value in pulled:
                value[...] = lite.get_tensor(i)
        s.runs = [run]
        return s

    def eager(self) -> CpuEager:
        copy_kernels("cpu", self.name)  # eager tensors are this backend's, computed by the cpu kernels
        return CpuEager(self.name, num_threads=self.num_threads)

    def close(self) -> None:
        """Nothing is held beyond the executables."""

    def describe(self) -> dict[str, Any]:
        return {"backend_kind": "litert"}


def partition_threads(graph: Graph, part: pt.Partition, num_threads: int) -> int:
    """LiteRT's threads for a partition: ``num_threads``, but 1 for a partition of small nodes
    (under :data:`SMALL_NODE_FLOPS` a node on average) in a graph cut into several partitions."""
    if num_threads == 1 or len(graph.nodes) == len(part.nodes):
        return num_threads
    work = sum(cost.flops(graph, n) for n in part.nodes)
    return 1 if work < SMALL_NODE_FLOPS * len(part.nodes) else num_threads


def _calls(steps: list[_Step]) -> list[Callable[[], None]]:
    """What an invoke without an observer calls, in order: each step's copies in, its work (a
    cpu partition of compiled tasks as one :class:`jit.Program` call), its copies out."""
    calls: list[Callable[[], None]] = []
    for s in steps:
        calls += [partial(np.copyto, dst, src) for _, src, dst in s.before]
        program = jit.program([[[list(s.runs)]]]) if s.fused else None  # one stage, one chunk
        calls += [program] if program is not None else s.runs
        calls += [partial(np.copyto, dst, src) for _, src, dst in s.after]
    return calls


def _view(lite: Any, i: int) -> np.ndarray | None:
    """LiteRT's ``tensor()`` view of tensor ``i``, or None where it has none to give."""
    try:
        view = lite.tensor(i)()
    except ValueError:  # "Tensor data is null": a dynamic tensor, allocated by each Invoke
        return None
    return view if isinstance(view, np.ndarray) else None


def _host_tensors(graph: Graph, parts: list[pt.Partition]) -> list[int]:
    """Graph inputs and outputs and every tensor a cpu kernel reads or writes (non-constant), in order."""
    out = dict.fromkeys(i for i in (*graph.inputs, *graph.outputs) if not graph.tensors[i].is_const)
    for p in parts:
        if p.backend == pt.CPU:
            for n in p.nodes:
                ios = (*n.inputs, *n.outputs)
                out.update(dict.fromkeys(i for i in ios if i >= 0 and not graph.tensors[i].is_const))
    return list(out)


def _litert_arena(graph: Graph, steps: list[_Step]) -> tuple[np.ndarray, dict[int, np.ndarray], dict[int, int]] | None:
    """LiteRT's own memory as the host arena when one LiteRT partition is the whole graph: the byte
    range of its arena from the first graph input or output to the end of the last (TFLite keeps
    them in one buffer, never moved after ``allocate_tensors``), so nothing is ever copied. None
    otherwise, or when that range is not plausibly one buffer (larger than twice every tensor)."""
    if len(steps) != 1 or steps[0].litert is None or steps[0].own_ports:
        return None
    s = steps[0]
    views = {t: s.views_in.get(t, s.views_out.get(t)) for t in (*graph.inputs, *graph.outputs)}
    if any(v is None or v.nbytes == 0 for v in views.values()):
        return None  # a graph input that is also an output, an empty tensor: the host arena
    start = {t: v.ctypes.data for t, v in views.items() if v is not None}
    base = min(start.values())
    span = max(start[t] + v.nbytes for t, v in views.items() if v is not None) - base
    if span > 2 * sum(t.nbytes for t in graph.tensors if not t.is_const):
        return None
    buf = (ctypes.c_uint8 * span).from_address(base)
    buf.owner = s.litert  # type: ignore[attr-defined]  # the memory lives as long as any view of the arena
    arena = np.ctypeslib.as_array(buf)
    return arena, {t: v for t, v in views.items() if v is not None}, {t: a - base for t, a in start.items()}


def _arena(graph: Graph, tensors: list[int]) -> tuple[np.ndarray, dict[int, np.ndarray], dict[int, int]]:
    """One uint8 arena with ``tensors`` one after another (ALIGN-aligned): (arena, views, offsets)."""
    offsets, end = {}, 0
    for t in tensors:
        offsets[t] = end
        end += -(-graph.tensors[t].nbytes // ALIGN) * ALIGN
    arena = np.zeros(max(end, 1), np.uint8)
    views = {}
    for t, off in offsets.items():
        info = graph.tensors[t]
        views[t] = arena[off:off + info.nbytes].view(info.dtype).reshape(info.shape)
    return arena, views, offsets
