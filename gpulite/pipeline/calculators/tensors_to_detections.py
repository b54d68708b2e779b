"""TensorsToDetections: SSD regressors + class scores + anchors -> scored detections.

MediaPipe's ``TensorsToDetectionsCalculator``: per anchor i, the box is decoded as
``centre = raw / scale * anchor_size + anchor_centre`` and ``size = raw / scale * anchor_size``
(or ``exp(raw / scale) * anchor_size``), keypoints as centres; the score is the best class
score, clipped to ``+-score_clipping_thresh`` and passed through a sigmoid when
``sigmoid_score``; anchors scoring below ``min_score_thresh`` are dropped. The output keeps
MediaPipe's anchor order (NMS sorts by score itself).

Usage::

    - calculator: TensorsToDetections
      input_stream: ["TENSORS:output_tensors", "ANCHORS:anchors"]
      output_stream: "DETECTIONS:raw_detections"
      options: {num_classes: 1, num_boxes: 896, num_coords: 16, keypoint_coord_offset: 4,
                num_keypoints: 6, num_values_per_keypoint: 2, sigmoid_score: true,
                score_clipping_thresh: 100.0, reverse_output_order: true, x_scale: 128.0,
                y_scale: 128.0, w_scale: 128.0, h_scale: 128.0, min_score_thresh: 0.5}

``TENSORS`` is [regressors (1, num_boxes, num_coords), scores (1, num_boxes, num_classes)]:
numpy arrays, or GPU tensors from a webgpu ``Inference``. GPU tensors are decoded on the GPU
(``backend`` webgpu/auto): only the anchors that pass the threshold are read back. On the
CPU path a GPU tensor is read back whole (logged once). ``ANCHORS`` comes from
``SsdAnchors`` once; without it the node builds them from its ``anchors`` option.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._select import check_backend, requested_backend, select_backend
from gpulite.pipeline.calculators.ssd_anchors import SsdAnchorsOptions, generate_anchors
from gpulite.pipeline.calculators.types import Detection, PipelineValueError, RelativeBox, host_array
from gpulite.pipeline.registry import register_calculator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TensorsToDetectionsOptions:
    """MediaPipe's ``TensorsToDetectionsCalculatorOptions`` (the fields BlazeFace-style models use).

    ``min_score_thresh``/``score_clipping_thresh`` of None mean "not set" as in the proto.
    ``anchors`` builds the anchors when no ``ANCHORS`` stream is connected.
    """

    num_classes: int = 1
    num_boxes: int = 896
    num_coords: int = 16
    box_coord_offset: int = 0
    keypoint_coord_offset: int = 4
    num_keypoints: int = 6
    num_values_per_keypoint: int = 2
    sigmoid_score: bool = True
    score_clipping_thresh: float | None = 100.0
    reverse_output_order: bool = True
    x_scale: float = 128.0
    y_scale: float = 128.0
    w_scale: float = 128.0
    h_scale: float = 128.0
    apply_exponential_on_box_size: bool = False
    flip_vertically: bool = False
    min_score_thresh: float | None = 0.5
    ignore_classes: tuple[int, ...] = ()
    anchors: SsdAnchorsOptions | dict | None = None
    backend: str = "auto"

    def __post_init__(self) -> None:
        if isinstance(self.anchors, dict):  # nested options from YAML
            object.__setattr__(self, "anchors", SsdAnchorsOptions(**{
                k: tuple(v) if isinstance(v, list) else v for k, v in self.anchors.items()}))
        if self.num_classes < 1 or self.num_boxes < 1:
            raise ValueError(f"num_classes and num_boxes must be >= 1, got {self.num_classes}, {self.num_boxes}")
        need = max(self.box_coord_offset + 4,
                   self.keypoint_coord_offset + self.num_keypoints * self.num_values_per_keypoint)
        if self.num_coords < need:
            raise ValueError(f"num_coords={self.num_coords} is too small for the box and keypoint offsets "
                             f"(needs {need})")
        if self.num_keypoints and self.num_values_per_keypoint < 2:
            raise ValueError("num_values_per_keypoint must be >= 2 when there are keypoints")
        check_backend(self.backend, "TensorsToDetectionsOptions")


def check_tensors(regressors_shape: tuple[int, ...], scores_shape: tuple[int, ...],
                  o: TensorsToDetectionsOptions) -> None:
    """Raise :class:`PipelineValueError` unless the two tensors have the option's sizes."""
    if math.prod(regressors_shape) != o.num_boxes * o.num_coords:
        raise PipelineValueError(f"TensorsToDetections: regressors of shape {tuple(regressors_shape)} do not hold "
                                 f"num_boxes x num_coords = {o.num_boxes} x {o.num_coords} values")
    if math.prod(scores_shape) != o.num_boxes * o.num_classes:
        raise PipelineValueError(f"TensorsToDetections: scores of shape {tuple(scores_shape)} do not hold "
                                 f"num_boxes x num_classes = {o.num_boxes} x {o.num_classes} values")


