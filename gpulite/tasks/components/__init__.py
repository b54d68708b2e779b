"""MediaPipe Tasks' components (``mediapipe.tasks.python.components``): the result containers."""

from gpulite.tasks.components import containers

__all__ = ["containers"]
