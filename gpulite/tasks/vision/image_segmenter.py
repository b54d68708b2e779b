"""``ImageSegmenter``: per-pixel masks (MediaPipe Tasks' image segmenter).

The model is a ``.tflite`` segmentation model with one output of shape (1, H, W, C). gpulite runs
the one-channel models (a person probability: ``selfie_segmenter``, the zoo's name) through its
``selfie_segmentation`` graph: the image stretched to the model's input size, values in the range
the model's metadata gives (its normalization), the output resized to the image (bilinear). The
results are MediaPipe's: ``confidence_masks`` one ``VEC32F1`` image per channel,
``category_mask`` a ``GRAY8`` image holding, for a one-channel model, 0 (the category) where the
confidence is above 0.5 and 255 elsewhere. A model with several channels is refused
(:class:`NotImplementedError`), a model that is no segmentation model (another output shape) too
(:class:`~gpulite.ModelError`, a ``ValueError``).

Usage::

    options = vision.ImageSegmenterOptions(base_options=python.BaseOptions(model_asset_path="selfie_segmenter"),
                                           output_category_mask=True)
    with vision.ImageSegmenter.create_from_options(options) as segmenter:
        result = segmenter.segment(image)
        person = result.confidence_masks[0].numpy_view()[..., 0]     # (H, W) float32 in [0, 1]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from gpulite.errors import GpuliteError, ModelError
from gpulite.model import metadata as tfmeta
from gpulite.model.reader import load
from gpulite.pipeline.graphs import load_config
from gpulite.solutions.base import set_options
from gpulite.tasks.bundle import check_model, read_asset
from gpulite.tasks.core.base_options import BaseOptions
from gpulite.tasks.vision.core.graph_task import GraphTask
from gpulite.tasks.vision.core.image import Image, ImageFormat
from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode


class SegmenterModelError(GpuliteError, NotImplementedError):
    """A segmentation model gpulite's ImageSegmenter does not run (more than one output channel)."""


@dataclasses.dataclass
class ImageSegmenterResult:
    """The masks of one image.

    Attributes
    ----------
    confidence_masks : list of Image, optional
        ``output_confidence_masks``: one VEC32F1 image per category.
    category_mask : Image, optional
        ``output_category_mask``: a GRAY8 image of category indices (255: none).
    """

    confidence_masks: list[Image] | None = None
    category_mask: Image | None = None


@dataclasses.dataclass
class ImageSegmenterOptions:
    """Options of :class:`ImageSegmenter` (MediaPipe's names, defaults and meanings)."""

    base_options: BaseOptions
    running_mode: VisionTaskRunningMode = VisionTaskRunningMode.IMAGE
    output_confidence_masks: bool = True
    output_category_mask: bool = False
    result_callback: Callable[[ImageSegmenterResult, Image, int], None] | None = None


def _input_spec(model_bytes: bytes) -> tuple[int, int, tuple[float, float], list[str]]:
    """(width, height, output range, labels) of a one-channel segmentation model."""
    model = load(model_bytes)
    sg = model.subgraphs[0]
    shape = tuple(sg.tensors[sg.inputs[0]].shape)
    out = tuple(sg.tensors[sg.outputs[0]].shape)
    if len(shape) != 4 or len(out) != 4:  # not a segmentation model at all (e.g. a classifier)
        raise ModelError(f"expected a (1, H, W, 3) image input and a (1, H, W, C) output, got {shape} and "
                                  f"{out}")
    if out[3] != 1:
        raise SegmenterModelError(f"gpulite's ImageSegmenter runs one-channel models; this one has {out[3]} channels")
    md = tfmeta.load_metadata(model_bytes)
    norm = md.input_normalization() if md is not None else None
    mean, std = (norm[0][0], norm[1][0]) if norm else (0.0, 255.0)
    labels = []
    if md is not None and md.subgraphs and md.subgraphs[0].outputs:
        labels = md.labels(md.subgraphs[0].outputs[0])
    return shape[2], shape[1], ((0.0 - mean) / std, (255.0 - mean) / std), labels


class ImageSegmenter(GraphTask):
    """Masks for images, videos and live streams."""

    @classmethod
    def create_from_model_path(cls, model_path: str) -> ImageSegmenter:
        return cls.create_from_options(ImageSegmenterOptions(base_options=BaseOptions(model_asset_path=model_path)))

    @classmethod
    def create_from_options(cls, options: ImageSegmenterOptions) -> ImageSegmenter:
        return cls(options)

    def __init__(self, options: ImageSegmenterOptions) -> None:
        if not (options.output_confidence_masks or options.output_category_mask):  # MediaPipe's check and words
            raise ValueError("At least one of `output_confidence_masks` and `output_category_mask` must be set.")
        model = read_asset(options.base_options.model_asset_path, options.base_options.model_asset_buffer)
        check_model(model, "segmentation model")
        width, height, output_range, self._labels = _input_spec(model)
        super().__init__(options)
        self._confidence = bool(options.output_confidence_masks)
        self._category = bool(options.output_category_mask)
        cfg = set_options(load_config("selfie_segmentation"), {
            "to_tensor.output_width": width, "to_tensor.output_height": height,
            "to_tensor.output_range": list(output_range)})
        self._start(cfg, {"inference": model}, ["segmentation_mask"])

    @property
    def labels(self) -> list[str]:
        """The category labels from the model's metadata (empty when it has none)."""
        return list(self._labels)

    def segment(self, image: Image, image_processing_options: ImageProcessingOptions | None = None
                ) -> ImageSegmenterResult:
        """The masks of one image (IMAGE mode)."""
        return self._process_image_data(image, image_processing_options, "segment")

    def segment_for_video(self, image: Image, timestamp_ms: int,
                          image_processing_options: ImageProcessingOptions | None = None) -> ImageSegmenterResult:
        """The masks of one video frame (VIDEO mode); timestamps must increase."""
        return self._process_video_data(image, timestamp_ms, image_processing_options, "segment_for_video")

    def segment_async(self, image: Image, timestamp_ms: int,
                      image_processing_options: ImageProcessingOptions | None = None) -> None:
        """Send a live frame (LIVE_STREAM mode); the result goes to ``result_callback``."""
        self._send_live_stream_data(image, timestamp_ms, image_processing_options, "segment_async")

    def _run(self, rgb: np.ndarray, timestamp_ms: int | None,
             image_processing_options: ImageProcessingOptions | None) -> ImageSegmenterResult:
        self._check_processing_options(image_processing_options, roi_allowed=False, rotation_allowed=False)
        mask = np.asarray(self._frame(rgb, timestamp_ms)["segmentation_mask"].mask, np.float32)
        confidence = [Image(ImageFormat.VEC32F1, mask)] if self._confidence else None
        category = (Image(ImageFormat.GRAY8, np.where(mask > 0.5, 0, 255).astype(np.uint8))
                    if self._category else None)
        return ImageSegmenterResult(confidence, category)
