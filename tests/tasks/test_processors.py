"""The Tasks' post-processing pieces that the test photos do not reach: display names by locale,
score calibration, allow/deny lists without labels, in-model NMS outputs, the tie order of the
sort, NMS at its threshold, embedding quantization and cosine similarity's errors. The rules are
MediaPipe's (``label_map_util.cc``, ``score_calibration_calculator.cc``,
``detection_postprocessing_graph.cc``, ``tensors_to_embeddings_calculator.cc``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpulite.model import metadata as tfmeta
from gpulite.pipeline.calculators.types import ImageTransform
from gpulite.tasks.components.containers.embedding_result import Embedding
from gpulite.tasks.components.utils.cosine_similarity import cosine_similarity
from gpulite.tasks.image_model import TaskModelError
from gpulite.tasks.processors.classification import Label, ScoreCalibration, label_map, listed_indices
from gpulite.tasks.processors.detection import DetectionPostprocessor, hard_nms
from gpulite.tasks.processors.embedding import EmbeddingPostprocessor
from gpulite.tasks.processors.stl_sort import sort_descending


def _labelled(files: dict[str, tuple[bytes, str]]) -> tuple[tfmeta.ModelMetadata, tfmeta.TensorMetadata]:
    tensor = tfmeta.TensorMetadata(name="probability", associated_files=tuple(
        tfmeta.AssociatedFile(name, type="TENSOR_AXIS_LABELS", locale=locale) for name, (_, locale) in files.items()))
    return tfmeta.ModelMetadata(files={n: data for n, (data, _) in files.items()}), tensor


def test_display_names_come_from_the_file_of_the_locale():
    md, t = _labelled({"labels.txt": (b"cat\ndog\n", ""), "fr.txt": (b"chat\nchien\n", "fr"),
                       "en.txt": (b"Cat\nDog\n", "en")})
    assert label_map(md, t, "TENSOR_AXIS_LABELS", "fr") == [Label("cat", "chat"), Label("dog", "chien")]
    assert label_map(md, t, "TENSOR_AXIS_LABELS", "en") == [Label("cat", "Cat"), Label("dog", "Dog")]
    assert label_map(md, t, "TENSOR_AXIS_LABELS", "de") == [Label("cat"), Label("dog")]
    md, t = _labelled({"labels.txt": (b"cat\ndog\n", ""), "fr.txt": (b"chat\n", "fr")})
    with pytest.raises(TaskModelError, match=r"Mismatch between number of labels \(2\) and display names \(1\)"):
        label_map(md, t, "TENSOR_AXIS_LABELS", "fr")


def test_allow_and_deny_lists_name_labels():
    labels = [Label("a"), Label("b"), Label("a"), Label("c")]
    assert listed_indices(labels, ["a", "c", "zzz", "c"]) == {0, 3}  # first of a name; unknown ones ignored
    assert listed_indices(labels, None) == set()
    with pytest.raises(TaskModelError, match="requires labels to be present in the TFLite Model Metadata"):
        listed_indices([], ["a"])


def test_score_calibration_is_mediapipes_sigmoid():
    cal = ScoreCalibration("IDENTITY", 0.25, b"\n1.0,2.0,-0.5\n0.8,1.0,0.0,0.6", "cal.csv")
    x = np.array([0.9, 0.7, 0.5, 0.7], np.float32)
    got = cal(x[:3])
    assert got[0] == np.float32(0.25)  # empty line: the default score
    assert got[1] == pytest.approx(1.0 / (1.0 + math.exp(-(2.0 * 0.7 - 0.5))), rel=1e-6)
    assert got[2] == np.float32(0.25)  # below the line's min_score
    log = ScoreCalibration("LOG", 0.0, b"1,1,0", "cal.csv")
    assert log(np.array([0.5], np.float32))[0] == pytest.approx(1.0 / (1.0 + 1.0 / 0.5), rel=1e-6)
    with pytest.raises(TaskModelError, match="Mismatch between number of sigmoids"):
        cal(x)
    with pytest.raises(TaskModelError, match="expected 3 or 4 values"):
        ScoreCalibration("IDENTITY", 0.0, b"1,2", "cal.csv")
    with pytest.raises(TaskModelError, match="scale must be non-negative"):
        ScoreCalibration("IDENTITY", 0.0, b"-1,2,3", "cal.csv")


def _in_model_detector(labels: list[str], **kw) -> DetectionPostprocessor:
    """A DetectionPostprocessor for a four-output (in-model NMS) model, without the model."""
    d = object.__new__(DetectionPostprocessor)
    d.in_model_nms, d.order, d.corners = True, [0, 1, 2, 3], (1, 0, 3, 2)  # boxes stored [top, left, bottom, right]
    d.labels, d.calibration = [Label(n) for n in labels], None
    d.allow, d.deny = kw.get("allow"), kw.get("deny", set())
    d.threshold, d.max_results = kw.get("threshold", 0.0), kw.get("max_results", -1)
    return d


def test_in_model_nms_outputs():
    boxes = np.array([[[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 1.0, 1.0], [0.5, 0.5, 0.4, 0.9], [0.2, 0.2, 0.3, 0.3]]],
                     np.float32)
    classes = np.array([[1, 0, 1, 2]], np.float32)
    scores = np.array([[0.9, 0.8, 0.7, 0.1]], np.float32)
    count = np.array([3], np.float32)  # the fourth row is past num_detections
    transform = ImageTransform(np.eye(3), (0, 0, 0, 0), (100, 200), (320, 320))
    d = _in_model_detector(["person", "cat", "dog"])
    dets = d([boxes, classes, scores, count], transform).detections
    assert [(x.categories[0].category_name, x.categories[0].score) for x in dets] == [
        ("cat", pytest.approx(0.9)), ("person", pytest.approx(0.8))]  # row 2: bottom above top, dropped
    assert (dets[0].bounding_box.origin_x, dets[0].bounding_box.origin_y,
            dets[0].bounding_box.width, dets[0].bounding_box.height) == (20, 20, 40, 80)
    assert [x.categories[0].category_name for x in _in_model_detector(
        ["person", "cat", "dog"], allow={0})([boxes, classes, scores, count], transform).detections] == ["person"]
    assert len(_in_model_detector(["person", "cat", "dog"], threshold=0.85)(
        [boxes, classes, scores, count], transform).detections) == 1
    assert len(_in_model_detector(["person", "cat", "dog"], max_results=1)(
        [boxes, classes, scores, count], transform).detections) == 1


def test_nms_drops_overlaps_above_the_threshold_only():
    boxes = np.array([[0, 0, 1, 1], [0, 0, 1, 0.5], [0, 0, 1, 0.3], [2, 2, 3, 3]], np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.6], np.float32)
    # box 1 overlaps box 0 by exactly 0.5: kept (MediaPipe drops above the threshold); box 2 then
    # overlaps box 1 by 0.6, and is dropped although box 0 alone would not drop it (0.3)
    assert hard_nms(boxes, scores, 0.5, -1).tolist() == [0, 1, 3]
    assert hard_nms(boxes, scores, 0.5, 2).tolist() == [0, 1]
    assert hard_nms(boxes, scores, 0.2, -1).tolist() == [0, 3]


def test_sort_is_descending_and_a_limit_keeps_its_prefix():
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 5, 23, 24, 129, 600, 5000):
        for levels in (2, 256):
            s = (rng.integers(0, levels, n) / 256).astype(np.float32)
            full = sort_descending(s)
            assert sorted(full.tolist()) == list(range(n)) and (np.diff(s[full]) <= 0).all()
            assert (sort_descending(s, 7)[:7] == full[:7]).all()


def test_quantized_embeddings_round_halves_away_from_zero():
    post = object.__new__(EmbeddingPostprocessor)
    post.head_names, post.l2_normalize, post.quantize = ["feature"], False, True
    v = np.array([0.5 / 128, -0.5 / 128, 1.5 / 128, 2.0, -2.0], np.float32)
    e = post([v]).embeddings[0]
    assert e.embedding.dtype == np.uint8 and e.embedding.view(np.int8).tolist() == [1, -1, 2, 127, -128]
    post.quantize, post.l2_normalize = False, True
    assert np.linalg.norm(post([np.array([3.0, 4.0], np.float32)]).embeddings[0].embedding) == pytest.approx(1.0)


def test_cosine_similarity_errors_are_mediapipes():
    f = Embedding(np.array([1.0, 0.0]))
    q = Embedding(np.array([1, 0], np.uint8))
    assert cosine_similarity(f, Embedding(np.array([1.0, 1.0]))) == pytest.approx(math.sqrt(0.5))
    assert cosine_similarity(q, Embedding(np.array([255, 0], np.uint8))) == pytest.approx(-1.0)  # bytes are int8
    for a, b, msg in ((f, Embedding(np.array([1.0])), "different sizes"), (f, q, "quantized and float"),
                      (f, Embedding(np.array([0.0, 0.0])), "0 norm"), (Embedding(np.array([])),
                                                                        Embedding(np.array([])), "empty")):
        with pytest.raises(ValueError, match=msg):
            cosine_similarity(a, b)
