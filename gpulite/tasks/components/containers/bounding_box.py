"""``BoundingBox``: an axis-aligned box in pixels (MediaPipe Tasks' ``containers.bounding_box``)."""

import dataclasses


@dataclasses.dataclass
class BoundingBox:
    """A box in the image's pixels: its top-left corner and its size, all ints.

    Attributes
    ----------
    origin_x, origin_y : int
        The top-left corner, in pixels.
    width, height : int
        The size, in pixels.
    """

    origin_x: int
    origin_y: int
    width: int
    height: int
