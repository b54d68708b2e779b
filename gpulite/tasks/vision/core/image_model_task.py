"""``ImageModelTask``: the base of the single-model image tasks (ImageClassifier, ObjectDetector,
ImageEmbedder): its model asset read from ``BaseOptions`` (path, buffer or zoo name) as an
:class:`~gpulite.tasks.image_model.ImageModel` on the backend they ask for, and each frame run
through it (with the ``ImageProcessingOptions`` region and rotation) and a post-processor.

A subclass sets ``_roi_allowed`` and makes ``self._post(outputs, transform, timestamp_ms)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpulite.tasks.bundle import read_asset
from gpulite.tasks.core.base_options import BaseOptions
from gpulite.tasks.image_model import ImageModel, roi_rect
from gpulite.tasks.vision.core.base_vision_task_api import BaseVisionTaskApi
from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode


class ImageModelTask(BaseVisionTaskApi):
    """A vision task over one ``.tflite`` model with TFLite Metadata."""

    _roi_allowed = True

    def __init__(self, base_options: BaseOptions, running_mode: VisionTaskRunningMode,
                 result_callback: Callable[..., None] | None) -> None:
        super().__init__(running_mode, result_callback)
        if not isinstance(base_options, BaseOptions):
            raise TypeError(f"base_options must be a BaseOptions, got {type(base_options).__name__}")
        data = read_asset(base_options.model_asset_path, base_options.model_asset_buffer)
        self._model = ImageModel(data, backend=base_options.resolve_backend())

    def _run(self, rgb: np.ndarray, timestamp_ms: int | None,
             image_processing_options: ImageProcessingOptions | None) -> Any:
        self._check_processing_options(image_processing_options, roi_allowed=self._roi_allowed)
        ipo = image_processing_options or ImageProcessingOptions()
        rect = roi_rect(ipo.region_of_interest, ipo.rotation_degrees, (rgb.shape[1], rgb.shape[0]),
                        roi_allowed=self._roi_allowed)
        outputs, transform = self._model.run(rgb, rect)
        return self._post(outputs, transform, 0 if timestamp_ms is None else timestamp_ms)

    def _post(self, outputs: list[np.ndarray], transform: Any, timestamp_ms: int) -> Any:
        raise NotImplementedError

    def _close(self) -> None:
        self._model.close()
