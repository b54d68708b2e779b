"""``ClassifierOptions``, as ``mediapipe.tasks.python.components.processors.classifier_options``."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class ClassifierOptions:
    """Options for classification processors (MediaPipe 1.2.2's fields and defaults).

    Attributes
    ----------
    display_names_locale : str, optional
        The locale of the display names in the model's metadata (MediaPipe's default: ``"en"``).
    max_results : int, optional
        The most top-scored results to return; None or a negative value returns all.
    score_threshold : float, optional
        Overrides the model metadata's; results below it are dropped.
    category_allowlist, category_denylist : list of str, optional
        Category names to keep / drop (mutually exclusive); unknown names are ignored.
    """

    display_names_locale: str | None = None
    max_results: int | None = None
    score_threshold: float | None = None
    category_allowlist: list[str] | None = None
    category_denylist: list[str] | None = None
