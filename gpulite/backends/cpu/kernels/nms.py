"""NON_MAX_SUPPRESSION_V4 and V5 (soft-NMS), float32, as LiteRT's non_max_suppression.cc.

Candidates above ``score_threshold`` leave a priority queue best first (ties in the order of
libstdc++'s heap, :mod:`cxx_order`); each is compared with the boxes selected since it was
last looked at, newest first: an IoU >= ``iou_threshold`` drops it, and with ``sigma`` > 0
each IoU scales its score by ``exp(-0.5 * iou**2 / sigma)``. A candidate whose score did not
change is selected; a changed one above the threshold goes back into the queue. The outputs
hold ``max_output_size`` entries, zero past the selected ones. ``max_output_size`` must be a
constant (a run-time one gives a data-dependent output shape).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.cxx_order import pop_heap, push_heap
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError
from gpulite.graph.ir import Node
from gpulite.graph.layout import where
from gpulite.graph.shape_rules.detection import scalar_count
from gpulite.model.opdefs import Op

_F32 = np.float32


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of boxes ``a`` and ``b`` ([..., 4] float32, any two opposite corners, broadcast against
    each other), in float32 as LiteRT's ``ComputeIntersectionAndUnion``: 0 when an area is <= 0."""
    ay0, ay1 = np.minimum(a[..., 0], a[..., 2]), np.maximum(a[..., 0], a[..., 2])
    ax0, ax1 = np.minimum(a[..., 1], a[..., 3]), np.maximum(a[..., 1], a[..., 3])
    by0, by1 = np.minimum(b[..., 0], b[..., 2]), np.maximum(b[..., 0], b[..., 2])
    bx0, bx1 = np.minimum(b[..., 1], b[..., 3]), np.maximum(b[..., 1], b[..., 3])
    area_a = (ay1 - ay0) * (ax1 - ax0)
    area_b = (by1 - by0) * (bx1 - bx0)
    inter = (np.maximum(np.minimum(ay1, by1) - np.maximum(ay0, by0), _F32(0))
             * np.maximum(np.minimum(ax1, bx1) - np.maximum(ax0, bx0), _F32(0)))
    union = area_a + area_b - inter
    ok = (area_a > 0) & (area_b > 0) & (union != 0)
    return np.divide(inter, union, out=np.zeros(ok.shape, _F32), where=ok)


def _less(a: tuple, b: tuple) -> bool:  # Candidate::operator<, on the score
    return a[0] < b[0]


def soft_nms(boxes: np.ndarray, scores: np.ndarray, max_out: int, iou_threshold: float, score_threshold: float,
             sigma: float) -> tuple[list[int], list[np.float32]]:
    """Selected indices and their (decayed) scores, LiteRT's float ``NonMaxSuppression`` step by step."""
    thr, iou_thr = _F32(score_threshold), _F32(iou_threshold)
    queue: list[tuple] = []
    for i in np.flatnonzero(scores > thr).tolist():
        push_heap(queue, (scores[i], i, 0), _less)
    n_out = min(len(queue), max_out)
    scale = _F32(-0.5) / _F32(sigma) if sigma > 0 else _F32(0)
    selected: list[int] = []
    kept: list[np.float32] = []
    while len(selected) < n_out and queue:
        score, i, begin = pop_heap(queue, _less)
        original, seen = score, len(selected)
        ious = iou(boxes[i], boxes[selected[begin:][::-1]]) if seen > begin else ()
        hard = False
        for overlap in ious:
            if overlap >= iou_thr:
                hard = True
                break
            if sigma > 0:
                score = _F32(score * _F32(math.exp(float(scale * overlap * overlap))))
            if score <= thr:
                break
        if not hard:
            if score == original:
                selected.append(i)
                kept.append(score)
            if score > thr:
                push_heap(queue, (score, i, seen), _less)
    return selected, kept


def _nms(node: Node, ctx: CpuContext) -> Callable[[], None]:
    soft = node.op == Op.NON_MAX_SUPPRESSION_V5
    arity(node, 6 if soft else 5, 3 if soft else 2)
    boxes, scores = ctx.input(0), ctx.input(1)
    floats = [ctx.in_info(i).dtype for i in (0, 1, 3, 4, *((5,) if soft else ()))]
    if any(d != _F32 for d in floats) or ctx.in_info(2).dtype != np.int32:
        raise unsupported(node, f"expected float32 boxes, scores and thresholds and an int32 max_output_size, got "
                          f"{[str(d) for d in floats]} and {ctx.in_info(2).dtype} (int8/int16 NMS is not supported)")
    if boxes.ndim != 2 or boxes.shape[1] != 4 or scores.shape != boxes.shape[:1]:
        raise ShapeError(f"{where(node)}expected boxes [n, 4] and scores [n], got {list(boxes.shape)} and "
                         f"{list(scores.shape)}")
    if ctx.const(2) is None:
        raise unsupported(node, "max_output_size is computed at run time, so the outputs' shape depends on the "
                          "data; gpulite needs it constant")
    max_out = scalar_count(node, ctx.const(2), "max_output_size")
    idx_out, count = ctx.output(0), ctx.output(2 if soft else 1)
    check_out(node, idx_out, (max_out,), np.int32)
    check_out(node, count, (), np.int32)
    score_out = ctx.output(1) if soft else None
    if score_out is not None:
        check_out(node, score_out, (max_out,), _F32)
    iou_t, score_t = ctx.input(3), ctx.input(4)
    sigma_t = ctx.input(5) if soft else None

    def run() -> None:
        sigma = float(sigma_t.reshape(-1)[0]) if sigma_t is not None else 0.0
        if sigma < 0:
            raise ValueError(f"{where(node)}soft_nms_sigma must be >= 0, got {sigma}")
        sel, kept = soft_nms(boxes, scores, max_out, float(iou_t.reshape(-1)[0]), float(score_t.reshape(-1)[0]),
                             sigma)
        idx_out.fill(0)
        idx_out[:len(sel)] = sel
        count[...] = len(sel)
        if score_out is not None:
            score_out.fill(0)
            score_out[:len(kept)] = kept
    return run


register_kernel(Op.NON_MAX_SUPPRESSION_V4, "cpu", _nms)
register_kernel(Op.NON_MAX_SUPPRESSION_V5, "cpu", _nms)
