"""``NormalizedKeypoint`` (MediaPipe Tasks' ``containers.keypoint``)."""

import dataclasses


@dataclasses.dataclass
class NormalizedKeypoint:
    """A keypoint of a detection, in coordinates normalised by the image's width and height.

    Attributes
    ----------
    x, y : float, optional
        In [0, 1] inside the image.
    label : str, optional
    score : float, optional
    """

    x: float | None = None
    y: float | None = None
    label: str | None = None
    score: float | None = None
