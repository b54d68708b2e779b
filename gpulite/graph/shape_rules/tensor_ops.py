"""Shapes of L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, SCATTER_ND, MATRIX_DIAG, MATRIX_SET_DIAG,
the broadcasting ATAN2, RIGHT_SHIFT and BITWISE_XOR, the segment reductions, REVERSE_SEQUENCE,
DYNAMIC_UPDATE_SLICE, EMBEDDING_LOOKUP, BUCKETIZE, FAKE_QUANT, ADD_N and the random ops."""

from __future__ import annotations

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph import data_layout as dl
from gpulite.graph.layout import where
from gpulite.graph.shape_rules.detection import scalar_count
from gpulite.graph.shapes import broadcast, shape_rule
from gpulite.model.opdefs import Op


@shape_rule(Op.L2_NORMALIZATION, Op.LOCAL_RESPONSE_NORMALIZATION, Op.MATRIX_SET_DIAG, Op.REVERSE_SEQUENCE,
            Op.DYNAMIC_UPDATE_SLICE, Op.BUCKETIZE, Op.FAKE_QUANT)
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
    if np.asarray(shape).dtype.kind not in "iu":
        raise ShapeError(f"{where(node)}shape must hold integers, got {np.asarray(shape).dtype}")
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


UNSORTED_SEGMENT = (Op.UNSORTED_SEGMENT_SUM, Op.UNSORTED_SEGMENT_PROD, Op.UNSORTED_SEGMENT_MAX,
                    Op.UNSORTED_SEGMENT_MIN)


def segment_count(node, data: tuple[int, ...], ids: tuple[int, ...], ids_value: np.ndarray | None,
                  num_segments: np.ndarray | None) -> int:
    """Output rows of a segment reduction: the constant ``num_segments`` (UNSORTED_SEGMENT_*), or
    the last of the constant ``segment_ids`` plus one (SEGMENT_SUM); ``ids`` must be a
    prefix of ``data``'s shape."""
    if len(ids) > len(data) or tuple(data[:len(ids)]) != tuple(ids) or (node.op == Op.SEGMENT_SUM and len(ids) != 1):
        raise ShapeError(f"{where(node)}segment_ids {list(ids)} must be a prefix of the data's shape {list(data)}"
                         + (" of rank 1" if node.op == Op.SEGMENT_SUM else ""))
    if node.op != Op.SEGMENT_SUM:
        if num_segments is None:
            raise ShapeError(f"{where(node)}num_segments is computed at run time, so the output's shape depends "
                             "on the data")
        n = np.asarray(num_segments).reshape(-1)
        if n.size != 1 or int(n[0]) < 0:
            raise ShapeError(f"{where(node)}num_segments must be one value >= 0, got {n.tolist()}")
        return int(n[0])
    if ids_value is None:
        raise ShapeError(f"{where(node)}segment_ids are computed at run time, so the output's shape depends on "
                         "the data")
    v = np.asarray(ids_value).reshape(-1)
    if v.size and (v[0] < 0 or np.any((np.diff(v) != 0) & (np.diff(v) != 1))):
        raise ShapeError(f"{where(node)}segment_ids must be >= 0 and each 0 or 1 more than the one before "
                         f"(segment_sum.cc), got {v.tolist()[:10]}")
    return int(v[-1]) + 1 if v.size else 0


@shape_rule(Op.SEGMENT_SUM, *UNSORTED_SEGMENT)
def _segment(node, ins, consts):
    rows = segment_count(node, tuple(ins[0]), tuple(ins[1]), consts[1], consts[2] if len(consts) > 2 else None)
    return [(rows, *ins[0][len(ins[1]):])]


@shape_rule(Op.EMBEDDING_LOOKUP)
def _embedding_lookup(node, ins, consts):
    if len(ins[0]) != 1 or len(ins[1]) < 1:
        raise ShapeError(f"{where(node)}expected 1-D ids and a value of rank >= 1, got {list(ins[0])} and "
                         f"{list(ins[1])}")
    return [(ins[0][0], *ins[1][1:])]


@shape_rule(Op.ADD_N)
def _add_n(node, ins, consts):
    if any(tuple(s) != tuple(ins[0]) for s in ins):
        raise ShapeError(f"{where(node)}inputs must share one shape, got {[list(s) for s in ins]}")
    return [tuple(ins[0])]


