"""MediaPipe-style solutions on gpulite's calculator graphs: ``process(rgb) -> result``.

::

    from gpulite.solutions import FaceDetector, FaceMesh

    with FaceDetector(model="short") as fd:                 # or model="full" (full range)
        for d in fd.process(rgb).detections or []:
            print(d.score, d.relative_bounding_box, d.keypoints[2])

    with FaceMesh(refine_landmarks=True, max_num_faces=1) as mesh:   # video: frames in order
        for frame in frames:
            faces = mesh.process(frame).multi_face_landmarks or []

Every solution takes ``backend=`` ("cpu", "webgpu", None/"auto"), works as a context manager
and reports per-stage milliseconds in ``last_timings`` (see :mod:`gpulite.solutions.base`).
Result types are in :mod:`gpulite.solutions.results`. Names are imported on first use, so
``import gpulite.solutions`` stays cheap.

Switching from MediaPipe: the submodules carry ``mp.solutions``' module names, classes,
arguments, enums, connection sets and drawing helpers (``drawing_utils``, ``drawing_styles``),
and ``gpulite.solutions`` is ``gpulite``'s attribute, so MediaPipe 0.10.x code changes one line
(docs/solutions.md has the table)::

    import gpulite as mp                                 # was: import mediapipe as mp
    mp_hands, mp_drawing = mp.solutions.hands, mp.solutions.drawing_utils
    with mp_hands.Hands(max_num_hands=2, min_detection_confidence=0.5) as hands:
        results = hands.process(rgb, timestamp_ms=t)     # timestamp_ms: optional, gpulite's
    for lms in results.multi_hand_landmarks or []:
        mp_drawing.draw_landmarks(rgb, lms, mp_hands.HAND_CONNECTIONS)
"""

from __future__ import annotations

import importlib
from typing import Any

from gpulite.solutions.base import ImageError, Solution, SolutionClosedError

# public name -> module that defines it (imported lazily)
_LAZY = {
    "FaceDetection": "gpulite.solutions.face_detection",
    "FaceDetector": "gpulite.solutions.face_detector",
    "FaceMesh": "gpulite.solutions.face_mesh",
    "Hands": "gpulite.solutions.hands",
    "Pose": "gpulite.solutions.pose",
    "SelfieSegmentation": "gpulite.solutions.selfie_segmentation",
}

# MediaPipe's module names (mp.solutions.<name>), imported on first attribute access
_SUBMODULES = ("connections", "drawing_styles", "drawing_utils", "face_detection", "face_mesh", "hands", "pose",
               "selfie_segmentation")
# mediapipe's per-solution connection modules: all their sets are in gpulite.solutions.connections
_CONNECTION_MODULES = ("face_mesh_connections", "hands_connections", "pose_connections")

__all__ = ["ImageError", "Solution", "SolutionClosedError", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"gpulite.solutions.{name}")
    if name in _CONNECTION_MODULES:
        return importlib.import_module("gpulite.solutions.connections")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gpulite.solutions' has no attribute {name!r}")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        raise ImportError(f"gpulite.solutions.{name} is not available in this version of gpulite "
                          f"({module} is missing)") from None
    value = getattr(mod, name)
    globals()[name] = value
    return value
