"""``import gpulite as mp`` in place of ``import mediapipe as mp`` (MediaPipe 0.10.14's legacy solutions).

Against mediapipe 0.10.14 in the same process:

- ``mp.solutions`` and its modules (the solutions, ``drawing_utils``, ``drawing_styles``, the
  ``*_connections`` modules) are reached from ``gpulite`` itself, with every constant and enum
  MediaPipe's modules have, equal and iterating in the same order; ``import gpulite`` alone
  does not load them.
- ``drawing_styles``: every function MediaPipe has, returning the same specs; drawing with them
  (``draw_landmarks``, ``draw_detection``) on the astronaut photo, from MediaPipe's own results
  fed to both, gives the same pixels. ``draw_axis`` likewise; ``_normalized_to_pixel_coordinates``
  gives MediaPipe's answers; ``plot_landmarks`` renders the same matplotlib figure.
- Results: ``HasField`` answers (or raises) as MediaPipe's messages do for every field of
  MediaPipe's message, on real results of both runtimes, and world landmarks are ``Landmark``.
- MediaPipe's own sample code for face mesh, hands and pose runs unchanged (but for the input) with
  gpulite as ``mp`` and draws what MediaPipe's run draws, up to the landmarks' differences.
"""

from __future__ import annotations

import enum
import inspect
import math
import subprocess
import sys

import numpy as np
import pytest

import gpulite
from gpulite.solutions import results
from tests.solutions.video import load_image

pytestmark = pytest.mark.filterwarnings("ignore:SymbolDatabase.GetPrototype:UserWarning")
mediapipe = pytest.importorskip("mediapipe", reason="mediapipe 0.10.14 is the oracle (pip install -e '.[test]')")
cv2 = pytest.importorskip("cv2")

MODULES = ("face_detection", "face_mesh", "hands", "pose", "selfie_segmentation", "drawing_utils", "drawing_styles",
           "face_mesh_connections", "hands_connections", "pose_connections")
HANDS_FOUND = {"min_detection_confidence": 0.1, "min_tracking_confidence": 0.0}  # MediaPipe finds the glove


@pytest.fixture(scope="module")
def rgb() -> np.ndarray:
    return load_image()


@pytest.fixture(scope="module")
def theirs(rgb):
    """MediaPipe's results on astronaut.png: face detection, face mesh (refined), hands, pose."""
    s = mediapipe.solutions
    out = {}
    with s.face_detection.FaceDetection() as fd:
        out["face_detection"] = fd.process(rgb)
    with s.face_mesh.FaceMesh(static_image_mode=True, refine_landmarks=True) as fm:
        out["face_mesh"] = fm.process(rgb)
    with s.hands.Hands(static_image_mode=True, **HANDS_FOUND) as h:
        out["hands"] = h.process(rgb)
    with s.pose.Pose(static_image_mode=True) as p:
        out["pose"] = p.process(rgb)
    return out


@pytest.fixture(scope="module")
def ours(rgb):
    """gpulite's results on the same image, through ``import gpulite as mp``."""
    s = gpulite.solutions
    out = {}
    with s.face_detection.FaceDetection(backend="cpu") as fd:
        out["face_detection"] = fd.process(rgb)
    with s.face_mesh.FaceMesh(static_image_mode=True, refine_landmarks=True, backend="cpu") as fm:
        out["face_mesh"] = fm.process(rgb)
    with s.hands.Hands(static_image_mode=True, backend="cpu", **HANDS_FOUND) as h:
        out["hands"] = h.process(rgb)
    with s.pose.Pose(static_image_mode=True, backend="cpu") as p:
        out["pose"] = p.process(rgb)
    return out


def as_ours(mp_list, world: bool = False) -> results.LandmarkList:
    """A MediaPipe landmark list as gpulite's (values and set fields kept)."""
    points = list(mp_list.landmark)
    xyz = [(p.x, p.y, p.z) for p in points]
    vis = [p.visibility if p.HasField("visibility") else None for p in points]
    pres = [p.presence if p.HasField("presence") else None for p in points]
    return (results.WorldLandmarkList if world else results.LandmarkList).from_array(
        np.array(xyz), visibility=None if all(v is None for v in vis) else vis,
        presence=None if all(p is None for p in pres) else pres)


