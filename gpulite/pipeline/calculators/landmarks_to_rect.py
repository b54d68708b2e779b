"""HandLandmarksToRect: 21 hand landmarks -> the rotated rect around them (next frame's hand ROI).

MediaPipe's ``HandLandmarksToRectCalculator``: of 21 landmarks it keeps 12 (the wrist, the
thumb's first three joints, each finger's MCP and PIP: ``PARTIAL``); the rotation makes the
vector from the wrist to ``((p[4] + p[8]) / 2 + p[6]) / 2`` of those (the index, middle and ring
MCPs) point up; the rect is the bounding box of the 12 in that rotated frame, in pixels (hence
``IMAGE_SIZE``). Fewer than 21 landmarks are taken as that subset already (MediaPipe's legacy
input). The hand graph then grows it with
``RectTransformation`` (scale 2, shift_y -0.1, square_long).

Usage::

    - calculator: HandLandmarksToRect
      input_stream: ["LANDMARKS:multi_hand_landmarks", "IMAGE_SIZE:image_size"]
      output_stream: "NORM_RECTS:hand_rects_from_landmarks"
"""

from __future__ import annotations

import math

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._rects import (
    image_size,
    normalize_radians,
    one_or_many,
    output_rects,
    rotation_toward,
)
from gpulite.pipeline.calculators.types import LandmarkList, NormalizedRect, PipelineValueError
from gpulite.pipeline.registry import register_calculator

# MediaPipe's constants: indices into the partial landmarks (PARTIAL), as its code uses them
WRIST, INDEX_JOINT, MIDDLE_JOINT, RING_JOINT = 0, 4, 6, 8
NUM_LANDMARKS = 21
PARTIAL = [0, 1, 2, 3, 5, 6, 9, 10, 13, 14, 17, 18]  # wrist, thumb CMC..IP, each finger's MCP and PIP


def hand_landmarks_to_rect(landmarks: LandmarkList, image_size: tuple[int, int]) -> NormalizedRect:
    """The rect of one hand (see the module docstring)."""
    if len(landmarks) <= RING_JOINT:
        raise PipelineValueError(f"HandLandmarksToRect: expected 21 hand landmarks, got {len(landmarks)}")
    w, h = image_size
    pts = landmarks.array()[:, :2].astype(np.float64)
    if len(pts) == NUM_LANDMARKS:  # MediaPipe keeps only the palm's and the fingers' base joints
        pts = pts[PARTIAL]
    x0, y0 = pts[WRIST, 0] * w, pts[WRIST, 1] * h
    mx = ((pts[INDEX_JOINT, 0] + pts[RING_JOINT, 0]) / 2 + pts[MIDDLE_JOINT, 0]) / 2 * w
    my = ((pts[INDEX_JOINT, 1] + pts[RING_JOINT, 1]) / 2 + pts[MIDDLE_JOINT, 1]) / 2 * h
    rotation = rotation_toward(mx - x0, my - y0, math.pi / 2)
    reverse = normalize_radians(-rotation)
    cx, cy = (pts[:, 0].max() + pts[:, 0].min()) / 2, (pts[:, 1].max() + pts[:, 1].min()) / 2
    ox, oy = (pts[:, 0] - cx) * w, (pts[:, 1] - cy) * h
    c, s = math.cos(reverse), math.sin(reverse)
    px, py = ox * c - oy * s, ox * s + oy * c
    pcx, pcy = (px.max() + px.min()) / 2, (py.max() + py.min()) / 2
    c, s = math.cos(rotation), math.sin(rotation)
    center_x = pcx * c - pcy * s + w * cx
    center_y = pcx * s + pcy * c + h * cy
    return NormalizedRect(center_x / w, center_y / h, (px.max() - px.min()) / w, (py.max() - py.min()) / h, rotation)


@register_calculator
class HandLandmarksToRect(Calculator):
    """Hand landmarks -> rect(s); see the module docstring.

    Usage::

        - calculator: HandLandmarksToRect
          input_stream: ["NORM_LANDMARKS:hand_landmarks", "IMAGE_SIZE:image_size"]
          output_stream: "NORM_RECT:hand_rect"
    """

    inputs = {"NORM_LANDMARKS": LandmarkList, "LANDMARKS": list, "IMAGE_SIZE": tuple}
    outputs = {"NORM_RECT": NormalizedRect, "NORM_RECTS": list}
    optional_ports = frozenset({"NORM_LANDMARKS", "LANDMARKS"})

    def process(self, cc) -> None:
        hands = one_or_many(cc, "NORM_LANDMARKS", "LANDMARKS")
        if hands is not None:
            size = image_size(cc, "landmarks")
            output_rects(cc, [hand_landmarks_to_rect(lms, size) for lms in hands])
