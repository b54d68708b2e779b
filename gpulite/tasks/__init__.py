"""MediaPipe Tasks on gpulite: a drop-in for ``mediapipe.tasks`` (mediapipe 1.2.2), see docs/tasks.md.

Code written for MediaPipe runs after replacing ``mediapipe`` with ``gpulite`` in its imports::

    import gpulite as mp                          # mp.Image, mp.ImageFormat
    from gpulite.tasks import python              # python.BaseOptions
    from gpulite.tasks.python import vision       # vision.FaceLandmarker, vision.RunningMode, ...

``gpulite.tasks.python.X`` is the module ``gpulite.tasks.X`` (:mod:`gpulite.tasks.python`), so
``gpulite.tasks.vision`` and ``gpulite.tasks.BaseOptions`` work as well. Model assets (``.task``
bundles and ``.tflite`` files, by path, buffer or zoo name) are read by :mod:`gpulite.tasks.bundle`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["BaseOptions", "components", "core", "python", "vision"]


def __getattr__(name: str) -> Any:
    if name == "BaseOptions":
        return importlib.import_module("gpulite.tasks.core.base_options").BaseOptions
    if name in ("components", "core", "python", "vision"):
        return importlib.import_module(f"gpulite.tasks.{name}")
    raise AttributeError(f"module 'gpulite.tasks' has no attribute {name!r}")
