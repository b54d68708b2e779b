"""Switching from MediaPipe: ``gpulite.solutions`` against mediapipe 0.10.14's ``mp.solutions`` API.

- Names: every enum and connection set equals mediapipe's own; the classes take MediaPipe's
  arguments in MediaPipe's order (signatures compared with mediapipe's classes); wrong ones
  raise errors that name the argument and what is accepted.
- Results: ``FaceDetection(model_selection=0|1)`` and ``SelfieSegmentation(model_selection=0|1)``
  give MediaPipe's results under MediaPipe's spelling (``d.score[0]``, ``get_key_point``), with
  the criteria of test_face.py / test_hands_pose_selfie.py.
- Timestamps: Pose on frames 100 ms apart (``process(frame, timestamp_ms=...)``) matches
  MediaPipe's pose graph stamped with the same times -- which differs, beyond the tolerance,
  from MediaPipe stamped 33 ms apart, so the test sees the time reach the filters; timestamps
  that do not increase are refused.
- ``Pose(model_complexity=0|2)``: the lite / heavy models against MediaPipe's graph running the
  same files, or, where the zoo cannot provide them, a clear error at construction.
- ``drawing_utils``: the pixels drawn are exactly those mediapipe's drawing_utils draws (both
  make the same OpenCV calls).
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import gpulite.solutions as gs
from gpulite import zoo
from gpulite.errors import ModelError
from gpulite.solutions import drawing_utils, face_detection, face_mesh, hands, pose, selfie_segmentation
from gpulite.solutions.base import TimestampOrderError
from gpulite.solutions.results import LandmarkList, RelativeBoundingBox
from tests.solutions.test_hands_pose_selfie import (
    BOX_IOU,
    LANDMARK_TOL,
    MASK_IOU,
    WORLD_TOL,
    mask_iou,
    mean_distance,
    mp_points,
    mp_pose_graph,
    perturbed,
    tracked_world_tol,
    world_distance,
)
from tests.solutions.video import load_image, make_frames, read_video, write_video

pytestmark = pytest.mark.filterwarnings("ignore:SymbolDatabase.GetPrototype:UserWarning")
mp = pytest.importorskip("mediapipe", reason="mediapipe 0.10.14 is the oracle (pip install -e '.[test]')")

SCORE_TOL = 0.02       # as test_face.py


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return load_image()


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> list[np.ndarray]:
    path = write_video(Path(tmp_path_factory.mktemp("video")) / "astronaut.mp4", make_frames(60), fps=30)
    return read_video(path)


# -- names -------------------------------------------------------------------------------------
CONNECTION_SETS = {   # our module -> mediapipe's module defining the sets, and their names
    face_mesh: ("face_mesh_connections", [
        "FACEMESH_CONTOURS", "FACEMESH_FACE_OVAL", "FACEMESH_IRISES", "FACEMESH_LEFT_EYE", "FACEMESH_LEFT_EYEBROW",
        "FACEMESH_LEFT_IRIS", "FACEMESH_LIPS", "FACEMESH_NOSE", "FACEMESH_RIGHT_EYE", "FACEMESH_RIGHT_EYEBROW",
        "FACEMESH_RIGHT_IRIS", "FACEMESH_TESSELATION"]),
    hands: ("hands_connections", [
        "HAND_CONNECTIONS", "HAND_INDEX_FINGER_CONNECTIONS", "HAND_MIDDLE_FINGER_CONNECTIONS", "HAND_PALM_CONNECTIONS",
        "HAND_PINKY_FINGER_CONNECTIONS", "HAND_RING_FINGER_CONNECTIONS", "HAND_THUMB_CONNECTIONS"]),
    pose: ("pose_connections", ["POSE_CONNECTIONS"]),
}


@pytest.mark.parametrize("module", list(CONNECTION_SETS), ids=lambda m: m.__name__.rpartition(".")[2])
def test_connection_sets_are_mediapipes(module):
    source, names = CONNECTION_SETS[module]
    ref_source = getattr(mp.solutions, source)
    assert {n for n in dir(ref_source) if n.isupper()} == set(names)        # all of them
    for name in names:
        ours, ref = getattr(module, name), getattr(ref_source, name)
        assert type(ours) is type(ref) and ours == ref, name
    # what mediapipe's solution module exports (mp.solutions.hands.HAND_CONNECTIONS, ...) is here too
    ref_module = getattr(mp.solutions, module.__name__.rpartition(".")[2])
    exported = [n for n in dir(ref_module) if n.startswith(("FACEMESH_", "HAND_", "POSE_"))]
    assert exported
    for name in exported:
        assert getattr(module, name) == getattr(ref_module, name), name


@pytest.mark.parametrize(("ours", "theirs"), [
    (hands.HandLandmark, "hands.HandLandmark"), (pose.PoseLandmark, "pose.PoseLandmark"),
    (face_detection.FaceKeyPoint, "face_detection.FaceKeyPoint"),
], ids=["HandLandmark", "PoseLandmark", "FaceKeyPoint"])
def test_enums_are_mediapipes(ours, theirs):
    module, _, name = theirs.partition(".")
    ref = getattr(getattr(mp.solutions, module), name)
    assert [(m.name, m.value) for m in ours] == [(m.name, m.value) for m in ref]
    assert ours.__mro__[1] is ref.__mro__[1]  # both IntEnum: usable as indices


def test_modules_are_reachable_under_mediapipes_names():
    for name in ("face_detection", "face_mesh", "hands", "pose", "selfie_segmentation", "drawing_utils"):
        assert getattr(gs, name).__name__ == f"gpulite.solutions.{name}"
    assert gs.FaceDetection is face_detection.FaceDetection
    with pytest.raises(AttributeError, match="no attribute 'holistic'"):
        gs.holistic  # noqa: B018


@pytest.mark.parametrize(("ours", "theirs"), [
    (face_detection.FaceDetection, "face_detection.FaceDetection"), (face_mesh.FaceMesh, "face_mesh.FaceMesh"),
    (hands.Hands, "hands.Hands"), (pose.Pose, "pose.Pose"),
    (selfie_segmentation.SelfieSegmentation, "selfie_segmentation.SelfieSegmentation"),
], ids=["FaceDetection", "FaceMesh", "Hands", "Pose", "SelfieSegmentation"])
def test_constructors_take_mediapipes_arguments_in_its_order(ours, theirs):
    module, _, name = theirs.partition(".")
    ref = inspect.signature(getattr(getattr(mp.solutions, module), name).__init__).parameters
    mine = inspect.signature(ours.__init__).parameters
    ref_names = [n for n in ref if n != "self"]
    positional = [n for n, p in mine.items() if n != "self" and p.kind == p.POSITIONAL_OR_KEYWORD]
    assert positional == ref_names
    for n in ref_names:
        if (name, n) != ("FaceDetection", "min_detection_confidence"):  # None: see face_detection's docstring
            assert mine[n].default == ref[n].default, n


def test_positional_arguments_land_where_mediapipe_puts_them():
    with hands.Hands(True, 1, 0, 0.3, 0.4, backend="cpu") as h:
        assert (h.static_image_mode, h.max_hands, h.model_complexity) == (True, 1, 0)
        assert (h.min_detection_confidence, h.min_tracking_confidence) == (0.3, 0.4)
    with face_mesh.FaceMesh(True, 2, True, 0.6, 0.7, backend="cpu") as m:
        assert (m.static_image_mode, m.max_faces, m.refine_landmarks) == (True, 2, True)
        assert (m.min_detection_confidence, m.min_tracking_confidence) == (0.6, 0.7)
    with pose.Pose(True, 1, False, True, False, 0.2, 0.3, backend="cpu") as p:
        assert (p.static_image_mode, p.model_complexity, p.enable_segmentation) == (True, 1, True)
    with face_detection.FaceDetection(0.7, 1, backend="cpu") as fd:
        assert (fd.min_detection_confidence, fd.model, fd.model_selection) == (0.7, "full", 1)
    with selfie_segmentation.SelfieSegmentation(1, backend="cpu") as seg:
        assert seg.model == "landscape"


@pytest.mark.parametrize(("make", "error", "words"), [
    (lambda: hands.Hands(max_num_hand=2), TypeError, r"unexpected argument 'max_num_hand' \(did you mean "
                                                     r"'max_num_hands'\?\); accepted arguments: static_image_mode, "
                                                     r"max_num_hands, model_complexity"),
    (lambda: face_mesh.FaceMesh(model_selection=1), TypeError, "unexpected argument 'model_selection'.*accepted "
                                                               "arguments: static_image_mode, max_num_faces"),
    (lambda: pose.Pose(False, 1, True, False, True, 0.5, 0.5, "cpu"), TypeError,
     "Pose\\(\\): too many positional arguments; accepted arguments: static_image_mode, "),
    (lambda: face_detection.FaceDetection(model_selection=2), ValueError, "model_selection must be one of 0, 1, got 2"),
    (lambda: selfie_segmentation.SelfieSegmentation(model_selection=True), ValueError,
     "model_selection must be one of"),
    (lambda: pose.Pose(model_complexity=3), ValueError, "model_complexity must be one of 0, 1, 2, got 3"),
    (lambda: hands.Hands(model_complexity=2), ValueError, "model_complexity must be one of 0, 1, got 2"),
    (lambda: hands.Hands(max_num_hands=0), ValueError, "max_num_hands must be an int >= 1, got 0"),
    (lambda: face_mesh.FaceMesh(max_num_faces="2"), TypeError, "max_num_faces must be an int >= 1, got str"),
    (lambda: face_mesh.FaceMesh(max_num_faces=2, max_faces=2), TypeError, "not both"),
    (lambda: hands.Hands(static_image_mode="yes"), TypeError, "static_image_mode must be True or False, got str"),
    (lambda: pose.Pose(min_detection_confidence=1.5), ValueError, r"min_detection_confidence must be a number in "
                                                                  r"\[0, 1\], got 1.5"),
    (lambda: pose.Pose(min_tracking_confidence="high"), TypeError, "min_tracking_confidence must be a number"),
    (lambda: pose.Pose(enable_segmentation=None), TypeError, "enable_segmentation must be True or False"),
])
def test_wrong_arguments_say_what_is_accepted(make, error, words):
    with pytest.raises(error, match=words):
        make()


# -- results under MediaPipe's spelling -----------------------------------------------------------
@pytest.mark.parametrize("selection", [0, 1])
def test_face_detection_matches_mediapipe(selection, astronaut, video):
    images = [astronaut, *video[::15]]
    with mp.solutions.face_detection.FaceDetection(model_selection=selection) as ref:
        theirs = [ref.process(im).detections or [] for im in images]
    assert sum(len(t) for t in theirs) >= len(images) - 1, "MediaPipe should see the face in (almost) every image"
    with face_detection.FaceDetection(model_selection=selection, backend="cpu") as fd:
        ours = [fd.process(im).detections or [] for im in images]
    for i, (mine, ref_dets, im) in enumerate(zip(ours, theirs, images, strict=True)):
        assert len(mine) == len(ref_dets), f"image {i}"
        h, w = im.shape[:2]
        for a, b in zip(mine, ref_dets, strict=True):
            box = b.location_data.relative_bounding_box
            iou = a.location_data.relative_bounding_box.iou(RelativeBoundingBox(box.xmin, box.ymin, box.width,
                                                                                box.height))
            assert iou >= BOX_IOU, f"image {i}: IoU {iou:.4f}"
            assert len(a.score) == len(b.score) == 1 and abs(a.score[0] - b.score[0]) <= SCORE_TOL, f"image {i}"
            kp = [face_detection.get_key_point(a, k) for k in face_detection.FaceKeyPoint]
            ref_kp = [mp.solutions.face_detection.get_key_point(b, k) for k in face_detection.FaceKeyPoint]
            d = mean_distance([(p.x, p.y) for p in kp], [(p.x, p.y) for p in ref_kp], (w, h))
            assert d <= LANDMARK_TOL, f"image {i}: keypoints {d:.4f} of the width from MediaPipe's"
    assert face_detection.get_key_point(None, face_detection.FaceKeyPoint.NOSE_TIP) is None


@pytest.mark.parametrize("selection", [0, 1])
def test_selfie_segmentation_model_selection_matches_mediapipe(selection, astronaut):
    with mp.solutions.selfie_segmentation.SelfieSegmentation(model_selection=selection) as ref:
        theirs = ref.process(astronaut).segmentation_mask
    with selfie_segmentation.SelfieSegmentation(model_selection=selection, backend="cpu") as seg:
        ours = seg.process(astronaut).segmentation_mask
    assert mask_iou(ours, theirs) >= MASK_IOU


# -- timestamps ----------------------------------------------------------------------------------
def mp_pose_at(frames: list[np.ndarray], times_ms: list[float] | None):
    """MediaPipe's pose graph (smoothing on) with each frame stamped at ``times_ms`` (None: its 33 ms clock)."""
    ref = mp_pose_graph(static=False, segmentation=False)
    out = []
    for k, f in enumerate(frames):
        if times_ms is not None:  # SolutionBase adds its 33333 us tick before stamping
            ref._simulated_timestamp = round(times_ms[k] * 1000) - 33333
        out.append(ref.process({"image": f}))
    ref.close()
    return out


