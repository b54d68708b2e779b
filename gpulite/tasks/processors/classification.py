"""Scores -> ``ClassificationResult``, as MediaPipe's ``ClassificationPostprocessingGraph``.

Per output tensor (a head, named by its metadata): scores dequantized, calibrated when the
metadata has ``ScoreCalibrationOptions`` and a ``TENSOR_AXIS_SCORE_CALIBRATION`` file, then
every class whose score reaches the threshold (the option's, else the metadata's
``ScoreThresholdingOptions``, else none) and that the allow/deny list lets through, sorted by
score, the first ``max_results``. Labels come from the first ``TENSOR_AXIS_LABELS`` file,
display names from the first one of ``display_names_locale`` ("en" by default).

Usage::

    post = ClassificationPostprocessor(image_model, ClassifierOptions(max_results=3))
    result = post(outputs)              # outputs: ImageModel.run's float32 arrays
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpulite.model import metadata as tfmeta
from gpulite.tasks.components.containers.category import Category
from gpulite.tasks.components.containers.classification_result import ClassificationResult, Classifications
from gpulite.tasks.components.processors.classifier_options import ClassifierOptions
from gpulite.tasks.image_model import ImageModel, TaskModelError

DEFAULT_LOCALE = "en"
NO_THRESHOLD = float(np.finfo(np.float32).min)  # MediaPipe's kDefaultScoreThreshold


@dataclass(frozen=True)
class Label:
    name: str
    display_name: str | None = None


def label_map(md: tfmeta.ModelMetadata, tensor: tfmeta.TensorMetadata | None, file_type: str,
              locale: str) -> list[Label]:
    """MediaPipe's ``GetLabelItemsIfAny`` + ``BuildLabelMapFromFiles``: [] without a label file."""
    if tensor is None:
        return []
    files = tensor.files_of(file_type)
    if not files:
        return []
    names = tfmeta.split_labels(md.file(files[0].name), files[0].name)
    shown = [f for f in tensor.files_of(file_type) if not locale or f.locale == locale]
    if not shown:
        return [Label(n) for n in names]
    displays = tfmeta.split_labels(md.file(shown[0].name), shown[0].name)
    if len(displays) != len(names):
        raise TaskModelError(f"Mismatch between number of labels ({len(names)}) and display names "
                             f"({len(displays)}).")
    return [Label(n, d) for n, d in zip(names, displays, strict=True)]


def check_lists(allow: list[str] | None, deny: list[str] | None, max_results: int | None, end: str = ".") -> None:
    """MediaPipe's option checks: ``max_results`` 0 and both lists at once are ValueErrors."""
    if max_results == 0:
        raise TaskModelError("Invalid `max_results` option: value must be != 0" + end)
    if allow and deny:
        raise TaskModelError("`category_allowlist` and `category_denylist` are mutually exclusive options.")


def listed_indices(labels: list[Label], names: list[str] | None) -> set[int]:
    """Indices of the labels named (the first of each name; unknown names ignored)."""
    if not names:
        return set()
    if not labels:
        raise TaskModelError("Using `category_allowlist` or `category_denylist` requires labels to be present in "
                             "the TFLite Model Metadata but none was found.")
    first: dict[str, int] = {}
    for i, label in enumerate(labels):
        first.setdefault(label.name, i)
    return {first[n] for n in names if n in first}


def metadata_threshold(tensor: tfmeta.TensorMetadata | None) -> float:
    unit = None if tensor is None else tensor.unit(tfmeta.ScoreThresholdingOptions)
    return NO_THRESHOLD if unit is None else unit.global_score_threshold


class ScoreCalibration:
    """MediaPipe's ``ScoreCalibrationCalculator``: per class, ``scale / (1 + exp(-(slope * g(x) + offset)))``
    (``default_score`` for an empty line or a score below the line's ``min_score``)."""

    def __init__(self, transformation: str, default_score: float, table: bytes, name: str) -> None:
        if not table:
            raise TaskModelError("Expected non-empty score calibration file.")
        self.transformation, self.default = transformation, float(default_score)
        self.sigmoids: list[tuple[float, float, float, float | None] | None] = []
        for line in table.decode("utf-8", "replace").split("\n"):
            if not line:
                self.sigmoids.append(None)
                continue
            parts = line.split(",")
            try:
                values = [float(p) for p in parts]
            except ValueError:
                raise TaskModelError(f"score calibration file {name}: could not parse {line!r} as floats") from None
            if len(values) not in (3, 4):
                raise TaskModelError(f"score calibration file {name}: expected 3 or 4 values per line, got "
                                     f"{len(values)} in {line!r}")
            if values[0] < 0:
                raise TaskModelError(f"score calibration file {name}: the scale must be non-negative, got {values[0]}")
            self.sigmoids.append((values[0], values[1], values[2], values[3] if len(values) == 4 else None))

    def _g(self, x: float) -> float:
        if self.transformation == "LOG":
            return math.log(x) if x > 0 else -math.inf
        if self.transformation == "INVERSE_LOGISTIC":
            return (math.log(x) if x > 0 else -math.inf) - (math.log(1 - x) if x < 1 else -math.inf)
        return x

    def __call__(self, scores: np.ndarray, indices: np.ndarray | None = None) -> np.ndarray:
        scores = scores.reshape(-1)
        if indices is None and scores.size != len(self.sigmoids):
            raise TaskModelError(f"Mismatch between number of sigmoids ({len(self.sigmoids)}) and number of "
                                 f"elements in the input scores tensor ({scores.size}).")
        out = np.empty(scores.size, np.float32)
        for i, x in enumerate(scores.tolist()):
            k = i if indices is None else int(indices.reshape(-1)[i])
            if not 0 <= k < len(self.sigmoids):
                raise TaskModelError(f"score calibration: class index {k} is outside the {len(self.sigmoids)} "
                                     "lines of the calibration file")
            s = self.sigmoids[k]
            if s is None or (s[3] is not None and x < s[3]):
                out[i] = self.default
                continue
            scale, slope, offset, _ = s
            z = np.float32(self._g(x) * slope + offset)
            v = scale / (1.0 + math.exp(-z)) if z >= 0 else scale * math.exp(z) / (1.0 + math.exp(z))
            out[i] = min(max(v, 0.0), scale)
        return out


