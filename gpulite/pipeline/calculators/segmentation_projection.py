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
    xs, ys = np.arange(out_w, dtype=np.float64), np.arange(out_h, dtype=np.float64)[:, None]
    # sample positions in 1/32 pixels (OpenCV's rounding), as integers: cell = q >> 5, fraction = q & 31
    qx = np.rint((a[0, 0] * xs + a[0, 1] * ys + a[0, 2]) * _SUBPIXEL).astype(np.int32)
    qy = np.rint((a[1, 0] * xs + a[1, 1] * ys + a[1, 2]) * _SUBPIXEL).astype(np.int32)
    fx = (qx & 31).astype(np.float32) * np.float32(1 / _SUBPIXEL)
    fy = (qy & 31).astype(np.float32) * np.float32(1 / _SUBPIXEL)
    padded = np.zeros((h + 2, w + 2), np.float32)  # a zero ring: taps outside the mask read 0
    padded[1:-1, 1:-1] = m
    flat = padded.ravel()
    x0, y0 = (qx >> 5) + 1, (qy >> 5) + 1           # in the padded mask
    xi, xj = np.clip(x0, 0, w + 1), np.clip(x0 + 1, 0, w + 1)
    row_i, row_j = np.clip(y0, 0, h + 1) * (w + 2), np.clip(y0 + 1, 0, h + 1) * (w + 2)
    v00, v01 = flat.take(row_i + xi), flat.take(row_i + xj)
    v10, v11 = flat.take(row_j + xi), flat.take(row_j + xj)
    top = v00 + fx * (v01 - v00)
    return top + fy * (v10 + fx * (v11 - v10) - top)


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
