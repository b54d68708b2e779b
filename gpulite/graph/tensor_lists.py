"""Load-time rewrite: TensorFlow's tensor-list writes in loop bodies as DYNAMIC_UPDATE_SLICE.

A Keras 3 RNN returning sequences converts to a WHILE whose body writes step ``i``'s output into
a ``[time, ...]`` tensor (TensorListSetItem) as::

    head = SLICE(list, begin=0, size=[i, -1, ...])      # rows [0, i)
    tail = SLICE(list, begin=[i + 1, 0, ...], size=-1)  # rows [i + 1, time)
    new  = CONCATENATION(head, row, tail, axis=0)       # row: [1, ...]

``head`` and ``tail`` change shape with ``i`` (LiteRT resizes them at every step), which gpulite's
static plans cannot hold. Their concatenation always has the list's shape, though, and is the
list with row ``i`` replaced: ``DYNAMIC_UPDATE_SLICE(list, row, [i, -1, ...])`` (its start indices
are clamped into range, so the ``-1`` of ``head``'s size tensor reads as 0). The rewrite makes that
node in place of the concatenation and drops the two slices when nothing else reads them.
"""

from __future__ import annotations

import numpy as np

from gpulite.graph.ir import Graph, Node
from gpulite.model.opdefs import FusedActivation, Op


def rewrite_list_writes(g: Graph) -> int:
    """Rewrite every tensor-list write of ``g`` (see the module docstring); returns how many."""
    producer = {o: n for n in g.nodes for o in n.outputs}
    readers: dict[int, int] = {}
    for n in g.nodes:
        for i in n.inputs:
            readers[i] = readers.get(i, 0) + 1
    drop: set[int] = set()
    count = 0
    for n in g.nodes:
        match = _list_write(g, n, producer)
        if match is None:
            continue
        head, row, tail = match
        n.op, n.inputs, n.options = Op.DYNAMIC_UPDATE_SLICE, (head.inputs[0], row, head.inputs[2]), None
        n.activation = FusedActivation.NONE
        for s in (head, tail):
            if readers.get(s.outputs[0], 0) == 1 and s.outputs[0] not in g.outputs:
                drop.add(id(s))
        count += 1
    g.nodes = [n for n in g.nodes if id(n) not in drop]
    return count


def _const(g: Graph, t: int) -> np.ndarray | None:
    return g.tensors[t].const if t >= 0 else None


def _list_write(g: Graph, n: Node, producer: dict[int, Node]) -> tuple[Node, int, Node] | None:
    """``(head SLICE, row tensor, tail SLICE)`` when ``n`` is a tensor-list write, else None."""
    if n.op != Op.CONCATENATION or len(n.inputs) != 3 or n.activation or getattr(n.options, "axis", None) != 0:
        return None
    head, tail = producer.get(n.inputs[0]), producer.get(n.inputs[2])
    if head is None or tail is None or head.op != Op.SLICE or tail.op != Op.SLICE:
        return None
    if len(head.inputs) != 3 or len(tail.inputs) != 3 or head.inputs[0] != tail.inputs[0]:
        return None
    lst, out, row = g.tensors[head.inputs[0]], g.tensors[n.outputs[0]], g.tensors[n.inputs[1]]
    if out.shape != lst.shape or out.dtype != lst.dtype or row.dtype != lst.dtype or not lst.shape:
        return None
    if row.shape != (1, *lst.shape[1:]):
        return None
    head_begin, tail_size = _const(g, head.inputs[1]), _const(g, tail.inputs[2])
    if head_begin is None or tail_size is None or _const(g, head.inputs[2]) is not None:
        return None
    if head_begin.shape != (len(lst.shape),) or np.any(head_begin != 0) or np.any(tail_size != -1):
        return None
    return head, n.inputs[1], tail
