"""SegmentationProjection: a mask computed on a region's tensor -> a mask over the whole image.

MediaPipe's ``InverseMatrixCalculator`` + ``WarpAffineCalculator`` (OpenCV runner,
``BORDER_ZERO``), as the pose graph uses them: image pixel (x, y) reads the mask at
``mask_size * inverse(MATRIX) @ (x / W, y / H)``, bilinearly, with zero outside the mask:
``cv2.warpAffine`` with ``WARP_INVERSE_MAP`` and that matrix in float32, as MediaPipe calls it.

Usage::

    - calculator: SegmentationProjection
      input_stream: ["MASK:roi_mask", "MATRIX:transform", "OUTPUT_SIZE:image_size"]
      output_stream: "MASK:mask"
"""

from __future__ import annotations

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._opencv import MAX_SIDE, cv2
from gpulite.pipeline.calculators.types import ImageTransform, PipelineValueError, Segmentation
from gpulite.pipeline.registry import register_calculator


def project_mask(mask: np.ndarray, transform: ImageTransform, output_size: tuple[int, int]) -> np.ndarray:
    """Warp an (h, w) float mask on the tensor onto a ``output_size`` (W, H) image; float32 (H, W)."""
    m = np.asarray(mask, np.float32)
    if m.ndim != 2:
        raise PipelineValueError(f"SegmentationProjection: expected an (H, W) mask, got shape {m.shape}")
    h, w = m.shape
    out_w, out_h = int(output_size[0]), int(output_size[1])
    if not (1 <= out_w <= MAX_SIDE and 1 <= out_h <= MAX_SIDE and max(h, w) <= MAX_SIDE):
        raise PipelineValueError(f"SegmentationProjection: mask {w}x{h} onto {out_w}x{out_h}: each side must be "
                                 f"1 to {MAX_SIDE} pixels (OpenCV's warp)")
    a = np.diag([w, h, 1.0]) @ np.linalg.inv(transform.matrix) @ np.diag([1.0 / out_w, 1.0 / out_h, 1.0])
    return cv2.warpAffine(m, a[:2].astype(np.float32), (out_w, out_h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_CONSTANT)


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