# -- names -------------------------------------------------------------------------------------
def public_names(module) -> list[str]:
    """What ``module`` defines for its users (not what it imports: typing names, other modules, ...)."""
    return [n for n in dir(module) if not n.startswith("_") and not inspect.ismodule(getattr(module, n))
            and getattr(getattr(module, n), "__module__", module.__name__) == module.__name__]


def test_gpulite_has_mediapipes_solutions_modules_with_their_names():
    for name in MODULES:
        ref, module = getattr(mediapipe.solutions, name), getattr(gpulite.solutions, name)
        names = public_names(ref)
        assert names, name
        missing = [n for n in names if not hasattr(module, n)]
        assert not missing, f"gpulite.solutions.{name} lacks {missing}"
        for const in names:
            value, expected = getattr(module, const), getattr(ref, const)
            if isinstance(expected, enum.EnumMeta):
                assert [(m.name, m.value) for m in value] == [(m.name, m.value) for m in expected], f"{name}.{const}"
            elif not callable(expected):
                assert value == expected, f"{name}.{const}"
                if isinstance(expected, frozenset):   # drawn in this order: overlapping colours depend on it
                    assert list(value) == list(expected), f"{name}.{const} iterates in another order"
    assert "solutions" in dir(gpulite)


def test_gpulite_has_mediapipes_tasks_attribute():
    """``mp.tasks.BaseOptions``, ``mp.tasks.vision.FaceLandmarker`` as MediaPipe's Tasks examples write them."""
    assert "tasks" in dir(gpulite)
    assert gpulite.tasks is sys.modules["gpulite.tasks"]
    assert gpulite.tasks.vision.FaceLandmarker.__module__ == "gpulite.tasks.vision.face_landmarker"
    assert gpulite.tasks.BaseOptions is gpulite.tasks.python.BaseOptions
    with pytest.raises(AttributeError, match="no attribute 'no_such_module'"):
        gpulite.no_such_module  # noqa: B018


def test_import_gpulite_does_not_load_the_solutions():
    code = ("import sys, gpulite; assert 'gpulite.solutions' not in sys.modules; "
            "assert 'gpulite.tasks' not in sys.modules; "
            "import gpulite as mp; print(mp.solutions.hands.HandLandmark.WRIST.name)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "WRIST", r.stderr[-2000:]


# -- drawing_styles ------------------------------------------------------------------------------
def spec(s) -> tuple:
    return tuple(s.color), s.thickness, s.circle_radius


def specs(style) -> object:
    return {k: spec(v) for k, v in style.items()} if isinstance(style, dict) else spec(style)


def test_drawing_styles_are_mediapipes():
    ref, mine = mediapipe.solutions.drawing_styles, gpulite.solutions.drawing_styles
    names = sorted(n for n in dir(ref) if n.startswith("get_"))
    assert sorted(n for n in dir(mine) if n.startswith("get_")) == names
    for name in names:
        assert specs(getattr(mine, name)()) == specs(getattr(ref, name)()), name
    assert specs(mine.get_default_face_mesh_contours_style(1)) == specs(ref.get_default_face_mesh_contours_style(1))
    with pytest.raises(ValueError, match="i must be 0 or 1"):
        mine.get_default_face_mesh_contours_style(2)


# -- drawing: the same pixels from the same landmarks --------------------------------------------
def draw_all(mp, image: np.ndarray, results: dict, convert) -> np.ndarray:
    """The drawing calls of MediaPipe's samples, with ``mp``'s drawing_utils and drawing_styles."""
    du, ds, s = mp.solutions.drawing_utils, mp.solutions.drawing_styles, mp.solutions
    out = image.copy()
    for d in results["face_detection"].detections:
        du.draw_detection(out, d)
    for face in results["face_mesh"].multi_face_landmarks:
        face = convert(face)
        du.draw_landmarks(out, face, s.face_mesh.FACEMESH_TESSELATION, None,
                          ds.get_default_face_mesh_tesselation_style())
        du.draw_landmarks(out, face, s.face_mesh.FACEMESH_CONTOURS, None, ds.get_default_face_mesh_contours_style())
        du.draw_landmarks(out, face, s.face_mesh.FACEMESH_CONTOURS, None, ds.get_default_face_mesh_contours_style(1))
        du.draw_landmarks(out, face, s.face_mesh.FACEMESH_IRISES, None,
                          ds.get_default_face_mesh_iris_connections_style())
    for hand in results["hands"].multi_hand_landmarks:
        du.draw_landmarks(out, convert(hand), s.hands.HAND_CONNECTIONS, ds.get_default_hand_landmarks_style(),
                          ds.get_default_hand_connections_style())
    du.draw_landmarks(out, convert(results["pose"].pose_landmarks), s.pose.POSE_CONNECTIONS,
                      landmark_drawing_spec=ds.get_default_pose_landmarks_style())
    return out


def test_drawing_with_mediapipes_styles_gives_mediapipes_pixels(rgb, theirs):
    bgr = np.ascontiguousarray(rgb[..., ::-1])
    expected = draw_all(mediapipe, bgr, theirs, lambda lms: lms)
    got = draw_all(gpulite, bgr, theirs, as_ours)
    drawn = int((expected != bgr).any(axis=2).sum())
    assert drawn > 5000, f"MediaPipe drew only {drawn} pixels"
    differ = int((got != expected).any(axis=2).sum())
    assert differ == 0, f"{differ} of the {drawn} pixels MediaPipe drew differ"


def test_draw_axis_draws_what_mediapipe_draws(rgb):
    rng = np.random.default_rng(7)
    for k in range(5):
        rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        translation = np.array([rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1), rng.uniform(-1.0, -0.3)])
        ref_spec = mediapipe.solutions.drawing_utils.DrawingSpec(thickness=k + 1)
        expected, got = rgb.copy(), rgb.copy()
        mediapipe.solutions.drawing_utils.draw_axis(expected, rotation, translation, axis_length=0.2,
                                                    axis_drawing_spec=ref_spec)
        gpulite.solutions.drawing_utils.draw_axis(got, rotation, translation, axis_length=0.2,
                                                  axis_drawing_spec=gpulite.solutions.drawing_utils.DrawingSpec(
                                                      thickness=k + 1))
        assert (expected != rgb).any(axis=2).sum() > 50
        assert np.array_equal(got, expected), f"pose {k}"


