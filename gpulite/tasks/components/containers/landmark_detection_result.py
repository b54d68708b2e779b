"""``LandmarksDetectionResult`` (MediaPipe Tasks' ``containers.landmark_detection_result``)."""

import dataclasses

from gpulite.tasks.components.containers.category import Category
from gpulite.tasks.components.containers.landmark import Landmark, NormalizedLandmark
from gpulite.tasks.components.containers.rect import NormalizedRect


@dataclasses.dataclass
class LandmarksDetectionResult:
    """Landmarks, their classes and world landmarks, with the region they were found in."""

    landmarks: list[NormalizedLandmark] | None
    categories: list[Category] | None
    world_landmarks: list[Landmark] | None
    rect: NormalizedRect
