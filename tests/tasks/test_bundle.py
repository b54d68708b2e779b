"""Model assets for gpulite.tasks: .task bundles from a path, a buffer or a zoo name, and the
errors MediaPipe 1.2.2 raises for a missing, corrupt or wrong one (types and messages seen from
mediapipe 1.2.2's FaceLandmarker and ImageClassifier on the same inputs)."""

from __future__ import annotations

import hashlib
import re
import zipfile

import pytest

from gpulite import GpuliteError, ModelError, zoo
from gpulite.tasks import python
from gpulite.tasks.bundle import (
    AssetNotFoundError,
    AssetOptionsError,
    Bundle,
    BundleError,
    assemble,
    check_model,
    open_bundle,
    read_asset,
)
from gpulite.tasks.python import vision
from tests.assets import model_path

FACE = ["face_detector.tflite", "face_landmarks_detector.tflite", "geometry_pipeline_metadata_landmarks.binarypb",
        "face_blendshapes.tflite"]


@pytest.fixture(scope="module")
def face_task() -> bytes:
    return model_path("face_landmarker").read_bytes()


def test_zoo_bundles_are_pinned_and_open(face_task):
    assert hashlib.sha256(face_task).hexdigest() == zoo.digest("face_landmarker")
    b = open_bundle("face_landmarker")
    assert b.names == FACE
    assert b.file("face_detector.tflite") == model_path("blaze_face_short_range").read_bytes()
    assert open_bundle("hand_landmarker").names == ["hand_detector.tflite", "hand_landmarks_detector.tflite"]
    assert open_bundle("pose_landmarker_full").names == ["pose_detector.tflite", "pose_landmarks_detector.tflite"]
    gesture = open_bundle("gesture_recognizer")
    assert gesture.names == ["hand_landmarker.task", "hand_gesture_recognizer.task"]
    assert gesture.bundle("hand_landmarker.task").names == ["hand_detector.tflite", "hand_landmarks_detector.tflite"]


def test_path_buffer_and_precedence(face_task, tmp_path):
    p = tmp_path / "f.task"
    p.write_bytes(face_task)
    assert read_asset(p) == face_task == read_asset(str(p))
    assert read_asset(model_asset_buffer=face_task) == face_task
    # MediaPipe uses the buffer when both are given, even with a path that does not exist
    assert read_asset("/nonexistent.task", face_task) == face_task


def test_missing_assets_raise_what_mediapipe_raises(tmp_path):
    for args in ((None, None), ("", None), (None, b"")):
        with pytest.raises(AssetOptionsError, match="ExternalFile must specify at least one of") as e:
            read_asset(*args)
        assert isinstance(e.value, ValueError) and isinstance(e.value, GpuliteError)
    for path in ("/nonexistent.task", tmp_path / "x.tflite", "no_such_zoo_model", tmp_path):
        with pytest.raises(AssetNotFoundError, match="Unable to open file at") as e:
            read_asset(path)
        assert isinstance(e.value, FileNotFoundError)
    # MediaPipe's examples name the file they downloaded: the message says how to get it from the zoo
    with pytest.raises(AssetNotFoundError, match=r"^Unable to open file at face_landmarker\.task: no such file "
                                                 r"\(the zoo's 'face_landmarker', named without folder or suffix"):
        read_asset("face_landmarker.task")


def test_corrupt_bundles_raise_runtime_error(face_task):
    flipped = bytearray(face_task)
    flipped[5000] ^= 0xFF  # inside face_detector.tflite: its CRC no longer matches
    cases = {"empty": b"", "random": bytes(range(256)) * 100, "truncated": face_task[:1_000_000],
             "tail cut": face_task[:-100], "crc": bytes(flipped)}
    for what, data in cases.items():
        with pytest.raises(BundleError, match="Unable to open zip archive") as e:
            Bundle.open(data)
        assert isinstance(e.value, RuntimeError), what


def test_wrong_bundle_names_what_it_has():
    hand = open_bundle("hand_landmarker")
    msg = ("No file with name: face_detector.tflite. All files in the model asset bundle are: "
           "hand_detector.tflite, hand_landmarks_detector.tflite.")
    with pytest.raises(AssetNotFoundError, match=f"^{re.escape(msg)}$"):
        hand.file("face_detector.tflite")
    # a .tflite with packed files opens as a bundle too, as in MediaPipe
    classifier = open_bundle("efficientnet_lite0_int8")
    assert classifier.names == ["labels_without_background.txt"]


def test_a_bundle_is_not_a_model(face_task):
    with pytest.raises(ModelError, match="The model is not a valid Flatbuffer buffer"):
        check_model(face_task)
    with pytest.raises(ModelError, match="The model is not a valid Flatbuffer buffer"):
        check_model(b"")
    check_model(model_path("efficientnet_lite0_int8").read_bytes())


def test_assemble_round_trip():
    data = assemble({"a.tflite": b"x" * 10, "b.binarypb": b""})
    assert zipfile.ZipFile(__import__("io").BytesIO(data)).infolist()[0].compress_type == zipfile.ZIP_STORED
    assert Bundle.open(data).files == {"a.tflite": b"x" * 10, "b.binarypb": b""}


def test_a_truncated_model_is_refused_when_the_task_is_made(face_task):
    """A .tflite cut short (or a bundle member that is) has the identifier but not the tables:
    it is refused at create_from_options, as MediaPipe refuses it, not at the first detect()."""
    detector = model_path("blaze_face_short_range").read_bytes()
    with pytest.raises(ModelError, match=r"The model is not a valid Flatbuffer buffer.*truncated"):
        check_model(detector[:3000], "face detector model")
    with pytest.raises(ModelError, match="The model is not a valid Flatbuffer buffer"):
        vision.FaceDetector.create_from_options(vision.FaceDetectorOptions(
            base_options=python.BaseOptions(model_asset_buffer=detector[:3000])))
    for member in ("face_landmarks_detector.tflite", "face_blendshapes.tflite"):
        files = dict(Bundle.open(face_task).files)
        files[member] = files[member][:5000]
        with pytest.raises(ModelError, match=f"The model is not a valid Flatbuffer buffer: the {member}"):
            vision.FaceLandmarker.create_from_options(vision.FaceLandmarkerOptions(
                base_options=python.BaseOptions(model_asset_buffer=assemble(files)), output_face_blendshapes=True))
    hand = dict(open_bundle("hand_landmarker").files)
    hand["hand_detector.tflite"] = b"garbage!" * 10
    with pytest.raises(ModelError, match=r"The model is not a valid Flatbuffer buffer: the hand_detector\.tflite"):
        vision.HandLandmarker.create_from_options(vision.HandLandmarkerOptions(
            base_options=python.BaseOptions(model_asset_buffer=assemble(hand))))
    pose = dict(open_bundle("pose_landmarker_full").files)
    pose["pose_landmarks_detector.tflite"] = pose["pose_landmarks_detector.tflite"][:-1000]
    with pytest.raises(ModelError, match="The model is not a valid Flatbuffer buffer: the pose_landmarks_detector"):
        vision.PoseLandmarker.create_from_options(vision.PoseLandmarkerOptions(
            base_options=python.BaseOptions(model_asset_buffer=assemble(pose))))
