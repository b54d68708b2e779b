"""MediaPipe Tasks' component utilities (``mediapipe.tasks.python.components.utils``)."""

from gpulite.tasks.components.utils import cosine_similarity

__all__ = ["cosine_similarity"]
