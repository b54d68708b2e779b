"""MediaPipe Tasks' vision API (``mediapipe.tasks.python.vision``) on gpulite.

Each task is imported on first use (``vision.FaceLandmarker`` loads only the face landmarker)::

    from gpulite.tasks import python
    from gpulite.tasks.python import vision

    options = vision.FaceLandmarkerOptions(
        base_options=python.BaseOptions(model_asset_path="face_landmarker.task"),
        running_mode=vision.RunningMode.VIDEO, output_face_blendshapes=True)
    with vision.FaceLandmarker.create_from_options(options) as landmarker:
        result = landmarker.detect_for_video(image, timestamp_ms)
"""

from __future__ import annotations

import importlib
from typing import Any

from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode

RunningMode = VisionTaskRunningMode

# public name -> (module, attribute)
_TASKS = {
    "FaceDetector": "face_detector", "FaceDetectorOptions": "face_detector", "FaceDetectorResult": "face_detector",
    "FaceLandmarker": "face_landmarker", "FaceLandmarkerOptions": "face_landmarker",
    "FaceLandmarkerResult": "face_landmarker", "FaceLandmarksConnections": "face_landmarker",
    "HandLandmarker": "hand_landmarker", "HandLandmarkerOptions": "hand_landmarker",
    "HandLandmarkerResult": "hand_landmarker", "HandLandmarksConnections": "hand_landmarker",
    "PoseLandmark": "pose_landmarker", "PoseLandmarker": "pose_landmarker",
    "PoseLandmarkerOptions": "pose_landmarker", "PoseLandmarkerResult": "pose_landmarker",
    "PoseLandmarksConnections": "pose_landmarker",
    "ImageSegmenter": "image_segmenter", "ImageSegmenterOptions": "image_segmenter",
    "ImageSegmenterResult": "image_segmenter",
    "ImageClassifier": "image_classifier", "ImageClassifierOptions": "image_classifier",
    "ImageClassifierResult": "image_classifier",
    "ImageEmbedder": "image_embedder", "ImageEmbedderOptions": "image_embedder",
    "ImageEmbedderResult": "image_embedder",
    "ObjectDetector": "object_detector", "ObjectDetectorOptions": "object_detector",
    "ObjectDetectorResult": "object_detector",
}
# mediapipe 1.2.2's vision tasks that gpulite does not have (yet): named as such, not as a typo
_NOT_HERE = ("GestureRecognizer", "HolisticLandmarker", "InteractiveSegmenter", "InteractiveSegmenterLegacy")
_SUBMODULES = ("core", "drawing_styles", "drawing_utils", *sorted(set(_TASKS.values())))

__all__ = ["ImageProcessingOptions", "RunningMode", *_TASKS]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _TASKS.get(name)
    if module is None and name.startswith(_NOT_HERE):
        raise AttributeError(f"mediapipe 1.2.2's vision.{name} is not in gpulite.tasks (yet); it has "
                             f"{', '.join(n for n in _TASKS if n.endswith(('er', 'or')))} (docs/tasks.md)")
    if module is None:
        raise AttributeError(f"module 'gpulite.tasks.vision' has no attribute {name!r}")
    try:
        mod = importlib.import_module(f"{__name__}.{module}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{module}":
            raise
        raise AttributeError(f"gpulite.tasks.vision.{name} is not available in this version of gpulite") from None
    value = getattr(mod, name)
    globals()[name] = value
    return value
