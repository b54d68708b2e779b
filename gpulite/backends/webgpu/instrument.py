"""Per-node probes inside a WebGPU invoke, for an :class:`~gpulite.backends.base.Observer`.

A compiled plan submits one command encoder per GPU partition, so a node's output may be
overwritten (its arena range reused) before the partition ends, and no single kernel can be
timed. :func:`observed_plan` derives, from a :class:`~.executable.WebGpuExecutable`, an
equivalent plan where every GPU node is its own partition followed by a CPU "partition"
that runs a probe (wait for the GPU, time, tell the observer, which may read the node's
outputs), and CPU nodes are timed likewise; the executable's invoke runs that plan instead
of its own. Nothing is rebuilt: dispatches, bind groups and buffers are the plan's own.
Which dispatches belong to which node the partition recorded when it was compiled
(``Partition.counts``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import wgpu

from gpulite.backends.base import Observer
from gpulite.graph.ir import Node

from . import partition as pt
from .gpu_tensor import stage, unstage
from .program import Program

Probe = Callable[[list[Node]], Callable[[], None]]
WrapCpu = Callable[[Node, Callable[[], None]], Callable[[], None]]


def dispatch_counts(part: pt.Partition) -> list[int] | None:
    """Dispatches per node of a GPU partition, as compiled (``Partition.counts``), or None when
    they do not match its nodes and dispatches."""
    if len(part.counts) == len(part.nodes) and sum(part.counts) == len(part.work):
        return list(part.counts)
    return None


# Ops whose kernels fold many inputs into each output (reductions, pools, normalizations,
# matrix products): each of their dispatches declares Program.reduction_per_thread.
REDUCING_OPS = frozenset({
    "MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL",
    "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D", "SOFTMAX", "LOG_SOFTMAX", "L2_NORMALIZATION",
    "ARG_MAX", "ARG_MIN", "CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "Convolution2DTransposeBias",
    "FULLY_CONNECTED", "BATCH_MATMUL",
})


def node_programs(exe: Any) -> list[tuple[Node, list[Program]]]:
    """Every GPU node of ``exe``'s plan with its dispatches, in order; a partition whose
    dispatches cannot be matched to its nodes comes as one entry per node with all of them."""
    pairs: list[tuple[Node, list[Program]]] = []
    for p in exe.parts:
        if p.backend != pt.GPU:
            continue
        counts = dispatch_counts(p)
        if counts is None:
            pairs += [(n, list(p.work)) for n in p.nodes]
            continue
        pos = 0
        for n, c in zip(p.nodes, counts, strict=True):
            pairs.append((n, list(p.work[pos:pos + c])))
            pos += c
    return pairs


def reduction_work(exe: Any) -> list[dict[str, Any]]:
    """One row per dispatch of a :data:`REDUCING_OPS` node (or of any node whose dispatch
    declares ``reduction_per_thread``): node index and op, program name, threads, and the
    most elements one thread folds (0: the kernel declared nothing)."""
    return [{"node": n.index, "op": str(n.op), "program": prog.name, "threads": prog.threads,
             "per_thread": prog.reduction_per_thread}
            for n, progs in node_programs(exe) for prog in progs
            if str(n.op) in REDUCING_OPS or prog.reduction_per_thread]


MAX_QUERIES = 4096  # WebGPU's limit on a timestamp query set


def dispatch_times(exe: Any, runs: int = 10) -> list[tuple[Node, Program, float]] | None:
    """GPU time of every dispatch of ``exe``'s GPU partitions (ms, median of ``runs``), from
    timestamp queries written at the start and end of a compute pass of its own per dispatch;
    None when the device has no ``timestamp-query``.

    The plan's own pipelines, bind groups and arena are used, in plan order, without its CPU
    partitions, bound-input copies or readbacks (the arena holds the last invoke's data).
    Times are the resolved timestamps' differences read as nanoseconds, wgpu-native's unit
    where the driver's tick is one (NVIDIA, lavapipe).
    """
    gdev = exe.gdev
    if not getattr(gdev, "has_timestamps", False):
        return None
    work: list[tuple[Node, Program, tuple]] = []
    for node, progs in node_programs(exe):
        work += [(node, p, None) for p in progs]
    flat = [d for k, p in enumerate(exe.parts) if p.backend == pt.GPU for d in exe._dispatches[k]]
    if len(flat) != len(work):
        return None
    per = MAX_QUERIES // 2
    samples: list[list[float]] = [[] for _ in flat]
    with gdev.guard("profile"):
        for start in range(0, len(flat), per):
            chunk = flat[start:start + per]
            qs = gdev.device.create_query_set(label="gpulite.profile", type="timestamp", count=2 * len(chunk))
            dst = gdev.device.create_buffer(label="gpulite.profile", size=16 * len(chunk),
                                            usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
            try:
                for _ in range(runs):
                    enc = gdev.device.create_command_encoder(label="gpulite.profile")
                    for j, (pipeline, bg, groups) in enumerate(chunk):
                        cp = enc.begin_compute_pass(timestamp_writes={
                            "query_set": qs, "beginning_of_pass_write_index": 2 * j,
                            "end_of_pass_write_index": 2 * j + 1})
                        cp.set_pipeline(pipeline)
                        cp.set_bind_group(0, bg)
                        cp.dispatch_workgroups(*groups)
                        cp.end()
                    enc.resolve_query_set(qs, 0, 2 * len(chunk), dst, 0)
                    gdev.queue.submit([enc.finish()])
                    ticks = np.frombuffer(gdev.queue.read_buffer(dst), np.uint64).astype(np.int64).reshape(-1, 2)
                    for j, (a, b) in enumerate(ticks):
                        samples[start + j].append(max(0, int(b - a)) / 1e6)
            finally:
                dst.destroy()
                qs.destroy()
    return [(node, prog, float(np.median(s))) for (node, prog, _), s in zip(work, samples, strict=True)]


def split_plan(exe: Any, probe: Probe, wrap_cpu: WrapCpu,
               counts: dict[int, list[int] | None]) -> tuple[list[pt.Partition], dict, dict]:
    """The probed plan: ``(parts, dispatches, readbacks)`` in the executable's own format.

    ``counts`` caches :func:`dispatch_counts` per original partition index across calls.
    """
    parts: list[pt.Partition] = []
    disp: dict[int, list] = {}
    rbs: dict[int, list] = {}
    for k, p in enumerate(exe.parts):
        if p.backend == pt.CPU:
            work = [wrap_cpu(n, w) for n, w in zip(p.nodes, p.work, strict=True)]
            parts.append(pt.Partition(pt.CPU, list(p.nodes), work, [], list(p.uploads)))
            continue
        if k not in counts:
            counts[k] = dispatch_counts(p)
        groups = ([(list(p.nodes), len(p.work))] if counts[k] is None
                  else [([n], c) for n, c in zip(p.nodes, counts[k], strict=True)])
        pos = 0
        for j, (nodes, c) in enumerate(groups):
            last = j == len(groups) - 1
            disp[len(parts)] = exe._dispatches[k][pos:pos + c]
            rbs[len(parts)] = exe._readbacks[k] if last else []
            parts.append(pt.Partition(pt.GPU, nodes, p.work[pos:pos + c], list(p.readbacks) if last else [], []))
            pos += c
            parts.append(pt.Partition(pt.CPU, [], [probe(nodes)], [], []))
    return parts, disp, rbs


class _Timer:
    """The probes of one observed invoke: GPU nodes timed from the previous probe to their wait."""

    def __init__(self, exe: Any, observer: Observer) -> None:
        self.exe, self.observer = exe, observer
        self.t_prev = time.perf_counter()

    def read(self, i: int) -> np.ndarray:
        return read_tensor(self.exe, i)

    def probe(self, nodes: list[Node]) -> Callable[[], None]:
        def run() -> None:
            self.exe.wait()
            ms = (time.perf_counter() - self.t_prev) * 1e3 / len(nodes)
            for n in nodes:
                self.observer.node_done(n, ms, self.read)
            self.t_prev = time.perf_counter()
        return run

    def wrap_cpu(self, node: Node, work: Callable[[], None]) -> Callable[[], None]:
        arrays = self.exe.arrays

        def run() -> None:
            t0 = time.perf_counter()
            work()
            self.observer.node_done(node, (time.perf_counter() - t0) * 1e3, arrays.get)
            self.t_prev = time.perf_counter()
        return run


def observed_plan(exe: Any, observer: Observer, counts: dict[int, list[int] | None]
                  ) -> tuple[list[pt.Partition], dict, dict]:
    """The plan ``exe`` runs for one invoke observed by ``observer`` (see the module docstring)."""
    timer = _Timer(exe, observer)
    return split_plan(exe, timer.probe, timer.wrap_cpu, counts)


def read_tensor(exe: Any, i: int) -> np.ndarray:
    """Tensor i as it is in the GPU arena now (waits for submitted work)."""
    t = exe.graph.tensors[i]
    staging = stage(exe.gdev, exe.garena.buffer, exe.plan.offsets[i], t.nbytes, f"probe of tensor {i}")
    with exe.gdev.guard(f"probe of tensor {i}"):
        staging.map_sync(wgpu.MapMode.READ)
    return unstage(exe.gdev, staging, t.nbytes, f"probe of tensor {i}").view(t.dtype).reshape(t.shape)
