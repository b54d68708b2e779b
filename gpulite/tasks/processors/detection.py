"""Model outputs -> ``DetectionResult``, as MediaPipe's ``DetectionPostprocessingGraph`` and the
ObjectDetector graph after it.

For models without in-model NMS (two outputs, ``location`` and ``score``, and a
``DETECTOR_METADATA`` custom metadata: the object detector schema ``V001`` with SSD anchors and
the decoding options), as MediaPipe's efficientdet models are: per anchor the best allowed
class score (sigmoid when the metadata says so), the box decoded against its anchor (YXHW),
boxes scoring below the threshold dropped; then hard IoU non-maximum suppression
(``min_suppression_threshold`` 0.3, at most ``max_results``), labels from the score tensor's
``TENSOR_AXIS_LABELS`` file, boxes projected back onto the image, converted to pixels
(truncated, clamped to the image) and detections with equal boxes merged.

For models with in-model NMS (four outputs of ``TFLite_Detection_PostProcess``: location,
category, score, number of detections): the first ``num_detections`` rows whose score reaches
the threshold and whose class is allowed, labels from the category tensor's
``TENSOR_VALUE_LABELS`` file, at most ``max_results``.

Usage::

    post = DetectionPostprocessor(image_model, max_results=5)
    result = post(outputs, transform)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpulite.errors import ModelError
from gpulite.model import metadata as tfmeta
from gpulite.model.flatbuf import Buffer
from gpulite.pipeline.calculators.detection_projection import project_detections
from gpulite.pipeline.calculators.types import Detection as RelDetection
from gpulite.pipeline.calculators.types import ImageTransform, RelativeBox
from gpulite.tasks.components.containers.bounding_box import BoundingBox
from gpulite.tasks.components.containers.category import Category
from gpulite.tasks.components.containers.detections import Detection, DetectionResult
from gpulite.tasks.image_model import ImageModel, TaskModelError
from gpulite.tasks.processors.classification import (
    DEFAULT_LOCALE,
    NO_THRESHOLD,
    Label,
    calibration_of,
    check_lists,
    label_map,
    listed_indices,
    metadata_threshold,
)
from gpulite.tasks.processors.stl_sort import sort_descending

DETECTOR_METADATA = "DETECTOR_METADATA"


@dataclass(frozen=True)
class DecodingOptions:
    """``TensorsDecodingOptions`` of MediaPipe's object detector metadata schema."""

    num_classes: int
    num_boxes: int
    num_coords: int
    keypoint_coord_offset: int
    num_keypoints: int
    num_values_per_keypoint: int
    x_scale: float
    y_scale: float
    w_scale: float
    h_scale: float
    apply_exponential_on_box_size: bool
    sigmoid_score: bool


def parse_detector_metadata(blob: bytes) -> tuple[np.ndarray, DecodingOptions]:
    """Anchors ((N, 4) float32: x_center, y_center, width, height) and decoding options from a
    ``DETECTOR_METADATA`` blob (``object_detector_metadata_schema.fbs``, identifier ``V001``)."""
    buf = Buffer(blob)
    try:
        ident = bytes(buf.data[4:8]) if buf.size >= 8 else b""
        if ident != b"V001":
            raise ModelError(f"not object detector metadata: identifier {ident!r}, expected b'V001'")
        root = buf.root("ObjectDetectorOptions")
        ssd = root.table(1, "SsdAnchorsOptions")
        fixed = None if ssd is None else ssd.table(0, "FixedAnchorsSchema")
        if fixed is None:
            raise ModelError("SsdAnchorsOptions is not found in the object detector metadata.")
        anchors = np.array([[a.scalar(i, "f32", 0.0) for i in range(4)] for a in fixed.tables(0, "FixedAnchor")],
                           np.float32).reshape(-1, 4)
        d = root.table(2, "TensorsDecodingOptions")
        if d is None:
            raise ModelError("TensorsDecodingOptions is not found in the object detector metadata.")
        opts = DecodingOptions(*(d.scalar(i, "i32", 0) for i in range(6)),
                               *(d.scalar(i, "f32", 0.0) for i in range(6, 10)),
                               d.scalar(10, "bool", False), d.scalar(11, "bool", False))
    except ModelError as e:
        raise TaskModelError(f"{DETECTOR_METADATA}: {e}") from None
    if opts.num_boxes != len(anchors):
        raise TaskModelError(f"{DETECTOR_METADATA}: {len(anchors)} anchors for num_boxes {opts.num_boxes}")
    return anchors, opts


