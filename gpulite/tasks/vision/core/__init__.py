"""MediaPipe Tasks' vision core (``mediapipe.tasks.python.vision.core``): Image, running modes, options."""

from gpulite.tasks.vision.core import (
    base_vision_task_api,
    image,
    image_processing_options,
    vision_task_running_mode,
)

__all__ = ["base_vision_task_api", "image", "image_processing_options", "vision_task_running_mode"]
