"""RoiGate: send a frame to a detector only while tracking has too few regions.

MediaPipe's tracking graphs skip the detector when the previous frame's landmarks already gave
enough regions of interest (``NormalizedRectVectorHasMinSizeCalculator`` feeding
``GateCalculator``'s ``DISALLOW``). Here that is one node: the image passes when ``PREV_ROIS``
holds fewer than ``min_rois`` rects (or is absent); otherwise nothing is emitted and the
detector branch only sees its timestamp bound move on.

Usage (hands: run palm detection until ``max_hands`` hands are tracked)::

    - calculator: RoiGate
      input_stream: ["IMAGE:image", "PREV_ROIS:prev_rois"]
      output_stream: "IMAGE:detection_image"
      options: {min_rois: 2}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.gpu_image import GpuImage
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class RoiGateOptions:
    """``min_rois``: tracked regions from which on the detector is skipped (>= 1)."""

    min_rois: int = 1

    def __post_init__(self) -> None:
        if self.min_rois < 1:
            raise ValueError(f"min_rois must be >= 1, got {self.min_rois}")


@register_calculator
class RoiGate(Calculator):
    """Image in, image out unless enough regions are already tracked; see the module docstring.

    Usage::

        - calculator: RoiGate
          input_stream: ["IMAGE:image", "PREV_ROIS:prev_rois"]
          output_stream: "IMAGE:detection_image"
          options: {min_rois: 1}
    """

    inputs = {"IMAGE": (np.ndarray, GpuImage), "PREV_ROIS": list}
    outputs = {"IMAGE": (np.ndarray, GpuImage)}
    optional_ports = frozenset({"PREV_ROIS"})
    options = RoiGateOptions

    def process(self, cc) -> None:
        image = cc.inputs["IMAGE"]
        rois = cc.inputs.get("PREV_ROIS")
        if image is None or (rois is not None and len(rois) >= cc.options.min_rois):
            return
        cc.output("IMAGE", image)
