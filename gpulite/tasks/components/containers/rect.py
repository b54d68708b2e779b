"""``Rect``, ``RectF`` and ``NormalizedRect`` (MediaPipe Tasks' ``containers.rect``)."""

import dataclasses


@dataclasses.dataclass
class Rect:
    """A rectangle in pixels (int edges)."""

    left: int
    top: int
    bottom: int
    right: int


@dataclasses.dataclass
class RectF:
    """A rectangle with float edges, normalised to [0, 1] (e.g. a region of interest)."""

    left: float
    top: float
    bottom: float
    right: float


@dataclasses.dataclass
class NormalizedRect:
    """A rotated rectangle: centre and size normalised to [0, 1], rotation in radians."""

    x_center: float
    y_center: float
    width: float
    height: float
    rotation: float | None = 0.0
    rect_id: int | None = None
