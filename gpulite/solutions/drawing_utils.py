"""MediaPipe's ``mp.solutions.drawing_utils``: ``draw_landmarks``, ``draw_detection``, ``DrawingSpec``.

The same names, arguments, defaults and colour constants as mediapipe 0.10.14, and the same
OpenCV calls (``cv2.line``, ``cv2.circle``, ``cv2.rectangle``), so the pixels drawn are MediaPipe's::

    from gpulite.solutions import drawing_utils as mp_drawing, hands as mp_hands

    with mp_hands.Hands() as hands:
        results = hands.process(rgb)
    for lms in results.multi_hand_landmarks or []:
        mp_drawing.draw_landmarks(rgb, lms, mp_hands.HAND_CONNECTIONS,
                                  mp_drawing.DrawingSpec(color=(0, 0, 255), thickness=2, circle_radius=3))

As in MediaPipe: drawing is in place on an (H, W, 3) uint8 image; colours are used as given
(MediaPipe's constants are BGR, for OpenCV images: ``RED_COLOR`` is ``(0, 0, 255)``);
landmarks outside the image, or with visibility or presence below 0.5, are not drawn, nor are
the connections that touch them; a connection naming a landmark that does not exist raises
``ValueError``; each landmark is a circle of ``circle_radius`` inside a light grey one, both
``thickness`` wide (a negative thickness fills, as OpenCV's ``FILLED``); ``None`` as a
drawing spec draws nothing of that kind. Lines and circles are OpenCV's default ``LINE_8``, not
anti-aliased, as MediaPipe draws them. ``draw_axis`` and ``plot_landmarks`` (matplotlib) are
not provided.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulite.pipeline.calculators._opencv import cv2

__all__ = ["BLACK_COLOR", "BLUE_COLOR", "GREEN_COLOR", "RED_COLOR", "WHITE_COLOR", "DrawingSpec", "draw_detection",
           "draw_landmarks"]

PRESENCE_THRESHOLD = 0.5
VISIBILITY_THRESHOLD = 0.5
WHITE_COLOR = (224, 224, 224)
BLACK_COLOR = (0, 0, 0)
RED_COLOR = (0, 0, 255)
GREEN_COLOR = (0, 128, 0)
BLUE_COLOR = (255, 0, 0)


@dataclass
class DrawingSpec:
    """How to draw: ``color`` (3 ints, used as given), line ``thickness`` and ``circle_radius`` in pixels."""

    color: tuple[int, int, int] = WHITE_COLOR
    thickness: int = 2
    circle_radius: int = 2


_RED_SPEC = DrawingSpec(color=RED_COLOR)     # MediaPipe's defaults for landmarks and keypoints
_WHITE_SPEC = DrawingSpec()                  # ... and for connections and boxes

def _check_image(image: Any) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise TypeError(f"image must be a numpy array (H, W, 3) uint8, got {type(image).__name__}")
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"image must contain three channels, (H, W, 3), got shape {image.shape}")
    if image.dtype != np.uint8:
        raise ValueError(f"image must be uint8, got {image.dtype}")
    if not image.flags.writeable:
        raise ValueError("image is read-only (np.asarray of a PIL image is); draw on a copy: image = image.copy()")
    return image


def _to_pixel(x: float, y: float, width: int, height: int) -> tuple[int, int] | None:
    """MediaPipe's ``_normalized_to_pixel_coordinates``: None outside [0, 1]."""
    def valid(v: float) -> bool:
        return (v > 0 or math.isclose(0, v)) and (v < 1 or math.isclose(1, v))

    if not (valid(x) and valid(y)):
        return None
    return min(math.floor(x * width), width - 1), min(math.floor(y * height), height - 1)


def _has(landmark: Any, name: str) -> bool:
    """Whether ``landmark`` sets ``name`` (gpulite: not None; a MediaPipe protobuf: ``HasField``)."""
    if hasattr(landmark, "HasField"):
        return landmark.HasField(name)
    return getattr(landmark, name, None) is not None


def _color(color: Any) -> tuple[int, int, int]:
    return tuple(int(c) for c in color)[:3]  # type: ignore[return-value]


def _circle(image: np.ndarray, center: tuple[int, int], radius: int, color: Any, thickness: int) -> None:
    cv2.circle(image, center, radius, _color(color), thickness)


