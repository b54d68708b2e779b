"""Options of MediaPipe Tasks' processors (``mediapipe.tasks.python.components.processors``)."""

from gpulite.tasks.components.processors.classifier_options import ClassifierOptions

__all__ = ["ClassifierOptions"]
