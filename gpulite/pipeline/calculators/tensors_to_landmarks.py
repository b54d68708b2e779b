"""TensorsToLandmarks: a landmark model's output -> normalised landmarks (MediaPipe's calculator).

The tensor holds ``num_landmarks`` groups of x, y[, z[, visibility[, presence]]] in the
model's input pixels; x and y are divided by the input size, z by the input width and
``normalize_z``; visibility and presence go through ``sigmoid`` when asked (MediaPipe's
``visibility_activation``/``presence_activation``). The landmarks are relative to the *tensor*:
``LandmarkProjection`` maps them onto the image through ``ImageToTensor``'s ``MATRIX``.

Usage (face mesh: 468 landmarks on a 192x192 input)::

    - calculator: TensorsToLandmarks
      input_stream: "TENSORS:output_tensors"
      output_stream: "NORM_LANDMARKS:landmarks"
      options: {num_landmarks: 468, input_image_width: 192, input_image_height: 192}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.types import (
    ImageTransform,
    LandmarkList,
    PipelineValueError,
    host_array,
)
from gpulite.pipeline.registry import register_calculator

ACTIVATIONS = ("none", "sigmoid")


@dataclass(frozen=True)
class TensorsToLandmarksOptions:
    """MediaPipe's ``TensorsToLandmarksCalculatorOptions``."""

    num_landmarks: int = 0
    input_image_width: int = 1
    input_image_height: int = 1
    flip_vertically: bool = False
    flip_horizontally: bool = False
    normalize_z: float = 1.0
    visibility_activation: str = "none"
    presence_activation: str = "none"
    tensor_index: int = 0

    def __post_init__(self) -> None:
        if self.num_landmarks < 1:
            raise ValueError(f"num_landmarks must be >= 1, got {self.num_landmarks}")
        if self.input_image_width < 1 or self.input_image_height < 1:
            raise ValueError("input_image_width/height must be >= 1")
        for name in ("visibility_activation", "presence_activation"):
            if getattr(self, name) not in ACTIVATIONS:
                raise ValueError(f"{name} must be one of {ACTIVATIONS}, got {getattr(self, name)!r}")


def _act(v: np.ndarray, kind: str) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v.astype(np.float64))) if kind == "sigmoid" else v


def tensor_to_landmarks(tensor: np.ndarray, options: TensorsToLandmarksOptions) -> LandmarkList:
    """Decode one landmark tensor (see the module docstring)."""
    o = options
    raw = np.asarray(tensor, np.float32).reshape(-1)
    if raw.size % o.num_landmarks:
        raise PipelineValueError(f"TensorsToLandmarks: {raw.size} values do not split into {o.num_landmarks} "
                                 "landmarks")
    dims = raw.size // o.num_landmarks
    v = raw.reshape(o.num_landmarks, dims).astype(np.float64)
    x = o.input_image_width - v[:, 0] if o.flip_horizontally else v[:, 0]
    y = (o.input_image_height - v[:, 1] if o.flip_vertically else v[:, 1]) if dims > 1 else np.zeros(len(v))
    z = v[:, 2] / o.input_image_width / o.normalize_z if dims > 2 else np.zeros(len(v))
    vis = _act(v[:, 3], o.visibility_activation) if dims > 3 else None
    pres = _act(v[:, 4], o.presence_activation) if dims > 4 else None
    x, y = x / o.input_image_width, y / o.input_image_height
    return LandmarkList.from_arrays(np.stack([x, y, z], axis=1), vis, pres)


def project_landmarks(landmarks: LandmarkList, transform: ImageTransform, *, z_scale: str = "rect_width"
                      ) -> LandmarkList:
    """Landmarks relative to a tensor -> relative to the image (MediaPipe ``LandmarkProjectionCalculator``).

    z is scaled like x. ``z_scale="rect_width"`` (MediaPipe's projection by ``NORM_RECT`` alone,
    the legacy graphs and the Tasks' hand and pose graphs): by the region's width relative to the
    image width (``z * rect.width``), the length in pixels of the tensor's x axis over the image
    width, whatever the rotation. ``z_scale="projected_x_axis"`` (its projection by ``NORM_RECT``
    and ``IMAGE_DIMENSIONS``, the Tasks' face landmarker graph): by the length of the tensor's unit
    x axis in relative image coordinates (``CalculateZScale``), which grows with the rotation of
    the region on an image that is not square (by 9% at 30 degrees on 640 x 480).
    """
    xyz, vis, pres = landmarks.columns()
    xy = transform.apply(xyz[:, :2].astype(np.float32))  # as array(): MediaPipe projects float landmarks
    m = transform.matrix
    w, h = transform.image_size
    if z_scale == "rect_width":
        zscale = float(np.hypot(m[0, 0] * w, m[1, 0] * h) / w)
    elif z_scale == "projected_x_axis":
        zscale = float(np.float32(np.hypot(np.float32(m[0, 0]), np.float32(m[1, 0]))))
    else:
        raise ValueError(f"z_scale must be 'rect_width' or 'projected_x_axis', got {z_scale!r}")
    return LandmarkList.from_arrays(np.column_stack([xy, xyz[:, 2] * zscale]), vis, pres)


@register_calculator
class TensorsToLandmarks(Calculator):
    """Model output tensors -> landmarks (optionally projected onto the image); see the module docstring.

    Usage::

        - calculator: TensorsToLandmarks
          input_stream: ["TENSORS:output_tensors", "MATRIX:transform"]    # MATRIX optional
          output_stream: "NORM_LANDMARKS:landmarks"
          options: {num_landmarks: 21, input_image_width: 224, input_image_height: 224}
    """

    inputs = {"TENSORS": list, "MATRIX": ImageTransform}
    outputs = {"NORM_LANDMARKS": LandmarkList}
    optional_ports = frozenset({"MATRIX"})
    options = TensorsToLandmarksOptions

    def process(self, cc) -> None:
        tensors = cc.inputs["TENSORS"]
        if tensors is None:
            return
        lms = tensor_to_landmarks(host_array(tensors[cc.options.tensor_index]), cc.options)
        if cc.inputs.get("MATRIX") is not None:
            lms = project_landmarks(lms, cc.inputs["MATRIX"])
        cc.output("NORM_LANDMARKS", lms)
