"""ImageProperties: an image's size as (width, height) (MediaPipe ``ImagePropertiesCalculator``).

Usage::

    - calculator: ImageProperties
      input_stream: "IMAGE:image"
      output_stream: "SIZE:image_size"
"""

from __future__ import annotations

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.gpu_image import GpuImage
from gpulite.pipeline.registry import register_calculator


def image_size(image: np.ndarray | GpuImage) -> tuple[int, int]:
    """(width, height) of an (H, W[, C]) array or a GpuImage."""
    if isinstance(image, GpuImage):
        return image.size
    if not isinstance(image, np.ndarray) or image.ndim not in (2, 3):
        raise ValueError(f"ImageProperties: expected an (H, W[, C]) array or a GpuImage, got "
                         f"{type(image).__name__} {getattr(image, 'shape', '')}")
    return int(image.shape[1]), int(image.shape[0])


@register_calculator
class ImageProperties(Calculator):
    """Image -> (width, height); see the module docstring."""

    inputs = {"IMAGE": (np.ndarray, GpuImage)}
    outputs = {"SIZE": tuple}

    def process(self, cc) -> None:
        if cc.inputs["IMAGE"] is not None:
            cc.output("SIZE", image_size(cc.inputs["IMAGE"]))
