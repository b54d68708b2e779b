"""MediaPipe Tasks' components (``mediapipe.tasks.python.components``): the result containers,
the processors' options (``ClassifierOptions``) and utils (``cosine_similarity``)."""

from gpulite.tasks.components import containers, processors, utils

__all__ = ["containers", "processors", "utils"]
