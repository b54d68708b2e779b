"""AlignmentPointsRects: a detection's two alignment keypoints -> a rotated square region.

MediaPipe's ``AlignmentPointsRectsCalculator`` (the pose graphs): the rect is centred on the
start keypoint, its side is twice the start-to-end distance (in pixels, hence
``IMAGE_SIZE``), and it is rotated so that the start-to-end vector points at
``rotation_vector_target_angle_degrees`` (90 = up), as ``DetectionsToRects`` computes it.

Usage (pose: keypoint 0 is the hip centre, keypoint 1 encodes size and rotation)::

    - calculator: AlignmentPointsRects
      input_stream: ["DETECTIONS:pose_detections", "IMAGE_SIZE:image_size"]
      output_stream: "NORM_RECTS:pose_rects"
      options: {rotation_vector_start_keypoint_index: 0, rotation_vector_end_keypoint_index: 1,
                rotation_vector_target_angle_degrees: 90}
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._rects import image_size, one_or_many, output_rects, rotation_toward
from gpulite.pipeline.calculators.types import Detection, NormalizedRect, PipelineValueError
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class AlignmentPointsRectsOptions:
    """The fields of MediaPipe's ``DetectionsToRectsCalculatorOptions`` this calculator reads."""

    rotation_vector_start_keypoint_index: int = 0
    rotation_vector_end_keypoint_index: int = 1
    rotation_vector_target_angle_degrees: float = 90.0

    def __post_init__(self) -> None:
        if self.rotation_vector_start_keypoint_index < 0 or self.rotation_vector_end_keypoint_index < 0:
            raise ValueError("rotation_vector_start/end_keypoint_index must be >= 0")


def alignment_points_to_rect(detection: Detection, image_size: tuple[int, int],
                             options: AlignmentPointsRectsOptions = AlignmentPointsRectsOptions()) -> NormalizedRect:
    """The rect of one detection (see the module docstring)."""
    s, e = options.rotation_vector_start_keypoint_index, options.rotation_vector_end_keypoint_index
    if max(s, e) >= len(detection.keypoints):
        raise PipelineValueError(f"AlignmentPointsRects: keypoint index {max(s, e)} out of range for a detection "
                                 f"with {len(detection.keypoints)} keypoints")
    w, h = image_size
    x0, y0 = detection.keypoints[s][0] * w, detection.keypoints[s][1] * h
    x1, y1 = detection.keypoints[e][0] * w, detection.keypoints[e][1] * h
    size = 2.0 * math.hypot(x1 - x0, y1 - y0)
    target = math.radians(options.rotation_vector_target_angle_degrees)
    rotation = rotation_toward(x1 - x0, y1 - y0, target)
    return NormalizedRect(x0 / w, y0 / h, size / w, size / h, rotation)


@register_calculator
class AlignmentPointsRects(Calculator):
    """Detection(s) -> rect(s) from two alignment keypoints; see the module docstring.

    Usage::

        - calculator: AlignmentPointsRects
          input_stream: ["DETECTION:detection", "IMAGE_SIZE:image_size"]
          output_stream: "NORM_RECT:roi"
    """

    inputs = {"DETECTION": Detection, "DETECTIONS": list, "IMAGE_SIZE": tuple}
    outputs = {"NORM_RECT": NormalizedRect, "NORM_RECTS": list}
    optional_ports = frozenset({"DETECTION", "DETECTIONS"})
    options = AlignmentPointsRectsOptions

    def process(self, cc) -> None:
        dets = one_or_many(cc, "DETECTION", "DETECTIONS")
        if dets is not None:
            size = image_size(cc, "detections")
            output_rects(cc, [alignment_points_to_rect(d, size, cc.options) for d in dets])
