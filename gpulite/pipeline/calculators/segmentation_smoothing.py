"""SegmentationSmoothing: blend a mask with the previous frame's where the new one is unsure.

MediaPipe's ``SegmentationSmoothingCalculator`` with its previous-output loopback: per pixel,
``new + (previous - new) * uncertainty(new) * combine_with_previous_ratio``, where uncertainty
is MediaPipe's polynomial approximation of 1 - (1 - H(p))^2 (H the binary entropy): 1 at
p = 0.5, 0 near 0 and 1. The previous mask is this node's own previous output, kept only when
the previous frame had a mask (connect ``IMAGE_SIZE`` so the node sees frames without one).
The ``ENABLE`` side input (optional) makes the node a pass-through (MediaPipe's
``smooth_segmentation``).

Usage (pose, video mode)::

    - calculator: SegmentationSmoothing
      input_stream: ["MASK:mask", "IMAGE_SIZE:image_size"]
      output_stream: "MASK:smoothed_mask"
      input_side_packet: "ENABLE:smooth_segmentation"
      options: {combine_with_previous_ratio: 0.7}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import Segmentation
from gpulite.pipeline.registry import register_calculator

_C = np.array([5.68842, -0.748699, -57.8051, 291.309, -624.717], np.float32)


@dataclass(frozen=True)
class SegmentationSmoothingOptions:
    """MediaPipe's ``SegmentationSmoothingCalculatorOptions``."""

    combine_with_previous_ratio: float = 0.0


def smooth_mask(current: np.ndarray, previous: np.ndarray, ratio: float) -> np.ndarray:
    """One blending step (see the module docstring); float32 in, float32 out."""
    cur = np.asarray(current, np.float32)
    prev = np.asarray(previous, np.float32)
    if cur.shape != prev.shape:
        return cur.copy()
    t = cur - np.float32(0.5)
    x = t * t
    poly = x * (_C[0] + x * (_C[1] + x * (_C[2] + x * (_C[3] + x * _C[4]))))
    uncertainty = np.float32(1.0) - np.minimum(np.float32(1.0), poly)
    return (cur + (prev - cur) * (uncertainty * np.float32(ratio))).astype(np.float32)


@register_calculator
class SegmentationSmoothing(Calculator):
    """Mask -> temporally smoothed mask; see the module docstring."""

    inputs = {"MASK": Segmentation, "IMAGE_SIZE": tuple}
    outputs = {"MASK": Segmentation}
    side_inputs = {"ENABLE": bool}
    optional_ports = frozenset({"IMAGE_SIZE", "ENABLE"})
    options = SegmentationSmoothingOptions

    def open(self, cc) -> None:
        self.previous: Segmentation | None = None
        self._gpu: Any = None

    def process(self, cc) -> None:
        seg = cc.inputs["MASK"]
        if seg is None:
            self.previous = None
            return
        ratio = cc.options.combine_with_previous_ratio
        prev = self.previous
        if not cc.side_inputs.get("ENABLE", True) or prev is None or ratio == 0.0:
            out = seg
        elif seg.on_gpu and seg.activation == "none" and prev.on_gpu and prev.shape == seg.shape:
            if self._gpu is None:  # webgpu: both masks there, the blend too; read back only when read
                from gpulite.backends.webgpu.pipeline.masks import MaskGpu
                self._gpu = MaskGpu(getattr(seg.gpu, "gdev", None))
            t, (h, w) = self._gpu.smooth(seg.gpu, prev.gpu, ratio), seg.shape
            out = Segmentation.deferred(lambda: t.data_sync().reshape(h, w), t, (h, w))
        else:
            out = Segmentation(smooth_mask(seg.mask, prev.mask, ratio))
        self.previous = out
        cc.output("MASK", out)
