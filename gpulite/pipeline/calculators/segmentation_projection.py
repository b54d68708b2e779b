"""SegmentationProjection: a mask computed on a region's tensor -> a mask over the whole image.

MediaPipe's ``InverseMatrixCalculator`` + ``WarpAffineCalculator`` (OpenCV runner,
``BORDER_ZERO``), as the pose graph uses them: image pixel (x, y) reads the mask at
``mask_size * inverse(MATRIX) @ (x / W, y / H)``, bilinearly, with zero outside the mask.
Sample positions are rounded to 1/32 pixel as OpenCV's ``warpAffine`` does.

Usage::

    - calculator: SegmentationProjection
      input_stream: ["MASK:roi_mask", "MATRIX:transform", "OUTPUT_SIZE:image_size"]
      output_stream: "MASK:mask"
"""

from __future__ import annotations

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import ImageTransform, PipelineValueError, Segmentation
from gpulite.pipeline.registry import register_calculator

_SUBPIXEL = 32.0  # OpenCV's INTER_TAB_SIZE


def project_mask(mask: np.ndarray, transform: ImageTransform, output_size: tuple[int, int]) -> np.ndarray:
    """Warp an (h, w) float mask on the tensor onto a ``output_size`` (W, H) image; float32 (H, W)."""
    m = np.asarray(mask, np.float32)
    if m.ndim != 2:
        raise PipelineValueError(f"SegmentationProjection: expected an (H, W) mask, got shape {m.shape}")
    h, w = m.shape
    out_w, out_h = int(output_size[0]), int(output_size[1])
    a = np.diag([w, h, 1.0]) @ np.linalg.inv(transform.matrix) @ np.diag([1.0 / out_w, 1.0 / out_h, 1.0])
    ys, xs = np.mgrid[0:out_h, 0:out_w].astype(np.float64)
    sx = np.floor((a[0, 0] * xs + a[0, 1] * ys + a[0, 2]) * _SUBPIXEL + 0.5) / _SUBPIXEL
    sy = np.floor((a[1, 0] * xs + a[1, 1] * ys + a[1, 2]) * _SUBPIXEL + 0.5) / _SUBPIXEL
    x0, y0 = np.floor(sx).astype(np.intp), np.floor(sy).astype(np.intp)
    fx, fy = (sx - x0).astype(np.float32), (sy - y0).astype(np.float32)
    padded = np.zeros((h + 2, w + 2), np.float32)  # a zero ring: taps outside the mask read 0
    padded[1:-1, 1:-1] = m
    xi = np.clip(x0 + 1, 0, w + 1)
    yi = np.clip(y0 + 1, 0, h + 1)
    xj = np.clip(x0 + 2, 0, w + 1)
    yj = np.clip(y0 + 2, 0, h + 1)
    out = (padded[yi, xi] * (1 - fx) * (1 - fy) + padded[yi, xj] * fx * (1 - fy)
           + padded[yj, xi] * (1 - fx) * fy + padded[yj, xj] * fx * fy)
    return out.astype(np.float32)


@register_calculator
class SegmentationProjection(Calculator):
    """Region mask + its transform -> image mask; see the module docstring."""

    inputs = {"MASK": Segmentation, "MATRIX": ImageTransform, "OUTPUT_SIZE": tuple}
    outputs = {"MASK": Segmentation}

    def process(self, cc) -> None:
        seg = cc.inputs["MASK"]
        if seg is None:
            return
        transform, size = cc.inputs["MATRIX"], cc.inputs["OUTPUT_SIZE"]
        if transform is None or size is None:
            raise PipelineValueError(f"node {cc.node_name!r}: a mask at timestamp {cc.timestamp} came without "
                                     "MATRIX and OUTPUT_SIZE")
        cc.output("MASK", Segmentation(project_mask(seg.mask, transform, size)))