def best_scores(scores: np.ndarray, o: TensorsToDetectionsOptions) -> tuple[np.ndarray, np.ndarray]:
    """(score, class id) per box: the best non-ignored class, clipped and sigmoided as configured."""
    s = np.asarray(scores, np.float32).reshape(o.num_boxes, o.num_classes)
    if o.num_classes == 1 and not o.ignore_classes:  # one class (BlazeFace): no argmax needed
        best, cls = s[:, 0], np.zeros(o.num_boxes, np.intp)
    else:
        if o.ignore_classes:
            s = s.copy()
            s[:, [c for c in o.ignore_classes if 0 <= c < o.num_classes]] = -np.inf
        cls = np.argmax(s, axis=1)
        best = s[np.arange(o.num_boxes), cls]
    if o.score_clipping_thresh is not None:
        best = np.clip(best, -o.score_clipping_thresh, o.score_clipping_thresh)
    if o.sigmoid_score:
        best = 1.0 / (1.0 + np.exp(-best.astype(np.float64)))  # float64: exp(100) overflows float32
    return best.astype(np.float32), cls


def decode_boxes(raw: np.ndarray, anchors: np.ndarray, o: TensorsToDetectionsOptions) -> np.ndarray:
    """Decode rows of raw regressors (N, num_coords) against their anchors (N, 4).

    Returns (N, 4 + 2 * num_keypoints) float32: ymin, xmin, ymax, xmax, then (x, y) per keypoint.
    """
    raw = np.asarray(raw, np.float32)
    b = raw[:, o.box_coord_offset:o.box_coord_offset + 4]
    if o.reverse_output_order:
        xc, yc, w, h = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    else:
        yc, xc, h, w = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    ax, ay, aw, ah = anchors[:, 0], anchors[:, 1], anchors[:, 2], anchors[:, 3]
    xc = xc / o.x_scale * aw + ax
    yc = yc / o.y_scale * ah + ay
    if o.apply_exponential_on_box_size:
        h = np.exp(h / o.h_scale) * ah
        w = np.exp(w / o.w_scale) * aw
    else:
        h = h / o.h_scale * ah
        w = w / o.w_scale * aw
    out = np.empty((raw.shape[0], 4 + 2 * o.num_keypoints), np.float32)
    out[:, 0], out[:, 1], out[:, 2], out[:, 3] = yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
    for k in range(o.num_keypoints):
        off = o.keypoint_coord_offset + k * o.num_values_per_keypoint
        kx, ky = (raw[:, off], raw[:, off + 1]) if o.reverse_output_order else (raw[:, off + 1], raw[:, off])
        out[:, 4 + 2 * k] = kx / o.x_scale * aw + ax
        out[:, 5 + 2 * k] = ky / o.y_scale * ah + ay
    return out


def make_detections(decoded: np.ndarray, scores: np.ndarray, classes: np.ndarray,
                    o: TensorsToDetectionsOptions) -> list[Detection]:
    """Detections from decoded rows (see :func:`decode_boxes`); boxes with a negative size are skipped."""
    out = []
    for row, score, cls in zip(decoded.tolist(), scores.tolist(), classes.tolist(), strict=True):
        ymin, xmin, ymax, xmax = row[:4]
        if ymax - ymin < 0 or xmax - xmin < 0:  # MediaPipe drops these as invalid
            continue
        if o.flip_vertically:
            ymin, ymax = 1.0 - ymax, 1.0 - ymin
        kps = tuple((row[4 + 2 * k], 1.0 - row[5 + 2 * k] if o.flip_vertically else row[5 + 2 * k])
                    for k in range(o.num_keypoints))
        out.append(Detection(RelativeBox(xmin, ymin, xmax - xmin, ymax - ymin), kps, float(score), int(cls)))
    return out


