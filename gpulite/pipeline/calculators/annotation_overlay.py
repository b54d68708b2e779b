"""AnnotationOverlay: draw detections, rects, landmarks and masks onto a copy of the image (OpenCV).

After MediaPipe's ``AnnotationOverlayCalculator`` fed by its ``*ToRenderData`` calculators:
boxes as outlines (``cv2.rectangle``), keypoints and landmarks as filled dots, landmark
connections and rotated rects as lines -- anti-aliased, at sub-pixel positions (1/16 pixel) --
and masks blended in one colour with ``mask_alpha * mask`` opacity (``cv2.blendLinear``).

Usage::

    - calculator: AnnotationOverlay
      input_stream: ["IMAGE:image", "DETECTIONS:detections", "MASK:mask"]   # all but IMAGE optional
      output_stream: "IMAGE:output_image"
      options: {box_color: [0, 255, 0], thickness: 2}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._opencv import cv2
from gpulite.pipeline.calculators.types import (
    Detection,
    LandmarkList,
    NormalizedRect,
    PipelineValueError,
    Segmentation,
    rect_corners,
)
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class AnnotationOverlayOptions:
    """Colours are RGB; ``thickness``/``keypoint_radius`` in pixels."""

    box_color: tuple[int, int, int] = (0, 255, 0)
    keypoint_color: tuple[int, int, int] = (255, 0, 0)
    landmark_color: tuple[int, int, int] = (255, 0, 0)
    connection_color: tuple[int, int, int] = (255, 255, 255)
    rect_color: tuple[int, int, int] = (0, 128, 255)
    mask_color: tuple[int, int, int] = (0, 0, 255)
    mask_alpha: float = 0.5
    thickness: int = 2
    keypoint_radius: int = 3
    landmark_connections: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.landmark_connections:
            object.__setattr__(self, "landmark_connections", tuple(tuple(c) for c in self.landmark_connections))
        if not 0.0 <= self.mask_alpha <= 1.0:
            raise ValueError(f"mask_alpha must be in [0, 1], got {self.mask_alpha}")
        if self.thickness < 1 or self.keypoint_radius < 0:
            raise ValueError("thickness must be >= 1 and keypoint_radius >= 0")


_SHIFT = 4  # sub-pixel bits of OpenCV's drawing coordinates: positions in 1/16 pixel


def _color(img: np.ndarray, color) -> tuple[int, ...]:
    """``color`` as OpenCV wants it: ints, opaque alpha on an RGBA image."""
    c = tuple(int(v) for v in color)[:3]
    return (*c, 255) if img.shape[2] == 4 else c


def _fixed(points: np.ndarray) -> np.ndarray:
    """Pixel coordinates as OpenCV's fixed-point int32 (``shift`` = 4); non-finite ones become far away."""
    p = np.nan_to_num(np.asarray(points, np.float64) * (1 << _SHIFT), nan=-1e9, posinf=1e9, neginf=-1e9)
    return np.round(np.clip(p, -2**30, 2**30)).astype(np.int32)


def draw_box(img: np.ndarray, x0: float, y0: float, x1: float, y1: float, color, thickness: int) -> None:
    """Outline of an axis-aligned box in pixel coordinates (``cv2.rectangle``), in place."""
    (xa, ya), (xb, yb) = (_fixed([(x0, y0), (x1, y1)]) + (1 << (_SHIFT - 1))) >> _SHIFT  # nearest pixel
    cv2.rectangle(img, (int(xa), int(ya)), (int(xb), int(yb)), _color(img, color), thickness)


def draw_dots(img: np.ndarray, points: np.ndarray, color, radius: int) -> None:
    """Filled anti-aliased discs at (N, 2) pixel points, in place."""
    c = _color(img, color)
    for x, y in _fixed(np.asarray(points, np.float64).reshape(-1, 2)):
        cv2.circle(img, (int(x), int(y)), radius << _SHIFT, c, cv2.FILLED, cv2.LINE_AA, _SHIFT)


