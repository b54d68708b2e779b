"""``HandLandmarker``: 21 hand landmarks, world landmarks and handedness (MediaPipe Tasks' hand landmarker).

The bundle (``hand_landmarker.task``) holds ``hand_detector.tflite`` (palm detection, 192 x 192)
and ``hand_landmarks_detector.tflite`` (224 x 224: landmarks, hand flag, handedness, world
landmarks), the networks of MediaPipe's legacy full hand models. The graph is gpulite's ``hands``
(MediaPipe's hand landmark graph): palms are detected, each palm's region (turned as mediapipe
1.2.2 turns it, see ``__init__``) goes through the landmark model, and in VIDEO and LIVE_STREAM
mode a hand's landmarks give its region in the next frame (the palm detector runs only while
fewer than ``num_hands`` hands are tracked).

Handedness is reported as mediapipe 1.2.2 reports it: the model's class index with the other
label than the legacy solution gave it (index 1 is "Left", index 0 "Right"), so the Tasks' and the
legacy solution's labels of the same hand differ.

Usage::

    options = vision.HandLandmarkerOptions(base_options=python.BaseOptions(model_asset_path="hand_landmarker"),
                                           num_hands=2)
    with vision.HandLandmarker.create_from_options(options) as landmarker:
        result = landmarker.detect(image)
        result.handedness[0][0].category_name, result.hand_landmarks[0][8].x   # index finger tip
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from gpulite.solutions import connections as _conn
from gpulite.solutions.base import node_config, set_options
from gpulite.solutions.hands import hands_config
from gpulite.tasks.bundle import Bundle, read_asset
from gpulite.tasks.components.containers.category import Category
from gpulite.tasks.components.containers.landmark import Landmark, NormalizedLandmark
from gpulite.tasks.core.base_options import BaseOptions
from gpulite.tasks.vision.core.graph_task import GraphTask, check_positive, check_unit
from gpulite.tasks.vision.core.image import Image
from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode

DETECTOR = "hand_detector.tflite"
LANDMARKS = "hand_landmarks_detector.tflite"

HandLandmark = _conn.HandLandmark
TASKS_LABELS = ("Right", "Left")  # by class index, as mediapipe 1.2.2 names them


class HandLandmarksConnections:
    """The hand's connection sets (MediaPipe's ``HandLandmarksConnections``: ``Connection(start, end)``)."""

    @dataclasses.dataclass
    class Connection:
        start: int
        end: int


for _name, _edges in (("HAND_PALM_CONNECTIONS", _conn.HAND_PALM_CONNECTIONS),
                      ("HAND_THUMB_CONNECTIONS", _conn.HAND_THUMB_CONNECTIONS),
                      ("HAND_INDEX_FINGER_CONNECTIONS", _conn.HAND_INDEX_FINGER_CONNECTIONS),
                      ("HAND_MIDDLE_FINGER_CONNECTIONS", _conn.HAND_MIDDLE_FINGER_CONNECTIONS),
                      ("HAND_RING_FINGER_CONNECTIONS", _conn.HAND_RING_FINGER_CONNECTIONS),
                      ("HAND_PINKY_FINGER_CONNECTIONS", _conn.HAND_PINKY_FINGER_CONNECTIONS)):
    setattr(HandLandmarksConnections, _name, [HandLandmarksConnections.Connection(a, b) for a, b in _edges])
HandLandmarksConnections.HAND_CONNECTIONS = (  # mediapipe 1.2.2's order: the sets above, one after another
    HandLandmarksConnections.HAND_PALM_CONNECTIONS + HandLandmarksConnections.HAND_THUMB_CONNECTIONS
    + HandLandmarksConnections.HAND_INDEX_FINGER_CONNECTIONS + HandLandmarksConnections.HAND_MIDDLE_FINGER_CONNECTIONS
    + HandLandmarksConnections.HAND_RING_FINGER_CONNECTIONS + HandLandmarksConnections.HAND_PINKY_FINGER_CONNECTIONS)


@dataclasses.dataclass
class HandLandmarkerResult:
    """The hands found in one image.

    Attributes
    ----------
    handedness : list of list of Category
        One ("Left" or "Right", with its score) per hand.
    hand_landmarks : list of list of NormalizedLandmark
        21 per hand.
    hand_world_landmarks : list of list of Landmark
        21 per hand, in metres, about the hand's centre.
    """

    handedness: list[list[Category]]
    hand_landmarks: list[list[NormalizedLandmark]]
    hand_world_landmarks: list[list[Landmark]]


@dataclasses.dataclass
class HandLandmarkerOptions:
    """Options of :class:`HandLandmarker` (MediaPipe's names, defaults and meanings)."""

    base_options: BaseOptions
    running_mode: VisionTaskRunningMode = VisionTaskRunningMode.IMAGE
    num_hands: int = 1
    min_hand_detection_confidence: float = 0.5
    min_hand_presence_confidence: float = 0.5
    min_tracking_confidence: float = 0.5
    result_callback: Callable[[HandLandmarkerResult, Image, int], None] | None = None


class HandLandmarker(GraphTask):
    """Hand landmarks in images, videos and live streams."""

    @classmethod
    def create_from_model_path(cls, model_path: str) -> HandLandmarker:
        return cls.create_from_options(HandLandmarkerOptions(base_options=BaseOptions(model_asset_path=model_path)))

    @classmethod
    def create_from_options(cls, options: HandLandmarkerOptions) -> HandLandmarker:
        return cls(options)

    def __init__(self, options: HandLandmarkerOptions) -> None:
        num_hands = check_positive(options.num_hands, "num_hands")
        detection, presence, tracking = (check_unit(getattr(options, n), n) for n in (
            "min_hand_detection_confidence", "min_hand_presence_confidence", "min_tracking_confidence"))
        bundle = Bundle.open(read_asset(options.base_options.model_asset_path, options.base_options.model_asset_buffer))
        models = {"palm_inference": bundle.model(DETECTOR), "landmark_inference": bundle.model(LANDMARKS)}
        super().__init__(options)
        cfg = hands_config(static_image_mode=not self.tracking, max_hands=num_hands, model_complexity=1,
                           min_detection_confidence=detection, min_tracking_confidence=presence)
        # MediaPipe's Tasks hand detector asks DetectionsToRects for a target angle of 90 in radians
        # (its rotation_vector_target_angle, not the legacy graph's ..._degrees: 90), so its hand
        # regions turn 90 - 28 pi = 2.035 rad (116.6 degrees) from the palm's wrist -> middle finger
        # vector, not pi / 2; the landmark model sees the hand at that angle. Do the same.
        set_options(cfg, {"palm_rects.rotation_vector_target_angle": 90.0})
        if self.tracking:  # the Tasks graph: tracked rects first, a fresh palm replaces the one it overlaps
            if tracking <= 0.0:  # MediaPipe aborts the process (a failed CHECK in its HandAssociationCalculator)
                raise ValueError("min_tracking_confidence must be > 0 in VIDEO and LIVE_STREAM mode, got 0.0")
            set_options(cfg, {"association.min_similarity_threshold": tracking})
            a = node_config(cfg, "association")
            a.inputs["NORM_RECTS"], a.inputs["NORM_RECTS:1"] = a.inputs["NORM_RECTS:1"], a.inputs["NORM_RECTS"]
        self._start(cfg, models, ["multi_hand_landmarks", "multi_hand_world_landmarks", "multi_handedness"])

    def detect(self, image: Image, image_processing_options: ImageProcessingOptions | None = None
               ) -> HandLandmarkerResult:
        """The hands in one image (IMAGE mode)."""
        return self._process_image_data(image, image_processing_options, "detect")

    def detect_for_video(self, image: Image, timestamp_ms: int,
                         image_processing_options: ImageProcessingOptions | None = None) -> HandLandmarkerResult:
        """The hands in one video frame (VIDEO mode); timestamps must increase."""
        return self._process_video_data(image, timestamp_ms, image_processing_options, "detect_for_video")

    def detect_async(self, image: Image, timestamp_ms: int,
                     image_processing_options: ImageProcessingOptions | None = None) -> None:
        """Send a live frame (LIVE_STREAM mode); the result goes to ``result_callback``."""
        self._send_live_stream_data(image, timestamp_ms, image_processing_options, "detect_async")

    def _run(self, rgb: np.ndarray, timestamp_ms: int | None,
             image_processing_options: ImageProcessingOptions | None) -> HandLandmarkerResult:
        self._check_processing_options(image_processing_options, roi_allowed=False, rotation_allowed=False)
        out = self._frame(rgb, timestamp_ms)
        hands = out["multi_hand_landmarks"] or []
        world = out["multi_hand_world_landmarks"] or []
        classes = out["multi_handedness"] or []
        return HandLandmarkerResult(
            handedness=[[Category(index=int(c.index), score=float(c.score), display_name=TASKS_LABELS[int(c.index)],
                                  category_name=TASKS_LABELS[int(c.index)]) for c in h] for h in classes],
            hand_landmarks=[[NormalizedLandmark(x, y, z) for x, y, z in h.array().tolist()]
                            for h in hands],
            hand_world_landmarks=[[Landmark(x, y, z) for x, y, z in w.array().tolist()]
                                  for w in world])
