"""``ImageEmbedder`` (MediaPipe Tasks' ``vision.image_embedder``): a feature vector per output
head of a model with (optional) TFLite Metadata, optionally L2-normalized and scalar-quantized
(:mod:`gpulite.tasks.processors.embedding`); ``ImageEmbedder.cosine_similarity(u, v)``.

Usage::

    options = vision.ImageEmbedderOptions(
        base_options=python.BaseOptions(model_asset_path="efficientnet_lite0"), l2_normalize=True)
    with vision.ImageEmbedder.create_from_options(options) as embedder:
        a, b = (embedder.embed(im).embeddings[0] for im in (image_a, image_b))
        similarity = vision.ImageEmbedder.cosine_similarity(a, b)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from gpulite.tasks.components.containers.embedding_result import Embedding, EmbeddingResult
from gpulite.tasks.core.base_options import BaseOptions
from gpulite.tasks.processors.embedding import EmbeddingPostprocessor, cosine_similarity
from gpulite.tasks.vision.core.image import Image
from gpulite.tasks.vision.core.image_model_task import ImageModelTask
from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode

ImageEmbedderResult = EmbeddingResult


@dataclasses.dataclass
class ImageEmbedderOptions:
    """Options of :class:`ImageEmbedder` (MediaPipe 1.2.2's fields and defaults).

    Attributes
    ----------
    base_options : BaseOptions
    running_mode : RunningMode
    l2_normalize : bool, optional
        Divide each embedding by its L2 norm (for models without an L2_NORMALIZATION op).
    quantize : bool, optional
        Scalar-quantize each embedding to bytes (uint8 arrays holding int8 values).
    result_callback : callable, optional
    """

    base_options: BaseOptions
    running_mode: VisionTaskRunningMode = VisionTaskRunningMode.IMAGE
    l2_normalize: bool | None = None
    quantize: bool | None = None
    result_callback: Callable[[ImageEmbedderResult, Image, int], None] | None = None


class ImageEmbedder(ImageModelTask):
    """Embeds images (see the module docstring)."""

    def __init__(self, options: ImageEmbedderOptions) -> None:
        super().__init__(options.base_options, options.running_mode, options.result_callback)
        self._embed = EmbeddingPostprocessor(self._model, l2_normalize=bool(options.l2_normalize),
                                             quantize=bool(options.quantize))

    @classmethod
    def create_from_model_path(cls, model_path: str) -> ImageEmbedder:
        return cls(ImageEmbedderOptions(base_options=BaseOptions(model_asset_path=model_path)))

    @classmethod
    def create_from_options(cls, options: ImageEmbedderOptions) -> ImageEmbedder:
        return cls(options)

    def embed(self, image: Image,
              image_processing_options: ImageProcessingOptions | None = None) -> ImageEmbedderResult:
        """Embed one image (IMAGE mode)."""
        return self._process_image_data(image, image_processing_options, "embed")

    def embed_for_video(self, image: Image, timestamp_ms: int,
                        image_processing_options: ImageProcessingOptions | None = None) -> ImageEmbedderResult:
        """Embed a video frame (VIDEO mode)."""
        return self._process_video_data(image, timestamp_ms, image_processing_options, "embed_for_video")

    def embed_async(self, image: Image, timestamp_ms: int,
                    image_processing_options: ImageProcessingOptions | None = None) -> None:
        """Send a live frame (LIVE_STREAM mode); the result goes to ``result_callback``."""
        self._send_live_stream_data(image, timestamp_ms, image_processing_options, "embed_async")

    @classmethod
    def cosine_similarity(cls, u: Embedding, v: Embedding) -> float:
        """Cosine similarity of two embeddings (``ValueError`` for different sizes or kinds, or a zero norm)."""
        return cosine_similarity(u, v)

    def _post(self, outputs: list, transform: Any, timestamp_ms: int) -> ImageEmbedderResult:
        return self._embed(outputs, timestamp_ms)
