"""``Pose``: pose detection + 33 body landmarks with visibility, tracking, optional mask (MediaPipe Pose).

Runs ``gpulite/pipeline/graphs/pose.yaml`` (pose_detection + pose_landmark_full). In video
mode (``static_image_mode=False``) the previous frame's landmarks give the next region, so
the detector runs only when the person was lost, and, as in MediaPipe, the landmarks are
smoothed over time (one-euro filter on coordinates, low-pass on visibility) and the mask
blended with the previous one where it is uncertain (``smooth_landmarks``,
``smooth_segmentation``). ``static_image_mode=True`` turns tracking and smoothing off.

Usage::

    from gpulite.solutions import Pose

    with Pose(enable_segmentation=True, backend="cpu") as pose:
        for frame in frames:                                  # (H, W, 3) uint8 RGB
            result = pose.process(frame)
            if result.pose_landmarks:
                nose = result.pose_landmarks.landmark[0]
                print(nose.x, nose.y, nose.visibility)
                person = result.segmentation_mask > 0.5        # (H, W) float32 in [0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpulite.pipeline.config import GraphConfig
from gpulite.pipeline.graphs import load_config
from gpulite.solutions.base import GraphSession, Solution, disconnect, set_options
from gpulite.solutions.results import Detection, LandmarkList, NormalizedRect

LANDMARK_MODELS = {0: "pose_landmark_lite", 1: "pose_landmark_full", 2: "pose_landmark_heavy"}
SEGMENTATION_NODES = ("segmentation_mask_roi", "segmentation_projection", "smooth_segmentation")


def pose_config(*, static_image_mode: bool, model_complexity: int, enable_segmentation: bool,
                min_detection_confidence: float, min_tracking_confidence: float) -> GraphConfig:
    """The ``pose`` graph with a solution's settings (what MediaPipe's Python solution sets)."""
    cfg = set_options(load_config("pose"), {
        "detection_decode.min_score_thresh": min_detection_confidence,
        "landmark_inference.model": LANDMARK_MODELS[model_complexity],
        "presence.threshold": min_tracking_confidence,
    })
    if static_image_mode:  # no tracking: every image goes to the detector
        disconnect(cfg, "detection_gate", "PREV_ROIS")
        disconnect(cfg, "merge_rois", "NORM_RECTS:1")
        cfg.nodes = [n for n in cfg.nodes if n.name != "previous_rect"]
    if not enable_segmentation:
        cfg.nodes = [n for n in cfg.nodes if n.name not in SEGMENTATION_NODES]
        cfg.output_streams = [s for s in cfg.output_streams if s != "segmentation_mask"]
    return cfg


@dataclass(frozen=True)
class PoseResult:
    """What :class:`Pose` returns for one image.

    Attributes
    ----------
    pose_landmarks : LandmarkList or None
        33 landmarks (MediaPipe's topology: 0 nose ... 32 right foot index) with
        ``visibility``; x, y normalised to the image, z in roughly x's scale, relative to the
        hips. None when there is no person.
    segmentation_mask : numpy.ndarray or None
        (H, W) float32 in [0, 1], 1 = person; only with ``enable_segmentation`` and a person.
    pose_detection : Detection or None
        The detector's output (box around the face, 4 keypoints); None on tracked frames.
    pose_rect : NormalizedRect or None
        The rotated region the landmark model ran on.
    image_size : (width, height)
    tracked : bool
        True when the detector was skipped (the region came from the previous frame).
    """

    pose_landmarks: LandmarkList | None
    segmentation_mask: np.ndarray | None = None
    pose_detection: Detection | None = None
    pose_rect: NormalizedRect | None = None
    image_size: tuple[int, int] = (0, 0)
    tracked: bool = False


class Pose(Solution):
    """MediaPipe Pose on gpulite (see the module docstring).

    Parameters
    ----------
    model_complexity : {0, 1, 2}
        The landmark model: lite, full, heavy. gpulite ships ``pose_landmark_full`` (1); the
        others load when their ``.tflite`` is in the model path.
    smooth_landmarks : bool
        Filter landmarks over time (video mode only).
    enable_segmentation : bool
        Also compute the person mask.
    smooth_segmentation : bool
        Blend masks over time (video mode only).
    static_image_mode : bool
        True: every image on its own; False: a video (tracking and smoothing).
    min_detection_confidence : float
        Pose detection score threshold.
    min_tracking_confidence : float
        Pose-presence threshold of the landmark model (not above it: no landmarks, and in
        video mode the detector runs again).
    backend : {"cpu", "webgpu", "auto"} or None
    """

    def __init__(self, *, model_complexity: int = 1, smooth_landmarks: bool = True, enable_segmentation: bool = False,
                 smooth_segmentation: bool = True, static_image_mode: bool = False,
                 min_detection_confidence: float = 0.5, min_tracking_confidence: float = 0.5,
                 backend: str | None = None) -> None:
        if model_complexity not in LANDMARK_MODELS:
            raise ValueError(f"model_complexity must be 0, 1 or 2, got {model_complexity}")
        for name, value in (("min_detection_confidence", min_detection_confidence),
                            ("min_tracking_confidence", min_tracking_confidence)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        super().__init__(backend=backend, static_image_mode=static_image_mode)
        self.model_complexity = model_complexity
        self.enable_segmentation = bool(enable_segmentation)
        self.smooth_landmarks = bool(smooth_landmarks) and not self.static_image_mode
        self.smooth_segmentation = bool(smooth_segmentation) and not self.static_image_mode
        cfg = pose_config(static_image_mode=self.static_image_mode, model_complexity=model_complexity,
                          enable_segmentation=self.enable_segmentation,
                          min_detection_confidence=float(min_detection_confidence),
                          min_tracking_confidence=float(min_tracking_confidence))
        self._session = GraphSession(cfg, backend=self.backend, side_packets={
            "smooth_landmarks": self.smooth_landmarks, "smooth_segmentation": self.smooth_segmentation})

    def _process(self, image: np.ndarray) -> PoseResult:
        out = self._session.run({"image": image}, timings=self.last_timings)
        lms = out["pose_landmarks"]
        mask = out.get("segmentation_mask")
        dets = out["pose_detections"]
        return PoseResult(
            # MediaPipe's Python solution clears presence; so does this
            pose_landmarks=None if lms is None else LandmarkList.from_pipeline(
                type(lms)(tuple(replace(p, presence=None) for p in lms.landmarks))),
            segmentation_mask=None if mask is None or lms is None else mask.mask,
            pose_detection=Detection.from_pipeline(dets[0]) if dets else None,
            pose_rect=out["pose_rect"],
            image_size=(image.shape[1], image.shape[0]),
            tracked=dets is None,
        )

    def _reset(self) -> None:
        self._session.restart()

    def _close(self) -> None:
        self._session.close()
