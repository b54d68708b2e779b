"""Split a compiled node sequence into GPU and CPU partitions and place the crossings.

Nodes whose op has no WebGPU kernel (or whose kernel declines the node) run on the CPU
backend's kernels over a host mirror of the arena. Consecutive nodes on the same side form
one partition. A tensor produced on one side and read on the other crosses once: a GPU
tensor is read back at the end of the GPU partition just before its first CPU reader, and a
CPU tensor is uploaded at the end of its CPU partition when a later GPU node reads it.
Graph outputs computed on the GPU are read back at the end of the partition that made them
(their arena range is never reused, so that is always safe).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gpulite.graph.ir import Graph, Node

GPU, CPU = "webgpu", "cpu"


@dataclass
class Transfer:
    """One tensor moved between the GPU arena and the host mirror (same plan offset)."""

    tensor: int
    offset: int  # bytes, in both arenas
    nbytes: int
    for_output: bool = False  # a graph output's final readback, not a crossing

    @property
    def padded(self) -> int:
        return -(-self.nbytes // 4) * 4  # GPU copies move whole 4-byte words


@dataclass
class Partition:
    backend: str
    nodes: list[Node] = field(default_factory=list)
    work: list[Any] = field(default_factory=list)  # GPU: Programs per node (flattened); CPU: run closures
    readbacks: list[Transfer] = field(default_factory=list)  # GPU partitions: after the dispatches
    uploads: list[Transfer] = field(default_factory=list)  # CPU partitions: after the runs
    why: dict[int, str] = field(default_factory=dict)  # CPU partitions: node index -> why not on the GPU
    counts: list[int] = field(default_factory=list)  # GPU partitions: dispatches per node, as compiled


def partition(graph: Graph, offsets: dict[int, int], steps: list[tuple[Node, str, Any]],
              why: dict[int, str] | None = None) -> list[Partition]:
    """Group ``(node, backend, work)`` steps and attach every transfer; see the module docstring.
    ``why`` gives the reason each CPU node is not on the GPU (``describe``'s ``cpu_fallback``)."""
    parts: list[Partition] = []
    on_host = {i for i in graph.inputs}  # inputs are written to both sides by write()
    on_gpu = set(on_host)
    # Variables (LSTM states) are set in both arenas (exe.write: zeros or their initial value);
    # only the node that owns one reads and updates it, on its own side, so they are never moved.
    variables = {t.index for t in graph.tensors if t.is_variable}
    on_host |= variables
    on_gpu |= variables
    made_in: dict[int, int] = {}  # tensor -> index of the partition that produced it

    def move(t: int, lst: list[Transfer], for_output: bool = False) -> None:
        if graph.tensors[t].nbytes and not any(x.tensor == t for x in lst):  # empty tensors need no copy
            lst.append(Transfer(t, offsets[t], graph.tensors[t].nbytes, for_output))

    for node, backend, work in steps:
        if not parts or parts[-1].backend != backend:
            parts.append(Partition(backend))
        part = parts[-1]
        for t in node.inputs:
            if t < 0 or graph.tensors[t].is_const:
                continue
            if backend == CPU and t not in on_host:
                move(t, parts[-2].readbacks)  # parts[-2] is the GPU partition just before
                on_host.add(t)
            elif backend == GPU and t not in on_gpu:
                move(t, parts[-2].uploads)
                on_gpu.add(t)
        for t in node.outputs:
            made_in[t] = len(parts) - 1
            (on_host if backend == CPU else on_gpu).add(t)
        part.nodes.append(node)
        if backend == CPU and why and node.index in why:
            part.why[node.index] = why[node.index]
        if backend == GPU:
            part.work.extend(work)
            part.counts.append(len(work))
        else:
            part.work.append(work)
    for t in graph.outputs:
        if t not in on_host and t in made_in:
            move(t, parts[made_in[t]].readbacks, for_output=True)
    return parts


def describe(graph: Graph, parts: list[Partition], *, bound: set[int] | frozenset[int] = frozenset(),
             outputs_on_gpu: bool = False) -> dict[str, Any]:
    """Partitions, crossings and bytes moved per invoke (``Interpreter.get_plan`` merges this).

    ``bound`` inputs come from GPU buffers, so they are not uploaded (but are read back when a
    CPU kernel reads them); with ``outputs_on_gpu`` graph outputs are not read back.
    """
    cpu_reads = {t for p in parts if p.backend == CPU for n in p.nodes for t in n.inputs}
    uploaded = sum(graph.tensors[i].nbytes for i in graph.inputs if i not in bound)
    read_back = sum(graph.tensors[i].nbytes for i in bound if i in cpu_reads)
    crossings = []
    for k, p in enumerate(parts):
        for direction, transfers in (("gpu->cpu", p.readbacks), ("cpu->gpu", p.uploads)):
            for tr in transfers:
                if tr.for_output and outputs_on_gpu:
                    continue
                if direction == "gpu->cpu":
                    read_back += tr.nbytes
                else:
                    uploaded += tr.nbytes
                if not tr.for_output:
                    crossings.append({"after_partition": k, "tensor": tr.tensor, "direction": direction,
                                      "name": graph.tensors[tr.tensor].name, "bytes": tr.nbytes})
    return {
        "partitions": [{
            "backend": p.backend, "nodes": [n.index for n in p.nodes],
            "ops": dict(Counter(str(n.op) for n in p.nodes)),
            **({"dispatches": len(p.work)} if p.backend == GPU else {}),
        } for p in parts],
        "crossings": crossings,
        # Each node on the CPU fallback: its op and why its WebGPU kernel is missing or declined it.
        "cpu_fallback": [{"node": n.index, "op": str(n.op), "reason": p.why.get(n.index, "")}
                         for p in parts if p.backend == CPU for n in p.nodes],
        "bytes_uploaded_per_invoke": uploaded,
        "bytes_read_back_per_invoke": read_back,
        "submits_per_invoke": sum(1 for p in parts if p.backend == GPU) + (1 if bound & cpu_reads else 0),
        "dispatches_per_invoke": sum(len(p.work) for p in parts if p.backend == GPU),
    }
