"""DetectionsToRects: a detection's box (or keypoints) -> a rotated region of interest.

MediaPipe's ``DetectionsToRectsCalculator``: the rect is the detection's box, or the bounding
box of its keypoints (``conversion_mode: use_keypoints``); with a rotation vector (two
keypoint indices) the rect is rotated so that the vector from the start to the end keypoint
points at ``rotation_vector_target_angle_degrees`` (90 = up), computed in pixels, hence
``IMAGE_SIZE``. ``rotation_vector_target_angle`` gives the target in radians instead and wins
when set, as in MediaPipe (whose Tasks hand detector sets it to 90, meaning 90 radians).

Usage (palm/face ROI from a detection, as the hand and face-mesh graphs do)::

    - calculator: DetectionsToRects
      input_stream: ["DETECTION:detection", "IMAGE_SIZE:image_size"]
      output_stream: "NORM_RECT:roi"
      options: {rotation_vector_start_keypoint_index: 0, rotation_vector_end_keypoint_index: 1,
                rotation_vector_target_angle_degrees: 0}

``DETECTIONS`` (a list) gives ``NORM_RECTS``, one rect per detection; ``IMAGE_SIZE`` is
(width, height).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._rects import one_or_many, output_rects, rotation_toward
from gpulite.pipeline.calculators.types import Detection, NormalizedRect, PipelineValueError
from gpulite.pipeline.registry import register_calculator

MODES = ("default", "use_bounding_box", "use_keypoints")


@dataclass(frozen=True)
class DetectionsToRectsOptions:
    """MediaPipe's ``DetectionsToRectsCalculatorOptions``; indices of -1 mean "no rotation"."""

    rotation_vector_start_keypoint_index: int = -1
    rotation_vector_end_keypoint_index: int = -1
    rotation_vector_target_angle_degrees: float = 0.0
    rotation_vector_target_angle: float | None = None  # radians; wins over the degrees when set
    output_zero_rect_for_empty_detections: bool = False
    conversion_mode: str = "default"

    def __post_init__(self) -> None:
        if self.conversion_mode not in MODES:
            raise ValueError(f"conversion_mode must be one of {MODES}, got {self.conversion_mode!r}")
        if (self.rotation_vector_start_keypoint_index < 0) != (self.rotation_vector_end_keypoint_index < 0):
            raise ValueError("give both rotation_vector_start/end_keypoint_index, or neither")

    @property
    def rotates(self) -> bool:
        return self.rotation_vector_start_keypoint_index >= 0


def detection_to_rect(detection: Detection, image_size: tuple[int, int] | None = None,
                      options: DetectionsToRectsOptions = DetectionsToRectsOptions()) -> NormalizedRect:
    """The region of one detection (see the module docstring)."""
    o = options
    if o.conversion_mode == "use_keypoints":
        if not detection.keypoints:
            raise PipelineValueError("DetectionsToRects: conversion_mode use_keypoints needs keypoints")
        xs = [k[0] for k in detection.keypoints]
        ys = [k[1] for k in detection.keypoints]
        x0, y0, x1, y1 = min(xs), min(ys), max(xs), max(ys)
    else:
        b = detection.box
        x0, y0, x1, y1 = b.xmin, b.ymin, b.xmax, b.ymax
    rotation = 0.0
    if o.rotates:
        if image_size is None:
            raise PipelineValueError("DetectionsToRects: a rotation vector needs IMAGE_SIZE (width, height)")
        s, e = o.rotation_vector_start_keypoint_index, o.rotation_vector_end_keypoint_index
        if max(s, e) >= len(detection.keypoints):
            raise PipelineValueError(f"DetectionsToRects: keypoint index {max(s, e)} out of range for a detection "
                                     f"with {len(detection.keypoints)} keypoints")
        w, h = image_size
        (kx0, ky0), (kx1, ky1) = detection.keypoints[s], detection.keypoints[e]
        target = (math.radians(o.rotation_vector_target_angle_degrees) if o.rotation_vector_target_angle is None
                  else o.rotation_vector_target_angle)
        rotation = rotation_toward((kx1 - kx0) * w, (ky1 - ky0) * h, target)
    return NormalizedRect((x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0, rotation)


@register_calculator
class DetectionsToRects(Calculator):
    """Detection(s) -> region(s) of interest; see the module docstring.

    Usage::

        - calculator: DetectionsToRects
          input_stream: ["DETECTIONS:detections", "IMAGE_SIZE:image_size"]
          output_stream: "NORM_RECTS:rois"
    """

    inputs = {"DETECTION": Detection, "DETECTIONS": list, "IMAGE_SIZE": tuple}
    outputs = {"NORM_RECT": NormalizedRect, "NORM_RECTS": list}
    optional_ports = frozenset({"DETECTION", "DETECTIONS", "IMAGE_SIZE"})
    options = DetectionsToRectsOptions

    def process(self, cc) -> None:
        o: DetectionsToRectsOptions = cc.options
        size = cc.inputs.get("IMAGE_SIZE")
        dets = one_or_many(cc, "DETECTION", "DETECTIONS")
        if dets is None:
            return
        rects = [detection_to_rect(d, size, o) for d in dets]
        if rects:
            output_rects(cc, rects)
        elif o.output_zero_rect_for_empty_detections:
            cc.output("NORM_RECT", NormalizedRect(0.0, 0.0, 0.0, 0.0))
            cc.output("NORM_RECTS", rects)
