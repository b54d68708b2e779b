"""TensorsToSegmentation: a segmentation model's output -> a mask in image pixels.

MediaPipe's ``TensorsToSegmentationCalculator``: the (1, H, W, C) tensor goes through the
activation -- ``sigmoid`` or ``none`` on a one-channel tensor, ``softmax`` over the channels
keeping ``output_layer_index`` -- and is resized to ``OUTPUT_SIZE`` (width, height) with
``cv2.resize`` (bilinear on pixel centres, as MediaPipe's OpenCV converter). A tensor on the GPU
with an ``OUTPUT_SIZE`` gives a deferred mask (``Segmentation.deferred``): it is read back and
resized when its ``mask`` is first read, never if nobody reads it.

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


def check_tensor(shape: tuple[int, ...], output_size: tuple[int, int] | None,
                 options: TensorsToSegmentationOptions) -> None:
    """Raise :class:`PipelineValueError` unless a tensor of ``shape`` makes a mask with ``options``."""
    if len(shape) == 4:
        if shape[0] != 1:
            raise PipelineValueError(f"TensorsToSegmentation: batch must be 1, got tensor shape {tuple(shape)}")
        shape = shape[1:]
    if len(shape) == 2:
        shape = (*shape, 1)
    if len(shape) != 3:
        raise PipelineValueError(f"TensorsToSegmentation: expected a (1, H, W, C) tensor, got shape {tuple(shape)}")
    a = options.activation
    if a == "softmax" and not 0 <= options.output_layer_index < shape[2]:
        raise PipelineValueError(f"TensorsToSegmentation: output_layer_index {options.output_layer_index} "
                                 f"out of range for {shape[2]} channels")
    if a != "softmax" and shape[2] != 1:
        raise PipelineValueError(f"TensorsToSegmentation: activation {a!r} needs one channel, got {shape[2]}; "
                                 "use softmax for several")
    if output_size is not None and (int(output_size[0]) < 1 or int(output_size[1]) < 1):
        raise PipelineValueError(f"TensorsToSegmentation: OUTPUT_SIZE must be positive (width, height), "
                                 f"got {tuple(output_size)}")


def tensor_to_mask(tensor: np.ndarray, output_size: tuple[int, int] | None = None,
                   options: TensorsToSegmentationOptions = TensorsToSegmentationOptions()) -> Segmentation:
    """The mask of one (1, H, W, C) tensor, at ``output_size`` (width, height) or the tensor's size."""
    t = np.asarray(tensor, np.float32)
    check_tensor(t.shape, output_size, options)
    t = t.reshape(t.shape[-3:] if t.ndim == 4 else t.shape if t.ndim == 3 else (*t.shape, 1))
    if options.activation == "softmax":
        e = np.exp(t - t.max(axis=2, keepdims=True))
        m = e[..., options.output_layer_index] / e.sum(axis=2)
    else:
        m = t[..., 0]
        if options.activation == "sigmoid":
            with np.errstate(over="ignore"):  # exp of a very negative logit is inf: sigmoid 0, as wanted
                m = np.reciprocal(np.exp(-m) + np.float32(1.0))
    # Clipped on the tensor's grid: bilinear weights are convex, so the resized mask stays in [0, 1].
    m = np.clip(m, 0.0, 1.0, dtype=np.float32)
    if output_size is not None:
        size = (int(output_size[0]), int(output_size[1]))
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
        t, size, options = tensors[0], cc.inputs.get("OUTPUT_SIZE"), cc.options
        if hasattr(t, "data_sync") and size is not None:
            # On the GPU: read back (and resize) only when someone reads the mask.
            check_tensor(tuple(t.shape), size, options)
            cc.output("MASK", Segmentation.deferred(lambda: tensor_to_mask(t.data_sync(), size, options).mask, t,
                                                    (int(size[1]), int(size[0]))))
            return
        if hasattr(t, "data_sync") and options.activation != "softmax":
            # On the GPU at the tensor's size (a region's mask, projected next): kept there as logits or values
            check_tensor(tuple(t.shape), None, options)
            cc.output("MASK", Segmentation.deferred(lambda: tensor_to_mask(t.data_sync(), None, options).mask, t,
                                                    tuple(t.shape[-3:-1]), options.activation))
            return
        cc.output("MASK", tensor_to_mask(host_array(t), size, options))
