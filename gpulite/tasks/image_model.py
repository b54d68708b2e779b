"""The model of a single-model image task (ImageClassifier, ObjectDetector, ImageEmbedder).

:class:`ImageModel` reads a ``.tflite`` with (optional) TFLite Metadata, checks its input as
MediaPipe's ``BuildInputImageTensorSpecs`` does (one 1 x H x W x 3|4 input, uint8 or float32,
a float32 input needs ``NormalizationOptions``, RGB only), and runs it on an image: the image
(or a region of it, rotated) is resized to the input size without keeping the aspect ratio,
bilinear with replicated borders (MediaPipe's ``ImagePreprocessingGraph``, through gpulite's
``ImageToTensor``), normalised to ``[(0 - mean) / std, (255 - mean) / std]`` for a float input
or kept in [0, 255] for a uint8 one, and the outputs come back dequantized to float32.

The errors are MediaPipe's, in type and message: a ``ValueError`` (:class:`TaskModelError`,
also a :class:`~gpulite.ModelError`) for an unsuitable model, a ``FileNotFoundError``
(:class:`~gpulite.tasks.bundle.AssetNotFoundError`) for missing metadata it needs, a
``NotImplementedError`` for per-channel normalization.

Usage::

    m = ImageModel(read_asset("efficientnet_lite0"), backend="cpu")
    outputs, transform = m.run(rgb_uint8_image)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpulite.errors import ModelError
from gpulite.interpreter import Interpreter
from gpulite.model import metadata as tfmeta
from gpulite.pipeline.calculators.image_to_tensor import ImageToTensorOptions, image_to_tensor
from gpulite.pipeline.calculators.types import ImageTransform, NormalizedRect
from gpulite.tasks.bundle import AssetNotFoundError, check_model
from gpulite.tasks.core.base_options import cpu_threads
from gpulite.tasks.errors import TaskUnimplementedError


class TaskModelError(ModelError):
    """A model that a task cannot use (MediaPipe: ``ValueError``, an invalid argument)."""


@dataclass(frozen=True)
class ImageTensorSpec:
    """What the model's image input needs."""

    width: int
    height: int
    dtype: np.dtype
    output_range: tuple[float, float]  # the values [0, 255] map to


def input_spec(model, md: tfmeta.ModelMetadata | None) -> ImageTensorSpec:
    """MediaPipe's ``BuildInputImageTensorSpecs`` for a loaded model and its metadata."""
    sg = model.subgraphs[0]
    if len(sg.inputs) != 1:
        raise TaskModelError("Image tflite models are assumed to have a single input.")
    tensor = sg.tensors[sg.inputs[0]]
    tm = md.subgraphs[0].inputs[0] if md is not None and md.subgraphs and md.subgraphs[0].inputs else None
    props, norm = None, None
    if tm is not None:
        props = tm.content.properties if tm.content is not None else None
        if props is not None and not isinstance(props, tfmeta.ImageProperties):
            raise TaskModelError(f"Expected ImageProperties for tensor {tm.name or '#0'}, got "
                                 f"{type(props).__name__}.")
        norm = tm.unit(tfmeta.NormalizationOptions)
        if norm is not None and len(norm.mean) != len(norm.std):
            raise TaskModelError(f"NormalizationOptions: expected mean and std of same dimension, got "
                                 f"{len(norm.mean)} and {len(norm.std)}.")
        if norm is not None and len(norm.mean) not in (1, 3):
            raise TaskModelError(f"NormalizationOptions: only 1 or 3 mean and std values are supported, got "
                                 f"{len(norm.mean)}.")
    if len(tensor.shape) != 4:
        raise TaskModelError("Only 4D tensors in BHWD layout are supported.")
    if tensor.dtype not in (np.uint8, np.float32):
        raise TaskModelError(f"Type mismatch for input tensor {tensor.name}. Requested one of these types: "
                             f"uint8/float32, got {tensor.dtype.name.upper()}.")
    batch, height, width, depth = tensor.shape
    if isinstance(props, tfmeta.ImageProperties) and props.color_space != "RGB":
        raise TaskModelError("Only RGB color space is supported for now.")
    if batch != 1 or depth not in (3, 4):
        raise TaskModelError("The input tensor should have dimensions 1 x height x width x depth, where depth = 3 "
                             f"or 4. Got {batch} x {height} x {width} x {depth}.")
    if tensor.dtype == np.uint8:
        return ImageTensorSpec(width, height, np.dtype(np.uint8), (0.0, 255.0))
    if norm is None:
        raise AssetNotFoundError("Input tensor has type float32: it requires specifying NormalizationOptions "
                                 "metadata to preprocess input images.")
    mean, std = norm.mean[0], norm.std[0]
    if any(m != mean for m in norm.mean) or any(s != std for s in norm.std):
        raise TaskUnimplementedError("Per-channel image normalization is not available.")
    if abs(std) < np.finfo(np.float32).eps:
        raise TaskModelError("NormalizationOptions.std_values can't be 0. Please check if the tensor metadata has "
                             "been populated correctly.")
    lo, hi = np.float32((0.0 - mean) / std), np.float32((255.0 - mean) / std)
    return ImageTensorSpec(width, height, np.dtype(np.float32), (float(lo), float(hi)))


