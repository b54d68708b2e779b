"""MediaPipe Tasks' ``vision.drawing_utils``: the legacy drawing helpers, taking the Tasks' results.

mediapipe 1.2.2's ``draw_landmarks`` takes a list of ``NormalizedLandmark`` and connections as
``Connection(start, end)`` objects (``vision.FaceLandmarksConnections.FACE_LANDMARKS_TESSELATION``,
``vision.HandLandmarksConnections.HAND_CONNECTIONS``, ...), and ``draw_detection`` a Tasks
``Detection`` (a box in pixels); otherwise they draw as the legacy ones, with the same OpenCV
calls, which gpulite's :mod:`gpulite.solutions.drawing_utils` reproduces, so this module adapts
the arguments and draws with those::

    from gpulite.tasks.python.vision import drawing_utils, drawing_styles
    for face in result.face_landmarks:
        drawing_utils.draw_landmarks(bgr, face, vision.FaceLandmarksConnections.FACE_LANDMARKS_TESSELATION,
                                     None, drawing_styles.get_default_face_mesh_tesselation_style())
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from gpulite.solutions import drawing_utils as _legacy
from gpulite.solutions.drawing_utils import (
    BLACK_COLOR,
    BLUE_COLOR,
    GREEN_COLOR,
    RED_COLOR,
    WHITE_COLOR,
    DrawingSpec,
    _normalized_to_pixel_coordinates,
    draw_axis,
)

__all__ = ["BLACK_COLOR", "BLUE_COLOR", "GREEN_COLOR", "RED_COLOR", "WHITE_COLOR", "DrawingSpec", "draw_axis",
           "draw_detection", "draw_landmarks", "plot_landmarks"]


class _Landmarks:
    """A list of landmarks seen as the legacy ``NormalizedLandmarkList`` (``.landmark``)."""

    def __init__(self, points: Any) -> None:
        self.landmark = list(points)
        if self.landmark and isinstance(self.landmark[0], list | tuple):
            raise TypeError("landmark_list: expected the landmarks of one face, hand or pose (e.g. "
                            "result.face_landmarks[0]), got a list of lists (a result's list of them all: draw each)")

    def __bool__(self) -> bool:
        return bool(self.landmark)


def _pairs(connections: Iterable[Any] | None) -> list[tuple[int, int]] | None:
    """``Connection(start, end)`` objects (or index pairs) as index pairs."""
    if connections is None:
        return None
    return [(c.start, c.end) if hasattr(c, "start") else (c[0], c[1]) for c in connections]


_RED_SPEC = DrawingSpec(color=RED_COLOR)     # MediaPipe's defaults
_WHITE_SPEC = DrawingSpec()
_PLOT_LANDMARK_SPEC = DrawingSpec(color=RED_COLOR, thickness=5)
_PLOT_CONNECTION_SPEC = DrawingSpec(color=BLACK_COLOR, thickness=5)


def draw_landmarks(image: np.ndarray, landmark_list: Any, connections: Iterable[Any] | None = None,
                   landmark_drawing_spec: DrawingSpec | Mapping[int, DrawingSpec] | None = _RED_SPEC,
                   connection_drawing_spec: DrawingSpec | Mapping[tuple[int, int], DrawingSpec] | None = _WHITE_SPEC,
                   is_drawing_landmarks: bool = True) -> None:
    """Draw a list of landmarks and their connections on ``image`` (BGR, (H, W, 3) uint8), in place."""
    if not landmark_list:
        return
    _legacy.draw_landmarks(image, _Landmarks(landmark_list), _pairs(connections), landmark_drawing_spec,
                           connection_drawing_spec, is_drawing_landmarks)


def draw_detection(image: np.ndarray, detection: Any, keypoint_drawing_spec: DrawingSpec = _RED_SPEC,
                   bbox_drawing_spec: DrawingSpec = _WHITE_SPEC) -> None:
    """Draw a Tasks ``Detection`` (its keypoints and its box in pixels) on ``image``, in place."""
    image = _legacy._check_image(image)
    if not hasattr(detection, "bounding_box"):
        raise TypeError(f"detection: expected one Detection (e.g. result.detections[0]), got "
                        f"{type(detection).__name__}")
    h, w = image.shape[:2]
    for k in detection.keypoints or []:
        xy = _normalized_to_pixel_coordinates(k.x, k.y, w, h)
        if xy is not None:  # MediaPipe's cv2.circle fails on a keypoint outside the image
            _legacy._circle(image, xy, keypoint_drawing_spec.circle_radius, keypoint_drawing_spec.color,
                            keypoint_drawing_spec.thickness)
    b = detection.bounding_box
    _legacy.cv2.rectangle(image, (b.origin_x, b.origin_y), (b.origin_x + b.width, b.origin_y + b.height),
                          _legacy._color(bbox_drawing_spec.color), bbox_drawing_spec.thickness)


def plot_landmarks(landmark_list: Any, connections: Iterable[Any] | None = None,
                   landmark_drawing_spec: DrawingSpec = _PLOT_LANDMARK_SPEC,
                   connection_drawing_spec: DrawingSpec = _PLOT_CONNECTION_SPEC,
                   elevation: int = 10, azimuth: int = 10) -> None:
    """Plot a list of landmarks in 3-D with matplotlib (MediaPipe's ``plot_landmarks``)."""
    if not landmark_list:
        return
    _legacy.plot_landmarks(_Landmarks(landmark_list), _pairs(connections), landmark_drawing_spec,
                           connection_drawing_spec, elevation, azimuth)