def test_pose_smoothing_follows_real_timestamps_like_mediapipe(video):
    frames = video[:5]
    times = [0.0, 100.0, 200.0, 300.0, 400.0]                      # a 10 frames/s video
    theirs = mp_pose_at(frames, times)
    world_tols = tracked_world_tol(theirs, mp_pose_at(perturbed(frames), times))
    at_33ms = mp_pose_at(frames, None)
    # Not vacuous: MediaPipe's landmarks depend on the timestamps by more than the tolerance.
    assert max(mean_distance(mp_points(a.pose_landmarks), mp_points(b.pose_landmarks), (640, 480))
               for a, b in zip(theirs, at_33ms, strict=True)) > LANDMARK_TOL
    with pose.Pose(backend="cpu") as p, pose.Pose(backend="cpu") as ticks, pose.Pose(backend="cpu") as default:
        for k, (f, t) in enumerate(zip(frames, theirs, strict=True)):
            ours = p.process(f, timestamp_ms=times[k])
            assert p.timestamp_us == round(times[k] * 1000)
            d = mean_distance(ours.pose_landmarks.array(), mp_points(t.pose_landmarks), (640, 480))
            assert d <= LANDMARK_TOL, f"frame {k}: mean landmark distance {d:.4f} of the width"
            d = world_distance(ours.pose_world_landmarks, t.pose_world_landmarks)
            assert d <= world_tols[k], f"frame {k}: mean world landmark distance {d:.4f} m (bound {world_tols[k]:.4f})"
            # no timestamp: MediaPipe's clock, 33.333 ms apart from 33.333 ms on
            assert default.process(f).pose_landmarks == ticks.process(f, timestamp_ms=33.333 * (k + 1)).pose_landmarks
            assert default.timestamp_us == 33333 * (k + 1)