class ImageModel:
    """A single-input image model with its metadata, ready to run on images.

    Attributes
    ----------
    metadata : ModelMetadata or None
    spec : ImageTensorSpec
    interpreter : Interpreter
    output_metadata : list of TensorMetadata or None (one per output, when the metadata has them)
    """

    def __init__(self, data: bytes, *, backend: str = "cpu", num_threads: int | None = None) -> None:
        model = check_model(data)
        self.metadata = tfmeta.load_metadata(model)
        self.spec = input_spec(model, self.metadata)
        self.model = model
        if num_threads is None:
            num_threads = cpu_threads(backend)  # litert: the num_threads flag's count, else one per core (up to 4)
        self.interpreter = Interpreter(model_content=data, backend=backend, num_threads=num_threads)
        self.interpreter.allocate_tensors()
        self._input = self.interpreter.get_input_details()[0]["index"]
        self._outputs = self.interpreter.get_output_details()
        sg = self.metadata.subgraphs[0] if self.metadata is not None and self.metadata.subgraphs else None
        self.output_metadata = list(sg.outputs) if sg is not None and sg.outputs else None
        lo, hi = self.spec.output_range
        self._convert = ImageToTensorOptions(self.spec.width, self.spec.height, keep_aspect_ratio=False,
                                             output_range=(lo, hi), border_mode="replicate", backend="cpu")

    @property
    def output_count(self) -> int:
        return len(self._outputs)

    def output_quantized(self, i: int) -> bool:
        return self._outputs[i]["dtype"] in (np.uint8, np.int8)

    def run(self, image: np.ndarray, rect: NormalizedRect | None = None) -> tuple[list[np.ndarray], ImageTransform]:
        """The model's outputs (float32, dequantized) on ``image`` (RGB/RGBA uint8 (H, W, 3|4)), or
        on the region ``rect`` of it; and the transform from tensor to image coordinates."""
        tensor, transform = image_to_tensor(image, rect, options=self._convert)
        if self.spec.dtype == np.uint8:
            tensor = tensor.astype(np.uint8)  # exact: the [0, 255] range keeps whole grey levels
        it = self.interpreter
        it.set_tensor(self._input, tensor)
        it.invoke()
        return [self._dequantized(d) for d in self._outputs], transform

    def _dequantized(self, d: dict) -> np.ndarray:
        raw = self.interpreter.get_tensor(d["index"])
        if raw.dtype in (np.uint8, np.int8):
            scale, zero = d["quantization"]
            return ((raw.astype(np.float32) - np.float32(zero)) * np.float32(scale)).astype(np.float32)
        return np.asarray(raw, np.float32)

    def close(self) -> None:
        close = getattr(self.interpreter, "close", None)
        if close is not None:
            close()


def roi_rect(region_of_interest, rotation_degrees: int, image_size: tuple[int, int], *,
             roi_allowed: bool = True) -> NormalizedRect | None:
    """MediaPipe's ``ConvertToNormalizedRect``: an ``ImageProcessingOptions`` region (a ``RectF``
    with left/top/right/bottom in [0, 1]) and a rotation (a multiple of 90 degrees, clockwise)
    as the NormalizedRect the preprocessing crops; None for the whole image unrotated.

    Raises ``ValueError`` (:class:`TaskModelError`) as MediaPipe does for a rotation that is
    not a multiple of 90, a region of interest on a task that takes none, or a bad region.
    """
    if rotation_degrees % 90 != 0:
        raise TaskModelError("Expected rotation to be a multiple of 90°.")
    if region_of_interest is None and rotation_degrees == 0:
        return None
    x, y, w, h = 0.5, 0.5, 1.0, 1.0
    if region_of_interest is not None:
        if not roi_allowed:
            raise TaskModelError("This task doesn't support region-of-interest.")
        r = region_of_interest
        if not (r.left < r.right and r.top < r.bottom):
            raise TaskModelError("Expected RectF with left < right and top < bottom.")
        if r.left < 0 or r.top < 0 or r.right > 1 or r.bottom > 1:
            raise TaskModelError("Expected RectF values to be in [0,1].")
        x, y, w, h = (r.left + r.right) / 2, (r.top + r.bottom) / 2, r.right - r.left, r.bottom - r.top
    rotation = -rotation_degrees * math.pi / 180.0  # MediaPipe's rects rotate counter-clockwise
    if rotation_degrees % 180 != 0:  # the crop is taken rotated: width and height swap in pixels
        iw, ih = image_size
        w, h = h * ih / iw, w * iw / ih
    return NormalizedRect(x_center=x, y_center=y, width=w, height=h, rotation=rotation)
