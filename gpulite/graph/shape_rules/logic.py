"""Shapes of SELECT / SELECT_V2 and WHERE (the logical ops and comparisons are in :mod:`.elementwise`)."""

from __future__ import annotations

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.graph.shapes import broadcast, shape_rule
from gpulite.model.opdefs import Op


def select_shape(node: Node, cond: tuple[int, ...], x: tuple[int, ...], y: tuple[int, ...]) -> tuple[int, ...]:
    """The output shape of SELECT / SELECT_V2 under LiteRT's rules (ShapeError otherwise)."""
    if node.op == Op.SELECT_V2:
        return broadcast(broadcast(cond, x, node), y, node)
    if tuple(x) != tuple(y):
        raise ShapeError(f"{layout.where(node)}x {list(x)} and y {list(y)} must have the same shape")
    if tuple(cond) != tuple(x) and len(cond) != 0 and not (len(cond) == 1 and len(x) >= 1 and cond[0] == x[0]):
        raise ShapeError(f"{layout.where(node)}condition {list(cond)} must be a scalar, have x's shape {list(x)}, "
                         f"or be a vector over x's first dim")
    return tuple(x)


@shape_rule(Op.SELECT, Op.SELECT_V2)
def _select(node, ins, consts):
    return [select_shape(node, tuple(ins[0]), tuple(ins[1]), tuple(ins[2]))]


@shape_rule(Op.WHERE, bounded=True)
def _where(node, ins, consts):
    # One row of coordinates per true element: at most every element (the kernel records the count).
    return [(int(np.prod(ins[0], dtype=np.int64)), len(ins[0]))]
