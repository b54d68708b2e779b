"""TensorsToFaceLandmarks: face-mesh model outputs -> 468 landmarks, or 478 refined ones.

``face_landmark.tflite`` gives [mesh (1404 = 468 x 3), face flag]: the mesh is decoded as
MediaPipe's ``TensorsToLandmarksCalculator`` does (x, y, z in 192 x 192 tensor pixels, divided by
the tensor width). ``face_landmark_with_attention.tflite`` gives [mesh, lips (80 x 2),
left eye (71 x 2), right eye (71 x 2), left iris (5 x 2), right iris (5 x 2), face flag]: as
MediaPipe's ``TensorsToFaceLandmarksWithAttention`` graph (``LandmarksRefinementCalculator``)
the lips and eyes overwrite x and y of their mesh landmarks (z stays the mesh's), and the
irises become landmarks 468-477 with z the mean z of their eye's contour. MediaPipe Tasks'
``face_landmarks_detector.tflite`` (in ``face_landmarker.task``, 256 x 256 input) gives [mesh
(1434 = 478 x 3), face flag, a tensor MediaPipe does not read]: the 478 points as they come. With
``MATRIX`` the landmarks are projected onto the image (``LandmarkProjection``).

The face flag (the last tensor; the Tasks model's second) is a logit: its sigmoid goes out on ``PRESENCE`` and the
landmarks only when it is above ``min_presence`` (MediaPipe's ``TensorsToFloats`` with
``activation: SIGMOID`` + ``Thresholding`` + ``Gate``; the FaceMesh solution sets
``min_presence`` to its ``min_tracking_confidence``).

Usage (the face-mesh graph; which model ran is seen from the number of tensors)::

    - calculator: TensorsToFaceLandmarks
      input_stream: ["TENSORS:landmark_tensors", "MATRIX:landmark_transform"]
      output_stream: ["NORM_LANDMARKS:face_landmarks", "PRESENCE:face_presence"]
      options: {min_presence: 0.5}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators.tensors_to_landmarks import project_landmarks
from gpulite.pipeline.calculators.types import (
    ImageTransform,
    LandmarkList,
    PipelineValueError,
    host_array,
    host_arrays,
)
from gpulite.pipeline.registry import register_calculator

MESH = 468
REFINED = 478
# LandmarksRefinementCalculator's index maps (mediapipe/modules/face_landmark/
# tensors_to_face_landmarks_with_attention.pbtxt), in the models' output order.
LIPS = (61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 185, 40, 39, 37, 0, 267, 269, 270, 409,
        78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308, 191, 80, 81, 82, 13, 312, 311, 310, 415,
        76, 77, 90, 180, 85, 16, 315, 404, 320, 307, 306, 184, 74, 73, 72, 11, 302, 303, 304, 408,
        62, 96, 89, 179, 86, 15, 316, 403, 319, 325, 292, 183, 42, 41, 38, 12, 268, 271, 272, 407)
LEFT_EYE = (33, 7, 163, 144, 145, 153, 154, 155, 133, 246, 161, 160, 159, 158, 157, 173,
            130, 25, 110, 24, 23, 22, 26, 112, 243, 247, 30, 29, 27, 28, 56, 190,
            226, 31, 228, 229, 230, 231, 232, 233, 244, 113, 225, 224, 223, 222, 221, 189,
            35, 124, 46, 53, 52, 65, 143, 111, 117, 118, 119, 120, 121, 128, 245,
            156, 70, 63, 105, 66, 107, 55, 193)
RIGHT_EYE = (263, 249, 390, 373, 374, 380, 381, 382, 362, 466, 388, 387, 386, 385, 384, 398,
             359, 255, 339, 254, 253, 252, 256, 341, 463, 467, 260, 259, 257, 258, 286, 414,
             446, 261, 448, 449, 450, 451, 452, 453, 464, 342, 445, 444, 443, 442, 441, 413,
             265, 353, 276, 283, 282, 295, 372, 340, 346, 347, 348, 349, 350, 357, 465,
             383, 300, 293, 334, 296, 336, 285, 417)
LEFT_IRIS = (468, 469, 470, 471, 472)
RIGHT_IRIS = (473, 474, 475, 476, 477)
LEFT_EYE_CONTOUR = LEFT_EYE[:16]     # z of the left iris: the mean over these
RIGHT_EYE_CONTOUR = RIGHT_EYE[:16]
# The same as index arrays, made once (fancy indexing by a list converts it on every call).
_REFINEMENTS = tuple(np.array(idx, np.intp) for idx in (LIPS, LEFT_EYE, RIGHT_EYE, LEFT_IRIS, RIGHT_IRIS))
_IRIS_CONTOURS = ((np.array(LEFT_IRIS, np.intp), np.array(LEFT_EYE_CONTOUR, np.intp)),
                  (np.array(RIGHT_IRIS, np.intp), np.array(RIGHT_EYE_CONTOUR, np.intp)))


@dataclass(frozen=True)
class TensorsToFaceLandmarksOptions:
    """``input_image_width``/``height``: the model input size (192 x 192 for both face models);
    ``min_presence``: landmarks go out only when the face flag's sigmoid is above this;
    ``z_scale``: how the projection scales z (``project_landmarks`` in ``tensors_to_landmarks``:
    ``"rect_width"`` as the legacy face mesh graph, ``"projected_x_axis"`` as the Tasks' face landmarker)."""

    input_image_width: int = 192
    input_image_height: int = 192
    min_presence: float = 0.5
    z_scale: str = "rect_width"

    def __post_init__(self) -> None:
        if self.input_image_width < 1 or self.input_image_height < 1:
            raise ValueError("input_image_width/height must be >= 1")
        if not 0.0 <= self.min_presence <= 1.0:
            raise ValueError(f"min_presence must be in [0, 1], got {self.min_presence!r}")
        if self.z_scale not in ("rect_width", "projected_x_axis"):
            raise ValueError(f"z_scale must be 'rect_width' or 'projected_x_axis', got {self.z_scale!r}")


def _values(t: object) -> np.ndarray:
    return np.asarray(host_array(t), np.float64).reshape(-1)


def decode_face_landmarks(tensors: list, options: TensorsToFaceLandmarksOptions = TensorsToFaceLandmarksOptions()
                          ) -> np.ndarray:
    """(468 or 478, 3) landmarks relative to the model input (x, y / size; z / width)."""
    n = len(tensors)
    if n not in (2, 3, 7):
        raise PipelineValueError(f"TensorsToFaceLandmarks: expected 2 tensors (face_landmark), 3 (MediaPipe Tasks' "
                                 f"face_landmarks_detector) or 7 (face_landmark_with_attention), got {n}")
    scale = np.array([options.input_image_width, options.input_image_height, options.input_image_width], np.float64)
    mesh = _values(tensors[0])
    if n == 3:
        if mesh.size != REFINED * 3:
            raise PipelineValueError(f"TensorsToFaceLandmarks: the mesh tensor has {mesh.size} values, expected "
                                     f"{REFINED * 3}")
        return mesh.reshape(REFINED, 3) / scale
    if mesh.size != MESH * 3:
        raise PipelineValueError(f"TensorsToFaceLandmarks: the mesh tensor has {mesh.size} values, expected {MESH * 3}")
    mesh = mesh.reshape(MESH, 3) / scale
    if n == 2:
        return mesh
    out = np.zeros((REFINED, 3), np.float64)
    out[:MESH] = mesh
    for t, idx in zip(tensors[1:6], _REFINEMENTS, strict=True):
        v = _values(t)
        if v.size != 2 * idx.size:
            raise PipelineValueError(f"TensorsToFaceLandmarks: a refinement tensor has {v.size} values, "
                                     f"expected {2 * idx.size}")
        out[idx, :2] = v.reshape(idx.size, 2) / scale[:2]
    for iris, contour in _IRIS_CONTOURS:
        out[iris, 2] = out[contour, 2].mean()
    return out


def face_presence(tensors: list) -> float:
    """The sigmoid of the face flag (the last tensor; the second of three)."""
    v = _values(tensors[1] if len(tensors) == 3 else tensors[-1])
    if v.size == 0:
        raise PipelineValueError("TensorsToFaceLandmarks: the face flag tensor is empty")
    return float(1.0 / (1.0 + np.exp(-v[0])))


def face_landmarks(tensors: list, transform: ImageTransform | None = None,
                   options: TensorsToFaceLandmarksOptions = TensorsToFaceLandmarksOptions()) -> LandmarkList:
    """Decoded (and, with ``transform``, projected) face landmarks as a LandmarkList."""
    pts = decode_face_landmarks(tensors, options)
    lms = LandmarkList.from_arrays(pts)
    return project_landmarks(lms, transform, z_scale=options.z_scale) if transform is not None else lms


@register_calculator
class TensorsToFaceLandmarks(Calculator):
    """Face-mesh model outputs -> landmarks; see the module docstring."""

    inputs = {"TENSORS": list, "MATRIX": ImageTransform}
    outputs = {"NORM_LANDMARKS": LandmarkList, "PRESENCE": float}
    optional_ports = frozenset({"MATRIX"})
    options = TensorsToFaceLandmarksOptions

    def process(self, cc) -> None:
        tensors = cc.inputs["TENSORS"]
        if tensors is None:
            return
        if len(tensors) not in (2, 3, 7):
            raise PipelineValueError(f"node {cc.node_name!r}: expected 2 tensors (face_landmark), 3 (MediaPipe "
                                     f"Tasks' face_landmarks_detector) or 7 (face_landmark_with_attention), got "
                                     f"{len(tensors)}")
        tensors = host_arrays(tensors)  # on webgpu: flag and landmarks in one readback (the landmarks are small)
        presence = face_presence(tensors)
        cc.output("PRESENCE", presence)
        if presence > cc.options.min_presence:
            cc.output("NORM_LANDMARKS", face_landmarks(tensors, cc.inputs.get("MATRIX"), cc.options))