def test_normalized_to_pixel_coordinates_is_mediapipes():
    ref = mediapipe.solutions.drawing_utils._normalized_to_pixel_coordinates
    mine = gpulite.solutions.drawing_utils._normalized_to_pixel_coordinates
    values = [-0.1, -1e-12, 0.0, 1e-9, 0.2, 0.5, 0.999999, 1.0, 1 + 1e-12, 1.0001, math.nan]
    for w, h in ((640, 480), (1, 1), (451, 300)):
        for x in values:
            for y in values:
                assert mine(x, y, w, h) == ref(x, y, w, h), (x, y, w, h)


# -- plot_landmarks ------------------------------------------------------------------------------
def rendered(plt) -> np.ndarray:
    fig = plt.gcf()
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba()).copy()
    plt.close(fig)
    return pixels


def test_plot_landmarks_plots_what_mediapipe_plots(theirs, monkeypatch):
    plt = pytest.importorskip("matplotlib.pyplot")
    plt.switch_backend("Agg")
    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(plt.gcf()))
    du_ref, du = mediapipe.solutions.drawing_utils, gpulite.solutions.drawing_utils
    cases = [(theirs["pose"].pose_world_landmarks, gpulite.solutions.pose.POSE_CONNECTIONS, {}),
             (theirs["hands"].multi_hand_world_landmarks[0], gpulite.solutions.hands.HAND_CONNECTIONS, {"azimuth": 5}),
             (theirs["pose"].pose_landmarks, gpulite.solutions.pose.POSE_CONNECTIONS, {"elevation": 30})]
    for world, connections, kw in cases:
        du_ref.plot_landmarks(world, connections, **kw)
        expected = rendered(plt)
        du.plot_landmarks(as_ours(world, world=world.DESCRIPTOR.name == "LandmarkList"), connections, **kw)
        got = rendered(plt)
        assert (expected[..., :3] < 100).all(axis=2).sum() > 1000, "MediaPipe's plot is nearly empty"
        assert np.array_equal(got, expected), f"{int((got != expected).any(axis=2).sum())} pixels differ"
    assert len(shown) == 2 * len(cases)


