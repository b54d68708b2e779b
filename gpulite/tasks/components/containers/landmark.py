"""``Landmark`` and ``NormalizedLandmark`` (MediaPipe Tasks' ``containers.landmark``)."""

import dataclasses


@dataclasses.dataclass
class Landmark:
    """A 3D point in world coordinates (metres; hand and pose world landmarks).

    Attributes
    ----------
    x, y, z : float, optional
    visibility : float, optional
        How likely the point is visible (not occluded), in [0, 1].
    presence : float, optional
        How likely the point is in the image, in [0, 1].
    name : str, optional
    """

    x: float | None = None
    y: float | None = None
    z: float | None = None
    visibility: float | None = None
    presence: float | None = None
    name: str | None = None


@dataclasses.dataclass
class NormalizedLandmark:
    """A 3D point in image coordinates normalised by the image's width (x, z) and height (y).

    Attributes
    ----------
    x, y : float, optional
        In [0, 1] inside the image.
    z : float, optional
        Depth on about the scale of x.
    visibility, presence : float, optional
        As for :class:`Landmark`.
    name : str, optional
    """

    x: float | None = None
    y: float | None = None
    z: float | None = None
    visibility: float | None = None
    presence: float | None = None
    name: str | None = None
