"""``FaceMesh``: 468 (or 478 refined) face landmarks, MediaPipe's ``mp.solutions.face_mesh`` on gpulite.

Runs the shipped graph ``face_mesh`` (MediaPipe's ``face_landmark_front_cpu``): BlazeFace
(short range) finds faces, each face's region (the detection rotated upright by its eyes,
grown 1.5x, squared) goes through ``face_landmark.tflite`` (``refine_landmarks=False``: 468
landmarks) or ``face_landmark_with_attention.tflite`` (``refine_landmarks=True``: 478, with
refined lips and eyes and the two irises; the model's custom ops TransformLandmarks,
TransformTensorBilinear and Landmarks2TransformMatrix run on both backends).

Tracking (``static_image_mode=False``, a video): as in MediaPipe, the landmarks of one frame
give the next frame's face regions, so the detector only runs until ``max_faces`` faces are
tracked, and again when a face is lost (its presence score falls to
``min_tracking_confidence`` or below). ``result.tracked`` says whether a frame skipped the
detector; :meth:`FaceMesh.reset` forgets the tracked faces. With ``static_image_mode=True``
every image is detected afresh.

Usage::

    from gpulite.solutions import FaceMesh

    with FaceMesh(refine_landmarks=True, max_num_faces=1) as mesh:
        for frame in frames:                                   # RGB (H, W, 3) uint8, in order
            result = mesh.process(frame)
            for face in result.multi_face_landmarks or []:
                xy = face.pixels(frame.shape[1], frame.shape[0])   # (478, 2) int pixels
                left_iris = face.landmark[468]                     # x, y, z normalised

MediaPipe code reads the same: ``result.multi_face_landmarks[0].landmark[i].x``. The
arguments are MediaPipe's, in its order (``FaceMesh(static_image_mode, max_num_faces,
refine_landmarks, min_detection_confidence, min_tracking_confidence)``; ``max_faces`` is
gpulite's older name for ``max_num_faces``), and this module re-exports MediaPipe's
``FACEMESH_*`` connection sets (:mod:`gpulite.solutions.connections`), so
``from gpulite.solutions import face_mesh as mp_face_mesh`` replaces ``mp.solutions.face_mesh``.
"""

from __future__ import annotations

import logging

import numpy as np

from gpulite.pipeline.config import GraphConfig
from gpulite.pipeline.graphs import load_config
from gpulite.solutions.base import (
    GraphSession,
    Solution,
    check_confidence,
    check_count,
    check_flag,
    disconnect,
    set_options,
)
from gpulite.solutions.connections import (  # noqa: F401  (MediaPipe's face_mesh module exports these)
    FACEMESH_CONTOURS,
    FACEMESH_FACE_OVAL,
    FACEMESH_IRISES,
    FACEMESH_LEFT_EYE,
    FACEMESH_LEFT_EYEBROW,
    FACEMESH_LEFT_IRIS,
    FACEMESH_LIPS,
    FACEMESH_NOSE,
    FACEMESH_NUM_LANDMARKS,
    FACEMESH_NUM_LANDMARKS_WITH_IRISES,
    FACEMESH_RIGHT_EYE,
    FACEMESH_RIGHT_EYEBROW,
    FACEMESH_RIGHT_IRIS,
    FACEMESH_TESSELATION,
)
from gpulite.solutions.results import FaceMeshResult, LandmarkList

log = logging.getLogger(__name__)

LANDMARK_MODELS = {False: "face_landmark", True: "face_landmark_with_attention"}


def face_mesh_config(*, static_image_mode: bool, max_faces: int, refine_landmarks: bool,
                     min_detection_confidence: float, min_tracking_confidence: float) -> GraphConfig:
    """The ``face_mesh`` graph with a solution's settings (what MediaPipe's Python solution sets)."""
    cfg = set_options(load_config("face_mesh"), {
        "detector_decode.min_score_thresh": min_detection_confidence,
        "detector_nms.max_num_detections": max_faces,
        "detector_gate.min_rois": max_faces,
        "landmark_decode.min_presence": min_tracking_confidence,
        "landmark_inference.model": LANDMARK_MODELS[refine_landmarks],
    })
    if static_image_mode:  # no tracking: every image goes to the detector
        disconnect(cfg, "detector_gate", "PREV_ROIS")
        disconnect(cfg, "associate_rects", "NORM_RECTS:1")
        cfg.nodes = [n for n in cfg.nodes if n.name != "previous_rects"]
    return cfg


class FaceMesh(Solution):
    """Face landmarks with tracking; see the module docstring.

    Parameters
    ----------
    static_image_mode : bool
        True: unrelated images, each detected afresh. False (default): a video, tracked.
    max_num_faces : int
        The most faces to find (also accepted as ``max_faces``, gpulite's older name).
    refine_landmarks : bool
        478 landmarks with refined lips, eyes and irises (the attention model).
    min_detection_confidence : float
        Face detections scoring below this are dropped.
    min_tracking_confidence : float
        A face whose landmark model presence score is not above this is dropped (and, in
        video mode, detected again on the next frame).
    backend : {"cpu", "webgpu", "auto"} or None
        Where the graph runs (None: automatic).

    Examples
    --------
    >>> with FaceMesh(backend="cpu") as mesh:
    ...     faces = mesh.process(rgb).multi_face_landmarks or []
    ...     len(faces[0].landmark)
    468
    """

    def __init__(self, static_image_mode: bool = False, max_num_faces: int = 1, refine_landmarks: bool = False,
                 min_detection_confidence: float = 0.5, min_tracking_confidence: float = 0.5, *,
                 backend: str | None = None, max_faces: int | None = None) -> None:
        if max_faces is not None:
            if max_num_faces != 1:
                raise TypeError("FaceMesh(): give max_num_faces or max_faces (the same setting), not both")
            self.max_faces = check_count(max_faces, "max_faces")
        else:
            self.max_faces = check_count(max_num_faces, "max_num_faces")
        self.refine_landmarks = check_flag(refine_landmarks, "refine_landmarks")
        self.min_detection_confidence = check_confidence(min_detection_confidence, "min_detection_confidence")
        self.min_tracking_confidence = check_confidence(min_tracking_confidence, "min_tracking_confidence")
        super().__init__(backend=backend, static_image_mode=check_flag(static_image_mode, "static_image_mode"))
        cfg = face_mesh_config(static_image_mode=self.static_image_mode, max_faces=self.max_faces,
                               refine_landmarks=self.refine_landmarks,
                               min_detection_confidence=self.min_detection_confidence,
                               min_tracking_confidence=self.min_tracking_confidence)
        self._session = GraphSession(cfg, backend=self.backend,
                                     outputs=["multi_face_landmarks", "face_detections", "face_rects"],
                                     num_threads=self.inference_threads)

    def _result(self, image: np.ndarray, out: dict) -> FaceMeshResult:
        faces = [LandmarkList.from_pipeline(f) for f in out["multi_face_landmarks"] or []]
        return FaceMeshResult(faces or None, face_rects=list(out["face_rects"] or []),
                              image_size=(image.shape[1], image.shape[0]),
                              tracked=out["face_detections"] is None and bool(faces))

    def _reset(self) -> None:
        self._session.restart()

    def _close(self) -> None:
        self._session.close()
