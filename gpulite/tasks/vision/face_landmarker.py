"""``FaceLandmarker``: 478 face landmarks, blendshapes and face transforms (MediaPipe Tasks' face landmarker).

The bundle (``face_landmarker.task``) holds ``face_detector.tflite`` (BlazeFace short range),
``face_landmarks_detector.tflite`` (the 478-point mesh, 256 x 256 input),
``face_blendshapes.tflite`` and ``geometry_pipeline_metadata_landmarks.binarypb``. The graph is
gpulite's ``face_mesh`` (MediaPipe's face landmark graph) with these models: faces are
detected, each face's region (turned upright by the eyes, grown 1.5x, squared) goes through the
mesh model, and in VIDEO and LIVE_STREAM mode a face's landmarks give its region in the next
frame (the detector runs only while fewer than ``num_faces`` faces are tracked), and with
``num_faces=1`` the landmarks are smoothed over time as MediaPipe smooths them (a one-euro filter,
min_cutoff 0.05, beta 80, derivate_cutoff 1, in pixels; blendshapes and transforms are computed
from the smoothed landmarks, the next frame's region from the raw ones). z is projected as the
Tasks graph projects it (``IMAGE_DIMENSIONS``: times the region's x axis in relative image
coordinates), which the transforms depend on; the legacy face mesh scales it by the region's width.
``output_face_blendshapes``: the 52 blendshape scores of each face (MediaPipe's
``FaceBlendshapesGraph``: 146 of the landmarks, in pixels, through the blendshapes model).
``output_facial_transformation_matrixes``: the 4x4 transform from the canonical face model to
each face (:mod:`gpulite.tasks.vision.face_geometry`).

Usage::

    options = vision.FaceLandmarkerOptions(base_options=python.BaseOptions(model_asset_path="face_landmarker"),
                                           output_face_blendshapes=True)
    with vision.FaceLandmarker.create_from_options(options) as landmarker:
        result = landmarker.detect(mp.Image.create_from_file("face.jpg"))
        result.face_landmarks[0][1].x, result.face_blendshapes[0][9].category_name   # 'eyeBlinkLeft'
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable

import numpy as np

from gpulite.interpreter import Interpreter
from gpulite.pipeline.calculators.landmark_smoothing import LandmarkFilters, LandmarksSmoothingOptions
from gpulite.pipeline.graphs import load_config
from gpulite.solutions import connections as _conn
from gpulite.solutions.base import disconnect, node_config, set_options
from gpulite.tasks.bundle import Bundle, read_asset
from gpulite.tasks.components.containers.category import Category
from gpulite.tasks.components.containers.landmark import NormalizedLandmark
from gpulite.tasks.core.base_options import BaseOptions
from gpulite.tasks.vision.core.graph_task import GraphTask, check_positive, check_unit
from gpulite.tasks.vision.core.image import Image
from gpulite.tasks.vision.core.image_processing_options import ImageProcessingOptions
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode

_RunningMode = VisionTaskRunningMode

DETECTOR = "face_detector.tflite"
LANDMARKS = "face_landmarks_detector.tflite"
BLENDSHAPES = "face_blendshapes.tflite"
GEOMETRY = "geometry_pipeline_metadata_landmarks.binarypb"

# MediaPipe's FaceBlendshapesGraph: the 146 landmarks the blendshapes model reads, and its 52 outputs' names
BLENDSHAPE_LANDMARKS = (
    0, 1, 4, 5, 6, 7, 8, 10, 13, 14, 17, 21, 33, 37, 39, 40, 46, 52, 53, 54, 55, 58, 61, 63, 65, 66, 67, 70, 78, 80,
    81, 82, 84, 87, 88, 91, 93, 95, 103, 105, 107, 109, 127, 132, 133, 136, 144, 145, 146, 148, 149, 150, 152, 153,
    154, 155, 157, 158, 159, 160, 161, 162, 163, 168, 172, 173, 176, 178, 181, 185, 191, 195, 197, 234, 246, 249,
    251, 263, 267, 269, 270, 276, 282, 283, 284, 285, 288, 291, 293, 295, 296, 297, 300, 308, 310, 311, 312, 314,
    317, 318, 321, 323, 324, 332, 334, 336, 338, 356, 361, 362, 365, 373, 374, 375, 377, 378, 379, 380, 381, 382,
    384, 385, 386, 387, 388, 389, 390, 397, 398, 400, 402, 405, 409, 415, 454, 466, 468, 469, 470, 471, 472, 473,
    474, 475, 476, 477)
_BLENDSHAPE_ROWS = np.array(BLENDSHAPE_LANDMARKS)


class Blendshapes(enum.IntEnum):
    """The 52 blendshapes, in the model's (and the result's) order."""

    NEUTRAL = 0
    BROW_DOWN_LEFT = 1
    BROW_DOWN_RIGHT = 2
    BROW_INNER_UP = 3
    BROW_OUTER_UP_LEFT = 4
    BROW_OUTER_UP_RIGHT = 5
    CHEEK_PUFF = 6
    CHEEK_SQUINT_LEFT = 7
    CHEEK_SQUINT_RIGHT = 8
    EYE_BLINK_LEFT = 9
    EYE_BLINK_RIGHT = 10
    EYE_LOOK_DOWN_LEFT = 11
    EYE_LOOK_DOWN_RIGHT = 12
    EYE_LOOK_IN_LEFT = 13
    EYE_LOOK_IN_RIGHT = 14
    EYE_LOOK_OUT_LEFT = 15
    EYE_LOOK_OUT_RIGHT = 16
    EYE_LOOK_UP_LEFT = 17
    EYE_LOOK_UP_RIGHT = 18
    EYE_SQUINT_LEFT = 19
    EYE_SQUINT_RIGHT = 20
    EYE_WIDE_LEFT = 21
    EYE_WIDE_RIGHT = 22
    JAW_FORWARD = 23
    JAW_LEFT = 24
    JAW_OPEN = 25
    JAW_RIGHT = 26
    MOUTH_CLOSE = 27
    MOUTH_DIMPLE_LEFT = 28
    MOUTH_DIMPLE_RIGHT = 29
    MOUTH_FROWN_LEFT = 30
    MOUTH_FROWN_RIGHT = 31
    MOUTH_FUNNEL = 32
    MOUTH_LEFT = 33
    MOUTH_LOWER_DOWN_LEFT = 34
    MOUTH_LOWER_DOWN_RIGHT = 35
    MOUTH_PRESS_LEFT = 36
    MOUTH_PRESS_RIGHT = 37
    MOUTH_PUCKER = 38
    MOUTH_RIGHT = 39
    MOUTH_ROLL_LOWER = 40
    MOUTH_ROLL_UPPER = 41
    MOUTH_SHRUG_LOWER = 42
    MOUTH_SHRUG_UPPER = 43
    MOUTH_SMILE_LEFT = 44
    MOUTH_SMILE_RIGHT = 45
    MOUTH_STRETCH_LEFT = 46
    MOUTH_STRETCH_RIGHT = 47
    MOUTH_UPPER_UP_LEFT = 48
    MOUTH_UPPER_UP_RIGHT = 49
    NOSE_SNEER_LEFT = 50
    NOSE_SNEER_RIGHT = 51


def _camel(name: str) -> str:
    head, *rest = name.lower().split("_")
    return head + "".join(w.capitalize() for w in rest)


BLENDSHAPE_NAMES = tuple("_neutral" if b == Blendshapes.NEUTRAL else _camel(b.name) for b in Blendshapes)


class FaceLandmarksConnections:
    """The mesh's connection sets (MediaPipe's ``FaceLandmarksConnections``), as lists of
    ``Connection(start, end)``."""

    @dataclasses.dataclass
    class Connection:
        start: int
        end: int

    @staticmethod
    def _of(edges: frozenset) -> list[FaceLandmarksConnections.Connection]:
        """In MediaPipe's order (its lists, which it draws in): the order its source lists the pairs."""
        return [FaceLandmarksConnections.Connection(a, b) for a, b in _conn.LISTED_ORDER[edges]]


