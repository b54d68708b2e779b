"""``Category``: one class of a classification or detection (MediaPipe Tasks' ``containers.category``)."""

import dataclasses


@dataclasses.dataclass
class Category:
    """A class and its score.

    Attributes
    ----------
    index : int, optional
        The class's index in the model's output (-1 or None where there is none).
    score : float, optional
        Its score, usually a probability in [0, 1].
    display_name : str, optional
        The label in the display names' locale (from the model's metadata).
    category_name : str, optional
        The label (from the model's metadata; a blendshape's name, "Left"/"Right" for handedness).
    """

    index: int | None = None
    score: float | None = None
    display_name: str | None = None
    category_name: str | None = None