def tensors_to_detections(regressors: np.ndarray, scores: np.ndarray, anchors: np.ndarray,
                          options: TensorsToDetectionsOptions = TensorsToDetectionsOptions()) -> list[Detection]:
    """The CPU decoding as a function: every anchor whose score passes the threshold, in anchor order."""
    o = options
    check_tensors(np.shape(regressors), np.shape(scores), o)
    if anchors.shape != (o.num_boxes, 4):
        raise PipelineValueError(f"TensorsToDetections: expected ({o.num_boxes}, 4) anchors, got {anchors.shape}")
    best, cls = best_scores(scores, o)
    keep = np.flatnonzero(best >= o.min_score_thresh) if o.min_score_thresh is not None else np.arange(o.num_boxes)
    raw = np.asarray(regressors, np.float32).reshape(o.num_boxes, o.num_coords)[keep]
    return make_detections(decode_boxes(raw, anchors[keep], o), best[keep], cls[keep], o)


@register_calculator
class TensorsToDetections(Calculator):
    """Model outputs -> detections above the score threshold; see the module docstring.

    Usage::

        - calculator: TensorsToDetections
          input_stream: ["TENSORS:output_tensors", "ANCHORS:anchors"]
          output_stream: "DETECTIONS:raw_detections"
          options: {num_boxes: 896, num_coords: 16, num_keypoints: 6, min_score_thresh: 0.5}
    """

    inputs = {"TENSORS": list, "ANCHORS": np.ndarray}
    outputs = {"DETECTIONS": list}
    side_inputs = {"BACKEND": str}
    optional_ports = frozenset({"ANCHORS", "BACKEND"})
    options = TensorsToDetectionsOptions

    def open(self, cc) -> None:
        o: TensorsToDetectionsOptions = cc.options
        self.anchors: np.ndarray | None = generate_anchors(o.anchors) if o.anchors is not None else None
        self.backend = select_backend(requested_backend(cc, o.backend), cc.node_name, "TensorsToDetections")
        if self.backend == "webgpu" and o.ignore_classes:
            log.info("node %r: ignore_classes is decoded on the cpu only; GPU tensors will be read back",
                     cc.node_name)
            self.backend = "cpu"
        self._gpu: Any = None
        self._warned = False

    def process(self, cc) -> None:
        o: TensorsToDetectionsOptions = cc.options
        if cc.inputs.get("ANCHORS") is not None:
            anchors = np.asarray(cc.inputs["ANCHORS"], np.float32)
            if anchors.shape != (o.num_boxes, 4):
                raise PipelineValueError(f"node {cc.node_name!r}: expected ({o.num_boxes}, 4) anchors, "
                                         f"got {anchors.shape}")
            self.anchors, self._gpu = anchors, None
        tensors = cc.inputs["TENSORS"]
        if tensors is None:
            return
        if self.anchors is None:
            raise PipelineValueError(f"node {cc.node_name!r}: no anchors: connect an ANCHORS stream (SsdAnchors) "
                                     "or set the 'anchors' option")
        if len(tensors) < 2:
            raise PipelineValueError(f"node {cc.node_name!r}: expected [regressors, scores], "
                                     f"got {len(tensors)} tensor(s)")
        regressors, scores = tensors[0], tensors[1]
        on_gpu = hasattr(regressors, "buffer") and hasattr(scores, "buffer")
        if on_gpu and self.backend == "webgpu":
            if self._gpu is None:
                from gpulite.backends.webgpu.pipeline import DetectionDecoderGpu
                self._gpu = DetectionDecoderGpu(self.anchors, o)
            check_tensors(regressors.shape, scores.shape, o)
            _, best, cls, decoded = self._gpu.run(regressors, scores)
            dets = make_detections(decoded, best, cls, o)
        else:
            if on_gpu and not self._warned:
                log.info("node %r: decoding GPU tensors on the cpu (backend %r): reading them back whole",
                         cc.node_name, self.backend)
                self._warned = True
            dets = tensors_to_detections(host_array(regressors), host_array(scores), self.anchors, o)
        cc.output("DETECTIONS", dets)
