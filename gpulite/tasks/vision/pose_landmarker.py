"""``PoseLandmarker``: 33 body landmarks, world landmarks and a person mask (MediaPipe Tasks' pose landmarker).

The bundle (``pose_landmarker_lite|full|heavy.task``) holds ``pose_detector.tflite`` and
``pose_landmarks_detector.tflite``, the same networks as MediaPipe's legacy pose models. The graph
is gpulite's ``pose`` (MediaPipe's pose landmark graph): the detector finds the person, the
landmark model runs on the region its keypoints give, and in VIDEO and LIVE_STREAM mode as
MediaPipe's Tasks graph (``pose_landmarker_graph.cc``, ``pose_landmarks_detector_graph.cc``;
:func:`tasks_tracking`): the region of the next frame comes from this frame's raw auxiliary
landmarks, the detector runs again only when the landmark model finds no pose, and the landmarks
are smoothed (visibility low-pass; a one-euro filter scaled by the next frame's region; world
landmarks a one-euro filter in metres). ``min_tracking_confidence`` is checked but, with one pose,
changes nothing (MediaPipe uses it to associate tracked and detected regions).
``output_segmentation_masks``: the person mask as a ``VEC32F1`` image of the input's size (not
smoothed over time: the Tasks graph has no mask filter).

gpulite finds one pose (``num_poses=1``, MediaPipe's default); a larger ``num_poses`` is refused.

No package gpulite reaches ships ``pose_landmarker_lite.task`` or ``pose_landmarker_heavy.task``;
the model names ``pose_landmarker_lite`` and ``pose_landmarker_heavy`` (when no such file exists)
assemble the same layout from the zoo's legacy models (``pose_detection`` and
``pose_landmark_lite`` / ``pose_landmark_heavy``). The Tasks' full bundle's two networks give
the legacy ``pose_detection`` and ``pose_landmark_full``'s outputs bit for bit (they differ only
in metadata), so the assembled bundles are taken to be the official ones' networks too.

Usage::

    options = vision.PoseLandmarkerOptions(base_options=python.BaseOptions(model_asset_path="pose_landmarker_full"),
                                           output_segmentation_masks=True)
    with vision.PoseLandmarker.create_from_options(options) as landmarker:
        result = landmarker.detect(image)
        result.pose_landmarks[0][vision.PoseLandmark.NOSE].visibility
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable

import numpy as np

from gpulite.pipeline.config import NodeConfig
from gpulite.solutions import connections as _conn
from gpulite.solutions.base import node_config, set_options
from gpulite.solutions.pose import pose_config
from gpulite.tasks.bundle import Bundle, read_asset
from gpulite.tasks.components.containers.landmark import Landmark, NormalizedLandmark
from gpulite.tasks.core.base_options import BaseOptions
from gpulite.tasks.vision.core.graph_task import GraphTask, check_positive, check_unit
from gpulite.tasks.vision.core.image import Image, ImageFormat
from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode

DETECTOR = "pose_detector.tflite"
LANDMARKS = "pose_landmarks_detector.tflite"

PoseLandmark = enum.IntEnum("PoseLandmark", {p.name: int(p) for p in _conn.PoseLandmark})
PoseLandmark.__doc__ = "The 33 pose landmarks, in the model's order (MediaPipe's ``PoseLandmark``)."


class PoseLandmarksConnections:
    """The skeleton (MediaPipe's ``PoseLandmarksConnections.POSE_LANDMARKS``: ``Connection(start, end)``)."""

    @dataclasses.dataclass
    class Connection:
        start: int
        end: int


# mediapipe 1.2.2's list, in its order (the legacy POSE_CONNECTIONS as a list: face, arms, body, legs)
PoseLandmarksConnections.POSE_LANDMARKS = [PoseLandmarksConnections.Connection(a, b) for a, b in (
    (0, 1), (1, 2), (2, 3), (3, 7), (0, 4), (4, 5), (5, 6), (6, 8), (9, 10), (11, 12), (11, 13), (13, 15), (15, 17),
    (15, 19), (15, 21), (17, 19), (12, 14), (14, 16), (16, 18), (16, 20), (16, 22), (18, 20), (11, 23), (12, 24),
    (23, 24), (23, 25), (24, 26), (25, 27), (26, 28), (27, 29), (28, 30), (29, 31), (30, 32), (27, 31), (28, 32))]


@dataclasses.dataclass
class PoseLandmarkerResult:
    """The pose found in one image.

    Attributes
    ----------
    pose_landmarks : list of list of NormalizedLandmark
        33 per pose, with visibility and presence.
    pose_world_landmarks : list of list of Landmark
        33 per pose, in metres, centred between the hips.
    segmentation_masks : list of Image, optional
        ``output_segmentation_masks``: a VEC32F1 mask per pose, the input's size; None when no pose
        was found (as in mediapipe 1.2.2) or masks were not asked for.
    """

    pose_landmarks: list[list[NormalizedLandmark]]
    pose_world_landmarks: list[list[Landmark]]
    segmentation_masks: list[Image] | None = None


@dataclasses.dataclass
class PoseLandmarkerOptions:
    """Options of :class:`PoseLandmarker` (MediaPipe's names, defaults and meanings)."""

    base_options: BaseOptions
    running_mode: VisionTaskRunningMode = VisionTaskRunningMode.IMAGE
    num_poses: int = 1
    min_pose_detection_confidence: float = 0.5
    min_pose_presence_confidence: float = 0.5
    min_tracking_confidence: float = 0.5
    output_segmentation_masks: bool = False
    result_callback: Callable[[PoseLandmarkerResult, Image, int], None] | None = None


ASSEMBLED = {"pose_landmarker_lite": "pose_landmark_lite", "pose_landmarker_heavy": "pose_landmark_heavy",
             "pose_landmarker_full_assembled": "pose_landmark_full"}


def pose_bundle(path, buffer) -> Bundle:
    """The bundle ``BaseOptions`` name, or one assembled from the zoo for the names no package ships."""
    from pathlib import Path

    from gpulite import zoo

    if buffer is None and isinstance(path, str) and path in ASSEMBLED and not Path(path).exists():
        return Bundle({DETECTOR: zoo.resolve("pose_detection").read_bytes(),
                       LANDMARKS: zoo.resolve(ASSEMBLED[path]).read_bytes()})
    return Bundle.open(read_asset(path, buffer))


def tasks_tracking(cfg) -> None:
    """The legacy pose graph's tracking made the Tasks': the next frame's region comes from the raw
    auxiliary landmarks (the legacy graph smooths them first), and the landmark filter's object scale is
    that region (1.25x, squared) rather than the bare alignment rect."""
    cfg.nodes = [n for n in cfg.nodes if n.name not in ("smooth_aux_visibility", "smooth_aux_landmarks")]
    node_config(cfg, "roi_detection").inputs["NORM_LANDMARKS"] = "unfiltered_aux_landmarks"
    i = [n.name for n in cfg.nodes].index("smooth_landmarks")
    cfg.nodes.insert(i, NodeConfig(calculator="RectTransformation", name="scale_roi_next_frame",
                                   inputs={"NORM_RECT": "scale_roi", "IMAGE_SIZE": "image_size"},
                                   outputs={"NORM_RECT": "scale_roi_next_frame"},
                                   options={"scale_x": 1.25, "scale_y": 1.25, "square_long": True}))
    node_config(cfg, "smooth_landmarks").inputs["OBJECT_SCALE_ROI"] = "scale_roi_next_frame"


def _points(lms, cls):
    xyz, vis, pres = lms.columns()
    n = len(xyz)
    vis = [None] * n if vis is None else [None if v is None else float(v) for v in vis]
    pres = [None] * n if pres is None else [None if p is None else float(p) for p in pres]
    return [cls(x, y, z, v, p) for (x, y, z), v, p in zip(np.asarray(xyz, np.float64).tolist(), vis, pres, strict=True)]


class PoseLandmarker(GraphTask):
    """Body landmarks in images, videos and live streams."""

    @classmethod
    def create_from_model_path(cls, model_path: str) -> PoseLandmarker:
        return cls.create_from_options(PoseLandmarkerOptions(base_options=BaseOptions(model_asset_path=model_path)))

    @classmethod
    def create_from_options(cls, options: PoseLandmarkerOptions) -> PoseLandmarker:
        return cls(options)

    def __init__(self, options: PoseLandmarkerOptions) -> None:
        if check_positive(options.num_poses, "num_poses") != 1:
            raise ValueError(f"num_poses={options.num_poses}: gpulite's PoseLandmarker finds one pose (num_poses=1)")
        detection = check_unit(options.min_pose_detection_confidence, "min_pose_detection_confidence")
        presence = check_unit(options.min_pose_presence_confidence, "min_pose_presence_confidence")
        check_unit(options.min_tracking_confidence, "min_tracking_confidence")
        bundle = pose_bundle(options.base_options.model_asset_path, options.base_options.model_asset_buffer)
        models = {"detection_inference": bundle.model(DETECTOR), "landmark_inference": bundle.model(LANDMARKS)}
        super().__init__(options)
        self._masks = bool(options.output_segmentation_masks)
        cfg = pose_config(static_image_mode=not self.tracking, model_complexity=1, enable_segmentation=self._masks,
                          min_detection_confidence=detection, min_tracking_confidence=presence)
        # the heatmap refinement with the kernel MediaPipe's graph names (0.10.14's legacy solution used 9)
        set_options(cfg, {"refine_landmarks.kernel_size": 7,  # and the GPU's window sums (webgpu) the same
                          "landmark_inference.heatmap_windows": {"landmarks": 0, "heatmap": 3, "kernel_size": 7}})
        if self.tracking:
            tasks_tracking(cfg)
        if self._masks:  # the Tasks graph has no mask filter: the legacy graph's (a pass-through here) goes
            node_config(cfg, "segmentation_projection").outputs["MASK"] = "segmentation_mask"
            cfg.nodes = [n for n in cfg.nodes if n.name != "smooth_segmentation"]
        outputs = ["pose_landmarks", "pose_world_landmarks"] + (["segmentation_mask"] if self._masks else [])
        packets = {"smooth_landmarks": self.tracking, "smooth_segmentation": False}
        self._start(cfg, models, outputs, packets)

    def detect(self, image: Image, image_processing_options: ImageProcessingOptions | None = None
               ) -> PoseLandmarkerResult:
        """The pose in one image (IMAGE mode)."""
        return self._process_image_data(image, image_processing_options, "detect")

    def detect_for_video(self, image: Image, timestamp_ms: int,
                         image_processing_options: ImageProcessingOptions | None = None) -> PoseLandmarkerResult:
        """The pose in one video frame (VIDEO mode); timestamps must increase."""
        return self._process_video_data(image, timestamp_ms, image_processing_options, "detect_for_video")

    def detect_async(self, image: Image, timestamp_ms: int,
                     image_processing_options: ImageProcessingOptions | None = None) -> None:
        """Send a live frame (LIVE_STREAM mode); the result goes to ``result_callback``."""
        self._send_live_stream_data(image, timestamp_ms, image_processing_options, "detect_async")

    def _run(self, rgb: np.ndarray, timestamp_ms: int | None,
             image_processing_options: ImageProcessingOptions | None) -> PoseLandmarkerResult:
        self._check_processing_options(image_processing_options, roi_allowed=False, rotation_allowed=False)
        out = self._frame(rgb, timestamp_ms)
        lms, world = out["pose_landmarks"], out["pose_world_landmarks"]
        if lms is None:
            return PoseLandmarkerResult([], [], None)  # no masks, even when asked for, as in mediapipe 1.2.2
        masks = None
        if self._masks:
            mask = out.get("segmentation_mask")
            masks = [] if mask is None else [Image(ImageFormat.VEC32F1, np.asarray(mask.mask, np.float32))]
        return PoseLandmarkerResult([_points(lms, NormalizedLandmark)],
                                    [_points(world, Landmark)] if world is not None else [], masks)