def box_properties(tensor: tfmeta.TensorMetadata) -> tuple[int, int, int, int]:
    """MediaPipe's ``GetBoundingBoxProperties``: the (left, top, right, bottom) positions."""
    props = tensor.content.properties if tensor.content is not None else None
    if props is None:
        raise TaskModelError(f"Expected BoundingBoxProperties for tensor {tensor.name or '#0'}, found none.")
    if not isinstance(props, tfmeta.BoundingBoxProperties):
        kind = type(props).__name__
        raise TaskModelError(f"Expected BoundingBoxProperties for tensor {tensor.name or '#0'}, found {kind}.")
    if props.type != "BOUNDARIES":
        raise TaskModelError(f"Mobile SSD only supports BoundingBoxType BOUNDARIES, found {props.type}")
    if props.coordinate_type != "RATIO":
        raise TaskModelError(f"Mobile SSD only supports CoordinateType RATIO, found {props.coordinate_type}")
    if props.index and len(props.index) != 4:
        raise TaskModelError(f"Expected BoundingBoxProperties index to contain 4 values, found {len(props.index)}")
    return tuple(props.index) if props.index else (0, 1, 2, 3)


def _indices(metas: tuple[tfmeta.TensorMetadata, ...], names: tuple[str, ...]) -> list[int]:
    found = [next((i for i, t in enumerate(metas) if t.name == n), -1) for n in names]
    return list(range(len(names))) if -1 in found else found  # MediaPipe falls back to the default order


def hard_nms(boxes: np.ndarray, scores: np.ndarray, threshold: float, limit: int) -> np.ndarray:
    """MediaPipe's ``DEFAULT`` NonMaxSuppression with IoU: indices kept, best first. ``boxes`` are
    (N, 4) xmin, ymin, xmax, ymax; a box is dropped when its IoU with a kept one exceeds ``threshold``."""
    x0, y0, x1, y1 = (boxes[:, k].astype(np.float32) for k in range(4))
    area = np.maximum(x1 - x0, 0) * np.maximum(y1 - y0, 0)
    n = len(scores)
    prefix = n if limit < 0 else min(n, max(1024, 32 * limit))
    while True:
        # MediaPipe's std::sort: its order of tied scores decides which box stays. Only a prefix
        # is sorted; when suppression uses it up before ``limit`` boxes are kept, a longer one.
        order = sort_descending(scores, prefix)[:prefix]
        kept: list[int] = []
        while order.size and (limit < 0 or len(kept) < limit):
            i = int(order[0])
            kept.append(i)
            rest = order[1:]
            w = np.minimum(x1[i], x1[rest]) - np.maximum(x0[i], x0[rest])
            h = np.minimum(y1[i], y1[rest]) - np.maximum(y0[i], y0[rest])
            inter = np.where((w > 0) & (h > 0), w * h, 0.0)
            union = area[i] + area[rest] - inter
            iou = np.where((inter > 0) & (union > 0), inter / np.where(union > 0, union, 1), 0.0)
            order = rest[iou <= threshold]
        if prefix >= n or len(kept) == limit:
            return np.asarray(kept, np.intp)
        prefix = min(n, prefix * 4)


