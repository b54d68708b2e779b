"""Shapes of NON_MAX_SUPPRESSION_V4/V5, TFLite_Detection_PostProcess and TOPK_V2.

Their output sizes come from a constant input (``max_output_size``, ``k``) or the op's
options; a run-time ``max_output_size`` or ``k`` makes the output shape data-dependent,
which these rules cannot decide (the kernels then refuse the node).
"""

from __future__ import annotations

import numpy as np

from gpulite.errors import ShapeError
from gpulite.graph.layout import where
from gpulite.graph.shapes import shape_rule
from gpulite.model.opdefs import Op


def scalar_count(node, value: np.ndarray | None, what: str) -> int:
    """A constant non-negative scalar count (``max_output_size``, ``k``)."""
    if value is None:
        raise ShapeError(f"{where(node)}{what} is computed at run time, so the output's shape depends on the data")
    if np.size(value) != 1 or np.asarray(value).dtype.kind not in "iu":
        raise ShapeError(f"{where(node)}{what} must be a single integer, got {np.asarray(value).dtype} of shape "
                         f"{list(np.shape(value))}")
    n = int(np.asarray(value).reshape(()))
    if n < 0:
        raise ShapeError(f"{where(node)}{what} must be >= 0, got {n}")
    return n


@shape_rule(Op.NON_MAX_SUPPRESSION_V4)
def _nms_v4(node, ins, consts):
    n = scalar_count(node, consts[2], "max_output_size")
    return [(n,), ()]


@shape_rule(Op.NON_MAX_SUPPRESSION_V5)
def _nms_v5(node, ins, consts):
    n = scalar_count(node, consts[2], "max_output_size")
    return [(n,), (n,), ()]


def detection_shapes(options) -> list[tuple[int, ...]]:
    """Boxes (1, n, 4), classes (1, n), scores (1, n) and the count (1,) for n =
    ``max_detections * max_classes_per_detection``, as detection_postprocess.cc's Prepare sizes them."""
    n = options.max_detections * options.max_classes_per_detection
    return [(1, n, 4), (1, n), (1, n), (1,)]


@shape_rule(Op.TFLite_Detection_PostProcess)
def _detection_postprocess(node, ins, consts):
    if node.options is None:
        raise ShapeError(f"{where(node)}has no decoded options")
    return detection_shapes(node.options)


@shape_rule(Op.TOPK_V2)
def _topk(node, ins, consts):
    k = scalar_count(node, consts[1], "k")
    if not ins[0] or k > ins[0][-1]:
        raise ShapeError(f"{where(node)}k = {k} needs an input of rank >= 1 with at least k values in its last "
                         f"dimension, got {list(ins[0])}")
    shape = (*ins[0][:-1], k)
    return [shape, shape]
