"""``Hands``: palm detection + 21 hand landmarks per hand, with tracking (MediaPipe Hands).

Runs ``gpulite/pipeline/graphs/hands.yaml``. In video mode (``static_image_mode=False``) the
previous frame's landmarks give each hand's next region, so the palm detector runs only while
fewer than ``max_hands`` hands are tracked, as in MediaPipe's ``hand_landmark_tracking_cpu``;
with ``static_image_mode=True`` every image is detected afresh. MediaPipe applies no temporal
smoothing to hands, and neither does this.

Usage::

    from gpulite.solutions import Hands

    with Hands(max_num_hands=2, backend="cpu") as hands:
        for frame in frames:                                   # (H, W, 3) uint8 RGB
            result = hands.process(frame)
            for lms, handed in zip(result.multi_hand_landmarks or [], result.multi_handedness or []):
                print(handed.classification[0].label, lms.landmark[8].x, lms.landmark[8].y)

Handedness follows MediaPipe: "Left"/"Right" as if the image were mirrored (a selfie camera).
``multi_hand_world_landmarks`` are the landmark model's world landmarks: metres, origin at the
hand's approximate geometric centre, rotated back from the hand's region as MediaPipe's
``WorldLandmarkProjectionCalculator`` does.

The arguments are MediaPipe's, in its order (``Hands(static_image_mode, max_num_hands,
model_complexity, min_detection_confidence, min_tracking_confidence)``; ``max_hands`` is
gpulite's older name for ``max_num_hands``), and the module re-exports ``HandLandmark`` and the
``HAND_*CONNECTIONS`` sets, so ``from gpulite.solutions import hands as mp_hands`` replaces
``mp.solutions.hands``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpulite.pipeline.config import GraphConfig
from gpulite.pipeline.graphs import load_config
from gpulite.solutions.base import (
    GraphSession,
    Solution,
    check_choice,
    check_confidence,
    check_count,
    check_flag,
    disconnect,
    set_options,
)
from gpulite.solutions.connections import (  # noqa: F401  (MediaPipe's hands module exports these)
    HAND_CONNECTIONS,
    HAND_INDEX_FINGER_CONNECTIONS,
    HAND_MIDDLE_FINGER_CONNECTIONS,
    HAND_PALM_CONNECTIONS,
    HAND_PINKY_FINGER_CONNECTIONS,
    HAND_RING_FINGER_CONNECTIONS,
    HAND_THUMB_CONNECTIONS,
    HandLandmark,
)
from gpulite.solutions.results import (
    Classification,
    ClassificationList,
    Detection,
    LandmarkList,
    NormalizedRect,
    WorldLandmarkList,
)

PALM_MODELS = {0: "palm_detection_lite", 1: "palm_detection_full"}
LANDMARK_MODELS = {0: "hand_landmark_lite", 1: "hand_landmark_full"}


@dataclass(frozen=True)
class HandsResult:
    """What :class:`Hands` returns for one image.

    Attributes
    ----------
    multi_hand_landmarks : list of LandmarkList or None
        21 landmarks per hand (x, y normalised to the image; z relative to the wrist, in
        roughly x's scale); None when there is no hand, as in MediaPipe.
    multi_handedness : list of ClassificationList or None
        One per hand, same order: ``classification[0].label`` is "Left" or "Right".
    multi_hand_world_landmarks : list of WorldLandmarkList or None
        21 world landmarks per hand (:class:`~gpulite.solutions.results.Landmark`, as MediaPipe's
        ``LandmarkList``), same order: metres, origin at the hand's centre.
    palm_detections : list of Detection or None
        The palm detector's output; None on frames where tracking skipped it.
    hand_rects : list of NormalizedRect
        The rotated regions the landmark model ran on this frame.
    image_size : (width, height)
    tracked : bool
        True when the palm detector was skipped (every hand came from the previous frame).
    """

    multi_hand_landmarks: list[LandmarkList] | None
    multi_handedness: list[ClassificationList] | None
    multi_hand_world_landmarks: list[WorldLandmarkList] | None = None
    palm_detections: list[Detection] | None = None
    hand_rects: list[NormalizedRect] = field(default_factory=list)
    image_size: tuple[int, int] = (0, 0)
    tracked: bool = False


def hands_config(*, static_image_mode: bool, max_hands: int, model_complexity: int,
                 min_detection_confidence: float, min_tracking_confidence: float) -> GraphConfig:
    """The ``hands`` graph with a solution's settings (what MediaPipe's Python solution sets)."""
    cfg = set_options(load_config("hands"), {
        "palm_gate.min_rois": max_hands,
        "palm_nms.max_num_detections": max_hands,
        "palm_inference.model": PALM_MODELS[model_complexity],
        "palm_decode.min_score_thresh": min_detection_confidence,
        "landmark_inference.model": LANDMARK_MODELS[model_complexity],
        "presence.threshold": min_tracking_confidence,
    })
    if static_image_mode:  # no tracking: every image goes to the palm detector
        disconnect(cfg, "palm_gate", "PREV_ROIS")
        disconnect(cfg, "association", "NORM_RECTS:1")
        cfg.nodes = [n for n in cfg.nodes if n.name != "previous_rects"]
    return cfg


def _handedness(classes: tuple[Any, ...]) -> ClassificationList:
    return ClassificationList(tuple(Classification(int(c.index), float(c.score), c.label) for c in classes))


class Hands(Solution):
    """MediaPipe Hands on gpulite (see the module docstring).

    Parameters
    ----------
    static_image_mode : bool
        True: every image on its own; False: a video (tracking).
    max_num_hands : int
        Most hands to find (also accepted as ``max_hands``, gpulite's older name).
    model_complexity : {0, 1}
        0: the lite palm and landmark models, 1: the full ones.
    min_detection_confidence : float
        Palm detection score threshold.
    min_tracking_confidence : float
        Hand-presence threshold of the landmark model (a hand whose score is not above it is
        dropped, and in video mode the detector runs again).
    backend : {"cpu", "webgpu", "auto"} or None

    Examples
    --------
    >>> with Hands(static_image_mode=True) as hands:
    ...     result = hands.process(rgb)
    >>> len(result.multi_hand_landmarks or [])
    """

    def __init__(self, static_image_mode: bool = False, max_num_hands: int = 2, model_complexity: int = 1,
                 min_detection_confidence: float = 0.5, min_tracking_confidence: float = 0.5, *,
                 backend: str | None = None, max_hands: int | None = None) -> None:
        if max_hands is not None:
            if max_num_hands != 2:
                raise TypeError("Hands(): give max_num_hands or max_hands (the same setting), not both")
            self.max_hands = check_count(max_hands, "max_hands")
        else:
            self.max_hands = check_count(max_num_hands, "max_num_hands")
        self.model_complexity = check_choice(model_complexity, "model_complexity", tuple(PALM_MODELS))
        self.min_detection_confidence = check_confidence(min_detection_confidence, "min_detection_confidence")
        self.min_tracking_confidence = check_confidence(min_tracking_confidence, "min_tracking_confidence")
        super().__init__(backend=backend, static_image_mode=check_flag(static_image_mode, "static_image_mode"))
        cfg = hands_config(static_image_mode=self.static_image_mode, max_hands=self.max_hands,
                           model_complexity=model_complexity,
                           min_detection_confidence=self.min_detection_confidence,
                           min_tracking_confidence=self.min_tracking_confidence)
        self._session = GraphSession(cfg, backend=self.backend, num_threads=self.inference_threads)

    def _result(self, image: np.ndarray, out: dict) -> HandsResult:
        hands = out["multi_hand_landmarks"] or []
        palms = out["palm_detections"]
        return HandsResult(
            multi_hand_landmarks=[LandmarkList.from_pipeline(h) for h in hands] or None,
            multi_handedness=[_handedness(c) for c in out["multi_handedness"] or []] or None,
            multi_hand_world_landmarks=[WorldLandmarkList.from_pipeline(h)
                                        for h in out["multi_hand_world_landmarks"] or []] or None,
            palm_detections=None if palms is None else [Detection.from_pipeline(d) for d in palms],
            hand_rects=list(out["hand_rects"] or []),
            image_size=(image.shape[1], image.shape[0]),
            tracked=palms is None,
        )

    def _reset(self) -> None:
        self._session.restart()

    def _close(self) -> None:
        self._session.close()
