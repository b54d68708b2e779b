"""Shape inference: the rule of each op.

:func:`gpulite.graph.resolve.resolve` gives every tensor its shape for the current input shapes
at ``allocate_tensors`` with these rules (and :func:`propagate` does for the one-node graphs of
eager ops). Rules live in ``gpulite/graph/shape_rules/*.py`` (discovered, not listed) and take
``(node, in_shapes, in_consts)`` where ``in_consts[i]`` is the constant value of input i
or None, returning the list of output shapes. The rule of an op whose output shape depends on
its input *values* (WHERE) is registered ``bounded=True`` and returns an upper bound: the
tensor's slot is sized for it and the kernel records the real shape at each invoke.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph.ir import Graph, Node
from gpulite.model.reader import shape_problem

Shape = tuple[int, ...]
ShapeRule = Callable[[Node, list[Shape], list[np.ndarray | None]], list[Shape]]
_RULES: dict[str, ShapeRule] = {}
_BOUNDED: set[str] = set()
_loaded = False


def shape_rule(*ops: str, bounded: bool = False) -> Callable[[ShapeRule], ShapeRule]:
    """Register ``fn`` as the shape rule of ``ops``; ``bounded``: it gives an upper bound of
    outputs whose real shape depends on the input values."""
    def deco(fn: ShapeRule) -> ShapeRule:
        for op in ops:
            if op in _RULES:
                raise ValueError(f"shape rule for {op} registered twice")
            _RULES[op] = fn
            if bounded:
                _BOUNDED.add(op)
        return fn
    return deco


def is_bounded(op: str) -> bool:
    """Whether ``op``'s outputs get their shape from the data, at invoke (see the module docstring)."""
    _load()
    return op in _BOUNDED


def _load() -> None:
    global _loaded
    if not _loaded:
        from gpulite.graph import shape_rules
        for m in pkgutil.iter_modules(shape_rules.__path__):
            importlib.import_module(f"{shape_rules.__name__}.{m.name}")
        _loaded = True


def broadcast(a: Sequence[int], b: Sequence[int], node: Node | None = None) -> Shape:
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        where = f"node {node.index} ({node.op}): " if node else ""
        raise ShapeError(f"{where}shapes {list(a)} and {list(b)} do not broadcast") from None


def has_rule(op: str) -> bool:
    _load()
    return op in _RULES


def output_shapes(g: Graph, n: Node) -> list[Shape] | None:
    """The output shapes ``n``'s rule gives from its inputs' current shapes (None: no rule).

    Raises
    ------
    ShapeError
        The inputs do not fit together, or a computed shape is outside the int32 limits.
    """
    _load()
    rule = _RULES.get(n.op)
    if rule is None:
        return None
    ins = [g.tensors[i].shape if i >= 0 else () for i in n.inputs]
    consts = [g.tensors[i].const if i >= 0 else None for i in n.inputs]
    outs = [tuple(int(d) for d in s) for s in rule(n, ins, consts)]
    if len(outs) != len(n.outputs):
        raise ShapeError(f"node {n.index} ({n.op}): rule gave {len(outs)} shapes for {len(n.outputs)} outputs")
    for s in outs:
        problem = shape_problem(s)
        if problem:
            raise ShapeError(f"node {n.index} ({n.op}): computed output shape {list(s)}: {problem}")
    return outs


def propagate(g: Graph, order: list[Node]) -> None:
    """Recompute output shapes of every node in ``order`` from the current input shapes."""
    for n in order:
        outs = output_shapes(g, n)
        if outs is None:
            stored = [g.tensors[o].shape for o in n.outputs]
            raise ShapeError(
                f"node {n.index} ({n.op}) has no shape rule, so its outputs cannot follow a resized input "
                f"(stored output shapes {stored})"
            )
        for o, s in zip(n.outputs, outs, strict=True):
            g.tensors[o].shape = s
