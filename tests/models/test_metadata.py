"""TFLite Metadata (gpulite.model.metadata) on the zoo's models that carry it, and on broken copies.

The expected values are those of the models' own metadata as MediaPipe 1.2.2 uses them: the
classifier's labels and normalization are what its ImageClassifier reports
(tests/data/tasks/*.json, made by tools/make_tasks_oracle.py).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from gpulite import ModelError
from gpulite.model import metadata as tfmeta
from gpulite.model.reader import load
from tests.assets import model_path


@pytest.fixture(scope="module")
def classifier():
    return model_path("efficientnet_lite0_int8").read_bytes()


def test_classifier_metadata(classifier):
    md = tfmeta.load_metadata(classifier)
    assert md.name == "EfficientNet-lite image classifier (quantized)"
    assert (md.version, md.author, md.min_parser_version) == ("1", "MediaPipe", "1.0.0")
    assert md.license.startswith("Apache License")
    (sg,) = md.subgraphs
    (image,) = sg.inputs
    assert image.name == "image"
    assert image.content.properties == tfmeta.ImageProperties(color_space="RGB")
    assert md.input_normalization() == ((127.0,), (128.0,))
    assert (image.stats_min, image.stats_max) == ((0.0,), (255.0,))
    (probs,) = sg.outputs
    assert probs.files_of("TENSOR_AXIS_LABELS") == [tfmeta.AssociatedFile(
        "labels_without_background.txt", "Labels for objects that the model can recognize.", "TENSOR_AXIS_LABELS")]
    labels = md.labels(probs)
    assert len(labels) == 1000 and labels[:2] == ["tench", "goldfish"] and labels[967] == "espresso"
    assert list(md.files) == ["labels_without_background.txt"]


def test_detector_metadata():
    md = tfmeta.load_metadata(model_path("efficientdet_lite0_int8"))
    (sg,) = md.subgraphs
    score, location = sg.outputs
    assert (score.name, location.name) == ("score", "location")
    assert location.content.properties == tfmeta.BoundingBoxProperties((1, 0, 3, 2), "BOUNDARIES", "RATIO")
    labels = md.labels(score)
    assert len(labels) == 90 and labels[:2] == ["person", "bicycle"]
    assert md.input_normalization() == ((127.5,), (127.5,))
    assert set(sg.custom_metadata) == {"DETECTOR_METADATA"}
    assert sg.custom_metadata["DETECTOR_METADATA"][4:8] == b"V001"  # the object detector schema's identifier


def test_segmenter_metadata_and_models_without():
    md = tfmeta.load_metadata(model_path("selfie_segmenter"))
    (mask,) = md.subgraphs[0].outputs
    assert mask.content == tfmeta.Content(tfmeta.ImageProperties("GRAYSCALE"), (1, 2))
    assert md.labels(mask) == ["selfie"]
    assert tfmeta.load_metadata(model_path("hand_recrop")) is None


def test_inspect_prints_the_metadata(capsys):
    from gpulite.cli import main

    assert main(["inspect", "efficientnet_lite0_int8"]) == 0
    out = capsys.readouterr().out
    for line in ("metadata   EfficientNet-lite image classifier (quantized), version 1, by MediaPipe",
                 "normalization   mean [127.0], std [128.0]",
                 "file            labels_without_background.txt (TENSOR_AXIS_LABELS): 1000 labels, "
                 "'tench', 'goldfish', 'great white shark', 'tiger shark', ...",
                 "packed files    labels_without_background.txt (10,473 bytes)"):
        assert line in out, out


def _metadata_buffer(model: bytes) -> tuple[int, int]:
    """(offset, size) of the TFLITE_METADATA buffer in the file."""
    m = load(model)
    raw = m.metadata[tfmeta.METADATA_NAME]
    return raw.ctypes.data - m.data.ctypes.data, raw.size


def test_malformed_metadata_raises_model_error(classifier):
    off, size = _metadata_buffer(classifier)
    raw = classifier[off:off + size]
    assert tfmeta.parse_metadata(raw).name.startswith("EfficientNet")
    with pytest.raises(ModelError, match=r"identifier b'XXXX', expected b'M001'"):
        tfmeta.parse_metadata(raw[:4] + b"XXXX" + raw[8:])
    for n in (0, 7, 8, 64, size // 2, size - 1):
        try:
            tfmeta.parse_metadata(raw[:n])
        except ModelError as e:
            assert "TFLITE_METADATA" in str(e)
    rng = random.Random(0)
    for _ in range(300):  # flipped bytes: a ModelError or a parse, never another exception
        b = bytearray(raw)
        for _ in range(3):
            b[rng.randrange(size)] = rng.randrange(256)
        try:
            tfmeta.parse_metadata(bytes(b))
        except ModelError:
            pass


def test_unknown_union_type_is_named(classifier):
    off, size = _metadata_buffer(classifier)
    raw = bytearray(classifier[off:off + size])
    # The input's ProcessUnit has options type 1 (NormalizationOptions) at a byte of its own;
    # find it by making every candidate byte 9 until the parser names the union.
    hits = []
    for i in range(size):
        if raw[i] != 1:
            continue
        b = bytearray(raw)
        b[i] = 9
        try:
            tfmeta.parse_metadata(bytes(b))
        except ModelError as e:
            hits.append(str(e))
    assert any("ProcessUnit: options type 9 is not in the schema" in h for h in hits), hits[:5]


def test_damaged_packed_files(classifier):
    at = classifier.rindex(b"tench\ngoldfish")
    broken = bytearray(classifier)
    broken[at] ^= 0x20  # "Tench": the label file's CRC no longer matches
    with pytest.raises(ModelError, match=r"packed after the model .* damaged"):
        tfmeta.load_metadata(bytes(broken))
    md = tfmeta.load_metadata(classifier[:at + 100])  # cut inside the zip: its files are gone
    assert md.files == {}
    with pytest.raises(ModelError, match=r"names associated file 'labels_without_background\.txt', but the model "
                                         r"packs no files"):
        md.labels(md.subgraphs[0].outputs[0])


def test_label_files_split_as_mediapipe_does():
    assert tfmeta.split_labels(b"a\nb\n") == ["a", "b"]
    assert tfmeta.split_labels(b"a\n\nb") == ["a", "", "b"]
    assert tfmeta.split_labels(b"a\r\nb\rc") == ["a", "b", "c"]
    assert tfmeta.split_labels(b"a\n\n") == ["a"]
    assert tfmeta.split_labels(b"a\n\n\n") == ["a", ""]
    assert tfmeta.split_labels(b"\n") == []
    with pytest.raises(ModelError, match="is empty"):
        tfmeta.split_labels(b"", "labels.txt")
    with pytest.raises(ModelError, match="not UTF-8"):
        tfmeta.split_labels(b"\xff\xfe", "labels.txt")


def test_metadata_arrays_are_plain_floats(classifier):
    md = tfmeta.load_metadata(classifier)
    assert all(type(v) is float for v in md.input_normalization()[0])
    assert not isinstance(md.subgraphs[0].inputs[0].stats_max, np.ndarray)


def test_add_metadata_keeps_the_model_and_adds_the_entry():
    from gpulite import Interpreter
    from gpulite.tasks.bundle import open_bundle

    full = open_bundle("pose_landmarker_full").file("pose_landmarks_detector.tflite")
    meta = bytes(load(full).metadata[tfmeta.METADATA_NAME])
    lite = model_path("pose_landmark_lite").read_bytes()
    out = tfmeta.add_metadata(lite, meta)
    assert out == tfmeta.add_metadata(lite, meta)  # deterministic: an assembled bundle can be pinned
    assert list(load(out).metadata) == [*load(lite).metadata, tfmeta.METADATA_NAME]
    assert tfmeta.load_metadata(out).input_normalization() == ((0.0,), (255.0,))
    x = np.random.default_rng(0).random((1, 256, 256, 3), np.float32)
    outs = []
    for data in (lite, out):
        it = Interpreter(model_content=data)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        outs.append([it.get_tensor(d["index"]) for d in it.get_output_details()])
    assert all(np.array_equal(a, b) for a, b in zip(*outs, strict=True))
    with pytest.raises(ModelError, match="already has a metadata entry 'TFLITE_METADATA'"):
        tfmeta.add_metadata(out, meta)


def test_assembled_pose_bundles_are_the_solution_models_with_the_full_bundles_metadata():
    from gpulite.tasks.bundle import open_bundle

    full = open_bundle("pose_landmarker_full")
    for size in ("lite", "heavy"):
        b = open_bundle(f"pose_landmarker_{size}")
        assert b.names == full.names == ["pose_detector.tflite", "pose_landmarks_detector.tflite"]
        assert b.file("pose_detector.tflite") == full.file("pose_detector.tflite")
        landmarks = load(b.file("pose_landmarks_detector.tflite"))
        legacy = load(model_path(f"pose_landmark_{size}").read_bytes())
        assert len(landmarks.subgraphs[0].operators) == len(legacy.subgraphs[0].operators)
        assert tfmeta.load_metadata(landmarks).name == "Pose Landmark"
