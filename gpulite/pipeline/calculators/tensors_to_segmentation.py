"""TensorsToSegmentation: a segmentation model's output -> a mask in image pixels.

MediaPipe's ``TensorsToSegmentationCalculator``: the (1, H, W, C) tensor goes through the
activation -- ``sigmoid`` or ``none`` on a one-channel tensor, ``softmax`` over the channels
keeping ``output_layer_index`` -- and is resized to ``OUTPUT_SIZE`` (width, height) with
bilinear interpolation on pixel centres (``cv::resize(INTER_LINEAR)``).

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


def _axis_weights(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    src = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out) - 0.5
    src = np.clip(src, 0, n_in - 1)
    i0 = np.floor(src).astype(np.intp)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, (src - i0).astype(np.float32)


def resize_bilinear(mask: np.ndarray, width: int, height: int) -> np.ndarray:
    """Resize a 2-D float mask with pixel-centre bilinear interpolation (edges replicated)."""
    h, w = mask.shape
    if (w, h) == (width, height):
        return mask.astype(np.float32, copy=True)
    y0, y1, fy = _axis_weights(h, height)
    x0, x1, fx = _axis_weights(w, width)
    rows = mask[y0] * (1 - fy)[:, None] + mask[y1] * fy[:, None]
    return (rows[:, x0] * (1 - fx) + rows[:, x1] * fx).astype(np.float32)


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
                m = 1.0 / (1.0 + np.exp(-m.astype(np.float64)))
    m = np.asarray(m, np.float32)
    if output_size is not None:
        m = resize_bilinear(m, int(output_size[0]), int(output_size[1]))
    return Segmentation(np.clip(m, 0.0, 1.0))


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