# -- results -------------------------------------------------------------------------------------
def same_presence(mine, ref, where: str) -> int:
    """``HasField`` on ``mine`` answers (or raises) as on ``ref`` for every field of ``ref``'s message;
    the number of fields checked."""
    fields = [f.name for f in ref.DESCRIPTOR.fields]
    for name in [*fields, "no_such_field"]:
        try:
            expected = ref.HasField(name)
        except ValueError as e:
            with pytest.raises(ValueError) as got:
                mine.HasField(name)
            assert str(got.value).split()[-1] == str(e).split()[-1], (where, name, str(got.value), str(e))
            continue
        assert mine.HasField(name) == expected, f"{where}.HasField({name!r})"
    return len(fields)


def test_results_answer_hasfield_as_mediapipes_and_world_landmarks_are_landmarks(ours, theirs):
    pairs = []
    d, ref_d = ours["face_detection"].detections[0], theirs["face_detection"].detections[0]
    pairs += [(d, ref_d, "detection"), (d.location_data, ref_d.location_data, "location_data"),
              (d.location_data.relative_bounding_box, ref_d.location_data.relative_bounding_box, "box"),
              (d.location_data.relative_keypoints[0], ref_d.location_data.relative_keypoints[0], "keypoint")]
    lists = [(ours["face_mesh"].multi_face_landmarks[0], theirs["face_mesh"].multi_face_landmarks[0], "face"),
             (ours["hands"].multi_hand_landmarks[0], theirs["hands"].multi_hand_landmarks[0], "hand"),
             (ours["hands"].multi_hand_world_landmarks[0], theirs["hands"].multi_hand_world_landmarks[0], "hand world"),
             (ours["pose"].pose_landmarks, theirs["pose"].pose_landmarks, "pose"),
             (ours["pose"].pose_world_landmarks, theirs["pose"].pose_world_landmarks, "pose world")]
    for mine, ref, where in lists:
        assert len(mine.landmark) == len(ref.landmark), where
        pairs.append((mine, ref, where))
        pairs += [(p, q, f"{where}[{i}]") for i, (p, q) in enumerate(zip(mine.landmark, ref.landmark, strict=True))]
        # NormalizedLandmark for image landmarks, Landmark for world ones, with the message's fields
        point, ref_point = mine.landmark[0], ref.landmark[0]
        assert type(point).__name__ == type(ref_point).__name__, where
        for name in (f.name for f in ref_point.DESCRIPTOR.fields):
            assert hasattr(point, name), f"{where}: {type(point).__name__} has no {name}"
    handed, ref_handed = ours["hands"].multi_handedness[0], theirs["hands"].multi_handedness[0]
    pairs += [(handed, ref_handed, "handedness"), (handed.classification[0], ref_handed.classification[0], "class")]
    checked = sum(same_presence(mine, ref, where) for mine, ref, where in pairs)
    assert checked > 1000
    assert d.location_data.format == ref_d.location_data.format
    with pytest.raises(TypeError, match="metres"):
        ours["pose"].pose_world_landmarks.pixels(640, 480)


# -- MediaPipe's sample code, unchanged ------------------------------------------------------------
def face_mesh_sample(mp, image):
    mp_drawing = mp.solutions.drawing_utils
    mp_drawing_styles = mp.solutions.drawing_styles
    mp_face_mesh = mp.solutions.face_mesh
    with mp_face_mesh.FaceMesh(static_image_mode=True, max_num_faces=1, refine_landmarks=True,
                               min_detection_confidence=0.5) as face_mesh:
        results = face_mesh.process(cv2.cvtColor(image, cv2.COLOR_BGR2RGB))
        annotated_image = image.copy()
        for face_landmarks in results.multi_face_landmarks:
            print("face_landmarks:", face_landmarks)
            mp_drawing.draw_landmarks(
                image=annotated_image, landmark_list=face_landmarks, connections=mp_face_mesh.FACEMESH_TESSELATION,
                landmark_drawing_spec=None, connection_drawing_spec=mp_drawing_styles
                .get_default_face_mesh_tesselation_style())
            mp_drawing.draw_landmarks(
                image=annotated_image, landmark_list=face_landmarks, connections=mp_face_mesh.FACEMESH_CONTOURS,
                landmark_drawing_spec=None, connection_drawing_spec=mp_drawing_styles
                .get_default_face_mesh_contours_style())
            mp_drawing.draw_landmarks(
                image=annotated_image, landmark_list=face_landmarks, connections=mp_face_mesh.FACEMESH_IRISES,
                landmark_drawing_spec=None, connection_drawing_spec=mp_drawing_styles
                .get_default_face_mesh_iris_connections_style())
    return annotated_image


