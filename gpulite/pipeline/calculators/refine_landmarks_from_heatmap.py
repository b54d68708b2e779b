"""RefineLandmarksFromHeatmap: move landmarks to the heatmap's local centre of mass (MediaPipe's calculator).

For each landmark i the heatmap channel i (sigmoid of the raw values) is read in a
``kernel_size`` window around the landmark's cell (shrunk at the edges); if its largest
confidence reaches ``min_confidence_to_refine``, x and y become the confidence-weighted mean
of the window's cell indices divided by the heatmap size. Landmarks are relative to the model
input (refine *before* projecting onto the image). As in MediaPipe, the cell is
``int(x * width)`` (truncated toward zero: a point just left of the heatmap counts as
column 0) and the new position is the mean cell *index* (no half-cell offset).

Usage (pose, heatmap = model output 3 (1, 64, 64, 39))::

    - calculator: RefineLandmarksFromHeatmap
      input_stream: ["NORM_LANDMARKS:raw_landmarks", "TENSORS:heatmap_tensors"]
      output_stream: "NORM_LANDMARKS:refined_landmarks"
      options: {kernel_size: 7}
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import LandmarkList, PipelineValueError, host_array
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class RefineLandmarksFromHeatmapOptions:
    """MediaPipe's ``RefineLandmarksFromHeatmapCalculatorOptions``."""

    kernel_size: int = 9
    min_confidence_to_refine: float = 0.5
    refine_presence: bool = False
    refine_visibility: bool = False

    def __post_init__(self) -> None:
        if self.kernel_size < 1:
            raise ValueError(f"kernel_size must be >= 1, got {self.kernel_size}")


def refine_landmarks(landmarks: LandmarkList, heatmap: np.ndarray,
                     options: RefineLandmarksFromHeatmapOptions = RefineLandmarksFromHeatmapOptions()) -> LandmarkList:
    """Refine ``landmarks`` (relative to the model input) with an (H, W, N) or (1, H, W, N) heatmap."""
    hm = np.asarray(heatmap, np.float32)
    if hm.ndim == 4:
        if hm.shape[0] != 1:
            raise PipelineValueError(f"RefineLandmarksFromHeatmap: expected batch 1, got heatmap shape {hm.shape}")
        hm = hm[0]
    if hm.ndim != 3 or hm.shape[2] != len(landmarks):
        raise PipelineValueError(f"RefineLandmarksFromHeatmap: heatmap shape {hm.shape} does not have one channel "
                                 f"per landmark ({len(landmarks)})")
    height, width, _ = hm.shape
    off = (options.kernel_size - 1) // 2
    out = list(landmarks.landmarks)
    for i, lm in enumerate(out):
        col, row = int(lm.x * width), int(lm.y * height)
        if col < 0 or col >= width or row < 0 or row >= height:
            continue
        r0, r1 = max(0, row - off), min(height, row + off + 1)
        c0, c1 = max(0, col - off), min(width, col + off + 1)
        conf = 1.0 / (1.0 + np.exp(-hm[r0:r1, c0:c1, i].astype(np.float64)))
        total = conf.sum()
        best = conf.max() if conf.size else 0.0
        if best >= options.min_confidence_to_refine and total > 0:
            rows, cols = np.mgrid[r0:r1, c0:c1]
            x, y = (cols * conf).sum() / width / total, (rows * conf).sum() / height / total
            lm = replace(lm, x=float(x), y=float(y))
        if options.refine_presence and total > 0 and lm.presence is not None:
            lm = replace(lm, presence=min(lm.presence, float(best)))
        if options.refine_visibility and total > 0 and lm.visibility is not None:
            lm = replace(lm, visibility=min(lm.visibility, float(best)))
        out[i] = lm
    return LandmarkList(tuple(out))


@register_calculator
class RefineLandmarksFromHeatmap(Calculator):
    """Landmarks + heatmap tensor -> refined landmarks; see the module docstring."""

    inputs = {"NORM_LANDMARKS": LandmarkList, "TENSORS": list}
    outputs = {"NORM_LANDMARKS": LandmarkList}
    optional_ports = frozenset({"TENSORS"})
    options = RefineLandmarksFromHeatmapOptions

    def process(self, cc) -> None:
        lms = cc.inputs["NORM_LANDMARKS"]
        if lms is None:
            return
        tensors = cc.inputs.get("TENSORS")
        if not tensors:  # MediaPipe passes the landmarks through when the heatmap is missing
            cc.output("NORM_LANDMARKS", lms)
            return
        cc.output("NORM_LANDMARKS", refine_landmarks(lms, host_array(tensors[0]), cc.options))
