"""``FaceDetector``: BlazeFace face detection (MediaPipe Tasks' face detector).

The model is a ``.tflite`` (``blaze_face_short_range.tflite``; the zoo name
``blaze_face_short_range``). The graph is gpulite's ``face_detection`` (MediaPipe's face detection
graph: the image letterboxed to 128 x 128, SSD anchors, weighted non-maximum suppression with
``min_suppression_threshold``). Each detection's box is in pixels of the image, with the six
keypoints (eyes, nose tip, mouth, ear tragions) normalised.

Usage::

    options = vision.FaceDetectorOptions(base_options=python.BaseOptions(model_asset_path="blaze_face_short_range"))
    with vision.FaceDetector.create_from_options(options) as detector:
        for d in detector.detect(image).detections:
            d.bounding_box.origin_x, d.categories[0].score, d.keypoints[2].x
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from gpulite.errors import ModelError
from gpulite.model.reader import Model
from gpulite.pipeline.graphs import load_config
from gpulite.solutions.base import set_options
from gpulite.tasks.bundle import check_model, read_asset
from gpulite.tasks.components.containers.bounding_box import BoundingBox
from gpulite.tasks.components.containers.category import Category
from gpulite.tasks.components.containers.detections import Detection, DetectionResult
from gpulite.tasks.components.containers.keypoint import NormalizedKeypoint
from gpulite.tasks.core.base_options import BaseOptions
from gpulite.tasks.vision.core.graph_task import GraphTask, check_unit
from gpulite.tasks.vision.core.image import Image
from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode

FaceDetectorResult = DetectionResult

# What the face_detection graph (its letterbox, anchors and decoding) takes: BlazeFace short range.
MODEL_INPUT = (1, 128, 128, 3)
MODEL_OUTPUTS = ((1, 896, 16), (1, 896, 1))  # box regressors, scores


@dataclasses.dataclass
class FaceDetectorOptions:
    """Options of :class:`FaceDetector` (MediaPipe's names, defaults and meanings)."""

    base_options: BaseOptions
    running_mode: VisionTaskRunningMode = VisionTaskRunningMode.IMAGE
    min_detection_confidence: float = 0.5
    min_suppression_threshold: float = 0.3
    result_callback: Callable[[DetectionResult, Image, int], None] | None = None


def pixel_detection(d, width: int, height: int) -> Detection:
    """A pipeline detection (relative box) as MediaPipe Tasks reports it: the box in pixels, each value
    truncated to an int (C's cast, as MediaPipe converts it)."""
    b = d.box
    box = BoundingBox(origin_x=int(b.xmin * width), origin_y=int(b.ymin * height),
                      width=int(b.width * width), height=int(b.height * height))
    return Detection(bounding_box=box, categories=[Category(index=0, score=float(d.score), display_name=None,
                                                            category_name=None)],
                     keypoints=[NormalizedKeypoint(x=float(x), y=float(y), label=None, score=0.0)
                                for x, y in d.keypoints])


def check_shapes(model: Model) -> None:
    """Refuse, when the task is made, a model the graph cannot decode (MediaPipe fails its first
    detect() with a RuntimeError from TensorsToDetectionsCalculator)."""
    sg = model.subgraphs[0]
    inputs = [list(sg.tensors[i].shape) for i in sg.inputs]
    outputs = [list(sg.tensors[i].shape) for i in sg.outputs]
    if inputs != [list(MODEL_INPUT)] or outputs != [list(s) for s in MODEL_OUTPUTS]:
        raise ModelError(f"FaceDetector runs BlazeFace short range (blaze_face_short_range.tflite): expected "
                         f"a model with input {list(MODEL_INPUT)} and outputs {list(MODEL_OUTPUTS[0])} and "
                         f"{list(MODEL_OUTPUTS[1])}, got input {', '.join(map(str, inputs))}, outputs "
                         f"{', '.join(map(str, outputs))}")


class FaceDetector(GraphTask):
    """Faces in images, videos and live streams."""

    @classmethod
    def create_from_model_path(cls, model_path: str) -> FaceDetector:
        return cls.create_from_options(FaceDetectorOptions(base_options=BaseOptions(model_asset_path=model_path)))

    @classmethod
    def create_from_options(cls, options: FaceDetectorOptions) -> FaceDetector:
        return cls(options)

    def __init__(self, options: FaceDetectorOptions) -> None:
        score = check_unit(options.min_detection_confidence, "min_detection_confidence")
        nms = check_unit(options.min_suppression_threshold, "min_suppression_threshold")
        model = read_asset(options.base_options.model_asset_path, options.base_options.model_asset_buffer)
        check_shapes(check_model(model, "face detector model"))
        super().__init__(options)
        cfg = set_options(load_config("face_detection"), {"TensorsToDetections.min_score_thresh": score,
                                                          "NonMaxSuppression.min_suppression_threshold": nms})
        self._start(cfg, {"Inference": model}, ["detections"])

    def detect(self, image: Image, image_processing_options: ImageProcessingOptions | None = None
               ) -> DetectionResult:
        """The faces in one image (IMAGE mode)."""
        return self._process_image_data(image, image_processing_options, "detect")

    def detect_for_video(self, image: Image, timestamp_ms: int,
                         image_processing_options: ImageProcessingOptions | None = None) -> DetectionResult:
        """The faces in one video frame (VIDEO mode); timestamps must increase."""
        return self._process_video_data(image, timestamp_ms, image_processing_options, "detect_for_video")

    def detect_async(self, image: Image, timestamp_ms: int,
                     image_processing_options: ImageProcessingOptions | None = None) -> None:
        """Send a live frame (LIVE_STREAM mode); the result goes to ``result_callback``."""
        self._send_live_stream_data(image, timestamp_ms, image_processing_options, "detect_async")

    def _run(self, rgb: np.ndarray, timestamp_ms: int | None,
             image_processing_options: ImageProcessingOptions | None) -> DetectionResult:
        self._check_processing_options(image_processing_options, roi_allowed=False, rotation_allowed=False)
        height, width = rgb.shape[:2]
        dets = self._frame(rgb, timestamp_ms)["detections"] or []
        return DetectionResult([pixel_detection(d, width, height) for d in dets])
