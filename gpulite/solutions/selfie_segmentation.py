"""``SelfieSegmentation``: a person mask for every frame (MediaPipe Selfie Segmentation).

Runs ``gpulite/pipeline/graphs/selfie_segmentation.yaml`` (``model="general"``, 256x256) or
``selfie_segmentation_landscape.yaml`` (``model="landscape"``, 256x144, faster). Each frame is
segmented on its own (MediaPipe's graph has no temporal filter either).

Usage::

    from gpulite.solutions import SelfieSegmentation

    with SelfieSegmentation(model="landscape", backend="webgpu") as seg:
        mask = seg.process(frame).segmentation_mask          # (H, W) float32 in [0, 1]
        background_blurred = np.where(mask[..., None] > 0.5, frame, blurred)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.solutions.base import GraphSession, Solution

GRAPHS = {"general": "selfie_segmentation", "landscape": "selfie_segmentation_landscape"}


@dataclass(frozen=True)
class SegmentationResult:
    """``segmentation_mask``: (H, W) float32 in [0, 1], 1 = person (MediaPipe's field name)."""

    segmentation_mask: np.ndarray


class SelfieSegmentation(Solution):
    """MediaPipe Selfie Segmentation on gpulite (see the module docstring).

    Parameters
    ----------
    model : {"general", "landscape"}
        MediaPipe's ``model_selection`` 0 and 1.
    backend : {"cpu", "webgpu", "auto"} or None
    """

    def __init__(self, *, model: str = "general", backend: str | None = None) -> None:
        if model not in GRAPHS:
            raise ValueError(f"model must be one of {sorted(GRAPHS)}, got {model!r}")
        super().__init__(backend=backend, static_image_mode=True)
        self.model = model
        self._session = GraphSession(GRAPHS[model], backend=self.backend, outputs=["segmentation_mask"])

    def _process(self, image: np.ndarray) -> SegmentationResult:
        out = self._session.run({"image": image}, timings=self.last_timings)
        return SegmentationResult(out["segmentation_mask"].mask)

    def _close(self) -> None:
        self._session.close()