for _name, _edges in (("FACE_LANDMARKS_LIPS", _conn.FACEMESH_LIPS),
                      ("FACE_LANDMARKS_LEFT_EYE", _conn.FACEMESH_LEFT_EYE),
                      ("FACE_LANDMARKS_LEFT_EYEBROW", _conn.FACEMESH_LEFT_EYEBROW),
                      ("FACE_LANDMARKS_LEFT_IRIS", _conn.FACEMESH_LEFT_IRIS),
                      ("FACE_LANDMARKS_RIGHT_EYE", _conn.FACEMESH_RIGHT_EYE),
                      ("FACE_LANDMARKS_RIGHT_EYEBROW", _conn.FACEMESH_RIGHT_EYEBROW),
                      ("FACE_LANDMARKS_RIGHT_IRIS", _conn.FACEMESH_RIGHT_IRIS),
                      ("FACE_LANDMARKS_FACE_OVAL", _conn.FACEMESH_FACE_OVAL),
                      ("FACE_LANDMARKS_NOSE", _conn.FACEMESH_NOSE),
                      ("FACE_LANDMARKS_TESSELATION", _conn.FACEMESH_TESSELATION)):
    setattr(FaceLandmarksConnections, _name, FaceLandmarksConnections._of(_edges))
FaceLandmarksConnections.FACE_LANDMARKS_CONTOURS = (  # as mediapipe 1.2.2 concatenates them
    FaceLandmarksConnections.FACE_LANDMARKS_LIPS + FaceLandmarksConnections.FACE_LANDMARKS_LEFT_EYE
    + FaceLandmarksConnections.FACE_LANDMARKS_LEFT_EYEBROW + FaceLandmarksConnections.FACE_LANDMARKS_RIGHT_EYE
    + FaceLandmarksConnections.FACE_LANDMARKS_RIGHT_EYEBROW + FaceLandmarksConnections.FACE_LANDMARKS_FACE_OVAL)


