"""SSD anchor generation (MediaPipe ``SsdAnchorsCalculator``), as a function and a calculator.

The anchors of BlazeFace short range (896 of them)::

    anchors = generate_anchors(SsdAnchorsOptions(
        num_layers=4, min_scale=0.1484375, max_scale=0.75, input_size_width=128,
        input_size_height=128, strides=(8, 16, 16, 16), aspect_ratios=(1.0,),
        fixed_anchor_size=True))            # (896, 4): x_center, y_center, w, h

Layers that share a stride are merged: their anchors are interleaved per grid cell, in
layer order, exactly as MediaPipe lays them out (the model's outputs follow that order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class SsdAnchorsOptions:
    """MediaPipe's ``SsdAnchorsCalculatorOptions`` (same names and defaults)."""

    input_size_width: int = 128
    input_size_height: int = 128
    min_scale: float = 0.1484375
    max_scale: float = 0.75
    anchor_offset_x: float = 0.5
    anchor_offset_y: float = 0.5
    num_layers: int = 4
    feature_map_width: tuple[int, ...] = ()
    feature_map_height: tuple[int, ...] = ()
    strides: tuple[int, ...] = (8, 16, 16, 16)
    aspect_ratios: tuple[float, ...] = (1.0,)
    reduce_boxes_in_lowest_layer: bool = False
    interpolated_scale_aspect_ratio: float = 1.0
    fixed_anchor_size: bool = True

    def __post_init__(self) -> None:
        if self.num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {self.num_layers}")
        if len(self.strides) != self.num_layers:
            raise ValueError(f"strides must have num_layers={self.num_layers} entries, got {list(self.strides)}")
        if self.feature_map_width and (len(self.feature_map_width) != self.num_layers
                                       or len(self.feature_map_height) != self.num_layers):
            raise ValueError("feature_map_width/height must both have num_layers entries when given")
        if not self.aspect_ratios and self.interpolated_scale_aspect_ratio <= 0:
            raise ValueError("no anchors per cell: give aspect_ratios or an interpolated_scale_aspect_ratio > 0")


def _scale(min_scale: float, max_scale: float, index: int, count: int) -> float:
    if count == 1:
        return (min_scale + max_scale) * 0.5
    return min_scale + (max_scale - min_scale) * index / (count - 1.0)


def generate_anchors(options: SsdAnchorsOptions) -> np.ndarray:
    """All anchors as an (N, 4) float32 array of (x_center, y_center, w, h), relative.

    Follows MediaPipe's ``GenerateAnchors``: per group of consecutive layers with the same
    stride, one anchor per (aspect ratio, layer) and, with an interpolated scale aspect ratio,
    one more per layer at scale sqrt(s_i * s_{i+1}); grid cells in row-major order; with
    ``fixed_anchor_size`` every anchor's w and h is 1 (the regressors are then relative to the
    input size only).
    """
    o = options
    out: list[np.ndarray] = []
    layer = 0
    while layer < o.num_layers:
        ratios: list[float] = []
        scales: list[float] = []
        last = layer
        while last < len(o.strides) and o.strides[last] == o.strides[layer]:
            scale = _scale(o.min_scale, o.max_scale, last, len(o.strides))
            if last == 0 and o.reduce_boxes_in_lowest_layer:
                ratios += [1.0, 2.0, 0.5]
                scales += [0.1, scale, scale]
            else:
                ratios += list(o.aspect_ratios)
                scales += [scale] * len(o.aspect_ratios)
                if o.interpolated_scale_aspect_ratio > 0.0:
                    nxt = 1.0 if last == len(o.strides) - 1 else _scale(o.min_scale, o.max_scale, last + 1,
                                                                        len(o.strides))
                    scales.append(math.sqrt(scale * nxt))
                    ratios.append(o.interpolated_scale_aspect_ratio)
            last += 1
        sizes = np.array([(s * math.sqrt(r), s / math.sqrt(r)) for r, s in zip(ratios, scales, strict=True)],
                         np.float32)  # (w, h) per anchor of a cell
        if o.feature_map_width:
            fh, fw = o.feature_map_height[layer], o.feature_map_width[layer]
        else:
            fh = math.ceil(o.input_size_height / o.strides[layer])
            fw = math.ceil(o.input_size_width / o.strides[layer])
        ys, xs = np.meshgrid(np.arange(fh, dtype=np.float32), np.arange(fw, dtype=np.float32), indexing="ij")
        n = len(ratios)
        cells = np.empty((fh, fw, n, 4), np.float32)
        cells[..., 0] = ((xs + o.anchor_offset_x) / fw)[..., None]
        cells[..., 1] = ((ys + o.anchor_offset_y) / fh)[..., None]
        cells[..., 2:] = 1.0 if o.fixed_anchor_size else sizes
        out.append(cells.reshape(-1, 4))
        layer = last
    return np.concatenate(out, axis=0)


@register_calculator
class SsdAnchors(Calculator):
    """A source: emits the anchors once, on ``ANCHORS`` at timestamp 0, then closes.

    (MediaPipe makes them a side packet; here they are a one-packet stream, which
    ``TensorsToDetections`` keeps for every later timestamp.)

    Usage::

        - calculator: SsdAnchors
          output_stream: "ANCHORS:anchors"
          options: {num_layers: 4, strides: [8, 16, 16, 16], fixed_anchor_size: true}
    """

    outputs = {"ANCHORS": np.ndarray}
    options = SsdAnchorsOptions
    timestamp_offset = None

    def process(self, cc) -> None:
        cc.output("ANCHORS", generate_anchors(cc.options), timestamp=0)
        cc.stop()
