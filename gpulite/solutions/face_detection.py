"""MediaPipe's ``mp.solutions.face_detection`` names on gpulite: ``FaceDetection``, ``FaceKeyPoint``, ``get_key_point``.

A drop-in for code written against mediapipe 0.10.14::

    from gpulite.solutions import face_detection as mp_face_detection   # was: mp.solutions.face_detection

    with mp_face_detection.FaceDetection(model_selection=1, min_detection_confidence=0.5) as fd:
        results = fd.process(rgb)                       # RGB (H, W, 3) uint8
    for d in results.detections or []:
        print(d.score[0], d.location_data.relative_bounding_box.xmin,
              mp_face_detection.get_key_point(d, mp_face_detection.FaceKeyPoint.NOSE_TIP).x)

``FaceDetection`` is :class:`gpulite.solutions.FaceDetector` with MediaPipe's arguments, in
MediaPipe's order: ``model_selection`` 0 (short range, ~2 m) or 1 (full range, ~5 m), and
``min_detection_confidence``. One difference: MediaPipe 0.10.14 ignores
``min_detection_confidence`` (google-ai-edge/mediapipe issue #3896) and always keeps 0.5
(short range) / 0.6 (full range); gpulite honours the value given, and its default (None)
keeps those same thresholds, so default results match MediaPipe's.
"""

from __future__ import annotations

from gpulite.solutions.base import check_choice
from gpulite.solutions.connections import FaceKeyPoint
from gpulite.solutions.face_detector import FaceDetector
from gpulite.solutions.results import Detection, Keypoint

__all__ = ["FaceDetection", "FaceKeyPoint", "get_key_point"]

MODEL_SELECTION = {0: "short", 1: "full"}


def get_key_point(detection: Detection | None, key_point_enum: FaceKeyPoint | int) -> Keypoint | None:
    """The detection's key point ``key_point_enum`` (a :class:`FaceKeyPoint`); None without a detection."""
    if not detection:
        return None
    return detection.location_data.relative_keypoints[key_point_enum]


class FaceDetection(FaceDetector):
    """MediaPipe's ``FaceDetection(min_detection_confidence, model_selection)``; see the module docstring.

    Parameters
    ----------
    min_detection_confidence : float or None
        Detections scoring below this are dropped; None: the model's own threshold (0.5 short
        range, 0.6 full range: what MediaPipe 0.10.14 applies whatever it is given).
    model_selection : {0, 1}
        0: short range (faces within ~2 m), 1: full range (~5 m).
    backend : {"cpu", "webgpu", "auto"} or None
        gpulite's: where the graph runs (None: automatic).
    """

    def __init__(self, min_detection_confidence: float | None = None, model_selection: int = 0, *,
                 backend: str | None = None) -> None:
        self.model_selection = check_choice(model_selection, "model_selection", tuple(MODEL_SELECTION))
        super().__init__(model=MODEL_SELECTION[model_selection], min_detection_confidence=min_detection_confidence,
                         backend=backend)
