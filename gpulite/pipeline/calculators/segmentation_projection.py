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

from typing import Any

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
    check_sizes((w, h), (out_w, out_h))
    return cv2.warpAffine(m, inverse_map((w, h), transform, (out_w, out_h)), (out_w, out_h),
                          flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_CONSTANT)


def check_sizes(mask_size: tuple[int, int], output_size: tuple[int, int]) -> None:
    (w, h), (out_w, out_h) = mask_size, output_size
    if not (1 <= out_w <= MAX_SIDE and 1 <= out_h <= MAX_SIDE and max(h, w) <= MAX_SIDE):
        raise PipelineValueError(f"SegmentationProjection: mask {w}x{h} onto {out_w}x{out_h}: each side must be "
                                 f"1 to {MAX_SIDE} pixels (OpenCV's warp)")


def inverse_map(mask_size: tuple[int, int], transform: ImageTransform, output_size: tuple[int, int]) -> np.ndarray:
    """The 2x3 float32 map from image pixels to mask pixels (``WARP_INVERSE_MAP``'s matrix)."""
    (w, h), (out_w, out_h) = mask_size, output_size
    a = np.diag([w, h, 1.0]) @ np.linalg.inv(transform.matrix) @ np.diag([1.0 / out_w, 1.0 / out_h, 1.0])
    return a[:2].astype(np.float32)


@register_calculator
class SegmentationProjection(Calculator):
    """Region mask + its transform -> image mask; see the module docstring."""

    inputs = {"MASK": Segmentation, "MATRIX": ImageTransform, "OUTPUT_SIZE": tuple}
    outputs = {"MASK": Segmentation}

    def open(self, cc) -> None:
        self._gpu: Any = None

    def process(self, cc) -> None:
        seg = cc.inputs["MASK"]
        if seg is None:
            return
        transform, size = cc.inputs["MATRIX"], cc.inputs["OUTPUT_SIZE"]
        if transform is None or size is None:
            raise PipelineValueError(f"node {cc.node_name!r}: a mask at timestamp {cc.timestamp} came without "
                                     "MATRIX and OUTPUT_SIZE")
        if seg.on_gpu and seg.activation in ("none", "sigmoid"):  # webgpu: stays there until read
            (h, w), out_w, out_h = seg.shape, int(size[0]), int(size[1])
            check_sizes((w, h), (out_w, out_h))
            if self._gpu is None:
                from gpulite.backends.webgpu.pipeline.masks import MaskGpu
                self._gpu = MaskGpu(getattr(seg.gpu, "gdev", None))
            t = self._gpu.project(seg.gpu, inverse_map((w, h), transform, (out_w, out_h)), out_w, out_h,
                                  sigmoid=seg.activation == "sigmoid")
            cc.output("MASK", Segmentation.deferred(lambda: t.data_sync().reshape(out_h, out_w), t, (out_h, out_w)))
            return
        cc.output("MASK", Segmentation(project_mask(seg.mask, transform, size)))
