"""``ImageProcessingOptions`` (MediaPipe Tasks' ``vision.core.image_processing_options``)."""

from __future__ import annotations

import dataclasses

from gpulite.tasks.components.containers.rect import RectF


@dataclasses.dataclass
class ImageProcessingOptions:
    """Where in the image a task looks, and how the image is turned.

    Attributes
    ----------
    region_of_interest : RectF, optional
        A normalised region (classifiers, detectors and embedders; landmarkers refuse one).
    rotation_degrees : int
        The clockwise turn that makes the image upright, a multiple of 90.
    """

    region_of_interest: RectF | None = None
    rotation_degrees: int = 0
