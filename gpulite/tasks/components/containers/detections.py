"""``Detection`` and ``DetectionResult`` (MediaPipe Tasks' ``containers.detections``)."""

import dataclasses

from gpulite.tasks.components.containers.bounding_box import BoundingBox
from gpulite.tasks.components.containers.category import Category
from gpulite.tasks.components.containers.keypoint import NormalizedKeypoint


@dataclasses.dataclass
class Detection:
    """One detected object: its box in pixels, its classes, and (face detection) its keypoints.

    Attributes
    ----------
    bounding_box : BoundingBox
    categories : list of Category
    keypoints : list of NormalizedKeypoint, optional
    """

    bounding_box: BoundingBox
    categories: list[Category]
    keypoints: list[NormalizedKeypoint] | None = None


@dataclasses.dataclass
class DetectionResult:
    """What a detector found in one image.

    Attributes
    ----------
    detections : list of Detection
    """

    detections: list[Detection]