def hands_sample(mp, image):
    mp_drawing = mp.solutions.drawing_utils
    mp_drawing_styles = mp.solutions.drawing_styles
    mp_hands = mp.solutions.hands
    with mp_hands.Hands(static_image_mode=True, max_num_hands=2, **HANDS_FOUND) as hands:
        results = hands.process(cv2.cvtColor(image, cv2.COLOR_BGR2RGB))
        print("Handedness:", results.multi_handedness)
        image_height, image_width, _ = image.shape
        annotated_image = image.copy()
        for hand_landmarks in results.multi_hand_landmarks:
            print("hand_landmarks:", hand_landmarks)
            print(
                "Index finger tip coordinates: (",
                f"{hand_landmarks.landmark[mp_hands.HandLandmark.INDEX_FINGER_TIP].x * image_width}, "
                f"{hand_landmarks.landmark[mp_hands.HandLandmark.INDEX_FINGER_TIP].y * image_height})"
            )
            mp_drawing.draw_landmarks(
                annotated_image, hand_landmarks, mp_hands.HAND_CONNECTIONS,
                mp_drawing_styles.get_default_hand_landmarks_style(),
                mp_drawing_styles.get_default_hand_connections_style())
        for hand_world_landmarks in results.multi_hand_world_landmarks:
            mp_drawing.plot_landmarks(hand_world_landmarks, mp_hands.HAND_CONNECTIONS, azimuth=5)
    return annotated_image


def pose_sample(mp, image):
    mp_drawing = mp.solutions.drawing_utils
    mp_drawing_styles = mp.solutions.drawing_styles
    mp_pose = mp.solutions.pose
    bg_color = (192, 192, 192)
    with mp_pose.Pose(static_image_mode=True, model_complexity=1, enable_segmentation=True,
                      min_detection_confidence=0.5) as pose:
        image_height, image_width, _ = image.shape
        results = pose.process(cv2.cvtColor(image, cv2.COLOR_BGR2RGB))
        print(
            f"Nose coordinates: ("
            f"{results.pose_landmarks.landmark[mp_pose.PoseLandmark.NOSE].x * image_width}, "
            f"{results.pose_landmarks.landmark[mp_pose.PoseLandmark.NOSE].y * image_height})"
        )
        annotated_image = image.copy()
        condition = np.stack((results.segmentation_mask,) * 3, axis=-1) > 0.1
        bg_image = np.zeros(image.shape, dtype=np.uint8)
        bg_image[:] = bg_color
        annotated_image = np.where(condition, annotated_image, bg_image)
        mp_drawing.draw_landmarks(
            annotated_image, results.pose_landmarks, mp_pose.POSE_CONNECTIONS,
            landmark_drawing_spec=mp_drawing_styles.get_default_pose_landmarks_style())
        mp_drawing.plot_landmarks(results.pose_world_landmarks, mp_pose.POSE_CONNECTIONS)
    return annotated_image


@pytest.mark.parametrize("sample", [face_mesh_sample, hands_sample, pose_sample],
                         ids=lambda f: f.__name__)
def test_mediapipes_sample_code_runs_with_gpulite_as_mp(sample, rgb, monkeypatch, capsys):
    plt = pytest.importorskip("matplotlib.pyplot")
    plt.switch_backend("Agg")
    monkeypatch.setattr(plt, "show", lambda *a, **k: plt.close("all"))
    bgr = np.ascontiguousarray(rgb[..., ::-1])
    expected, got = sample(mediapipe, bgr), sample(gpulite, bgr)
    capsys.readouterr()
    ref_drawn, drawn = (expected != bgr).any(axis=2), (got != bgr).any(axis=2)
    assert ref_drawn.sum() > 500
    # the landmarks differ by hundredths of a pixel, so a few drawn pixels move by one (measured IoU 0.99-1.0)
    iou = (ref_drawn & drawn).sum() / (ref_drawn | drawn).sum()
    assert iou >= 0.97, f"what gpulite's run drew overlaps MediaPipe's by IoU {iou:.3f}"
