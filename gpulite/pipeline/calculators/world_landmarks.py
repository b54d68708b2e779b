"""WorldLandmarkProjection and VisibilityCopy: MediaPipe's world-landmark calculators.

Pose and hand landmark models also output *world* landmarks: x, y, z in metres, origin at
the hips' centre (pose) or the hand's approximate geometric centre, in the rotated region's
frame. MediaPipe decodes them with ``TensorsToLandmarksCalculator`` at its defaults (no
division by the input size: ``TensorsToLandmarks`` with ``input_image_width/height`` left at
1), then:

- ``WorldLandmarkProjection`` (MediaPipe's ``WorldLandmarkProjectionCalculator``): undoes the
  region's rotation only (x' = cos r x - sin r y, y' = sin r x + cos r y; z, visibility and
  presence unchanged); no scale or translation, the landmarks are in metres, not image units.
  Without ``NORM_RECT`` the landmarks pass unchanged.
- ``VisibilityCopy`` (MediaPipe's ``VisibilityCopyCalculator``, copy_visibility and
  copy_presence): the pose model's world tensor has no visibility, so MediaPipe copies it,
  and presence, from the normalised landmarks of the same frame.

Usage (pose_landmark's world branch)::

    - calculator: VisibilityCopy
      input_stream: ["NORM_LANDMARKS_FROM:landmarks", "NORM_LANDMARKS_TO:world_in_roi"]
      output_stream: "NORM_LANDMARKS_TO:world_with_visibility"
    - calculator: WorldLandmarkProjection
      input_stream: ["NORM_LANDMARKS:world_with_visibility", "NORM_RECT:roi"]
      output_stream: "NORM_LANDMARKS:world_landmarks"
"""

from __future__ import annotations

import math

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import LandmarkList, NormalizedRect, PipelineValueError
from gpulite.pipeline.registry import register_calculator


def rotate_world_landmarks(landmarks: LandmarkList, rotation: float) -> LandmarkList:
    """``landmarks`` with x, y rotated by ``rotation`` radians (MediaPipe's float32 arithmetic)."""
    cosa, sina = np.float32(math.cos(rotation)), np.float32(math.sin(rotation))
    xyz, vis, pres = landmarks.columns()
    x, y = xyz[:, 0].astype(np.float32), xyz[:, 1].astype(np.float32)
    out = xyz.copy()
    out[:, 0], out[:, 1] = cosa * x - sina * y, sina * x + cosa * y
    return LandmarkList.from_arrays(out, vis, pres)


def copy_visibility(source: LandmarkList, target: LandmarkList) -> LandmarkList:
    """``target`` with each landmark's visibility and presence taken from ``source`` (same count)."""
    if len(source) != len(target):
        raise PipelineValueError(f"VisibilityCopy: {len(source)} landmarks to copy from, {len(target)} to copy to")
    _, vis, pres = source.columns()
    return LandmarkList.from_arrays(target.columns()[0], vis, pres)


@register_calculator
class WorldLandmarkProjection(Calculator):
    """World landmarks in a rotated region -> in the image's orientation; see the module docstring."""

    inputs = {"NORM_LANDMARKS": LandmarkList, "NORM_RECT": NormalizedRect}
    outputs = {"NORM_LANDMARKS": LandmarkList}
    optional_ports = frozenset({"NORM_RECT"})

    def process(self, cc) -> None:
        lms = cc.inputs["NORM_LANDMARKS"]
        if lms is None:
            return
        if "NORM_RECT" in cc.inputs:
            rect = cc.inputs["NORM_RECT"]
            if rect is None:  # MediaPipe emits nothing when a connected rect is missing
                return
            lms = rotate_world_landmarks(lms, rect.rotation)
        cc.output("NORM_LANDMARKS", lms)


@register_calculator
class VisibilityCopy(Calculator):
    """Visibility and presence from one landmark list onto another; see the module docstring."""

    inputs = {"NORM_LANDMARKS_FROM": LandmarkList, "NORM_LANDMARKS_TO": LandmarkList}
    outputs = {"NORM_LANDMARKS_TO": LandmarkList}

    def process(self, cc) -> None:
        source, target = cc.inputs["NORM_LANDMARKS_FROM"], cc.inputs["NORM_LANDMARKS_TO"]
        if source is None or target is None:
            return
        cc.output("NORM_LANDMARKS_TO", copy_visibility(source, target))