class DetectionPostprocessor:
    """The detection outputs of an :class:`ImageModel` under ObjectDetector's options."""

    def __init__(self, model: ImageModel, *, max_results: int | None = -1, score_threshold: float | None = None,
                 category_allowlist: list[str] | None = None, category_denylist: list[str] | None = None,
                 display_names_locale: str | None = None, min_suppression_threshold: float = 0.3) -> None:
        check_lists(category_allowlist, category_denylist, max_results, end="")  # MediaPipe's wording
        if len(model.model.subgraphs) != 1:
            raise TaskModelError(f"Expected a model with a single subgraph, found {len(model.model.subgraphs)}.")
        md = model.metadata
        if md is None or not md.subgraphs:
            raise TaskModelError("Object detection models require TFLite Model Metadata but none was found")
        metas = md.subgraphs[0].outputs
        n_out = model.output_count
        if n_out not in (2, 4):
            raise TaskModelError(f"Expected a model with 2 or 4 output tensors, found {n_out}.")
        if len(metas) != n_out:
            raise TaskModelError(f"Mismatch between number of output tensors ({n_out}) and output tensors metadata "
                                 f"({len(metas)}).")
        self.in_model_nms = n_out == 4
        names = (("location", "category", "score", "number of detections") if self.in_model_nms
                 else ("location", "score"))
        self.order = _indices(metas, names)
        self.corners = box_properties(metas[self.order[0]])
        locale = DEFAULT_LOCALE if display_names_locale is None else display_names_locale
        label_file = "TENSOR_VALUE_LABELS" if self.in_model_nms else "TENSOR_AXIS_LABELS"
        self.labels: list[Label] = label_map(md, metas[self.order[1]], label_file, locale)
        listed = listed_indices(self.labels, category_allowlist or category_denylist)
        self.allow = listed if category_allowlist else None
        self.deny = set() if category_allowlist else listed
        score_meta = metas[self.order[2] if self.in_model_nms else self.order[1]]
        self.threshold = metadata_threshold(score_meta) if score_threshold is None else float(score_threshold)
        self.max_results = -1 if max_results is None or max_results < 0 else max_results
        self.nms_threshold = float(min_suppression_threshold)
        self.calibration = calibration_of(md, score_meta) if self.in_model_nms else None
        if not self.in_model_nms:
            blob = md.subgraphs[0].custom_metadata.get(DETECTOR_METADATA)
            if blob is None:
                raise TaskModelError("TensorsDecodingOptions is not found in the object detector metadata.")
            self.anchors, self.decoding = parse_detector_metadata(blob)

    def __call__(self, outputs: list[np.ndarray], transform: ImageTransform) -> DetectionResult:
        rel = self._in_model(outputs) if self.in_model_nms else self._out_of_model(outputs)
        rel = project_detections(rel, transform)
        return DetectionResult(detections=self._to_pixels(rel, transform.image_size))

    def _class_mask(self, num_classes: int) -> np.ndarray:
        allowed = np.ones(num_classes, bool)
        if self.allow is not None:
            allowed[:] = False
            allowed[[c for c in self.allow if c < num_classes]] = True
        allowed[[c for c in self.deny if c < num_classes]] = False
        return allowed

    def _out_of_model(self, outputs: list[np.ndarray]) -> list[RelDetection]:
        d = self.decoding
        raw_boxes = outputs[self.order[0]].reshape(-1)
        raw_scores = outputs[self.order[1]].reshape(-1)
        if raw_boxes.size != d.num_boxes * d.num_coords or raw_scores.size != d.num_boxes * d.num_classes:
            raise TaskModelError(f"outputs of {raw_boxes.size} and {raw_scores.size} values do not fit the metadata's "
                                 f"{d.num_boxes} boxes x {d.num_coords} coordinates and {d.num_classes} classes")
        scores = raw_scores.reshape(d.num_boxes, d.num_classes)
        if self.allow is not None or self.deny:
            scores = np.where(self._class_mask(d.num_classes)[None, :], scores, -np.inf)
        cls = np.argmax(scores, axis=1)  # the first of equal scores, as MediaPipe's loop over classes
        best = scores[np.arange(d.num_boxes), cls].astype(np.float32)
        if d.sigmoid_score:  # monotonic: the best class is the same before and after
            best = (1.0 / (1.0 + np.exp(-best.astype(np.float64)))).astype(np.float32)
        keep = np.flatnonzero(best >= np.float32(self.threshold)) if self.threshold > NO_THRESHOLD else \
            np.flatnonzero(np.isfinite(best))
        r = raw_boxes.reshape(d.num_boxes, d.num_coords)[keep].astype(np.float32)
        a = self.anchors[keep]
        yc = r[:, 0] / np.float32(d.y_scale) * a[:, 3] + a[:, 1]
        xc = r[:, 1] / np.float32(d.x_scale) * a[:, 2] + a[:, 0]
        if d.apply_exponential_on_box_size:
            h = np.exp(r[:, 2] / np.float32(d.h_scale)) * a[:, 3]
            w = np.exp(r[:, 3] / np.float32(d.w_scale)) * a[:, 2]
        else:
            h = r[:, 2] / np.float32(d.h_scale) * a[:, 3]
            w = r[:, 3] / np.float32(d.w_scale) * a[:, 2]
        boxes = np.stack([xc - w / 2, yc - h / 2, xc + w / 2, yc + h / 2], axis=1).astype(np.float32)
        valid = (boxes[:, 2] >= boxes[:, 0]) & (boxes[:, 3] >= boxes[:, 1])
        keep, boxes = keep[valid], boxes[valid]
        kept = hard_nms(boxes, best[keep], self.nms_threshold, self.max_results)
        return [RelDetection(RelativeBox(float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])),
                             (), float(best[keep[k]]), int(cls[keep[k]])) for k in kept.tolist() for b in [boxes[k]]]

    def _in_model(self, outputs: list[np.ndarray]) -> list[RelDetection]:
        loc = outputs[self.order[0]].reshape(-1, 4)
        classes = outputs[self.order[1]].reshape(-1)
        scores = outputs[self.order[2]].reshape(-1).astype(np.float32)
        count = int(outputs[self.order[3]].reshape(-1)[0])
        count = max(0, min(count, len(scores), len(classes), len(loc)))
        if self.calibration is not None:
            scores = scores.copy()
            scores[:count] = self.calibration(scores[:count], classes[:count])
        allowed = self._class_mask(max(len(self.labels), int(classes[:count].max(initial=0)) + 1))
        left, top, right, bottom = self.corners
        out = []
        for i in range(count):
            c = int(classes[i])
            if scores[i] < np.float32(self.threshold) or not (0 <= c < allowed.size and allowed[c]):
                continue
            x0, y0, x1, y1 = (float(loc[i, k]) for k in (left, top, right, bottom))
            if x1 < x0 or y1 < y0:
                continue
            out.append(RelDetection(RelativeBox(x0, y0, x1 - x0, y1 - y0), (), float(scores[i]), c))
            if 0 < self.max_results <= len(out):
                break
        return out

    def _to_pixels(self, rel: list[RelDetection], image_size: tuple[int, int]) -> list[Detection]:
        width, height = image_size
        merged: dict[tuple[int, int, int, int], Detection] = {}
        for d in rel:
            b = d.box
            box = (_bounded(b.xmin * width, width), _bounded(b.ymin * height, height),
                   _bounded(b.width * width, width), _bounded(b.height * height, height))
            if self.labels and 0 <= d.label_id < len(self.labels):
                label = self.labels[d.label_id]
                cat = Category(index=None, score=d.score, display_name=label.display_name, category_name=label.name)
            else:
                cat = Category(index=d.label_id, score=d.score)
            if box in merged:  # DetectionsDeduplicateCalculator: one detection per box, categories merged
                merged[box].categories.append(cat)
            else:
                merged[box] = Detection(bounding_box=BoundingBox(*box), categories=[cat], keypoints=None)
        return list(merged.values())


def _bounded(value: float, upper: int) -> int:
    """MediaPipe's ``BoundedValue<int>``: the float truncated toward zero by the conversion, then
    clamped to [0, upper]."""
    v = np.float32(value)
    if not np.isfinite(v):
        return 0 if v < 0 or np.isnan(v) else upper
    return max(min(int(v), upper), 0)
