"""MediaPipe's ``mp.solutions.drawing_utils``: ``draw_landmarks``, ``draw_detection``, ``draw_axis``,
``plot_landmarks``, ``DrawingSpec``.

The same names, arguments, defaults and colour constants as mediapipe 0.10.14, and the same
OpenCV calls (``cv2.line``, ``cv2.circle``, ``cv2.rectangle``, ``cv2.arrowedLine``), so the pixels
drawn are MediaPipe's (tests/solutions/test_mediapipe_api.py compares them)::

    import gpulite as mp                                   # was: import mediapipe as mp
    mp_drawing, mp_hands = mp.solutions.drawing_utils, mp.solutions.hands

    with mp_hands.Hands() as hands:
        results = hands.process(rgb)
    for lms in results.multi_hand_landmarks or []:
        mp_drawing.draw_landmarks(rgb, lms, mp_hands.HAND_CONNECTIONS,
                                  mp_drawing.DrawingSpec(color=(0, 0, 255), thickness=2, circle_radius=3))
    for world in results.multi_hand_world_landmarks or []:
        mp_drawing.plot_landmarks(world, mp_hands.HAND_CONNECTIONS, azimuth=5)   # matplotlib, 3-D

As in MediaPipe: drawing is in place on an (H, W, 3) uint8 image; colours are used as given
(MediaPipe's constants are BGR, for OpenCV images: ``RED_COLOR`` is ``(0, 0, 255)``);
landmarks outside the image, or with visibility or presence below 0.5, are not drawn, nor are
the connections that touch them; a connection naming a landmark that does not exist raises
``ValueError``; each landmark is a circle of ``circle_radius`` inside a light grey one, both
``thickness`` wide (a negative thickness fills, as OpenCV's ``FILLED``); ``None`` as a
drawing spec draws nothing of that kind. Lines and circles are OpenCV's default ``LINE_8``, not
anti-aliased, as MediaPipe draws them. Unlike MediaPipe, a read-only image is refused with a
``ValueError`` (MediaPipe's OpenCV call fails on it), and a detection keypoint outside the
image is skipped (MediaPipe's ``cv2.circle`` fails on it). ``_normalized_to_pixel_coordinates``
is MediaPipe's helper of that name, which samples import.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulite.pipeline.calculators._opencv import cv2

__all__ = ["BLACK_COLOR", "BLUE_COLOR", "GREEN_COLOR", "RED_COLOR", "WHITE_COLOR", "DrawingSpec", "draw_axis",
           "draw_detection", "draw_landmarks", "plot_landmarks"]

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
_PLOT_LANDMARK_SPEC = DrawingSpec(color=RED_COLOR, thickness=5)         # plot_landmarks' defaults
_PLOT_CONNECTION_SPEC = DrawingSpec(color=BLACK_COLOR, thickness=5)


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


def _normalized_to_pixel_coordinates(normalized_x: float, normalized_y: float, image_width: int,
                                     image_height: int) -> tuple[int, int] | None:
    """Normalised (x, y) -> integer pixel (x, y), or None outside [0, 1] (MediaPipe's helper, same name).

    Values within ``math.isclose`` of 0 or 1 count as inside; 1.0 maps to the last pixel.
    """
    def valid(v: float) -> bool:
        return (v > 0 or math.isclose(0, v)) and (v < 1 or math.isclose(1, v))

    if not (valid(normalized_x) and valid(normalized_y)):
        return None
    return (min(math.floor(normalized_x * image_width), image_width - 1),
            min(math.floor(normalized_y * image_height), image_height - 1))


def _has(landmark: Any, name: str) -> bool:
    """Whether ``landmark`` sets ``name``: ``HasField`` (gpulite's results, MediaPipe's protobufs), else not None
    (e.g. MediaPipe Tasks' landmark dataclasses)."""
    has_field = getattr(landmark, "HasField", None)
    return has_field(name) if has_field is not None else getattr(landmark, name, None) is not None


def _hidden(landmark: Any) -> bool:
    """Whether a landmark sets a visibility or presence below 0.5 (then it is not drawn)."""
    return ((_has(landmark, "visibility") and landmark.visibility < VISIBILITY_THRESHOLD)
            or (_has(landmark, "presence") and landmark.presence < PRESENCE_THRESHOLD))


def _check_connection(connection: tuple[int, int], count: int) -> tuple[int, int]:
    a, b = connection[0], connection[1]
    if not (0 <= a < count and 0 <= b < count):
        raise ValueError(f"Landmark index is out of range. Invalid connection from landmark #{a} to landmark "
                         f"#{b} ({count} landmarks).")
    return a, b


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
        xy = None if _hidden(p) else _normalized_to_pixel_coordinates(p.x, p.y, w, h)
        if xy is not None:
            px[i] = xy
    if connections and connection_drawing_spec:
        for connection in connections:
            a, b = _check_connection(connection, len(points))
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
        xy = _normalized_to_pixel_coordinates(k.x, k.y, w, h)
        if xy is not None:
            _circle(image, xy, keypoint_drawing_spec.circle_radius, keypoint_drawing_spec.color,
                    keypoint_drawing_spec.thickness)
    box = location.relative_bounding_box
    start = _normalized_to_pixel_coordinates(box.xmin, box.ymin, w, h)
    end = _normalized_to_pixel_coordinates(box.xmin + box.width, box.ymin + box.height, w, h)
    if start is None or end is None:
        return
    cv2.rectangle(image, start, end, _color(bbox_drawing_spec.color), bbox_drawing_spec.thickness)


def draw_axis(image: np.ndarray, rotation: np.ndarray, translation: np.ndarray,
              focal_length: tuple[float, float] = (1.0, 1.0), principal_point: tuple[float, float] = (0.0, 0.0),
              axis_length: float = 0.1, axis_drawing_spec: DrawingSpec = _WHITE_SPEC) -> None:
    """Draw an object's x, y, z axes (red, green, blue arrows) on ``image``, in place (MediaPipe's ``draw_axis``).

    ``rotation`` (3, 3) and ``translation`` (3,) take the object's frame to the camera's;
    the axes, ``axis_length`` long, are projected with ``focal_length`` and ``principal_point``
    in normalised device coordinates (clipped to [-1, 1]), as MediaPipe projects them.
    """
    image = _check_image(image)
    h, w = image.shape[:2]
    axes = np.float32([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])     # origin, x, y, z
    cam = np.matmul(rotation, axis_length * axes.T).T + translation
    x, y, z = cam[..., 0], cam[..., 1], cam[..., 2]
    (fx, fy), (px, py) = focal_length, principal_point
    x_ndc = np.clip(-fx * x / (z + 1e-5) + px, -1., 1.)
    y_ndc = np.clip(-fy * y / (z + 1e-5) + py, -1., 1.)
    cols = np.int32((1 + x_ndc) * 0.5 * w)
    rows = np.int32((1 - y_ndc) * 0.5 * h)
    origin = (int(cols[0]), int(rows[0]))
    for k, color in ((1, RED_COLOR), (2, GREEN_COLOR), (3, BLUE_COLOR)):
        cv2.arrowedLine(image, origin, (int(cols[k]), int(rows[k])), color, axis_drawing_spec.thickness)


def _rgb_unit(color: Any) -> tuple[float, ...]:
    """A BGR DrawingSpec colour as matplotlib's RGB in [0, 1]."""
    return tuple(v / 255.0 for v in tuple(color)[::-1])


def plot_landmarks(landmark_list: Any, connections: Iterable[tuple[int, int]] | None = None,
                   landmark_drawing_spec: DrawingSpec = _PLOT_LANDMARK_SPEC,
                   connection_drawing_spec: DrawingSpec = _PLOT_CONNECTION_SPEC,
                   elevation: int = 10, azimuth: int = 10) -> None:
    """Plot landmarks and connections in 3-D with matplotlib, then ``plt.show()`` (MediaPipe's ``plot_landmarks``).

    As MediaPipe plots them: a new 10x10 inch figure, axes (-z, x, -y), viewed from
    ``elevation`` and ``azimuth`` degrees; landmarks with visibility or presence below 0.5 and
    the connections touching them are left out. Meant for world landmarks
    (``results.pose_world_landmarks``, ``multi_hand_world_landmarks``); any landmark list works.

    Raises
    ------
    ImportError
        matplotlib is not installed.
    ValueError
        A connection names a landmark that does not exist.
    """
    if not landmark_list:
        return
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError(f"plot_landmarks needs matplotlib (pip install matplotlib): {e}") from None
    points = list(landmark_list.landmark)
    plt.figure(figsize=(10, 10))
    ax = plt.axes(projection="3d")
    ax.view_init(elev=elevation, azim=azimuth)
    plotted: dict[int, tuple[float, float, float]] = {}
    for i, p in enumerate(points):
        if _hidden(p):
            continue
        ax.scatter3D(xs=[-p.z], ys=[p.x], zs=[-p.y], color=_rgb_unit(landmark_drawing_spec.color),
                     linewidth=landmark_drawing_spec.thickness)
        plotted[i] = (-p.z, p.x, -p.y)
    for connection in connections or ():
        a, b = _check_connection(connection, len(points))
        if a in plotted and b in plotted:
            (xa, ya, za), (xb, yb, zb) = plotted[a], plotted[b]
            ax.plot3D(xs=[xa, xb], ys=[ya, yb], zs=[za, zb], color=_rgb_unit(connection_drawing_spec.color),
                      linewidth=connection_drawing_spec.thickness)
    plt.show()
