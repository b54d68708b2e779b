"""Shapes of L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, SCATTER_ND, MATRIX_DIAG, MATRIX_SET_DIAG,
and the broadcasting ATAN2, RIGHT_SHIFT and BITWISE_XOR."""

from __future__ import annotations

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph.layout import where
from gpulite.graph.shapes import broadcast, shape_rule
from gpulite.model.opdefs import Op


@shape_rule(Op.L2_NORMALIZATION, Op.LOCAL_RESPONSE_NORMALIZATION, Op.MATRIX_SET_DIAG)
def _same(node, ins, consts):
    return [tuple(ins[0])]


@shape_rule(Op.MATRIX_DIAG)
def _matrix_diag(node, ins, consts):
    if not ins[0]:
        raise ShapeError(f"{where(node)}the diagonal must have rank >= 1, got a scalar")
    return [(*ins[0], ins[0][-1])]


def scatter_nd_shape(node, indices: tuple[int, ...], updates: tuple[int, ...], shape: np.ndarray | None):
    """The output shape (the constant ``shape`` input), checked against indices and updates as
    scatter_nd.cc's Prepare does: ``updates = indices[:-1] + shape[indices[-1]:]``."""
    if shape is None:
        raise ShapeError(f"{where(node)}shape is computed at run time; the output's shape is not known")
    out = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if np.ndim(shape) != 1 or any(d < 0 for d in out):
        raise ShapeError(f"{where(node)}shape must be a 1-D tensor of sizes >= 0, got {np.asarray(shape).tolist()}")
    k = indices[-1] if indices else 0
    if not indices or k > len(out) or tuple(updates) != (*indices[:-1], *out[k:]):
        raise ShapeError(f"{where(node)}indices {list(indices)} and updates {list(updates)} do not fit shape "
                         f"{list(out)} (updates must be indices[:-1] + shape[indices[-1]:])")
    return out


@shape_rule(Op.SCATTER_ND)
def _scatter_nd(node, ins, consts):
    return [scatter_nd_shape(node, tuple(ins[0]), tuple(ins[1]), consts[2])]


@shape_rule(Op.ATAN2, Op.RIGHT_SHIFT, Op.BITWISE_XOR)
def _broadcasting(node, ins, consts):
    return [broadcast(ins[0], ins[1], node)]
