"""``SelfieSegmentation``: a person mask for every frame (MediaPipe Selfie Segmentation).

Runs ``gpulite/pipeline/graphs/selfie_segmentation.yaml`` (``model="general"``, 256x256) or
``selfie_segmentation_landscape.yaml`` (``model="landscape"``, 256x144, faster). Each frame is
segmented on its own (MediaPipe's graph has no temporal filter either).

Usage::

    from gpulite.solutions import SelfieSegmentation

    with SelfieSegmentation(model="landscape", backend="webgpu") as seg:
        mask = seg.process(frame).segmentation_mask          # (H, W) float32 in [0, 1]
        background_blurred = np.where(mask[..., None] > 0.5, frame, blurred)

MediaPipe's argument works too: ``SelfieSegmentation(model_selection=1)`` is ``model="landscape"``,
so ``from gpulite.solutions import selfie_segmentation as mp_selfie_segmentation`` replaces
``mp.solutions.selfie_segmentation``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from gpulite.pipeline.calculators.types import Segmentation
from gpulite.solutions.base import GraphSession, Solution, check_choice

GRAPHS = {"general": "selfie_segmentation", "landscape": "selfie_segmentation_landscape"}
MODEL_SELECTION = {0: "general", 1: "landscape"}


@dataclass(frozen=True)
class SegmentationResult:
    """``segmentation_mask``: (H, W) float32 in [0, 1], 1 = person (MediaPipe's field name).

    On webgpu the mask stays on the GPU until ``segmentation_mask`` is first read (then it is
    read back and resized to the image, once); ``segmentation_mask_gpu`` is the model's output
    there (a tensor with ``buffer``, ``offset``, ``shape``: (1, 256, 256, 1) or (1, 144, 256, 1),
    the model's size, not the image's), None on the cpu and litert backends.
    """

    segmentation: Segmentation = field(repr=False)
    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("segmentation_mask",)  # what to_jsonable writes besides the fields

    @property
    def segmentation_mask(self) -> np.ndarray:
        return self.segmentation.mask

    @property
    def segmentation_mask_gpu(self) -> Any:
        return self.segmentation.gpu


class SelfieSegmentation(Solution):
    """MediaPipe Selfie Segmentation on gpulite (see the module docstring).

    Parameters
    ----------
    model_selection : {0, 1}
        MediaPipe's: 0 general (256x256), 1 landscape (256x144).
    model : {"general", "landscape"}, optional
        gpulite's name for the same choice (give one of the two).
    backend : {"cpu", "webgpu", "auto"} or None
    """

    def __init__(self, model_selection: int = 0, *, model: str | None = None, backend: str | None = None) -> None:
        if model is not None:
            if model_selection != 0:
                raise TypeError("SelfieSegmentation(): give model_selection or model (the same setting), not both")
            self.model = check_choice(model, "model", tuple(GRAPHS))
        else:
            self.model = MODEL_SELECTION[check_choice(model_selection, "model_selection", tuple(MODEL_SELECTION))]
        super().__init__(backend=backend, static_image_mode=True)
        self._session = GraphSession(GRAPHS[self.model], backend=self.backend, outputs=["segmentation_mask"],
                                     num_threads=self.inference_threads)

    def _result(self, image: np.ndarray, out: dict) -> SegmentationResult:
        return SegmentationResult(out["segmentation_mask"])

    def _reset(self) -> None:  # no state across frames; the graph restarts so the clock can restart
        self._session.restart()

    def _close(self) -> None:
        self._session.close()
