"""LandmarksToDetection: landmarks -> a detection around them (MediaPipe ``LandmarksToDetectionCalculator``).

The box is the bounding box of the selected landmarks (all by default) and the keypoints are
their (x, y). MediaPipe's calculator sets no score; here ``score`` is the mean presence of the
selected landmarks when the model gives one, else 1.0.

Usage (the face-mesh graph derives the next frame's ROI from the landmarks)::

    - calculator: LandmarksToDetection
      input_stream: "NORM_LANDMARKS:landmarks"
      output_stream: "DETECTION:landmark_detection"
      options: {selected_landmark_indices: [33, 263]}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import Detection, LandmarkList, PipelineValueError, RelativeBox
from gpulite.pipeline.registry import register_calculator


@dataclass(frozen=True)
class LandmarksToDetectionOptions:
    """``selected_landmark_indices``: the landmarks to use (empty: all)."""

    selected_landmark_indices: tuple[int, ...] = ()


def landmarks_to_detection(landmarks: LandmarkList,
                           options: LandmarksToDetectionOptions = LandmarksToDetectionOptions()) -> Detection:
    """The detection around the (selected) landmarks."""
    xyz, _, presence = landmarks.columns()
    n = len(xyz)
    if options.selected_landmark_indices:
        idx = np.asarray(options.selected_landmark_indices, np.int64)
        bad = idx[(idx < 0) | (idx >= n)]
        if bad.size:
            raise PipelineValueError(f"LandmarksToDetection: landmark indices {bad.tolist()} out of range for {n}")
    elif n:
        idx = None
    else:
        raise PipelineValueError("LandmarksToDetection: no landmarks")
    xy = xyz[:, :2] if idx is None else xyz[idx, :2]
    if isinstance(presence, np.ndarray) and presence.dtype.kind == "f":  # the decoders' columns: no None inside
        pres = (presence if idx is None else presence[idx]).tolist()
    else:
        pres = [] if presence is None else [presence[i] for i in (range(n) if idx is None else idx.tolist())
                                            if presence[i] is not None]
    score = float(sum(pres) / len(pres)) if pres else 1.0
    x, y = xy[:, 0], xy[:, 1]    # per column and zipped: the same floats, several times faster than per row
    x0, y0, x1, y1 = float(x.min()), float(y.min()), float(x.max()), float(y.max())
    return Detection(RelativeBox(x0, y0, x1 - x0, y1 - y0), tuple(zip(x.tolist(), y.tolist(), strict=True)), score)


@register_calculator
class LandmarksToDetection(Calculator):
    """Landmarks -> detection; see the module docstring."""

    inputs = {"NORM_LANDMARKS": LandmarkList}
    outputs = {"DETECTION": Detection}
    options = LandmarksToDetectionOptions

    def process(self, cc) -> None:
        if cc.inputs["NORM_LANDMARKS"] is not None:
            cc.output("DETECTION", landmarks_to_detection(cc.inputs["NORM_LANDMARKS"], cc.options))
