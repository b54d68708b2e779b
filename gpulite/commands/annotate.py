"""Drawing any solution's result on its image, for ``gpulite demo`` and ``gpulite detect -o``.

Works by the result's attribute names (MediaPipe's): ``detections`` / ``palm_detections`` /
``pose_detection`` (boxes and keypoints), ``multi_face_landmarks`` / ``multi_hand_landmarks``
(lists of landmark lists), ``pose_landmarks`` (one list), ``segmentation_mask`` (blended).
Thickness and dot size grow with the image, so annotations stay visible on large frames.

Usage::

    from gpulite.commands.annotate import draw_result
    annotated = draw_result(rgb, result, scale=2)      # (2H, 2W, 3) uint8 copy
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image, ImageDraw

BOX = (0, 255, 0)            # detection boxes: bright green
KEYPOINT = (255, 40, 40)     # detection keypoints: red
LANDMARK = (0, 230, 255)     # landmarks: cyan
IRIS = (255, 230, 0)         # iris landmarks (refined face mesh 468-477): yellow
MASK = (255, 0, 255)         # segmentation: magenta


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
    if getattr(result, "pose_detection", None) is not None:
        out.append(result.pose_detection)
    return out


def draw_result(image: np.ndarray, result: Any, *, scale: int = 1, unit: int | None = None) -> np.ndarray:
    """A copy of ``image`` (RGB uint8), enlarged ``scale`` times, with ``result`` drawn on it.

    ``unit`` is the line width / dot size step in output pixels (default: 1 per 320 pixels).
    Landmarks are drawn first, so boxes and detection keypoints stay on top.
    """
    h, w = image.shape[:2]
    pil = Image.fromarray(np.ascontiguousarray(image[..., :3]))
    if scale != 1:
        pil = pil.resize((w * scale, h * scale), Image.LANCZOS)
    width, height = pil.size
    mask = getattr(result, "segmentation_mask", None)
    if mask is not None:
        m = np.asarray(mask, np.float32)
        if m.shape[:2] != (height, width):
            m = np.asarray(Image.fromarray(m).resize((width, height), Image.BILINEAR))
        arr = np.asarray(pil, np.float32)
        alpha = 0.5 * np.clip(m, 0, 1)[..., None]
        pil = Image.fromarray((arr * (1 - alpha) + np.array(MASK, np.float32) * alpha).round().astype(np.uint8))
    draw = ImageDraw.Draw(pil)
    unit = unit or max(1, round(max(width, height) / 320))          # 1 px per 320 px of image
    for lms in _landmark_lists(result):
        r = unit * (0.75 if len(lms) > 100 else 2)
        for i, p in enumerate(lms.landmark):
            iris = len(lms) == 478 and i >= 468
            ri = 1.5 * r if iris else r
            x, y = p.x * width, p.y * height
            draw.ellipse([x - ri, y - ri, x + ri, y + ri], fill=IRIS if iris else LANDMARK)
    for d in _detections(result):
        b = d.relative_bounding_box
        draw.rectangle([b.xmin * width, b.ymin * height, b.xmax * width, b.ymax * height], outline=BOX, width=2 * unit)
        r = 2.5 * unit
        for k in d.keypoints:
            x, y = k.x * width, k.y * height
            draw.ellipse([x - r, y - r, x + r, y + r], fill=KEYPOINT, outline=(0, 0, 0))
    return np.asarray(pil)


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
