"""``ObjectDetector`` (MediaPipe Tasks' ``vision.object_detector``) for models with TFLite Metadata.

Models without in-model NMS (MediaPipe's efficientdet: ``location`` and ``score`` outputs and a
``DETECTOR_METADATA`` with SSD anchors) and models with it (the four outputs of
``TFLite_Detection_PostProcess``); labels, box order and score threshold from the metadata;
boxes in pixels of the input image. See :mod:`gpulite.tasks.processors.detection`.

Usage::

    options = vision.ObjectDetectorOptions(
        base_options=python.BaseOptions(model_asset_path="efficientdet_lite0_int8"),
        max_results=5, score_threshold=0.3)
    with vision.ObjectDetector.create_from_options(options) as detector:
        for d in detector.detect(image).detections:
            print(d.categories[0].category_name, d.bounding_box)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from gpulite.tasks.components.containers.detections import DetectionResult
from gpulite.tasks.core.base_options import BaseOptions
from gpulite.tasks.processors.detection import DetectionPostprocessor
from gpulite.tasks.vision.core.image import Image
from gpulite.tasks.vision.core.image_model_task import ImageModelTask
from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode

ObjectDetectorResult = DetectionResult


@dataclasses.dataclass
class ObjectDetectorOptions:
    """Options of :class:`ObjectDetector` (MediaPipe 1.2.2's fields and defaults).

    Attributes
    ----------
    base_options : BaseOptions
    running_mode : RunningMode
    display_names_locale : str, optional
    max_results : int, optional
        The most detections, best first (-1: all; 0 is an error).
    score_threshold : float, optional
        Detections scoring below it are dropped (0.0 by default, as in MediaPipe's Python API;
        None uses the metadata's).
    category_allowlist, category_denylist : list of str, optional
    result_callback : callable, optional
    """

    base_options: BaseOptions
    running_mode: VisionTaskRunningMode = VisionTaskRunningMode.IMAGE
    display_names_locale: str | None = None
    max_results: int | None = -1
    score_threshold: float | None = 0.0
    category_allowlist: list[str] | None = None
    category_denylist: list[str] | None = None
    result_callback: Callable[[DetectionResult, Image, int], None] | None = None


class ObjectDetector(ImageModelTask):
    """Detects objects with a model that carries TFLite Metadata (see the module docstring)."""

    _roi_allowed = False

    def __init__(self, options: ObjectDetectorOptions) -> None:
        super().__init__(options.base_options, options.running_mode, options.result_callback)
        self._detect = DetectionPostprocessor(
            self._model, max_results=options.max_results, score_threshold=options.score_threshold,
            category_allowlist=options.category_allowlist, category_denylist=options.category_denylist,
            display_names_locale=options.display_names_locale)

    @classmethod
    def create_from_model_path(cls, model_path: str) -> ObjectDetector:
        return cls(ObjectDetectorOptions(base_options=BaseOptions(model_asset_path=model_path)))

    @classmethod
    def create_from_options(cls, options: ObjectDetectorOptions) -> ObjectDetector:
        return cls(options)

    def detect(self, image: Image,
               image_processing_options: ImageProcessingOptions | None = None) -> ObjectDetectorResult:
        """Detect objects in one image (IMAGE mode)."""
        return self._process_image_data(image, image_processing_options, "detect")

    def detect_for_video(self, image: Image, timestamp_ms: int,
                         image_processing_options: ImageProcessingOptions | None = None) -> ObjectDetectorResult:
        """Detect objects in a video frame (VIDEO mode)."""
        return self._process_video_data(image, timestamp_ms, image_processing_options, "detect_for_video")

    def detect_async(self, image: Image, timestamp_ms: int,
                     image_processing_options: ImageProcessingOptions | None = None) -> None:
        """Send a live frame (LIVE_STREAM mode); the result goes to ``result_callback``."""
        self._send_live_stream_data(image, timestamp_ms, image_processing_options, "detect_async")

    def _post(self, outputs: list, transform: Any, timestamp_ms: int) -> ObjectDetectorResult:
        return self._detect(outputs, transform)
