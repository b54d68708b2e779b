"""AnnotationOverlay: draw detections, rects, landmarks and masks onto a copy of the image (numpy only).

After MediaPipe's ``AnnotationOverlayCalculator`` fed by its ``*ToRenderData`` calculators:
boxes as outlines, keypoints and landmarks as filled dots, landmark connections as lines,
rotated rects as outlines, masks blended in one colour with ``mask_alpha * mask`` opacity.

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


def draw_box(img: np.ndarray, x0: float, y0: float, x1: float, y1: float, color, thickness: int) -> None:
    """Outline of an axis-aligned box in pixel coordinates, clipped to the image, in place."""
    h, w = img.shape[:2]
    xa, ya, xb, yb = round(x0), round(y0), round(x1), round(y1)
    t = thickness
    c = np.asarray(color, img.dtype)[: img.shape[2]]
    for ys, xs in (((ya, ya + t), (xa, xb + 1)), ((yb - t + 1, yb + 1), (xa, xb + 1)),
                   ((ya, yb + 1), (xa, xa + t)), ((ya, yb + 1), (xb - t + 1, xb + 1))):
        r0, r1 = max(ys[0], 0), min(ys[1], h)
        c0, c1 = max(xs[0], 0), min(xs[1], w)
        if r0 < r1 and c0 < c1:
            img[r0:r1, c0:c1] = c


def draw_dots(img: np.ndarray, points: np.ndarray, color, radius: int) -> None:
    """Filled discs at (N, 2) pixel points, in place."""
    h, w = img.shape[:2]
    c = np.asarray(color, img.dtype)[: img.shape[2]]
    dy, dx = np.mgrid[-radius:radius + 1, -radius:radius + 1]
    disc = dx * dx + dy * dy <= radius * radius + radius  # a round-looking disc at small radii
    offs = np.stack([dy[disc], dx[disc]], axis=1)
    pts = np.round(np.asarray(points, np.float64).reshape(-1, 2)).astype(np.int64)
    ys = (pts[:, 1][:, None] + offs[:, 0]).ravel()
    xs = (pts[:, 0][:, None] + offs[:, 1]).ravel()
    ok = (ys >= 0) & (ys < h) & (xs >= 0) & (xs < w)
    img[ys[ok], xs[ok]] = c


def draw_lines(img: np.ndarray, segments: np.ndarray, color, thickness: int) -> None:
    """Lines between (N, 2, 2) pixel point pairs, in place (sampled at every pixel step)."""
    for (x0, y0), (x1, y1) in np.asarray(segments, np.float64).reshape(-1, 2, 2):
        n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        t = np.linspace(0.0, 1.0, n + 1)
        pts = np.stack([x0 + (x1 - x0) * t, y0 + (y1 - y0) * t], axis=1)
        draw_dots(img, pts, color, max(thickness // 2, 0))


def blend_mask(img: np.ndarray, mask: np.ndarray, color, alpha: float) -> None:
    """Blend ``color`` over ``img`` with opacity ``alpha * mask`` (mask in [0, 1], image size), in place."""
    if mask.shape[:2] != img.shape[:2]:
        raise PipelineValueError(f"AnnotationOverlay: mask {mask.shape[:2]} does not match image {img.shape[:2]}")
    a = (np.clip(mask, 0.0, 1.0) * alpha).astype(np.float32)[..., None]
    c = np.asarray(color, np.float32)[: img.shape[2]]
    img[...] = (img.astype(np.float32) * (1 - a) + c * a + 0.5).astype(img.dtype)


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
            pairs = [(a, b) for a, b in o.landmark_connections if a < len(pts) and b < len(pts)]
            draw_lines(out, np.array([(pts[a], pts[b]) for a, b in pairs]).reshape(-1, 2, 2), o.connection_color,
                       o.thickness)
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
