"""``Pose``: pose detection + 33 body landmarks with visibility, tracking, optional mask (MediaPipe Pose).

Runs ``gpulite/pipeline/graphs/pose.yaml`` (pose_detection + pose_landmark_lite, _full or _heavy). In video
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

``pose_world_landmarks`` are the landmark model's world landmarks (metres, origin at the
centre between the hips), rotated back from the region, with the same visibility, and
smoothed in video mode, as MediaPipe's ``pose_landmark_cpu`` graph does. Smoothing is in time:
give ``process(frame, timestamp_ms=t)`` the frames' real times (default: 33.333 ms apart).

The arguments are MediaPipe's, in its order (``Pose(static_image_mode, model_complexity,
smooth_landmarks, enable_segmentation, smooth_segmentation, min_detection_confidence,
min_tracking_confidence)``), and the module re-exports ``PoseLandmark`` and
``POSE_CONNECTIONS``, so ``from gpulite.solutions import pose as mp_pose`` replaces
``mp.solutions.pose``. ``model_complexity`` picks pose_landmark_lite (0), _full (1) or
_heavy (2); a model the zoo cannot provide fails at construction (:class:`gpulite.errors.ModelError`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from gpulite.errors import ModelError
from gpulite.pipeline.calculators.types import Segmentation
from gpulite.pipeline.config import GraphConfig
from gpulite.pipeline.graphs import load_config
from gpulite.solutions.base import (
    GraphSession,
    Solution,
    check_choice,
    check_confidence,
    check_flag,
    disconnect,
    set_options,
)
from gpulite.solutions.connections import POSE_CONNECTIONS, PoseLandmark  # noqa: F401  (MediaPipe's pose exports)
from gpulite.solutions.results import Detection, LandmarkList, NormalizedRect, WorldLandmarkList

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
    pose_world_landmarks : WorldLandmarkList or None
        The same 33 landmarks (:class:`~gpulite.solutions.results.Landmark`, as MediaPipe's
        ``LandmarkList``) in metres, origin at the centre between the hips (x right, y
        down, z towards the camera's far side, in the image's orientation), with visibility.
    segmentation_mask : numpy.ndarray or None
        (H, W) float32 in [0, 1], 1 = person; only with ``enable_segmentation`` and a person.
        On webgpu the mask (projected onto the image and smoothed on the GPU) stays there until
        this is first read; ``segmentation_mask_gpu`` is that (1, H, W, 1) tensor (None elsewhere).
    pose_detection : Detection or None
        The detector's output (box around the face, 4 keypoints); None on tracked frames.
    pose_rect : NormalizedRect or None
        The rotated region the landmark model ran on.
    image_size : (width, height)
    tracked : bool
        True when the detector was skipped (the region came from the previous frame).
    """

    pose_landmarks: LandmarkList | None
    pose_world_landmarks: WorldLandmarkList | None = None
    segmentation: Segmentation | None = field(default=None, repr=False)
    pose_detection: Detection | None = None
    pose_rect: NormalizedRect | None = None
    image_size: tuple[int, int] = (0, 0)
    tracked: bool = False
    JSON_PROPERTIES: ClassVar[tuple[str, ...]] = ("segmentation_mask",)  # what to_jsonable writes besides the fields

    @property
    def segmentation_mask(self) -> np.ndarray | None:
        return None if self.segmentation is None else self.segmentation.mask

    @property
    def segmentation_mask_gpu(self) -> Any:
        return None if self.segmentation is None else self.segmentation.gpu


class Pose(Solution):
    """MediaPipe Pose on gpulite (see the module docstring).

    Parameters
    ----------
    static_image_mode : bool
        True: every image on its own; False: a video (tracking and smoothing).
    model_complexity : {0, 1, 2}
        The landmark model: pose_landmark_lite, _full, _heavy (resolved through the zoo at
        construction; :class:`gpulite.errors.ModelError` when it cannot be had).
    smooth_landmarks : bool
        Filter landmarks over time (video mode only).
    enable_segmentation : bool
        Also compute the person mask.
    smooth_segmentation : bool
        Blend masks over time (video mode only).
    min_detection_confidence : float
        Pose detection score threshold.
    min_tracking_confidence : float
        Pose-presence threshold of the landmark model (not above it: no landmarks, and in
        video mode the detector runs again).
    backend : {"cpu", "webgpu", "auto"} or None
    """

    def __init__(self, static_image_mode: bool = False, model_complexity: int = 1, smooth_landmarks: bool = True,
                 enable_segmentation: bool = False, smooth_segmentation: bool = True,
                 min_detection_confidence: float = 0.5, min_tracking_confidence: float = 0.5, *,
                 backend: str | None = None) -> None:
        self.model_complexity = check_choice(model_complexity, "model_complexity", tuple(LANDMARK_MODELS))
        min_detection_confidence = check_confidence(min_detection_confidence, "min_detection_confidence")
        min_tracking_confidence = check_confidence(min_tracking_confidence, "min_tracking_confidence")
        self.enable_segmentation = check_flag(enable_segmentation, "enable_segmentation")
        smooth_landmarks = check_flag(smooth_landmarks, "smooth_landmarks")
        smooth_segmentation = check_flag(smooth_segmentation, "smooth_segmentation")
        super().__init__(backend=backend, static_image_mode=check_flag(static_image_mode, "static_image_mode"))
        self.smooth_landmarks = smooth_landmarks and not self.static_image_mode
        self.smooth_segmentation = smooth_segmentation and not self.static_image_mode
        cfg = pose_config(static_image_mode=self.static_image_mode, model_complexity=model_complexity,
                          enable_segmentation=self.enable_segmentation,
                          min_detection_confidence=min_detection_confidence,
                          min_tracking_confidence=min_tracking_confidence)
        try:
            self._session = GraphSession(cfg, backend=self.backend, side_packets={
                "smooth_landmarks": self.smooth_landmarks, "smooth_segmentation": self.smooth_segmentation},
                num_threads=self.inference_threads)
        except ModelError as e:
            raise ModelError(f"Pose(model_complexity={model_complexity}): {e}") from None

    def _result(self, image: np.ndarray, out: dict) -> PoseResult:
        lms, world = out["pose_landmarks"], out["pose_world_landmarks"]
        mask = out.get("segmentation_mask")
        dets = out["pose_detections"]
        return PoseResult(
            # MediaPipe's Python solution clears presence; so does this
            pose_landmarks=None if lms is None else LandmarkList.from_pipeline(lms, keep_presence=False),
            pose_world_landmarks=None if world is None or lms is None else WorldLandmarkList.from_pipeline(
                world, keep_presence=False),
            segmentation=None if mask is None or lms is None else mask,
            pose_detection=Detection.from_pipeline(dets[0]) if dets else None,
            pose_rect=out["pose_rect"],
            image_size=(image.shape[1], image.shape[0]),
            tracked=dets is None,
        )

    def _reset(self) -> None:
        self._session.restart()

    def _close(self) -> None:
        self._session.close()
