"""``ImageClassifier`` (MediaPipe Tasks' ``vision.image_classifier``) for models with TFLite Metadata.

The model's input normalization, label map (and display names of ``display_names_locale``),
score threshold and score calibration come from its metadata (:mod:`gpulite.model.metadata`);
``max_results``, ``score_threshold`` and the allow/deny lists filter the result as MediaPipe's
classification post-processing does (:mod:`gpulite.tasks.processors.classification`).

Usage::

    from gpulite.tasks import python
    from gpulite.tasks.python import vision

    options = vision.ImageClassifierOptions(
        base_options=python.BaseOptions(model_asset_path="efficientnet_lite0"), max_results=3)
    with vision.ImageClassifier.create_from_options(options) as classifier:
        top = classifier.classify(mp.Image.create_from_file("cat.jpg")).classifications[0].categories[0]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from gpulite.tasks.components.containers.classification_result import ClassificationResult
from gpulite.tasks.components.processors.classifier_options import ClassifierOptions
from gpulite.tasks.core.base_options import BaseOptions
from gpulite.tasks.processors.classification import ClassificationPostprocessor
from gpulite.tasks.vision.core.image import Image
from gpulite.tasks.vision.core.image_model_task import ImageModelTask
from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode

ImageClassifierResult = ClassificationResult


@dataclasses.dataclass
class ImageClassifierOptions:
    """Options of :class:`ImageClassifier` (MediaPipe 1.2.2's fields and defaults).

    Attributes
    ----------
    base_options : BaseOptions
    running_mode : RunningMode
    display_names_locale : str, optional
        Locale of the display names in the metadata ("en" when None).
    max_results : int, optional
        The most results per head, best first (all when None or negative; 0 is an error).
    score_threshold : float, optional
        Overrides the metadata's threshold.
    category_allowlist, category_denylist : list of str, optional
        Category names kept / dropped; mutually exclusive.
    result_callback : callable, optional
        LIVE_STREAM only: ``callback(result, output_image, timestamp_ms)``.
    """

    base_options: BaseOptions
    running_mode: VisionTaskRunningMode = VisionTaskRunningMode.IMAGE
    display_names_locale: str | None = None
    max_results: int | None = None
    score_threshold: float | None = None
    category_allowlist: list[str] | None = None
    category_denylist: list[str] | None = None
    result_callback: Callable[[ImageClassifierResult, Image, int], None] | None = None


class ImageClassifier(ImageModelTask):
    """Classifies images with a model that carries TFLite Metadata (see the module docstring)."""

    def __init__(self, options: ImageClassifierOptions) -> None:
        super().__init__(options.base_options, options.running_mode, options.result_callback)
        self._classify = ClassificationPostprocessor(self._model, ClassifierOptions(
            display_names_locale=options.display_names_locale, max_results=options.max_results,
            score_threshold=options.score_threshold, category_allowlist=options.category_allowlist,
            category_denylist=options.category_denylist))

    @classmethod
    def create_from_model_path(cls, model_path: str) -> ImageClassifier:
        """An IMAGE-mode classifier with the default options."""
        return cls(ImageClassifierOptions(base_options=BaseOptions(model_asset_path=model_path)))

    @classmethod
    def create_from_options(cls, options: ImageClassifierOptions) -> ImageClassifier:
        return cls(options)

    def classify(self, image: Image,
                 image_processing_options: ImageProcessingOptions | None = None) -> ImageClassifierResult:
        """Classify one image (IMAGE mode)."""
        return self._process_image_data(image, image_processing_options, "classify")

    def classify_for_video(self, image: Image, timestamp_ms: int,
                           image_processing_options: ImageProcessingOptions | None = None) -> ImageClassifierResult:
        """Classify a video frame (VIDEO mode; timestamps must increase)."""
        return self._process_video_data(image, timestamp_ms, image_processing_options, "classify_for_video")

    def classify_async(self, image: Image, timestamp_ms: int,
                       image_processing_options: ImageProcessingOptions | None = None) -> None:
        """Send a live frame (LIVE_STREAM mode); the result goes to ``result_callback``."""
        self._send_live_stream_data(image, timestamp_ms, image_processing_options, "classify_async")

    def _post(self, outputs: list, transform: Any, timestamp_ms: int) -> ImageClassifierResult:
        return self._classify(outputs, timestamp_ms)