def draw_lines(img: np.ndarray, segments: np.ndarray, color, thickness: int) -> None:
    """Anti-aliased lines between (N, 2, 2) pixel point pairs, in place (one ``cv2.polylines``)."""
    seg = _fixed(np.asarray(segments, np.float64).reshape(-1, 2, 2))
    if len(seg):
        cv2.polylines(img, list(seg), False, _color(img, color), thickness, cv2.LINE_AA, _SHIFT)


def blend_mask(img: np.ndarray, mask: np.ndarray, color, alpha: float) -> None:
    """Blend ``color`` over ``img`` with opacity ``alpha * mask`` (mask in [0, 1], image size), in place."""
    if mask.shape[:2] != img.shape[:2]:
        raise PipelineValueError(f"AnnotationOverlay: mask {mask.shape[:2]} does not match image {img.shape[:2]}")
    a = np.clip(mask, 0.0, 1.0, dtype=np.float32) * np.float32(alpha)
    solid = np.empty_like(img)
    solid[...] = _color(img, color)[: img.shape[2]]
    img[...] = cv2.blendLinear(img, solid, np.float32(1.0) - a, a)


def annotate(image: np.ndarray, *, detections: list[Detection] = (), rects: list[NormalizedRect] = (),
             landmarks: list[LandmarkList] = (), mask: Segmentation | None = None,
             options: AnnotationOverlayOptions = AnnotationOverlayOptions()) -> np.ndarray:
    """A copy of ``image`` (RGB/RGBA uint8) with everything drawn on it."""
    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] not in (3, 4) or image.dtype != np.uint8:
        raise PipelineValueError(f"AnnotationOverlay: expected an RGB(A) uint8 image, got "
                                 f"{type(image).__name__} {getattr(image, 'dtype', '')} {getattr(image, 'shape', '')}")
    o = options
    out = image.copy()
    h, w = out.shape[:2]
    scale = np.array([w, h], np.float64)
    if mask is not None:
        blend_mask(out, mask.mask, o.mask_color, o.mask_alpha)
    for r in rects:
        corners = rect_corners(r, w, h)
        draw_lines(out, np.stack([corners, np.roll(corners, -1, axis=0)], axis=1), o.rect_color, o.thickness)
    for lms in landmarks:
        pts = lms.array()[:, :2] * scale
        if o.landmark_connections:
            pairs = np.array(o.landmark_connections, np.intp).reshape(-1, 2)
            draw_lines(out, pts[pairs[(pairs < len(pts)).all(axis=1)]], o.connection_color, o.thickness)
        draw_dots(out, pts, o.landmark_color, o.keypoint_radius)
    for d in detections:
        b = d.box
        draw_box(out, b.xmin * w, b.ymin * h, b.xmax * w, b.ymax * h, o.box_color, o.thickness)
        if d.keypoints:
            draw_dots(out, np.array(d.keypoints, np.float64) * scale, o.keypoint_color, o.keypoint_radius)
    return out


@register_calculator
class AnnotationOverlay(Calculator):
    """Image + annotations -> annotated copy; see the module docstring.

    Usage::

        - calculator: AnnotationOverlay
          input_stream: ["IMAGE:image", "DETECTIONS:detections"]
          output_stream: "IMAGE:output_image"
    """

    inputs = {"IMAGE": np.ndarray, "DETECTIONS": list, "NORM_RECTS": list, "NORM_RECT": NormalizedRect,
              "LANDMARKS": (LandmarkList, list), "MASK": Segmentation}
    outputs = {"IMAGE": np.ndarray}
    optional_ports = frozenset({"DETECTIONS", "NORM_RECTS", "NORM_RECT", "LANDMARKS", "MASK"})
    options = AnnotationOverlayOptions

    def process(self, cc) -> None:
        image = cc.inputs["IMAGE"]
        if image is None:
            return
        rects = list(cc.inputs.get("NORM_RECTS") or [])
        if cc.inputs.get("NORM_RECT") is not None:
            rects.append(cc.inputs["NORM_RECT"])
        lms = cc.inputs.get("LANDMARKS")
        lms = [lms] if isinstance(lms, LandmarkList) else list(lms or [])
        cc.output("IMAGE", annotate(image, detections=cc.inputs.get("DETECTIONS") or [], rects=rects, landmarks=lms,
                                    mask=cc.inputs.get("MASK"), options=cc.options))
