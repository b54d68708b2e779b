"""NonMaxSuppression: merge overlapping detections (MediaPipe ``NonMaxSuppressionCalculator``).

Two algorithms, both over detections sorted by score (highest first):

- ``"weighted"`` (BlazeFace): take the best remaining detection and every remaining one
  overlapping it by more than ``min_suppression_threshold`` (itself included); emit the best
  one with its box and keypoints replaced by the score-weighted mean of that group, keeping
  the best score; repeat on the rest.
- ``"default"`` (hard NMS): keep a detection unless it overlaps an already kept one by more
  than the threshold.

Overlap is ``"intersection_over_union"`` (IoU), ``"jaccard"`` (intersection over the area
of the two boxes' bounding rectangle, as MediaPipe's ``Rectangle_f::Union``) or
``"modified_jaccard"`` (intersection over the candidate's area).

Usage::

    - calculator: NonMaxSuppression
      input_stream: "raw_detections"
      output_stream: "detections"
      options: {min_suppression_threshold: 0.3, overlap_type: intersection_over_union,
                algorithm: weighted}
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import Detection, RelativeBox
from gpulite.pipeline.registry import register_calculator

OVERLAP_TYPES = ("intersection_over_union", "jaccard", "modified_jaccard")
ALGORITHMS = ("weighted", "default")


@dataclass(frozen=True)
class NonMaxSuppressionOptions:
    """MediaPipe's ``NonMaxSuppressionCalculatorOptions``; ``max_num_detections`` -1 means no limit."""

    min_suppression_threshold: float = 0.3
    overlap_type: str = "intersection_over_union"
    algorithm: str = "weighted"
    max_num_detections: int = -1
    min_score_threshold: float = -1.0

    def __post_init__(self) -> None:
        if self.overlap_type not in OVERLAP_TYPES:
            raise ValueError(f"overlap_type must be one of {OVERLAP_TYPES}, got {self.overlap_type!r}")
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if self.max_num_detections == 0 or self.max_num_detections < -1:
            raise ValueError(f"max_num_detections must be -1 (no limit) or >= 1, got {self.max_num_detections}")


def overlap(kind: str, a: RelativeBox, b: RelativeBox) -> float:
    """MediaPipe's ``OverlapSimilarity(kind, a, b)``; 0 for boxes that do not intersect."""
    inter = a.intersection(b)
    if inter <= 0.0:
        return 0.0
    if kind == "intersection_over_union":
        norm = a.area + b.area - inter
    elif kind == "jaccard":
        norm = (max(a.xmax, b.xmax) - min(a.xmin, b.xmin)) * (max(a.ymax, b.ymax) - min(a.ymin, b.ymin))
    else:  # modified_jaccard
        norm = b.area
    return inter / norm if norm > 0.0 else 0.0


def _by_score(detections: list[Detection]) -> list[Detection]:
    # Stable, so equal scores keep their input (anchor) order and results are reproducible.
    return sorted(detections, key=lambda d: -d.score)


def _weighted(group: list[Detection], best: Detection) -> Detection:
    total = sum(d.score for d in group)
    xmin = sum(d.box.xmin * d.score for d in group) / total
    ymin = sum(d.box.ymin * d.score for d in group) / total
    xmax = sum(d.box.xmax * d.score for d in group) / total
    ymax = sum(d.box.ymax * d.score for d in group) / total
    kps = tuple((sum(d.keypoints[k][0] * d.score for d in group) / total,
                 sum(d.keypoints[k][1] * d.score for d in group) / total) for k in range(len(best.keypoints)))
    return Detection(RelativeBox(xmin, ymin, xmax - xmin, ymax - ymin), kps, best.score, best.label_id)


def non_max_suppression(detections: list[Detection],
                        options: NonMaxSuppressionOptions = NonMaxSuppressionOptions()) -> list[Detection]:
    """Suppress overlapping detections; returns the survivors, best score first."""
    o = options
    limit = len(detections) if o.max_num_detections == -1 else o.max_num_detections
    remaining = _by_score(detections)
    if o.min_score_threshold > 0:
        remaining = [d for d in remaining if d.score >= o.min_score_threshold]
    out: list[Detection] = []
    if o.algorithm == "default":
        for d in remaining:
            if all(overlap(o.overlap_type, kept.box, d.box) <= o.min_suppression_threshold for kept in out):
                out.append(d)
                if len(out) >= limit:
                    break
        return out
    while remaining and len(out) < limit:
        best = remaining[0]
        group, rest = [], []
        for d in remaining:
            (group if overlap(o.overlap_type, d.box, best.box) > o.min_suppression_threshold else rest).append(d)
        out.append(_weighted(group, best) if group else best)
        if len(rest) == len(remaining):  # nothing was absorbed (a degenerate best box): stop as MediaPipe does
            break
        remaining = rest
    return out


@register_calculator
class NonMaxSuppression(Calculator):
    """Detections -> non-overlapping detections; see the module docstring.

    Usage::

        - calculator: NonMaxSuppression
          input_stream: "DETECTIONS:raw_detections"
          output_stream: "DETECTIONS:detections"
          options: {min_suppression_threshold: 0.3, algorithm: weighted}
    """

    inputs = {"DETECTIONS": list}
    outputs = {"DETECTIONS": list}
    options = NonMaxSuppressionOptions

    def process(self, cc) -> None:
        dets = cc.inputs["DETECTIONS"]
        if dets is not None:
            cc.output("DETECTIONS", non_max_suppression(dets, cc.options))
