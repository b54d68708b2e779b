"""Execution order, tensor lifetimes and the shared-arena memory plan.

Intermediate tensors share one arena. Each gets an offset chosen greedy-by-size, as
TFLite's ``ArenaPlanner``/``GreedyMemoryPlanner`` do: sort by size (largest first), then
place each tensor at the lowest offset that overlaps no already-placed tensor whose
lifetime overlaps its own. Graph inputs and outputs live for the whole invoke (their
values must survive between ``set_tensor``/``invoke``/``get_tensor``), so they get their
own ranges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    # The shapes a bounded tensor (TensorInfo.bounded: its slot is sized for an upper bound) has
    # after the last invoke, written by the kernel that makes it; until then, its bound.
    extents: dict[int, tuple[int, ...]] = field(default_factory=dict)


def topological_order(g: Graph) -> list[Node]:
    """Nodes in an order where every input is produced first (stable for valid models).

    The order is file order where the file's order is valid. Otherwise it is what repeated
    passes over the not-yet-ordered nodes in file order would give (each pass takes every node
    whose inputs are ready by then): a node's pass is the latest pass of its producers, plus one
    for a producer that comes after it in the file. Kahn's algorithm computes the passes in
    linear time; the nodes are then sorted by (pass, file position).
    """
    produced = set(g.inputs) | {t.index for t in g.tensors if t.is_const or t.is_variable}
    producers: dict[int, Node] = {}
    for n in g.nodes:
        for o in n.outputs:
            if o in producers:
                raise ModelError(f"tensor {o} is written by node {producers[o].index} and node {n.index}")
            producers[o] = n
    waiting = [0] * len(g.nodes)  # inputs of each node not produced yet (with repeats)
    readers: dict[int, list[int]] = {}  # tensor -> positions of the nodes waiting for it
    for k, n in enumerate(g.nodes):
        for i in n.inputs:
            if i >= 0 and i not in produced:
                waiting[k] += 1
                readers.setdefault(i, []).append(k)
    stage = [0] * len(g.nodes)
    ready = [k for k in range(len(g.nodes)) if not waiting[k]]
    done = set()
    while ready:
        k = ready.pop()
        done.add(k)
        for o in g.nodes[k].outputs:
            produced.add(o)
            for r in readers.pop(o, ()):
                stage[r] = max(stage[r], stage[k] + (k > r))
                waiting[r] -= 1
                if not waiting[r]:
                    ready.append(r)
    if len(done) < len(g.nodes):
        n = next(n for k, n in enumerate(g.nodes) if k not in done)
        missing = [i for i in n.inputs if i >= 0 and i not in produced]
        why = "a cycle" if all(m in producers for m in missing) else "no producer"
        raise ModelError(f"node {n.index} ({n.op}) reads tensors {missing} that have {why}")
    for o in g.outputs:
        if o not in produced:
            raise ModelError(f"graph output tensor {o} is never produced")
    return [g.nodes[k] for k in sorted(range(len(g.nodes)), key=lambda k: (stage[k], k))]


def lifetimes(g: Graph, order: list[Node]) -> dict[int, list[int]]:
    """First and last step of every non-constant tensor; graph inputs/outputs and variables span the plan."""
    last = len(order)
    life: dict[int, list[int]] = {}
    for step, n in enumerate(order):
        for o in n.outputs:
            if not g.tensors[o].is_const:
                life.setdefault(o, [step, step])
        for i in n.inputs:
            if i >= 0 and i in life:
                life[i][1] = step
    for i in (*g.inputs, *g.outputs, *(t.index for t in g.tensors if t.is_variable)):
        if not g.tensors[i].is_const:
            life[i] = [0, last]
    return life


class _Lifetimes:
    """Placed tensors indexed by lifetime: which of them are alive during some step range.

    A segment tree over the steps. A lifetime is stored in ``covers`` of the O(log n) nodes
    that tile it, and in ``touches`` of those nodes and of every node on the paths from its
    first and last step to the root (every node whose range it reaches). A query then reads
    ``touches`` of the nodes tiling the query range and ``covers`` of their ancestors: each
    item read overlaps the range, and each item is read at most O(log n) times. Placing a
    tensor queries its own lifetime, so one call does both.
    """

    def __init__(self, steps: int) -> None:
        self.size = 1 << max(steps - 1, 0).bit_length()
        self.covers: list[list[int]] = [[] for _ in range(2 * self.size)]
        self.touches: list[list[int]] = [[] for _ in range(2 * self.size)]

    def add(self, item: int, first: int, last: int) -> set[int]:
        """Store ``item`` alive over [first, last]; return the items stored before that overlap it."""
        lo, hi, tiles = first + self.size, last + self.size + 1, []
        while lo < hi:  # the nodes tiling [first, last]
            if lo & 1:
                tiles.append(lo)
                lo += 1
            if hi & 1:
                hi -= 1
                tiles.append(hi)
            lo >>= 1
            hi >>= 1
        above: list[int] = []
        a, b = (first + self.size) >> 1, (last + self.size) >> 1
        while a != b:  # the two boundary paths up to where they join, then the common path
            above += (a, b)
            a >>= 1
            b >>= 1
        while a:
            above.append(a)
            a >>= 1
        found: set[int] = set()
        for node in tiles:
            found.update(self.touches[node])
        for node in above:
            found.update(self.covers[node])
        for node in tiles:
            self.covers[node].append(item)
            self.touches[node].append(item)
        for node in above:
            self.touches[node].append(item)
        return found


def plan_memory(g: Graph, order: list[Node], *, pinned: dict[int, int] | None = None) -> MemoryPlan:
    """Greedy-by-size arena plan; tensors in ``pinned`` keep the offsets given there.

    Pinning is how a backend that rewrites the graph (the CPU backend's fusions) re-plans
    it while graph inputs and outputs keep the offsets views were handed out for.

    A tensor in ``g.views`` (a RESHAPE-like output, a CONCATENATION input the backend runs in
    place) is placed inside the tensor it lies in, at its byte offset there; that tensor then
    lives as long as all of them.
    """
    life = lifetimes(g, order)
    sizes = {t: max(g.tensors[t].nbytes, 0) for t in life}
    views = _view_roots(g, life, set(pinned or ()))
    for v, (base, _) in views.items():
        life[base] = [min(life[base][0], life[v][0]), max(life[base][1], life[v][1])]
        del life[v]
    placed: list[tuple[int, int]] = []  # (offset, end) of each placed tensor
    alive = _Lifetimes(len(order) + 1)
    offsets: dict[int, int] = {}

    for t, off in (pinned or {}).items():
        if t in life:
            alive.add(len(placed), *life[t])
            offsets[t] = off
            placed.append((off, off + -(-sizes[t] // ALIGN) * ALIGN))
    for t in sorted((t for t in life if t not in offsets), key=lambda t: (-sizes[t], t)):
        size = -(-sizes[t] // ALIGN) * ALIGN
        off = 0
        for o, e in sorted(placed[k] for k in alive.add(len(placed), *life[t])):
            if off + size <= o:
                break
            off = max(off, e)
        offsets[t] = off
        placed.append((off, off + size))
    arena = max((e for _, e in placed), default=0)
    for v, (base, off) in views.items():
        offsets[v] = offsets[base] + off
        life[v] = life[base]
    bounds = {t: g.tensors[t].shape for t in offsets if g.tensors[t].bounded}
    for v in views:
        sizes[v] = max(g.tensors[v].nbytes, 0)
    total = sum(s for t, s in sizes.items() if t not in views)
    return MemoryPlan(offsets, sizes, arena, total, {k: (v[0], v[1]) for k, v in life.items()}, bounds)


def _view_roots(g: Graph, life: dict[int, list[int]], pinned: set[int]) -> dict[int, tuple[int, int]]:
    """``g.views`` resolved to the placed tensor each view lies in and its byte offset there
    (chains followed: a RESHAPE of a CONCATENATION input lies in the concatenation's output).
    A view is left a tensor of its own when its chain meets an unplanned or pinned tensor or
    loops, when it would not fit, or when a graph output would lose its ``ALIGN`` offset."""
    roots: dict[int, tuple[int, int]] = {}
    for v in g.views:
        base, off, chain = v, 0, [v]
        while base in g.views and len(chain) <= len(g.views):  # a loop ends here, rejected below
            base, step = g.views[base]
            off += step
            chain.append(base)
        if (len(set(chain)) == len(chain) and all(t in life and t not in pinned for t in chain) and off >= 0
                and off + g.tensors[v].nbytes <= g.tensors[base].nbytes and (v not in g.outputs or off % ALIGN == 0)):
            roots[v] = (base, off)
    return roots