def test_timestamps_must_increase():
    frame = np.zeros((64, 64, 3), np.uint8)
    with face_detection.FaceDetection(backend="cpu") as fd:
        fd.process(frame, timestamp_ms=10)
        with pytest.raises(TimestampOrderError, match=r"must increase.*timestamp_ms=10 after 10 ms.*reset\(\)"):
            fd.process(frame, timestamp_ms=10)
        with pytest.raises(ValueError, match="timestamp_ms=5 after 10 ms"):
            fd.process(frame, timestamp_ms=5)
        fd.process(frame)                                    # default tick: 33.333 ms later
        assert fd.timestamp_us == 10000 + 33333
        with pytest.raises(TypeError, match="timestamp_ms must be a number of milliseconds, got str"):
            fd.process(frame, timestamp_ms="20")
        for bad in (-1, float("nan"), float("inf")):
            with pytest.raises(ValueError, match="finite number >= 0"):
                fd.process(frame, timestamp_ms=bad)
        fd.reset()                                           # a new video: the clock restarts
        fd.process(frame, timestamp_ms=0)
        assert fd.timestamp_us == 0


# -- model_complexity ----------------------------------------------------------------------------
def mp_pose_with_models(complexity: int, models: dict[str, Path], monkeypatch, tmp_path: Path):
    """MediaPipe's still-image pose graph at ``complexity``, loading its .tflite files from ``models``.

    mediapipe 0.10.14 downloads pose_landmark_lite / _heavy on first use, which this machine
    cannot; its graphs read models relative to a resource folder, so the test gives it one
    holding the zoo's files (the oracle checks the pipeline around the same model).
    """
    from mediapipe.python import solution_base

    for rel, src in models.items():
        link = tmp_path / "mediapipe" / "modules" / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(src)
    real = solution_base.resource_util.set_resource_dir
    monkeypatch.setattr(solution_base.resource_util, "set_resource_dir", lambda _: real(str(tmp_path)))
    return solution_base.SolutionBase(
        binary_graph_path="mediapipe/modules/pose_landmark/pose_landmark_cpu.binarypb",
        side_inputs={"model_complexity": complexity, "smooth_landmarks": False, "enable_segmentation": False,
                     "smooth_segmentation": False, "use_prev_landmarks": False},
        calculator_params={"posedetectioncpu__TensorsToDetectionsCalculator.min_score_thresh": 0.5,
                           "poselandmarkbyroicpu__tensorstoposelandmarksandsegmentation__ThresholdingCalculator"
                           ".threshold": 0.5},
        outputs=["pose_landmarks", "pose_world_landmarks"])


