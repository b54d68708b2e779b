"""``Hands``: palm detection + 21 hand landmarks per hand, with tracking (MediaPipe Hands).

Runs ``gpulite/pipeline/graphs/hands.yaml``. In video mode (``static_image_mode=False``) the
previous frame's landmarks give each hand's next region, so the palm detector runs only while
fewer than ``max_hands`` hands are tracked, as in MediaPipe's ``hand_landmark_tracking_cpu``;
with ``static_image_mode=True`` every image is detected afresh. MediaPipe applies no temporal
smoothing to hands, and neither does this.

Usage::

    from gpulite.solutions import Hands

    with Hands(max_hands=2, backend="cpu") as hands:
        for frame in frames:                                   # (H, W, 3) uint8 RGB
            result = hands.process(frame)
            for lms, handed in zip(result.multi_hand_landmarks or [], result.multi_handedness or []):
                print(handed.classification[0].label, lms.landmark[8].x, lms.landmark[8].y)

Handedness follows MediaPipe: "Left"/"Right" as if the image were mirrored (a selfie camera).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpulite.pipeline.config import GraphConfig
from gpulite.pipeline.graphs import load_config
from gpulite.solutions.base import GraphSession, Solution, disconnect, set_options
from gpulite.solutions.results import (
    Classification,
    ClassificationList,
    Detection,
    LandmarkList,
    NormalizedRect,
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
    palm_detections: list[Detection] | None = None
    hand_rects: list[NormalizedRect] = field(default_factory=list)
    image_size: tuple[int, int] = (0, 0)
    tracked: bool = False


def _check_confidence(name: str, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return float(value)


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
    max_hands : int
        Most hands to find (MediaPipe's ``max_num_hands``, also accepted under that name).
    model_complexity : {0, 1}
        0: the lite palm and landmark models, 1: the full ones.
    static_image_mode : bool
        True: every image on its own; False: a video (tracking).
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

    def __init__(self, *, max_hands: int = 2, model_complexity: int = 1, static_image_mode: bool = False,
                 min_detection_confidence: float = 0.5, min_tracking_confidence: float = 0.5,
                 backend: str | None = None, max_num_hands: int | None = None) -> None:
        if max_num_hands is not None:  # MediaPipe's name
            max_hands = max_num_hands
        if max_hands < 1:
            raise ValueError(f"max_hands must be >= 1, got {max_hands}")
        if model_complexity not in PALM_MODELS:
            raise ValueError(f"model_complexity must be 0 or 1, got {model_complexity}")
        super().__init__(backend=backend, static_image_mode=static_image_mode)
        self.max_hands = int(max_hands)
        self.model_complexity = model_complexity
        self.min_detection_confidence = _check_confidence("min_detection_confidence", min_detection_confidence)
        self.min_tracking_confidence = _check_confidence("min_tracking_confidence", min_tracking_confidence)
        cfg = hands_config(static_image_mode=self.static_image_mode, max_hands=self.max_hands,
                           model_complexity=model_complexity,
                           min_detection_confidence=self.min_detection_confidence,
                           min_tracking_confidence=self.min_tracking_confidence)
        self._session = GraphSession(cfg, backend=self.backend)

    def _process(self, image: np.ndarray) -> HandsResult:
        out = self._session.run({"image": image}, timings=self.last_timings)
        hands = out["multi_hand_landmarks"] or []
        palms = out["palm_detections"]
        return HandsResult(
            multi_hand_landmarks=[LandmarkList.from_pipeline(h) for h in hands] or None,
            multi_handedness=[_handedness(c) for c in out["multi_handedness"] or []] or None,
            palm_detections=None if palms is None else [Detection.from_pipeline(d) for d in palms],
            hand_rects=list(out["hand_rects"] or []),
            image_size=(image.shape[1], image.shape[0]),
            tracked=palms is None,
        )

    def _reset(self) -> None:
        self._session.restart()

    def _close(self) -> None:
        self._session.close()
