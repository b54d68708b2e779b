"""Drawing any solution's result on its image, for ``gpulite demo`` and ``gpulite detect -o``.

Works by the result's attribute names (MediaPipe's): ``detections`` / ``palm_detections``
(boxes and keypoints), ``multi_face_landmarks`` / ``multi_hand_landmarks`` (lists of landmark
lists), ``pose_landmarks`` (one list), ``segmentation_mask`` (blended). A pose result's
``pose_detection`` is not drawn: its box is the pose detector's face box and its keypoints
are body-scale points, which would read as a face detection; the landmarks show the pose.
Landmarks are joined by MediaPipe's connection lists (face mesh tesselation and irises, hand,
pose), all drawn with OpenCV, anti-aliased at sub-pixel positions. Thickness and dot size grow
with the image, so annotations stay visible on large frames.

Usage::

    from gpulite.commands.annotate import draw_result
    annotated = draw_result(rgb, result, scale=2)      # (2H, 2W, 3) uint8 copy
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from gpulite.pipeline.calculators._opencv import cv2
from gpulite.pipeline.calculators.annotation_overlay import blend_mask, draw_lines
from gpulite.solutions import connections as mp

BOX = (0, 255, 0)            # detection boxes: bright green
KEYPOINT = (255, 40, 40)     # detection keypoints: red
LANDMARK = (0, 230, 255)     # landmarks: cyan
MESH = (0, 150, 170)         # face mesh, hand and pose connections: dark cyan
IRIS = (255, 230, 0)         # iris landmarks (refined face mesh 468-477): yellow
MASK = (255, 0, 255)         # segmentation: magenta
_SHIFT = 4                   # sub-pixel bits of OpenCV's drawing coordinates
CONNECTIONS = {21: mp.HAND_CONNECTIONS, 33: mp.POSE_CONNECTIONS, 468: mp.FACEMESH_TESSELATION,
               478: mp.FACEMESH_TESSELATION | mp.FACEMESH_IRISES}


def _landmark_lists(result: Any) -> list[Any]:
    out: list[Any] = []
    for name in ("multi_face_landmarks", "multi_hand_landmarks"):
        out.extend(getattr(result, name, None) or [])
    pose = getattr(result, "pose_landmarks", None)
    if pose is not None:
        out.append(pose)
    return out


def _detections(result: Any) -> list[Any]:
    out: list[Any] = []
    for name in ("detections", "palm_detections"):
        out.extend(getattr(result, name, None) or [])
    return out


def _dot(img: np.ndarray, x: float, y: float, r: float, color: tuple[int, int, int], outline: bool = False) -> None:
    if not (np.isfinite(x) and np.isfinite(y)):
        return
    f = 1 << _SHIFT
    centre, radius = (round(x * f), round(y * f)), max(round(r * f), 1)
    cv2.circle(img, centre, radius, color, cv2.FILLED, cv2.LINE_AA, _SHIFT)
    if outline:
        cv2.circle(img, centre, radius, (0, 0, 0), 1, cv2.LINE_AA, _SHIFT)


def draw_result(image: np.ndarray, result: Any, *, scale: int = 1, unit: int | None = None) -> np.ndarray:
    """A copy of ``image`` (RGB uint8), enlarged ``scale`` times, with ``result`` drawn on it.

    ``unit`` is the line width / dot size step in output pixels (default: 1 per 320 pixels).
    Landmarks are drawn first, so boxes and detection keypoints stay on top.
    """
    h, w = image.shape[:2]
    out = np.ascontiguousarray(image[..., :3])
    out = cv2.resize(out, (w * scale, h * scale), interpolation=cv2.INTER_CUBIC) if scale != 1 else out.copy()
    height, width = out.shape[:2]
    mask = getattr(result, "segmentation_mask", None)
    if mask is not None:
        m = np.asarray(mask, np.float32)
        if m.shape[:2] != (height, width):
            m = cv2.resize(m, (width, height), interpolation=cv2.INTER_LINEAR)
        blend_mask(out, m, MASK, 0.5)
    unit = unit or max(1, round(max(width, height) / 320))          # 1 px per 320 px of image
    size = np.array([width, height], np.float64)
    for lms in _landmark_lists(result):
        pts = lms.array()[:, :2].astype(np.float64) * size
        pairs = np.array(sorted(CONNECTIONS.get(len(pts), ())), np.intp).reshape(-1, 2)
        draw_lines(out, pts[pairs], MESH, max(1, unit // 2) if len(pts) > 100 else unit)
        r = unit * (0.75 if len(pts) > 100 else 2)
        for i, (x, y) in enumerate(pts):
            iris = len(pts) == 478 and i >= 468
            _dot(out, x, y, 1.5 * r if iris else r, IRIS if iris else LANDMARK)
    for d in _detections(result):
        b = d.relative_bounding_box
        corners = np.array([(b.xmin, b.ymin), (b.xmax, b.ymin), (b.xmax, b.ymax), (b.xmin, b.ymax)]) * size
        draw_lines(out, np.stack([corners, np.roll(corners, -1, axis=0)], axis=1), BOX, 2 * unit)
        for k in d.keypoints:
            _dot(out, k.x * width, k.y * height, 2.5 * unit, KEYPOINT, outline=True)
    return out


def face_closeup(image: np.ndarray, result: Any, box: Any, *, size: int = 640, margin: float = 1.6) -> np.ndarray:
    """A ``size`` x ``size`` close-up of ``box`` (a RelativeBoundingBox) with ``result`` drawn finely."""
    h, w = image.shape[:2]
    side = margin * max(box.width * w, box.height * h)
    scale = max(1, int(np.ceil(size / side)))
    big = draw_result(image, result, scale=scale, unit=max(1, round(3 * scale * side / size)))
    cx, cy = (box.xmin + box.width / 2) * w * scale, (box.ymin + box.height / 2) * h * scale
    half = side * scale / 2
    crop = Image.fromarray(big).crop((round(cx - half), round(cy - half), round(cx + half), round(cy + half)))
    return np.asarray(crop.resize((size, size), Image.LANCZOS))