@pytest.mark.parametrize("complexity", [0, 2])
def test_pose_model_complexity_matches_mediapipe_or_fails_at_construction(complexity, astronaut, video, monkeypatch,
                                                                          tmp_path):
    name = pose.LANDMARK_MODELS[complexity]
    try:
        model = zoo.resolve(name, download=False)
    except ModelError:
        monkeypatch.setenv("GPULITE_OFFLINE", "1")   # the solution would otherwise try to download it
        with pytest.raises(ModelError, match=f"Pose\\(model_complexity={complexity}\\).*{name}"):
            pose.Pose(model_complexity=complexity, backend="cpu")
        pytest.skip(f"the zoo cannot resolve {name} here (not cached, downloads off); construction fails with a "
                    "clear ModelError, as checked")
    detector = Path(mp.__file__).parent / "modules" / "pose_detection" / "pose_detection.tflite"
    ref = mp_pose_with_models(complexity, {f"pose_landmark/{name}.tflite": model,
                                           "pose_detection/pose_detection.tflite": detector}, monkeypatch, tmp_path)
    images = [astronaut, video[12], video[36]]
    theirs = [ref.process({"image": im}) for im in images]
    ref.close()
    with pose.Pose(static_image_mode=True, model_complexity=complexity, backend="cpu") as p:
        for i, (im, t) in enumerate(zip(images, theirs, strict=True)):
            ours = p.process(im)
            d = mean_distance(ours.pose_landmarks.array(), mp_points(t.pose_landmarks), (im.shape[1], im.shape[0]))
            assert d <= LANDMARK_TOL, f"image {i}: mean landmark distance {d:.4f} of the width"
            d = world_distance(ours.pose_world_landmarks, t.pose_world_landmarks)
            assert d <= WORLD_TOL, f"image {i}: mean world landmark distance {d:.4f} m"


