"""``Classifications`` and ``ClassificationResult`` (MediaPipe Tasks' ``containers.classification_result``)."""

import dataclasses

from gpulite.tasks.components.containers.category import Category


@dataclasses.dataclass
class Classifications:
    """The classes one head of a classifier gives, best first.

    Attributes
    ----------
    categories : list of Category
    head_index : int
    head_name : str, optional
    """

    categories: list[Category]
    head_index: int
    head_name: str | None = None


@dataclasses.dataclass
class ClassificationResult:
    """What a classifier gives for one image: one :class:`Classifications` per head.

    Attributes
    ----------
    classifications : list of Classifications
    timestamp_ms : int, optional
    """

    classifications: list[Classifications]
    timestamp_ms: int | None = None
