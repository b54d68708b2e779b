"""The CPU backend's own memory plan for its rewritten graph (see :mod:`.fuse`).

Fusion changes lifetimes (a conv now writes the tensor its ADD used to write, and reads
the residual), so the interpreter's plan cannot be reused as is. This is the same
greedy-by-size placement as :func:`gpulite.graph.plan.plan_memory`, except that the
graph's inputs and outputs keep the offsets the interpreter's plan gave them, so views
of them handed out from that plan stay valid.
"""

from __future__ import annotations

from gpulite.graph.ir import Graph, Node
from gpulite.graph.plan import ALIGN, MemoryPlan


def _lifetimes(g: Graph, order: list[Node]) -> dict[int, list[int]]:
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


def plan_pinned(g: Graph, order: list[Node], pinned: dict[int, int]) -> MemoryPlan:
    """Greedy-by-size plan of ``g`` where tensors in ``pinned`` keep their given offsets."""
    life = _lifetimes(g, order)
    sizes = {t: max(g.tensors[t].nbytes, 0) for t in life}
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets: dict[int, int] = {}
    for t, off in pinned.items():
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