# -- drawing_utils -------------------------------------------------------------------------------
def check_same_drawing(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    """The same pixels in the same colours, and MediaPipe drew something."""
    assert theirs.any(axis=2).sum() > 100, f"{what}: MediaPipe drew almost nothing"
    differ = int((ours != theirs).any(axis=2).sum())
    assert differ == 0, f"{what}: {differ} pixels differ from MediaPipe's"


def mp_landmark_list(lms: LandmarkList):
    from mediapipe.framework.formats import landmark_pb2

    out = landmark_pb2.NormalizedLandmarkList()
    for p in lms:
        q = out.landmark.add(x=p.x, y=p.y, z=p.z)
        if p.visibility is not None:
            q.visibility = p.visibility
    return out


@pytest.mark.parametrize("kind", ["hand", "pose", "face"])
def test_draw_landmarks_draws_what_mediapipe_draws(kind):
    rng = np.random.default_rng({"hand": 1, "pose": 2, "face": 3}[kind])
    n, connections = {"hand": (21, hands.HAND_CONNECTIONS), "pose": (33, pose.POSE_CONNECTIONS),
                      "face": (468, face_mesh.FACEMESH_CONTOURS)}[kind]
    xyz = np.column_stack([rng.uniform(-0.05, 1.05, (n, 2)), rng.uniform(-0.1, 0.1, n)])   # some outside
    vis = rng.uniform(0, 1, n) if kind == "pose" else None                                   # some hidden
    lms = LandmarkList.from_array(xyz, visibility=vis)
    specs = {"hand": (drawing_utils.DrawingSpec(color=(0, 0, 255), thickness=2, circle_radius=4),
                      drawing_utils.DrawingSpec(color=(0, 255, 0), thickness=3)),
             "pose": (drawing_utils.DrawingSpec(), drawing_utils.DrawingSpec(color=(255, 0, 0), thickness=1)),
             "face": (None, drawing_utils.DrawingSpec(color=(80, 110, 10), thickness=1, circle_radius=1))}[kind]
    ours, theirs = np.zeros((240, 320, 3), np.uint8), np.zeros((240, 320, 3), np.uint8)
    drawing_utils.draw_landmarks(ours, lms, connections, *specs)
    mp_specs = [None if s is None else mp.solutions.drawing_utils.DrawingSpec(s.color, s.thickness, s.circle_radius)
                for s in specs]
    mp.solutions.drawing_utils.draw_landmarks(theirs, mp_landmark_list(lms), connections, *mp_specs)
    check_same_drawing(ours, theirs, kind)
    again = np.zeros_like(ours)  # a MediaPipe landmark list draws the same
    drawing_utils.draw_landmarks(again, mp_landmark_list(lms), connections, *specs)
    assert np.array_equal(again, ours)


def test_draw_detection_draws_what_mediapipe_draws(astronaut):
    with mp.solutions.face_detection.FaceDetection() as ref:
        (theirs_det,) = ref.process(astronaut).detections
    with face_detection.FaceDetection(backend="cpu") as fd:
        (ours_det,) = fd.process(astronaut).detections
    ours, theirs = np.zeros_like(astronaut), np.zeros_like(astronaut)
    drawing_utils.draw_detection(ours, ours_det)
    mp.solutions.drawing_utils.draw_detection(theirs, theirs_det)
    check_same_drawing(ours, theirs, "detection")


def read_only_image() -> np.ndarray:
    a = np.zeros((8, 8, 3), np.uint8)
    a.setflags(write=False)   # as np.asarray(pil_image) gives
    return a


def test_drawing_refuses_what_it_cannot_draw_on():
    lms = LandmarkList.from_array(np.full((21, 3), 0.5))
    with pytest.raises(ValueError, match=r"read-only.*image\.copy\(\)"):
        drawing_utils.draw_landmarks(read_only_image(), lms)
    with pytest.raises(ValueError, match="three channels"):
        drawing_utils.draw_landmarks(np.zeros((8, 8, 4), np.uint8), lms)
    with pytest.raises(TypeError, match="numpy array"):
        drawing_utils.draw_landmarks([[0]], lms)
    with pytest.raises(ValueError, match="Invalid connection from landmark #20 to landmark #21"):
        drawing_utils.draw_landmarks(np.zeros((8, 8, 3), np.uint8), lms, [(20, 21)])
    drawing_utils.draw_landmarks(np.zeros((8, 8, 3), np.uint8), None)   # nothing to draw: no error, as MediaPipe
