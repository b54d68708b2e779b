"""The sampling geometry of MediaPipe's OpenCV image-to-tensor converter, reproduced bit for bit.

MediaPipe's CPU graphs (so its Python solutions) cut regions out with
``cv::warpPerspective``: the region's corners come from ``cv::boxPoints`` in float32, the
projection from ``cv::getPerspectiveTransform`` (solved in double), which ``warpPerspective``
inverts; each output pixel samples the image at that inverse, rounded to 1/32 pixel
(``INTER_TAB_SIZE``, round half to even), and the uint8 result is the bilinear value rounded to
a whole grey level (OpenCV's fixed-point weights are exact at 1/32 steps, so this is
``floor(v + 0.5)``). Landmark models are sensitive to half a grey level and to 1/32 pixel, and
a tracker compounds the difference frame after frame, so ``ImageToTensor(match_opencv=True)``
uses this module.

Usage::

    a = opencv_sampling_matrix((640, 480), rect, 256, 256, keep_aspect_ratio=True)   # 2x3
"""

from __future__ import annotations

import math

import numpy as np

from gpulite.pipeline.calculators.types import NormalizedRect, PipelineValueError

_F = np.float32
SUBPIXEL = 32.0  # OpenCV's INTER_TAB_SIZE


def _roi(image_size: tuple[int, int], rect: NormalizedRect | None, out_w: int, out_h: int,
         keep_aspect_ratio: bool) -> tuple[np.float32, np.float32, np.float32, np.float32, np.float32]:
    """MediaPipe's ``GetRoi`` + ``PadRoi`` in float32: (cx, cy, width, height) pixels, rotation."""
    w, h = _F(image_size[0]), _F(image_size[1])
    if rect is None:
        cx, cy, rw, rh, rot = _F(0.5) * w, _F(0.5) * h, w, h, _F(0.0)
    else:
        if rect.width <= 0 or rect.height <= 0:
            raise PipelineValueError(f"ImageToTensor: the region must have a positive size, got {rect}")
        cx, cy = _F(rect.x_center) * w, _F(rect.y_center) * h
        rw, rh, rot = _F(rect.width) * w, _F(rect.height) * h, _F(rect.rotation)
    if keep_aspect_ratio:
        tensor_aspect = _F(out_h) / _F(out_w)
        roi_aspect = rh / rw
        if tensor_aspect > roi_aspect:
            rh = rw * tensor_aspect
        else:
            rw = rh / tensor_aspect
    return cx, cy, rw, rh, rot


def box_points(cx: np.float32, cy: np.float32, w: np.float32, h: np.float32, angle_deg: np.float32) -> np.ndarray:
    """``cv::RotatedRect::points`` in float32: bottom-left, top-left, top-right, bottom-right."""
    angle = float(angle_deg) * math.pi / 180.0
    b = _F(math.cos(angle)) * _F(0.5)
    a = _F(math.sin(angle)) * _F(0.5)
    p0 = (cx - a * h - b * w, cy + b * h - a * w)
    p1 = (cx + a * h - b * w, cy - b * h - a * w)
    p2 = (_F(2) * cx - p0[0], _F(2) * cy - p0[1])
    p3 = (_F(2) * cx - p1[0], _F(2) * cy - p1[1])
    return np.array([p0, p1, p2, p3], np.float32)


def perspective_transform(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``cv::getPerspectiveTransform``: the 3x3 matrix taking 4 ``src`` points to ``dst`` (double)."""
    a = np.zeros((8, 8), np.float64)
    b = np.zeros(8, np.float64)
    for i in range(4):
        (x, y), (u, v) = src[i].astype(np.float64), dst[i].astype(np.float64)
        a[i] = (x, y, 1, 0, 0, 0, -x * u, -y * u)
        a[i + 4] = (0, 0, 0, x, y, 1, -x * v, -y * v)
        b[i], b[i + 4] = u, v
    return np.append(np.linalg.solve(a, b), 1.0).reshape(3, 3)


def opencv_sampling_matrix(image_size: tuple[int, int], rect: NormalizedRect | None, out_w: int, out_h: int, *,
                           keep_aspect_ratio: bool) -> np.ndarray:
    """2x3 matrix taking tensor pixel (x, y) to image pixel coordinates, as ``warpPerspective`` computes it."""
    cx, cy, rw, rh, rot = _roi(image_size, rect, out_w, out_h, keep_aspect_ratio)
    src = box_points(cx, cy, rw, rh, rot * _F(180.0) / _F(math.pi))
    dst = np.array([(0, out_h), (0, 0), (out_w, 0), (out_w, out_h)], np.float32)
    inv = np.linalg.inv(perspective_transform(src, dst))
    return inv[:2] / inv[2, 2]  # the perspective row is (0, 0, 1) up to rounding


def quantize_positions(sx: np.ndarray, sy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sample positions rounded to 1/32 pixel, half to even (OpenCV's ``saturate_cast<int>``)."""
    return np.rint(sx * SUBPIXEL) / SUBPIXEL, np.rint(sy * SUBPIXEL) / SUBPIXEL
