"""MediaPipe Tasks' core (``mediapipe.tasks.python.core``): :class:`BaseOptions`."""

from gpulite.tasks.core import base_options

__all__ = ["base_options"]
