"""TFLite_Detection_PostProcess: SSD box decoding and multi-class NMS, as LiteRT's
``lite/kernels/detection_postprocess.cc``.

Boxes are decoded from centre-size encodings against the anchors in float64, rounded to
float32 per value. Single-class NMS keeps scores >= ``nms_score_threshold``, visits them in a
stable descending order and drops any box whose IoU with a kept one is > ``nms_iou_threshold``.
*Fast* NMS runs it once on each box's best class score and reports each kept box's top
``max_classes_per_detection`` classes (picked with ``std::partial_sort``, ties in libstdc++'s
order, :mod:`cxx_order`); *regular* NMS runs it per class and merges each class's boxes into
the best ``max_detections`` so far stably (``std::inplace_merge``, LiteRT's single-thread
order; with several threads LiteRT's tie order depends on scheduling). uint8 encodings,
anchors and scores are dequantized first, as LiteRT does. Output slots past the detections
are zero (LiteRT zeroes them in regular NMS and leaves them unwritten in fast NMS).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.cxx_order import partial_sort
from gpulite.backends.cpu.kernels.nms import iou
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError
from gpulite.graph.ir import Node
from gpulite.graph.layout import where
from gpulite.graph.shape_rules.detection import detection_shapes
from gpulite.model.custom_options import DetectionPostProcessOptions
from gpulite.model.opdefs import Op

_F32, _U8 = np.dtype(np.float32), np.dtype(np.uint8)
_PAIRWISE = 384  # candidates up to which single-class NMS computes all pairwise IoUs up front


def _dequantizer(ctx: CpuContext, i: int) -> Callable[[np.ndarray], np.ndarray]:
    """float32 values of input ``i``: as is, or ``(x - zero_point) * scale`` in float32 for uint8."""
    info = ctx.in_info(i)
    if info.dtype == _F32:
        return lambda x: x
    q = info.quant
    if q is None:
        raise unsupported(ctx.node, f"input {i} is uint8 without quantization parameters")
    scale, zp = np.float32(q.scale[0]), np.float32(int(q.zero_point[0]))
    return lambda x: (x.astype(np.float32) - zp) * scale


def decode_boxes(enc: np.ndarray, anchors: np.ndarray, o: DetectionPostProcessOptions) -> np.ndarray:
    """Corner boxes [n, 4] (ymin, xmin, ymax, xmax) from centre-size encodings and anchors (y, x, h, w)."""
    e, a = enc[:, :4].astype(np.float64), anchors.astype(np.float64)
    ys, xs, hs, ws = (np.float64(np.float32(v)) for v in (o.y_scale, o.x_scale, o.h_scale, o.w_scale))
    yc = (e[:, 0] / ys * a[:, 2] + a[:, 0]).astype(np.float32)
    xc = (e[:, 1] / xs * a[:, 3] + a[:, 1]).astype(np.float32)
    half_h = (0.5 * np.exp(e[:, 2] / hs) * a[:, 2]).astype(np.float32)
    half_w = (0.5 * np.exp(e[:, 3] / ws) * a[:, 3]).astype(np.float32)
    return np.stack([yc - half_h, xc - half_w, yc + half_h, xc + half_w], axis=1)


def single_class_nms(boxes: np.ndarray, scores: np.ndarray, o: DetectionPostProcessOptions, limit: int) -> list[int]:
    """``NonMaxSuppressionSingleClassHelper``: kept box indices, best first, at most ``limit``."""
    keep = np.flatnonzero(scores >= np.float32(o.nms_score_threshold))
    order = keep[np.argsort(-scores[keep], kind="stable")]
    ranked = boxes[order]
    active = np.ones(len(order), bool)
    selected: list[int] = []
    iou_thr = np.float32(o.nms_iou_threshold)
    # Few candidates: every pair's IoU at once; many: each kept box against the rest.
    overlaps = iou(ranked[:, None], ranked[None, :]) > iou_thr if len(order) <= _PAIRWISE else None
    for i in range(len(order) if limit > 0 else 0):
        if not active[i]:
            continue
        selected.append(int(order[i]))
        if len(selected) >= limit:
            break
        row = overlaps[i, i + 1:] if overlaps is not None else iou(ranked[i], ranked[i + 1:]) > iou_thr
        active[i + 1:] &= ~row
    return selected


def decreasing_top(values: np.ndarray, k: int) -> list[int]:
    """``DecreasingPartialArgSort``: the first ``k`` indices of ``values`` by decreasing value
    (argmax for k = 1; libstdc++'s ``partial_sort`` otherwise)."""
    if k == 1:
        return [int(np.argmax(values))]
    idx = list(range(len(values)))
    vals = values.tolist()
    partial_sort(idx, k, lambda i, j: vals[i] > vals[j])
    return idx[:k]


def _fast(boxes, scores, o, outs) -> int:
    out_boxes, out_classes, out_scores = outs
    per_box = min(o.max_classes_per_detection, o.num_classes)  # >= 1: the options decoder checks both
    selected = single_class_nms(boxes, scores.max(axis=1), o, o.max_detections)
    for k, b in enumerate(selected):
        top = decreasing_top(scores[b], per_box)
        at = slice(o.max_classes_per_detection * k, o.max_classes_per_detection * k + per_box)
        out_boxes[at] = boxes[b]
        out_classes[at] = top
        out_scores[at] = scores[b, top]
    return len(selected)


def _regular(boxes, scores, o, outs) -> int:
    out_boxes, out_classes, out_scores = outs
    ids: list[tuple[int, int]] = []  # (box, class) of the best detections so far
    vals: list[np.float32] = []
    for c in range(o.num_classes):
        class_scores = np.ascontiguousarray(scores[:, c])
        for b in single_class_nms(boxes, class_scores, o, min(o.detections_per_class, o.max_detections)):
            ids.append((b, c))
            vals.append(class_scores[b])
        # both runs are sorted: a stable sort is the stable merge
        order = np.argsort(-np.array(vals, np.float32), kind="stable")[:o.max_detections].tolist()
        ids, vals = [ids[i] for i in order], [vals[i] for i in order]
    for k, ((b, c), v) in enumerate(zip(ids, vals, strict=True)):
        out_boxes[k], out_classes[k], out_scores[k] = boxes[b], c, v
    return len(ids)


@register_kernel(Op.TFLite_Detection_PostProcess, "cpu")
def detection_postprocess(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Decoded boxes, classes, scores and their count from box encodings, class scores and anchors."""
    arity(node, 3, 4)
    o = node.options
    if not isinstance(o, DetectionPostProcessOptions):
        raise unsupported(node, f"options were not decoded (op version {node.version})")
    enc_i, cls_i, anc_i = (ctx.in_info(i) for i in range(3))
    if enc_i.dtype not in (_F32, _U8) or cls_i.dtype not in (_F32, _U8) or anc_i.dtype != enc_i.dtype:
        raise unsupported(node, f"expected float32 or uint8 box encodings with anchors of the same type and float32 "
                          f"or uint8 scores, got {enc_i.dtype}, {cls_i.dtype} scores, {anc_i.dtype} anchors")
    n = enc_i.shape[1] if len(enc_i.shape) == 3 else -1
    if len(enc_i.shape) != 3 or enc_i.shape[0] != 1 or enc_i.shape[2] < 4 or len(cls_i.shape) != 3 \
            or cls_i.shape[:2] != (1, n) or anc_i.shape != (n, 4):
        raise ShapeError(f"{where(node)}expected box encodings [1, n, >= 4], scores [1, n, classes] and anchors "
                         f"[n, 4], got {list(enc_i.shape)}, {list(cls_i.shape)}, {list(anc_i.shape)}")
    offset = cls_i.shape[2] - o.num_classes
    if offset not in (0, 1):
        raise ShapeError(f"{where(node)}scores hold {cls_i.shape[2]} classes for num_classes = {o.num_classes}; "
                         "expected num_classes or one more (a background class)")
    outs = [ctx.output(i) for i in range(4)]
    for out, shape in zip(outs, detection_shapes(o), strict=True):
        check_out(node, out, shape, _F32)
    enc, cls, anc = (ctx.input(i) for i in range(3))
    deq_enc, deq_cls, deq_anc = (_dequantizer(ctx, i) for i in range(3))
    nms = _regular if o.use_regular_nms else _fast

    def run() -> None:
        boxes = decode_boxes(deq_enc(enc[0]), deq_anc(anc), o)
        if ((boxes[:, 0] > boxes[:, 2]) | (boxes[:, 1] > boxes[:, 3])).any():
            raise ValueError(f"{where(node)}a decoded box has ymin > ymax or xmin > xmax (LiteRT's ValidateBoxes "
                             "fails the invoke too); check the anchors' heights and widths")
        scores = np.asarray(deq_cls(cls[0]), np.float32)[:, offset:]
        for out in outs:
            out.fill(0)
        outs[3][0] = nms(boxes, scores, o, [outs[0][0], outs[1][0], outs[2][0]])
    return run
