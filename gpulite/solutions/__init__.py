"""MediaPipe-style solutions on gpulite's calculator graphs: ``process(rgb) -> result``.

::

    from gpulite.solutions import FaceDetector, FaceMesh

    with FaceDetector(model="short") as fd:                 # or model="full" (full range)
        for d in fd.process(rgb).detections or []:
            print(d.score, d.relative_bounding_box, d.keypoints[2])

    with FaceMesh(refine_landmarks=True, max_faces=1) as mesh:   # video: frames in order
        for frame in frames:
            faces = mesh.process(frame).multi_face_landmarks or []

Every solution takes ``backend=`` ("cpu", "webgpu", None/"auto"), works as a context manager
and reports per-stage milliseconds in ``last_timings`` (see :mod:`gpulite.solutions.base`).
Result types are in :mod:`gpulite.solutions.results`. Names are imported on first use, so
``import gpulite.solutions`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from gpulite.solutions.base import ImageError, Solution, SolutionClosedError

# public name -> module that defines it (imported lazily)
_LAZY = {
    "FaceDetector": "gpulite.solutions.face_detector",
    "FaceMesh": "gpulite.solutions.face_mesh",
    "Hands": "gpulite.solutions.hands",
    "Pose": "gpulite.solutions.pose",
    "SelfieSegmentation": "gpulite.solutions.selfie_segmentation",
}

__all__ = ["ImageError", "Solution", "SolutionClosedError", *_LAZY]


def __getattr__(name: str) -> Any:
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