@dataclasses.dataclass
class FaceLandmarkerResult:
    """The faces found in one image.

    Attributes
    ----------
    face_landmarks : list of list of NormalizedLandmark
        478 per face.
    face_blendshapes : list of list of Category
        52 per face (``output_face_blendshapes``), else empty.
    facial_transformation_matrixes : list of numpy.ndarray
        A 4x4 float32 per face (``output_facial_transformation_matrixes``), else empty.
    """

    face_landmarks: list[list[NormalizedLandmark]]
    face_blendshapes: list[list[Category]]
    facial_transformation_matrixes: list[np.ndarray]


@dataclasses.dataclass
class FaceLandmarkerOptions:
    """Options of :class:`FaceLandmarker` (MediaPipe's names, defaults and meanings)."""

    base_options: BaseOptions
    running_mode: VisionTaskRunningMode = _RunningMode.IMAGE
    num_faces: int = 1
    min_face_detection_confidence: float = 0.5
    min_face_presence_confidence: float = 0.5
    min_tracking_confidence: float = 0.5
    output_face_blendshapes: bool = False
    output_facial_transformation_matrixes: bool = False
    result_callback: Callable[[FaceLandmarkerResult, Image, int], None] | None = None


def face_landmarker_config(*, tracking: bool, num_faces: int, min_detection: float, min_presence: float,
                           min_tracking: float):
    """The ``face_mesh`` graph set up as MediaPipe's FaceLandmarkerGraph."""
    cfg = set_options(load_config("face_mesh"), {
        "detector_decode.min_score_thresh": min_detection,
        "detector_nms.max_num_detections": num_faces,
        "detector_gate.min_rois": num_faces,
        "landmark_to_tensor.output_width": 256,
        "landmark_to_tensor.output_height": 256,
        "landmark_decode.input_image_width": 256,
        "landmark_decode.input_image_height": 256,
        "landmark_decode.min_presence": min_presence,
        "landmark_decode.z_scale": "projected_x_axis",  # the Tasks graph projects with IMAGE_DIMENSIONS
        "associate_rects.min_similarity_threshold": min_tracking,
    })
    if not tracking:
        disconnect(cfg, "detector_gate", "PREV_ROIS")
        disconnect(cfg, "associate_rects", "NORM_RECTS:1")
        cfg.nodes = [n for n in cfg.nodes if n.name != "previous_rects"]
    else:  # the Tasks graph lists the tracked rects first: a fresh detection replaces the one it overlaps
        a = node_config(cfg, "associate_rects")
        a.inputs["NORM_RECTS"], a.inputs["NORM_RECTS:1"] = a.inputs["NORM_RECTS:1"], a.inputs["NORM_RECTS"]
    return cfg


