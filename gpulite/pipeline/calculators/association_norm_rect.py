"""AssociationNormRect: merge rect lists, later lists replacing overlapping earlier rects.

MediaPipe's ``AssociationNormRectCalculator``: the inputs ``NORM_RECTS``, ``NORM_RECTS:1``, ...
are taken in index order (increasing priority). The result starts as the first non-empty list
(its own overlapping rects deduplicated); every rect of a later list removes the rects of the
result it overlaps by more than ``min_similarity_threshold`` (IoU of the *unrotated* boxes, as
MediaPipe computes it) and is appended. The hand tracker feeds the palm-detection rects first
and the previous frame's landmark rects second, so a tracked hand keeps its landmark rect.

Usage::

    - calculator: AssociationNormRect
      input_stream: ["NORM_RECTS:palm_rois", "NORM_RECTS:1:prev_rois"]
      output_stream: ["NORM_RECTS:hand_rois", "NORM_RECT:first_roi"]
      options: {min_similarity_threshold: 0.5}

``NORM_RECT`` (optional) carries the first rect, only when there is one (the pose graph uses
it as MediaPipe's ``MergeCalculator``: the detection's rect or the tracked one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import NormalizedRect
from gpulite.pipeline.ports import canonical_port
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class AssociationNormRectOptions:
    """MediaPipe's ``AssociationCalculatorOptions``."""

    min_similarity_threshold: float = 0.5

    def __post_init__(self) -> None:
        if self.min_similarity_threshold < 0:
            raise ValueError(f"min_similarity_threshold must be >= 0, got {self.min_similarity_threshold}")


def rect_iou(a: NormalizedRect, b: NormalizedRect) -> float:
    """IoU of the axis-aligned boxes of two rects (rotation ignored, as in MediaPipe)."""
    w = min(a.x_center + a.width / 2, b.x_center + b.width / 2) - max(a.x_center - a.width / 2,
                                                                      b.x_center - b.width / 2)
    h = min(a.y_center + a.height / 2, b.y_center + b.height / 2) - max(a.y_center - a.height / 2,
                                                                       b.y_center - b.height / 2)
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = a.width * a.height + b.width * b.height - inter
    return inter / union if union > 0 else 0.0


def associate(rect_lists: Sequence[Sequence[NormalizedRect] | None], threshold: float = 0.5) -> list[NormalizedRect]:
    """Merge ``rect_lists`` in priority order (see the module docstring)."""
    result: list[NormalizedRect] = []
    for rects in rect_lists:
        for rect in rects or ():
            result = [r for r in result if rect_iou(rect, r) <= threshold]
            result.append(rect)
    return result


def _index(port: str) -> int:
    _, _, i = canonical_port(port).partition(":")
    return int(i or 0)


@register_calculator
class AssociationNormRect(Calculator):
    """Rect lists in priority order -> one list without overlaps; see the module docstring.

    Usage::

        - calculator: AssociationNormRect
          input_stream: ["NORM_RECTS:detected", "NORM_RECTS:1:tracked"]
          output_stream: "NORM_RECTS:rois"
    """

    inputs = {"NORM_RECTS": list}
    outputs = {"NORM_RECTS": list, "NORM_RECT": NormalizedRect}
    options = AssociationNormRectOptions

    def process(self, cc) -> None:
        ports = sorted(cc.inputs, key=_index)
        if all(cc.inputs[p] is None for p in ports):
            return
        rects = associate([cc.inputs[p] for p in ports], cc.options.min_similarity_threshold)
        cc.output("NORM_RECTS", rects)
        if rects:
            cc.output("NORM_RECT", rects[0])
