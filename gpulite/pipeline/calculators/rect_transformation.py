"""RectTransformation: scale, shift, rotate and square a region (MediaPipe ``RectTransformationCalculator``).

The shift is in units of the rect's own size and follows its rotation; squaring uses the long
or short side in pixels (hence ``IMAGE_SIZE``), so a square rect stays square on the image.

Usage (the face-mesh ROI from a face detection)::

    - calculator: RectTransformation
      input_stream: ["NORM_RECT:face_rect", "IMAGE_SIZE:image_size"]
      output_stream: "face_roi"
      options: {scale_x: 1.5, scale_y: 1.5, square_long: true}
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._rects import normalize_radians
from gpulite.pipeline.calculators.types import NormalizedRect, PipelineValueError
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class RectTransformationOptions:
    """MediaPipe's ``RectTransformationCalculatorOptions``; ``rotation_degrees`` is added to the rect's."""

    scale_x: float = 1.0
    scale_y: float = 1.0
    rotation_degrees: float = 0.0
    shift_x: float = 0.0
    shift_y: float = 0.0
    square_long: bool = False
    square_short: bool = False

    def __post_init__(self) -> None:
        if self.square_long and self.square_short:
            raise ValueError("square_long and square_short exclude each other")


def transform_rect(rect: NormalizedRect, image_size: tuple[int, int],
                   options: RectTransformationOptions = RectTransformationOptions()) -> NormalizedRect:
    """The transformed rect (see the module docstring)."""
    o = options
    iw, ih = image_size
    if iw <= 0 or ih <= 0:
        raise PipelineValueError(f"RectTransformation: IMAGE_SIZE must be positive, got {image_size}")
    w, h, rot = rect.width, rect.height, rect.rotation
    if o.rotation_degrees:
        rot = normalize_radians(rot + math.radians(o.rotation_degrees))
    if rot == 0.0:
        cx, cy = rect.x_center + w * o.shift_x, rect.y_center + h * o.shift_y
    else:
        c, s = math.cos(rot), math.sin(rot)
        cx = rect.x_center + (iw * w * o.shift_x * c - ih * h * o.shift_y * s) / iw
        cy = rect.y_center + (iw * w * o.shift_x * s + ih * h * o.shift_y * c) / ih
    if o.square_long or o.square_short:
        side = (max if o.square_long else min)(w * iw, h * ih)
        w, h = side / iw, side / ih
    return NormalizedRect(cx, cy, w * o.scale_x, h * o.scale_y, rot)


@register_calculator
class RectTransformation(Calculator):
    """Region(s) -> transformed region(s); see the module docstring.

    Usage::

        - calculator: RectTransformation
          input_stream: ["NORM_RECT:rect", "IMAGE_SIZE:image_size"]
          output_stream: "NORM_RECT:roi"
          options: {scale_x: 2.0, scale_y: 2.0, shift_y: -0.5, square_long: true}
    """

    inputs = {"NORM_RECT": NormalizedRect, "NORM_RECTS": list, "IMAGE_SIZE": tuple}
    outputs = {"NORM_RECT": NormalizedRect, "NORM_RECTS": list}
    optional_ports = frozenset({"NORM_RECT", "NORM_RECTS"})
    options = RectTransformationOptions

    def process(self, cc) -> None:
        size = cc.inputs["IMAGE_SIZE"]
        if size is None:
            if cc.inputs.get("NORM_RECT") is not None or cc.inputs.get("NORM_RECTS") is not None:
                raise PipelineValueError(f"node {cc.node_name!r}: rects at timestamp {cc.timestamp} came without "
                                         "an IMAGE_SIZE")
            return
        if cc.inputs.get("NORM_RECT") is not None:
            cc.output("NORM_RECT", transform_rect(cc.inputs["NORM_RECT"], size, cc.options))
        if cc.inputs.get("NORM_RECTS") is not None:
            cc.output("NORM_RECTS", [transform_rect(r, size, cc.options) for r in cc.inputs["NORM_RECTS"]])