class FaceLandmarker(GraphTask):
    """Face landmarks (and blendshapes, transforms) in images, videos and live streams."""

    @classmethod
    def create_from_model_path(cls, model_path: str) -> FaceLandmarker:
        return cls.create_from_options(FaceLandmarkerOptions(base_options=BaseOptions(model_asset_path=model_path)))

    @classmethod
    def create_from_options(cls, options: FaceLandmarkerOptions) -> FaceLandmarker:
        return cls(options)

    def __init__(self, options: FaceLandmarkerOptions) -> None:
        num_faces = check_positive(options.num_faces, "num_faces")
        confidences = [check_unit(getattr(options, n), n) for n in (
            "min_face_detection_confidence", "min_face_presence_confidence", "min_tracking_confidence")]
        bundle = Bundle.open(read_asset(options.base_options.model_asset_path, options.base_options.model_asset_buffer))
        models = {"detector_inference": bundle.model(DETECTOR), "landmark_inference": bundle.model(LANDMARKS)}
        blendshapes = bundle.model(BLENDSHAPES) if options.output_face_blendshapes else None
        geometry = bundle.file(GEOMETRY) if options.output_facial_transformation_matrixes else None
        super().__init__(options)
        cfg = face_landmarker_config(tracking=self.tracking, num_faces=num_faces, min_detection=confidences[0],
                                     min_presence=confidences[1], min_tracking=confidences[2])
        self._start(cfg, models, ["multi_face_landmarks"])
        self._smoothing = None
        if self.tracking and num_faces == 1:
            self._smoothing = LandmarkFilters(LandmarksSmoothingOptions(min_cutoff=0.05, beta=80.0,
                                                                        derivate_cutoff=1.0))
        self._blendshapes = None
        if blendshapes is not None:  # MediaPipe runs this model on XNNPACK whatever the delegate
            self._blendshapes = Interpreter(model_content=blendshapes, backend="litert" if self.backend == "litert"
                                            else "cpu")  # one thread: a small model
            self._blendshapes.allocate_tensors()
            self._blendshapes_io = (self._blendshapes.get_input_details()[0]["index"],
                                    self._blendshapes.get_output_details()[0]["index"])
        self._geometry = None
        if geometry is not None:
            from gpulite.tasks.vision.face_geometry import GeometryPipeline

            self._geometry = GeometryPipeline.from_metadata(geometry)

    def detect(self, image: Image, image_processing_options: ImageProcessingOptions | None = None
               ) -> FaceLandmarkerResult:
        """The faces in one image (IMAGE mode)."""
        return self._process_image_data(image, image_processing_options, "detect")

    def detect_for_video(self, image: Image, timestamp_ms: int,
                         image_processing_options: ImageProcessingOptions | None = None) -> FaceLandmarkerResult:
        """The faces in one video frame (VIDEO mode); timestamps must increase."""
        return self._process_video_data(image, timestamp_ms, image_processing_options, "detect_for_video")

    def detect_async(self, image: Image, timestamp_ms: int,
                     image_processing_options: ImageProcessingOptions | None = None) -> None:
        """Send a live frame (LIVE_STREAM mode); the result goes to ``result_callback``."""
        self._send_live_stream_data(image, timestamp_ms, image_processing_options, "detect_async")

    def _run(self, rgb: np.ndarray, timestamp_ms: int | None,
             image_processing_options: ImageProcessingOptions | None) -> FaceLandmarkerResult:
        self._check_processing_options(image_processing_options, roi_allowed=False, rotation_allowed=False)
        faces = self._frame(rgb, timestamp_ms)["multi_face_landmarks"] or []
        height, width = rgb.shape[:2]
        if self._smoothing is not None:  # on the frame's time in seconds, as MediaPipe's filter
            if faces:
                faces = [self._smoothing.apply(faces[0], timestamp_ms / 1000.0, (width, height), None)]
            else:
                self._smoothing.reset()
        points = [f.array() for f in faces]
        landmarks = [[NormalizedLandmark(x, y, z) for x, y, z in p.tolist()] for p in points]
        blendshapes = [self._blendshape_scores(p, width, height) for p in points] if self._blendshapes else []
        matrices = [self._geometry.transform(p, width, height) for p in points] if self._geometry else []
        return FaceLandmarkerResult(landmarks, blendshapes, matrices)

    def _blendshape_scores(self, points: np.ndarray, width: int, height: int) -> list[Category]:
        it = self._blendshapes
        assert it is not None
        xy = points[_BLENDSHAPE_ROWS, :2] * np.array([width, height], np.float64)
        into, out = self._blendshapes_io
        it.set_tensor(into, xy.astype(np.float32)[None])
        it.invoke()
        scores = it.get_tensor(out).reshape(-1).tolist()
        return [Category(index=i, score=s, display_name=None, category_name=BLENDSHAPE_NAMES[i])
                for i, s in enumerate(scores)]