def sparse_to_dense_shape(node, indices: tuple[int, ...], shape: np.ndarray | None, values: tuple[int, ...],
                          default_size: int) -> tuple[int, ...]:
    """The constant ``output_shape`` of SPARSE_TO_DENSE, checked as sparse_to_dense.cc's Prepare does
    (indices of rank <= 2, at most 4 output dims, one default value, one value or one per index)."""
    if shape is None:
        raise ShapeError(f"{where(node)}output_shape is computed at run time; the output's shape is not known")
    out = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    n = 1 if len(indices) == 0 else indices[0]
    rank = indices[1] if len(indices) == 2 else 1
    if np.ndim(shape) != 1 or len(indices) > 2 or rank != len(out) or len(out) > 4 or any(d < 0 for d in out) \
            or len(values) > 1 or (values and values[0] != n) or default_size != 1:
        raise ShapeError(f"{where(node)}indices {list(indices)}, output_shape {list(out)}, values {list(values)} and "
                         f"{default_size} default values do not fit")
    return out


@shape_rule(Op.SPARSE_TO_DENSE)
def _sparse_to_dense(node, ins, consts):
    return [sparse_to_dense_shape(node, tuple(ins[0]), consts[1], tuple(ins[2]), int(np.prod(ins[3])))]


@shape_rule(Op.RANDOM_UNIFORM, Op.RANDOM_STANDARD_NORMAL)
def _random(node, ins, consts):
    return [dl.dims_shape(node, consts[0])]


@shape_rule(Op.MULTINOMIAL)
def _multinomial(node, ins, consts):
    if len(ins[0]) != 2:
        raise ShapeError(f"{where(node)}expected logits [batch, classes], got {list(ins[0])}")
    return [(ins[0][0], scalar_count(node, consts[1], "num_samples"))]


def dilated_shape(node, shape: tuple[int, ...],
                  dilations: np.ndarray | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """DILATE's ``(output shape, dilations)``: dims ``(d - 1) * dilation + 1`` for constant dilations >= 1."""
    if dilations is None:
        raise ShapeError(f"{where(node)}dilations are computed at run time; the output's shape is not known")
    steps = tuple(int(v) for v in np.asarray(dilations).reshape(-1))
    if np.ndim(dilations) != 1 or len(steps) != len(shape) or not shape or any(v < 1 for v in steps):
        raise ShapeError(f"{where(node)}expected one dilation >= 1 per dim of {list(shape)}, got {list(steps)}")
    return tuple((d - 1) * s + 1 for d, s in zip(shape, steps, strict=True)), steps


@shape_rule(Op.DILATE)
def _dilate(node, ins, consts):
    return [dilated_shape(node, tuple(ins[0]), consts[1])[0]]


@shape_rule(Op.HASHTABLE_LOOKUP)
def _hashtable_lookup(node, ins, consts):
    if len(ins[0]) != 1 or len(ins[2]) < 1:
        raise ShapeError(f"{where(node)}expected 1-D lookups and a value table of rank >= 1, got {list(ins[0])} and "
                         f"{list(ins[2])}")
    return [(ins[0][0], *ins[2][1:]), (ins[0][0],)]


def reduce_window_geometry(node, shape: tuple[int, ...], window, strides, dilations):
    """REDUCE_WINDOW's ``(output shape, window, strides, dilations)`` from its constant int64 inputs:
    ``(d - (w - 1) * dilation - 1) // stride + 1`` per dim, 0 where the window does not fit."""
    if window is None or strides is None or dilations is None:
        raise ShapeError(f"{where(node)}window shape, strides and dilations must be constants")
    w, s, d = (tuple(int(v) for v in np.asarray(a).reshape(-1)) for a in (window, strides, dilations))
    if not shape or len(shape) > 6 or not len(w) == len(s) == len(d) == len(shape) or min((*w, *s, *d)) < 1:
        raise ShapeError(f"{where(node)}expected one window size, stride and dilation >= 1 per dim of {list(shape)} "
                         f"(rank 1 to 6), got {list(w)}, {list(s)}, {list(d)}")
    out = tuple(0 if n < (k - 1) * di + 1 else (n - (k - 1) * di - 1) // st + 1
                for n, k, st, di in zip(shape, w, s, d, strict=True))
    return out, w, s, d


@shape_rule(Op.REDUCE_WINDOW)
def _reduce_window(node, ins, consts):
    return [reduce_window_geometry(node, tuple(ins[0]), consts[2], consts[3], consts[4])[0]]


@shape_rule(Op.EMBEDDING_LOOKUP_SPARSE)
def _embedding_lookup_sparse(node, ins, consts):
    if consts[2] is None or len(ins[4]) < 2:
        raise ShapeError(f"{where(node)}needs a constant dense_shape and a table of rank >= 2")
    return [(*(int(d) for d in np.asarray(consts[2]).reshape(-1)[:-1]), *ins[4][1:])]