def _line(image: np.ndarray, a: tuple[int, int], b: tuple[int, int], color: Any, thickness: int) -> None:
    cv2.line(image, a, b, _color(color), max(thickness, 1))


def draw_landmarks(image: np.ndarray, landmark_list: Any, connections: Iterable[tuple[int, int]] | None = None,
                   landmark_drawing_spec: DrawingSpec | Mapping[int, DrawingSpec] | None = _RED_SPEC,
                   connection_drawing_spec: DrawingSpec | Mapping[tuple[int, int], DrawingSpec] | None = _WHITE_SPEC,
                   is_drawing_landmarks: bool = True) -> None:
    """Draw landmarks and their connections on ``image``, in place (MediaPipe's ``draw_landmarks``).

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) uint8, writable.
    landmark_list : LandmarkList
        A gpulite landmark list (or a MediaPipe ``NormalizedLandmarkList``); None draws nothing.
    connections : iterable of (int, int), optional
        Landmark index pairs to join, e.g. ``HAND_CONNECTIONS``.
    landmark_drawing_spec, connection_drawing_spec : DrawingSpec, mapping or None
        One spec for all, a mapping per landmark index / per connection, or None (none drawn).
    is_drawing_landmarks : bool
        False: connections only.

    Raises
    ------
    TypeError, ValueError
        ``image`` is not a writable (H, W, 3) uint8 array; a connection's index is out of range.
    """
    if not landmark_list:
        return
    image = _check_image(image)
    h, w = image.shape[:2]
    points = list(landmark_list.landmark)
    px: dict[int, tuple[int, int]] = {}
    for i, p in enumerate(points):
        if ((_has(p, "visibility") and p.visibility < VISIBILITY_THRESHOLD)
                or (_has(p, "presence") and p.presence < PRESENCE_THRESHOLD)):
            continue
        xy = _to_pixel(p.x, p.y, w, h)
        if xy is not None:
            px[i] = xy
    if connections and connection_drawing_spec:
        for connection in connections:
            a, b = connection[0], connection[1]
            if not (0 <= a < len(points) and 0 <= b < len(points)):
                raise ValueError(f"Landmark index is out of range. Invalid connection from landmark #{a} to landmark "
                                 f"#{b} ({len(points)} landmarks).")
            if a in px and b in px:
                spec = (connection_drawing_spec[connection] if isinstance(connection_drawing_spec, Mapping)
                        else connection_drawing_spec)
                _line(image, px[a], px[b], spec.color, spec.thickness)
    if is_drawing_landmarks and landmark_drawing_spec:
        for i, xy in px.items():
            spec = landmark_drawing_spec[i] if isinstance(landmark_drawing_spec, Mapping) else landmark_drawing_spec
            border = max(spec.circle_radius + 1, int(spec.circle_radius * 1.2))
            _circle(image, xy, border, WHITE_COLOR, spec.thickness)
            _circle(image, xy, spec.circle_radius, spec.color, spec.thickness)


def draw_detection(image: np.ndarray, detection: Any, keypoint_drawing_spec: DrawingSpec = _RED_SPEC,
                   bbox_drawing_spec: DrawingSpec = _WHITE_SPEC) -> None:
    """Draw a detection's box and keypoints on ``image``, in place (MediaPipe's ``draw_detection``).

    ``detection``: a gpulite :class:`~gpulite.solutions.results.Detection` (or a MediaPipe
    ``Detection``); keypoints and box corners outside the image are skipped.
    """
    if not detection or not detection.location_data:
        return
    image = _check_image(image)
    h, w = image.shape[:2]
    location = detection.location_data
    for k in location.relative_keypoints:
        xy = _to_pixel(k.x, k.y, w, h)
        if xy is not None:
            _circle(image, xy, keypoint_drawing_spec.circle_radius, keypoint_drawing_spec.color,
                    keypoint_drawing_spec.thickness)
    box = location.relative_bounding_box
    start = _to_pixel(box.xmin, box.ymin, w, h)
    end = _to_pixel(box.xmin + box.width, box.ymin + box.height, w, h)
    if start is None or end is None:
        return
    cv2.rectangle(image, start, end, _color(bbox_drawing_spec.color), bbox_drawing_spec.thickness)
