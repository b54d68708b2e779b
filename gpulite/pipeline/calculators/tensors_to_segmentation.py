"""TensorsToSegmentation: a segmentation model's output -> a mask in image pixels.

MediaPipe's ``TensorsToSegmentationCalculator``: the (1, H, W, C) tensor goes through the
activation -- ``sigmoid`` or ``none`` on a one-channel tensor, ``softmax`` over the channels
keeping ``output_layer_index`` -- and is resized to ``OUTPUT_SIZE`` (width, height) with
``cv2.resize`` (bilinear on pixel centres, as MediaPipe's OpenCV converter).

Usage (selfie segmentation)::

    - calculator: TensorsToSegmentation
      input_stream: ["TENSORS:output_tensors", "OUTPUT_SIZE:image_size"]
      output_stream: "MASK:mask"
      options: {activation: none}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._opencv import cv2
from gpulite.pipeline.calculators.types import PipelineValueError, Segmentation, host_array
from gpulite.pipeline.registry import register_calculator

ACTIVATIONS = ("none", "sigmoid", "softmax")


@dataclass(frozen=True)
class TensorsToSegmentationOptions:
    """MediaPipe's ``TensorsToSegmentationCalculatorOptions``."""

    activation: str = "none"
    output_layer_index: int = 1

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")


def tensor_to_mask(tensor: np.ndarray, output_size: tuple[int, int] | None = None,
                   options: TensorsToSegmentationOptions = TensorsToSegmentationOptions()) -> Segmentation:
    """The mask of one (1, H, W, C) tensor, at ``output_size`` (width, height) or the tensor's size."""
    t = np.asarray(tensor, np.float32)
    if t.ndim == 4:
        if t.shape[0] != 1:
            raise PipelineValueError(f"TensorsToSegmentation: batch must be 1, got tensor shape {t.shape}")
        t = t[0]
    if t.ndim == 2:
        t = t[..., None]
    if t.ndim != 3:
        raise PipelineValueError(f"TensorsToSegmentation: expected a (1, H, W, C) tensor, got shape {tensor.shape}")
    a = options.activation
    if a == "softmax":
        if not 0 <= options.output_layer_index < t.shape[2]:
            raise PipelineValueError(f"TensorsToSegmentation: output_layer_index {options.output_layer_index} "
                                     f"out of range for {t.shape[2]} channels")
        e = np.exp(t - t.max(axis=2, keepdims=True))
        m = e[..., options.output_layer_index] / e.sum(axis=2)
    else:
        if t.shape[2] != 1:
            raise PipelineValueError(f"TensorsToSegmentation: activation {a!r} needs one channel, got {t.shape[2]}; "
                                     "use softmax for several")
        m = t[..., 0]
        if a == "sigmoid":
            with np.errstate(over="ignore"):  # exp of a very negative logit is inf: sigmoid 0, as wanted
                m = np.reciprocal(np.exp(-m) + np.float32(1.0))
    # Clipped on the tensor's grid: bilinear weights are convex, so the resized mask stays in [0, 1].
    m = np.clip(m, 0.0, 1.0, dtype=np.float32)
    if output_size is not None:
        size = (int(output_size[0]), int(output_size[1]))
        if size[0] < 1 or size[1] < 1:
            raise PipelineValueError(f"TensorsToSegmentation: OUTPUT_SIZE must be positive (width, height), "
                                     f"got {tuple(output_size)}")
        if size != (m.shape[1], m.shape[0]):
            m = cv2.resize(m, size, interpolation=cv2.INTER_LINEAR)
    return Segmentation(m)


@register_calculator
class TensorsToSegmentation(Calculator):
    """Model output -> mask; see the module docstring."""

    inputs = {"TENSORS": list, "OUTPUT_SIZE": tuple}
    outputs = {"MASK": Segmentation}
    optional_ports = frozenset({"OUTPUT_SIZE"})
    options = TensorsToSegmentationOptions

    def process(self, cc) -> None:
        tensors = cc.inputs["TENSORS"]
        if tensors is None:
            return
        cc.output("MASK", tensor_to_mask(host_array(tensors[0]), cc.inputs.get("OUTPUT_SIZE"), cc.options))
