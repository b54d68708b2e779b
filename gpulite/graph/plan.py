"""Execution order, tensor lifetimes and the shared-arena memory plan.

Intermediate tensors share one arena. Each gets an offset chosen greedy-by-size, as
TFLite's ``ArenaPlanner``/``GreedyMemoryPlanner`` do: sort by size (largest first), then
place each tensor at the lowest offset that overlaps no already-placed tensor whose
lifetime overlaps its own. Graph inputs and outputs live for the whole invoke (their
values must survive between ``set_tensor``/``invoke``/``get_tensor``), so they get their
own ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulite.errors import ModelError
from gpulite.graph.ir import Graph, Node

# 256 bytes: WebGPU's largest allowed min-storage-buffer-offset-alignment, so a GPU output can
# be bound at its own offset on any device; the padding costs < 256 B per tensor.
ALIGN = 256


@dataclass(frozen=True)
class MemoryPlan:
    offsets: dict[int, int]  # tensor index -> byte offset in the arena
    sizes: dict[int, int]
    arena_bytes: int
    total_bytes: int  # sum of all planned tensors' sizes (what no sharing would cost)
    lifetimes: dict[int, tuple[int, int]]


def topological_order(g: Graph) -> list[Node]:
    """Nodes in an order where every input is produced first (stable for valid models)."""
    produced = set(g.inputs) | {t.index for t in g.tensors if t.is_const}
    producers: dict[int, Node] = {}
    for n in g.nodes:
        for o in n.outputs:
            if o in producers:
                raise ModelError(f"tensor {o} is written by node {producers[o].index} and node {n.index}")
            producers[o] = n
    pending, order = list(g.nodes), []
    while pending:
        rest = []
        for n in pending:
            if all(i < 0 or i in produced for i in n.inputs):
                order.append(n)
                produced.update(n.outputs)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            n = rest[0]
            missing = [i for i in n.inputs if i >= 0 and i not in produced]
            why = "a cycle" if all(m in producers for m in missing) else "no producer"
            raise ModelError(f"node {n.index} ({n.op}) reads tensors {missing} that have {why}")
        pending = rest
    for o in g.outputs:
        if o not in produced:
            raise ModelError(f"graph output tensor {o} is never produced")
    return order


def lifetimes(g: Graph, order: list[Node]) -> dict[int, list[int]]:
    """First and last step of every non-constant tensor; graph inputs/outputs span the plan."""
    last = len(order)
    life: dict[int, list[int]] = {}
    for step, n in enumerate(order):
        for o in n.outputs:
            if not g.tensors[o].is_const:
                life.setdefault(o, [step, step])
        for i in n.inputs:
            if i >= 0 and i in life:
                life[i][1] = step
    for i in (*g.inputs, *g.outputs):
        if not g.tensors[i].is_const:
            life[i] = [0, last]
    return life


def plan_memory(g: Graph, order: list[Node], *, pinned: dict[int, int] | None = None) -> MemoryPlan:
    """Greedy-by-size arena plan; tensors in ``pinned`` keep the offsets given there.

    Pinning is how a backend that rewrites the graph (the CPU backend's fusions) re-plans
    it while graph inputs and outputs keep the offsets views were handed out for.
    """
    life = lifetimes(g, order)
    sizes = {t: max(g.tensors[t].nbytes, 0) for t in life}
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets: dict[int, int] = {}
    for t, off in (pinned or {}).items():
        if t in life:
            offsets[t] = off
            placed.append((off, off + -(-sizes[t] // ALIGN) * ALIGN, life[t][0], life[t][1]))
    for t in sorted((t for t in life if t not in offsets), key=lambda t: (-sizes[t], t)):
        first, end_step = life[t]
        size = -(-sizes[t] // ALIGN) * ALIGN
        conflicts = sorted((o, e) for o, e, f, l_ in placed if not (l_ < first or end_step < f))
        off = 0
        for o, e in conflicts:
            if off + size <= o:
                break
            off = max(off, e)
        offsets[t] = off
        placed.append((off, off + size, first, end_step))
    arena = max((e for _, e, _, _ in placed), default=0)
    return MemoryPlan(offsets, sizes, arena, sum(sizes.values()), {k: (v[0], v[1]) for k, v in life.items()})