def calibration_of(md: tfmeta.ModelMetadata | None, tensor: tfmeta.TensorMetadata | None) -> ScoreCalibration | None:
    unit = None if tensor is None else tensor.unit(tfmeta.ScoreCalibrationOptions)
    if unit is None:
        return None
    files = tensor.files_of("TENSOR_AXIS_SCORE_CALIBRATION")
    if not files:
        from gpulite.tasks.bundle import AssetNotFoundError

        raise AssetNotFoundError("Found ScoreCalibrationOptions but missing required associated parameters file "
                                 "with type TENSOR_AXIS_SCORE_CALIBRATION.")
    return ScoreCalibration(unit.score_transformation, unit.default_score, md.file(files[0].name), files[0].name)


@dataclass
class _Head:
    name: str | None
    labels: list[Label]
    threshold: float
    allow: set[int]
    deny: set[int]
    calibration: ScoreCalibration | None


class ClassificationPostprocessor:
    """The classification heads of an :class:`ImageModel` under ``ClassifierOptions``."""

    def __init__(self, model: ImageModel, options: ClassifierOptions) -> None:
        o = options
        check_lists(o.category_allowlist, o.category_denylist, o.max_results)
        sg = model.model.subgraphs[0]
        if len(model.model.subgraphs) != 1:
            raise TaskModelError("Classification tflite models are assumed to have a single subgraph.")
        quantized = 0
        for i, t in enumerate(sg.outputs):
            dtype = sg.tensors[t].dtype
            if dtype not in (np.float32, np.uint8, np.bool_):
                raise TaskModelError(f"Expected output tensor at index {i} to have type UINT8 or FLOAT32 or BOOL, "
                                     f"found {dtype.name.upper()} instead.")
            quantized += dtype != np.float32
        if quantized not in (0, len(sg.outputs)):
            raise TaskModelError(f"Expected either all or none of the output tensors to be quantized, but found "
                                 f"{quantized} quantized outputs for {len(sg.outputs)} total outputs.")
        metas = model.output_metadata
        if metas is not None and len(metas) != len(sg.outputs):
            raise TaskModelError(f"Mismatch between number of output tensors ({len(sg.outputs)}) and output tensors "
                                 f"metadata ({len(metas)}).")
        md = model.metadata
        locale = DEFAULT_LOCALE if o.display_names_locale is None else o.display_names_locale
        self.max_results = -1 if o.max_results is None or o.max_results < 0 else o.max_results
        self.heads = []
        for i, t in enumerate(sg.outputs):
            tm = metas[i] if metas is not None else None
            labels = label_map(md, tm, "TENSOR_AXIS_LABELS", locale) if md is not None else []
            size = math.prod(sg.tensors[t].shape)
            if labels and len(labels) != size:
                raise TaskModelError(f"output {i} has {size} scores but its label file has {len(labels)} labels")
            threshold = metadata_threshold(tm) if o.score_threshold is None else float(o.score_threshold)
            listed = listed_indices(labels, o.category_allowlist or o.category_denylist)
            self.heads.append(_Head(
                tm.name if tm is not None else None, labels, threshold,
                listed if o.category_allowlist else set(), set() if o.category_allowlist else listed,
                calibration_of(md, tm)))
        self._allowlist = bool(o.category_allowlist)

    def __call__(self, outputs: list[np.ndarray], timestamp_ms: int | None = None) -> ClassificationResult:
        heads = []
        for i, (head, scores) in enumerate(zip(self.heads, outputs, strict=True)):
            s = scores.reshape(-1).astype(np.float32)
            if head.calibration is not None:
                s = head.calibration(s)
            keep = s >= np.float32(head.threshold)
            if self._allowlist:
                mask = np.zeros(s.size, bool)
                mask[list(head.allow)] = True
                keep &= mask
            elif head.deny:
                keep[list(head.deny)] = False
            idx = np.flatnonzero(keep)
            idx = idx[np.argsort(-s[idx], kind="stable")]
            if self.max_results > 0:
                idx = idx[:self.max_results]
            cats = [Category(index=int(k), score=float(s[k]),
                             display_name=head.labels[k].display_name if head.labels else None,
                             category_name=head.labels[k].name if head.labels else None) for k in idx.tolist()]
            heads.append(Classifications(categories=cats, head_index=i, head_name=head.name))
        return ClassificationResult(classifications=heads, timestamp_ms=timestamp_ms)
