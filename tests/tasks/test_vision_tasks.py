"""gpulite.tasks' vision tasks against mediapipe 1.2.2's own Tasks.

mediapipe 1.2.2 cannot share a venv with the mediapipe 0.10.14 the other tests use, so its
results on the test photos, on the test clip (tests/solutions/video.py, 24 frames) and, for
the PoseLandmarker's VIDEO mode, on two clips of one fully visible person (the same module:
16 frames of a real video, 24 of one of its frames moved like the clip) are recorded by
``tools/tasks_oracle.py`` in tests/data/tasks/ (``oracle.npz``: landmarks, scores, matrices,
packed masks; ``oracle.json``: names, handedness, error types and messages, and the sha256 of
every input image, checked here so that both ran on the same pixels). The models are the zoo's
(the same bundles, pinned by sha256).

Tolerances (issue 22): the same number of detections; landmarks within 1% of the image width;
blendshape scores within 0.02, the same names in the same order; transformation matrices within
1e-2 of their largest entry; boxes IoU >= 0.9; masks IoU >= 0.97. cpu runs every frame; litert and
webgpu (lavapipe) the photos and the first frames of the clip.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import gpulite as mp
from gpulite.tasks import python
from gpulite.tasks.python import vision
from tests.solutions.video import make_frames, person_frames, person_still_frames
from tests.webgpu.support import usable_backend

DATA = Path(__file__).resolve().parent.parent / "data" / "tasks"
IMAGES = Path(__file__).resolve().parent.parent / "data" / "images"
PHOTOS = ("astronaut", "chelsea", "coffee")
CLIP = 24
PERSON_CLIPS = {"person": (person_frames, 16), "person_still": (person_still_frames, 24)}
LANDMARK_TOL = 0.01
BLENDSHAPE_TOL = 0.02
MATRIX_TOL = 1e-2
BOX_IOU = 0.9
MASK_IOU = 0.97


@pytest.fixture(scope="module")
def oracle():
    return np.load(DATA / "oracle.npz"), json.loads((DATA / "oracle.json").read_text())


@pytest.fixture(scope="module")
def frames(oracle) -> dict[str, np.ndarray]:
    out = {f"photo/{n}": np.asarray(PILImage.open(IMAGES / f"{n}.png").convert("RGB")) for n in PHOTOS}
    out.update({f"clip/{i:02d}": f for i, f in enumerate(make_frames(CLIP))})
    for prefix, (make, n) in PERSON_CLIPS.items():
        out.update({f"{prefix}/{i:02d}": f for i, f in enumerate(make(n))})
    recorded = oracle[1]["inputs"]
    changed = [k for k, v in out.items()
               if hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest() != recorded[k]]
    assert not changed, f"the test frames {changed} are not the ones the oracle ran on (rerun tools/tasks_oracle.py)"
    return out


@pytest.fixture(params=["cpu", "litert", "webgpu"])
def backend(request) -> str:
    return usable_backend(request.param)


def clip_keys(backend: str) -> list[str]:
    return [f"clip/{i:02d}" for i in range(CLIP if backend == "cpu" else 6)]


def image(rgb: np.ndarray) -> mp.Image:
    return mp.Image(image_format=mp.ImageFormat.SRGB, data=rgb)


def base(model: str, backend: str) -> python.BaseOptions:
    return python.BaseOptions(model_asset_path=model, backend=backend)


def xyz(lists) -> np.ndarray:
    return np.array([[[p.x, p.y, p.z] for p in pts] for pts in lists], np.float64).reshape(len(lists), -1, 3)


def check_landmarks(ours, theirs: np.ndarray, width: int, what: str) -> None:
    assert len(ours) == len(theirs), f"{what}: {len(ours)} found, mediapipe found {len(theirs)}"
    if len(theirs):
        err = np.abs(xyz(ours)[..., :2] - theirs[..., :2]).max()
        assert err <= LANDMARK_TOL, f"{what}: landmarks {err * width:.2f} px from mediapipe's ({err:.4f} of the width)"


def check_face(result, o, key: str, width: int, names: list[str]) -> None:
    check_landmarks(result.face_landmarks, o[f"face_landmarker/{key}/landmarks"], width, key)
    ref_bs = o[f"face_landmarker/{key}/blendshapes"]
    assert len(result.face_blendshapes) == len(ref_bs)
    for bs, ref in zip(result.face_blendshapes, ref_bs, strict=True):
        assert [c.category_name for c in bs] == names and [c.index for c in bs] == list(range(52))
        assert np.abs(np.array([c.score for c in bs]) - ref).max() <= BLENDSHAPE_TOL, key
    ref_m = o[f"face_landmarker/{key}/matrices"]
    assert len(result.facial_transformation_matrixes) == len(ref_m)
    for m, ref in zip(result.facial_transformation_matrixes, ref_m, strict=True):
        assert m.shape == (4, 4) and m.dtype == np.float32
        assert np.abs(m - ref).max() <= MATRIX_TOL * np.abs(ref).max(), f"{key}: matrix {m} vs {ref}"


def face_options(backend: str, **kw) -> vision.FaceLandmarkerOptions:
    return vision.FaceLandmarkerOptions(base_options=base("face_landmarker", backend), output_face_blendshapes=True,
                                        output_facial_transformation_matrixes=True, **kw)


def test_face_landmarker_photos(backend, oracle, frames):
    o, meta = oracle
    with vision.FaceLandmarker.create_from_options(face_options(backend)) as landmarker:
        for name in PHOTOS:
            key = f"photo/{name}"
            result = landmarker.detect(image(frames[key]))
            assert all(len(f) == 478 for f in result.face_landmarks)
            check_face(result, o, key, frames[key].shape[1], meta["blendshape_names"])


def test_face_landmarker_video_tracks_like_mediapipe(backend, oracle, frames):
    o, meta = oracle
    with vision.FaceLandmarker.create_from_options(face_options(backend, running_mode=vision.RunningMode.VIDEO)) as lm:
        for i, key in enumerate(clip_keys(backend)):
            result = lm.detect_for_video(image(frames[key]), 33 * i)
            check_face(result, o, "video/" + key, 640, meta["blendshape_names"])


def box_iou(a, b) -> float:
    (ax, ay, aw, ah), (bx, by, bw, bh) = a, b
    w = max(0.0, min(ax + aw, bx + bw) - max(ax, bx))
    h = max(0.0, min(ay + ah, by + bh) - max(ay, by))
    return w * h / (aw * ah + bw * bh - w * h)


def test_face_detector(backend, oracle, frames):
    o, _ = oracle
    keys = [f"photo/{n}" for n in PHOTOS] + clip_keys(backend)
    opts = vision.FaceDetectorOptions(base_options=base("blaze_face_short_range", backend))
    with vision.FaceDetector.create_from_options(opts) as detector:
        for key in keys:
            dets = detector.detect(image(frames[key])).detections
            boxes, scores = o[f"face_detector/{key}/boxes"], o[f"face_detector/{key}/scores"]
            assert len(dets) == len(boxes), key
            for d, box, score, kps in zip(dets, boxes, scores, o[f"face_detector/{key}/keypoints"], strict=True):
                b = d.bounding_box
                assert all(isinstance(v, int) for v in (b.origin_x, b.origin_y, b.width, b.height))
                assert box_iou((b.origin_x, b.origin_y, b.width, b.height), box) >= BOX_IOU, key
                assert abs(d.categories[0].score - score) <= 0.01 and d.categories[0].index == 0
                assert np.abs(np.array([[k.x, k.y] for k in d.keypoints]) - kps).max() <= LANDMARK_TOL


def mask_iou(ours: np.ndarray, packed: np.ndarray) -> float:
    theirs = np.unpackbits(packed)[:ours.size].reshape(ours.shape).astype(bool)
    return float((ours & theirs).sum() / max((ours | theirs).sum(), 1))


def test_pose_landmarker_photos(backend, oracle, frames):
    o, _ = oracle
    opts = vision.PoseLandmarkerOptions(base_options=base("pose_landmarker_full", backend),
                                        output_segmentation_masks=True)
    with vision.PoseLandmarker.create_from_options(opts) as landmarker:
        for name in PHOTOS:
            key = f"photo/{name}"
            result = landmarker.detect(image(frames[key]))
            check_landmarks(result.pose_landmarks, o[f"pose_landmarker/{key}/landmarks"], frames[key].shape[1], key)
            if not result.pose_landmarks:
                # mediapipe 1.2.2: no pose, no mask list (None), with output_segmentation_masks=True
                assert result.pose_world_landmarks == [] and result.segmentation_masks is None
                continue
            vis = np.array([[p.visibility, p.presence] for p in result.pose_landmarks[0]])
            assert np.abs(vis - o[f"pose_landmarker/{key}/visibility"][0]).max() <= 0.02
            world = xyz(result.pose_world_landmarks)
            assert np.abs(world - o[f"pose_landmarker/{key}/world"]).max() <= 0.01     # metres
            mask = result.segmentation_masks[0]
            assert mask.image_format == mp.ImageFormat.VEC32F1 and mask.numpy_view().shape[:2] == frames[key].shape[:2]
            assert mask_iou(mask.numpy_view()[..., 0] > 0.5, o[f"pose_landmarker/{key}/mask0"]) >= MASK_IOU


@pytest.mark.parametrize("clip", sorted(PERSON_CLIPS))
def test_pose_landmarker_video_tracks_like_mediapipe(backend, oracle, frames, clip):
    """One fully visible person: a real video (his arms rising) and a still of him moving like the
    test clip; mediapipe's own landmarks move by at most 0.6% of the width there when 0.01% of the
    pixels change by one grey level (tools/pose_video_sensitivity.py). Landmarks and their smoothed
    visibility and presence; not the world landmarks, which mediapipe's own perturbed runs move by
    up to 6 cm on the real video (2 cm on the still), against the photos' 1 cm."""
    o, _ = oracle
    opts = vision.PoseLandmarkerOptions(base_options=base("pose_landmarker_full", backend),
                                        running_mode=vision.RunningMode.VIDEO)
    n = PERSON_CLIPS[clip][1] if backend == "cpu" else 6
    with vision.PoseLandmarker.create_from_options(opts) as landmarker:
        for i in range(n):
            key = f"{clip}/{i:02d}"
            result = landmarker.detect_for_video(image(frames[key]), 33 * i)
            check_landmarks(result.pose_landmarks, o[f"pose_landmarker/video/{key}/landmarks"], 640, key)
            vis = np.array([[p.visibility, p.presence] for p in result.pose_landmarks[0]])
            assert np.abs(vis - o[f"pose_landmarker/video/{key}/visibility"][0]).max() <= 0.02, key


POSE_VIDEO_CHAOS = ("mediapipe 1.2.2's own pose tracking is chaotic on the astronaut clip, so no reimplementation "
                    "short of a bit-exact one follows it (tools/pose_video_sensitivity.py): changing 0.01% of its "
                    "pixels by one grey level moves its VIDEO landmarks by 1.5-3.7% of the width at the first "
                    "tracked frame and 8-14% by the sixth (the astronaut's body is mostly outside the frame: the "
                    "legs and hands are guesses that follow sub-pixel shifts of the region, which comes from the "
                    "previous frame's landmarks), and gpulite's cpu and litert backends, whose models differ only "
                    "in float rounding, part as far from each other (0.7% at frame 1, 9% at frame 4). gpulite is "
                    "1.9% off at frame 1, 0.9% at frame 2; on a fully visible person it tracks like mediapipe "
                    "(test_pose_landmarker_video_tracks_like_mediapipe)")


@pytest.mark.xfail(strict=True, reason=POSE_VIDEO_CHAOS)
def test_pose_landmarker_video_on_the_astronaut_clip(oracle, frames):
    o, _ = oracle
    opts = vision.PoseLandmarkerOptions(base_options=base("pose_landmarker_full", "cpu"),
                                        running_mode=vision.RunningMode.VIDEO)
    with vision.PoseLandmarker.create_from_options(opts) as landmarker:
        for i, key in enumerate(clip_keys("cpu")):
            result = landmarker.detect_for_video(image(frames[key]), 33 * i)
            check_landmarks(result.pose_landmarks, o[f"pose_landmarker/video/{key}/landmarks"], 640, key)


def test_image_segmenter(backend, oracle, frames):
    o, meta = oracle
    opts = vision.ImageSegmenterOptions(base_options=base("selfie_segmenter", backend), output_category_mask=True)
    with vision.ImageSegmenter.create_from_options(opts) as segmenter:
        assert segmenter.labels == meta["segmenter_labels"]
        for key in [f"photo/{n}" for n in PHOTOS] + [f"clip/{i:02d}" for i in range(0, CLIP, 6)]:
            result = segmenter.segment(image(frames[key]))
            conf, cat = result.confidence_masks[0], result.category_mask
            assert conf.image_format == mp.ImageFormat.VEC32F1 and cat.image_format == mp.ImageFormat.GRAY8
            assert sorted(np.unique(cat.numpy_view()).tolist()) == meta["category_values"][key]
            assert mask_iou(conf.numpy_view()[..., 0] > 0.5, o[f"image_segmenter/{key}/confidence0"]) >= MASK_IOU
            assert mask_iou(cat.numpy_view()[..., 0] > 0, o[f"image_segmenter/{key}/category"]) >= MASK_IOU


HAND_OPTIONS = {"num_hands": 2, "min_hand_detection_confidence": 0.1, "min_hand_presence_confidence": 0.0,
                "min_tracking_confidence": 0.1}  # mediapipe finds the astronaut's gloved hand only this low
WORLD_TOL = 0.002  # metres, largest coordinate difference
HANDEDNESS_TOL = 0.02
TASKS_LABELS = ("Right", "Left")  # by class index, as mediapipe 1.2.2 names them


def check_hands(result, o, meta, key: str, width: int, *, world_and_handedness: bool = True) -> None:
    check_landmarks(result.hand_landmarks, o[f"hand_landmarker/{key}/landmarks"], width, key)
    assert all(len(h) == 21 for h in result.hand_landmarks)
    world = o[f"hand_landmarker/{key}/world"]
    assert len(result.hand_world_landmarks) == len(world) == len(result.handedness)
    if not world_and_handedness:
        return
    if len(world):
        err = np.abs(xyz(result.hand_world_landmarks) - world).max()
        assert err <= WORLD_TOL, f"{key}: world landmarks {err * 1000:.1f} mm from mediapipe's"
    for ours, theirs in zip(result.handedness, meta["handedness"][key], strict=True):
        (c,), ((index, score, name, display),) = ours, theirs
        assert c.category_name == c.display_name == TASKS_LABELS[c.index], key
        assert name == display == TASKS_LABELS[index], key
        p_right = c.score if c.index == 0 else 1.0 - c.score  # a label can flip where the score is near 0.5
        theirs_right = score if index == 0 else 1.0 - score
        assert abs(p_right - theirs_right) <= HANDEDNESS_TOL, f"{key}: P(right) {p_right:.4f} vs {theirs_right:.4f}"


def test_hand_landmarker_photos(backend, oracle, frames):
    o, meta = oracle
    opts = vision.HandLandmarkerOptions(base_options=base("hand_landmarker", backend), **HAND_OPTIONS)
    with vision.HandLandmarker.create_from_options(opts) as landmarker:
        for name in PHOTOS:
            key = f"photo/{name}"
            check_hands(landmarker.detect(image(frames[key])), o, meta, key, frames[key].shape[1])


def test_hand_landmarker_video_tracks_like_mediapipe(backend, oracle, frames):
    """Landmarks on every frame; world landmarks and handedness on the first (palm detector) frame:
    on this clip, which shows no hand, the tracked regions compound tiny differences and the
    world landmarks and handedness (near 0.5) of a non-hand follow them far more than the image
    landmarks (which stay within 0.006 of the width over the 24 frames)."""
    o, meta = oracle
    opts = vision.HandLandmarkerOptions(base_options=base("hand_landmarker", backend),
                                        running_mode=vision.RunningMode.VIDEO, **HAND_OPTIONS)
    with vision.HandLandmarker.create_from_options(opts) as landmarker:
        for i, key in enumerate(clip_keys(backend)):
            result = landmarker.detect_for_video(image(frames[key]), 33 * i)
            check_hands(result, o, meta, f"video/{key}", frames[key].shape[1], world_and_handedness=i == 0)


def test_live_stream_delivers_every_result_once_in_order(frames):
    keys = clip_keys("litert")
    with vision.FaceLandmarker.create_from_options(face_options("cpu", running_mode=vision.RunningMode.VIDEO)) as lm:
        expected = [xyz(lm.detect_for_video(image(frames[k]), 33 * i).face_landmarks) for i, k in enumerate(keys)]
    got, lock = [], threading.Lock()

    def callback(result, output_image, timestamp_ms):
        with lock:
            got.append((timestamp_ms, xyz(result.face_landmarks), output_image))

    images = [image(frames[k]) for k in keys]
    with vision.FaceLandmarker.create_from_options(
            face_options("cpu", running_mode=vision.RunningMode.LIVE_STREAM, result_callback=callback)) as lm:
        for i, im in enumerate(images):
            lm.detect_async(im, 33 * i)
    assert [ts for ts, _, _ in got] == [33 * i for i in range(len(keys))]
    for (_, lms, im), want, sent in zip(got, expected, images, strict=True):
        assert im is sent and np.array_equal(lms, want)


ERRORS = {  # oracle case -> the same call on gpulite
    "detect_for_video in IMAGE mode": lambda t, img: t("IMAGE").detect_for_video(img, 0),
    "detect_async in IMAGE mode": lambda t, img: t("IMAGE").detect_async(img, 0),
    "detect in VIDEO mode": lambda t, img: t("VIDEO").detect(img),
    "callback in IMAGE mode": lambda t, img: t("IMAGE", callback=lambda *a: None),
    "no callback in LIVE_STREAM mode": lambda t, img: t("LIVE_STREAM"),
    "repeated timestamp": lambda t, img: [t.video.detect_for_video(img, 5), t.video.detect_for_video(img, 5)],
    "missing file": lambda t, img: vision.FaceLandmarker.create_from_model_path("/nonexistent/none.task"),
    "corrupt bundle": lambda t, img: vision.FaceLandmarker.create_from_model_path(str(t.tmp / "junk.task")),
    "wrong bundle": lambda t, img: vision.FaceLandmarker.create_from_model_path("hand_landmarker"),
    "bundle for a tflite task": lambda t, img: vision.FaceDetector.create_from_model_path("face_landmarker"),
    "GRAY8 image": lambda t, img: t.detector.detect(
        mp.Image(image_format=mp.ImageFormat.GRAY8, data=np.zeros((64, 64), np.uint8))),
    "VEC32F1 image": lambda t, img: t.detector.detect(
        mp.Image(image_format=mp.ImageFormat.VEC32F1, data=np.zeros((64, 64), np.float32))),
}


class Maker:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        (tmp / "junk.task").write_bytes(b"PK\x03\x04" + b"garbage" * 20)
        self.video = self("VIDEO")
        self.detector = vision.FaceDetector.create_from_model_path("blaze_face_short_range")

    def __call__(self, mode: str, callback=None) -> vision.FaceLandmarker:
        return vision.FaceLandmarker.create_from_options(vision.FaceLandmarkerOptions(
            base_options=base("face_landmarker", "cpu"), running_mode=vision.RunningMode[mode],
            result_callback=callback))


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_bad_input_raises_mediapipes_error(case, oracle, frames, tmp_path):
    kind, message = oracle[1]["errors"][case]
    builtin = {"ValueError": ValueError, "RuntimeError": RuntimeError, "FileNotFoundError": FileNotFoundError}[kind]
    with pytest.raises(builtin) as e:
        ERRORS[case](Maker(tmp_path), image(frames["photo/astronaut"]))
    if message != "CalculatorGraph::Run() failed: ":  # mediapipe's graph errors say nothing of the cause
        head = message.rstrip(". ")
        assert str(e.value).startswith(head), f"{case}: {e.value!r} vs mediapipe's {message!r}"
    assert isinstance(e.value, mp.GpuliteError)


def test_drawing_styles_are_mediapipes(oracle):
    from gpulite.tasks.python.vision import drawing_styles

    def as_json(style):
        spec = lambda s: [list(s.color), s.thickness, s.circle_radius]  # noqa: E731
        return spec(style) if hasattr(style, "color") else {
            str(tuple(k) if isinstance(k, tuple) else int(k)): spec(v) for k, v in style.items()}

    for name, want in oracle[1]["drawing_styles"].items():
        assert as_json(getattr(drawing_styles, name)()) == want, name


# mediapipe 1.2.2's connection lists (vision.FaceLandmarksConnections, ...): sha256 of
# json.dumps([[start, end], ...]) in its order (first 16 hex digits), and the length
CONNECTION_LISTS = {
    "FACE_LANDMARKS_CONTOURS": ("62a85228a43e287f", 124), "FACE_LANDMARKS_FACE_OVAL": ("df6611798773cefe", 36),
    "FACE_LANDMARKS_LEFT_EYE": ("54aed7874cea8ddd", 16), "FACE_LANDMARKS_LEFT_EYEBROW": ("cf288726f2aba70b", 8),
    "FACE_LANDMARKS_LEFT_IRIS": ("f72508317874a98d", 4), "FACE_LANDMARKS_LIPS": ("06ab0a9f6340ff3c", 40),
    "FACE_LANDMARKS_NOSE": ("117d5c02a04792f3", 25), "FACE_LANDMARKS_RIGHT_EYE": ("3597896310818999", 16),
    "FACE_LANDMARKS_RIGHT_EYEBROW": ("275ec2ad6008e7b9", 8), "FACE_LANDMARKS_RIGHT_IRIS": ("10ce250bd4ee895e", 4),
    "FACE_LANDMARKS_TESSELATION": ("af380cdc95dabafe", 2556), "HAND_CONNECTIONS": ("650eb3b0bc257ce3", 21),
    "HAND_INDEX_FINGER_CONNECTIONS": ("b8bec199589c8967", 3), "HAND_MIDDLE_FINGER_CONNECTIONS": ("75c780496adcc955", 3),
    "HAND_PALM_CONNECTIONS": ("eac5296d59f3bddc", 6), "HAND_PINKY_FINGER_CONNECTIONS": ("bbe7a6795666527a", 3),
    "HAND_RING_FINGER_CONNECTIONS": ("99a478c399c7911d", 3), "HAND_THUMB_CONNECTIONS": ("26a702fc1e9a50af", 3),
    "POSE_LANDMARKS": ("bdf9971c556c7fff", 35),
}


def test_connection_lists_are_mediapipes():
    """The same pairs in the same order (MediaPipe draws in list order: where two sets' lines cross,
    the later colour wins; sorted lists drew one pixel of the astronaut's contours differently)."""
    for name, want in CONNECTION_LISTS.items():
        group = ("Face" if name.startswith("FACE") else "Hand" if name.startswith("HAND") else "Pose")
        pairs = [[c.start, c.end] for c in getattr(getattr(vision, f"{group}LandmarksConnections"), name)]
        assert (hashlib.sha256(json.dumps(pairs).encode()).hexdigest()[:16], len(pairs)) == want, name


def test_drawing_utils_draw_tasks_results(oracle, frames):
    from gpulite.tasks.python.vision import drawing_styles, drawing_utils

    from gpulite.solutions import drawing_utils as legacy
    from gpulite.solutions.results import LandmarkList

    rgb = frames["photo/astronaut"]
    with vision.FaceLandmarker.create_from_options(face_options("cpu")) as lm:
        face = lm.detect(image(rgb)).face_landmarks[0]
    ours, theirs = rgb.copy(), rgb.copy()
    connections = vision.FaceLandmarksConnections.FACE_LANDMARKS_CONTOURS
    drawing_utils.draw_landmarks(ours, face, connections, None, drawing_styles.get_default_face_mesh_contours_style())
    legacy.draw_landmarks(theirs, LandmarkList.from_array(xyz([face])[0]), [(c.start, c.end) for c in connections],
                          None, drawing_styles.get_default_face_mesh_contours_style())
    assert not np.array_equal(ours, rgb) and np.array_equal(ours, theirs)
    with vision.FaceDetector.create_from_model_path("blaze_face_short_range") as detector:
        det = detector.detect(image(rgb)).detections[0]
    boxed = rgb.copy()
    drawing_utils.draw_detection(boxed, det)
    b = det.bounding_box
    assert tuple(boxed[b.origin_y, b.origin_x + b.width // 2]) == drawing_utils.WHITE_COLOR
    # a whole result where one face or one detection goes (MediaPipe: AttributeError, "'list' object has no
    # attribute 'visibility'" / "'DetectionResult' object has no attribute 'keypoints'")
    with pytest.raises(TypeError, match=r"one face, hand or pose \(e\.g\. result\.face_landmarks\[0\]\)"):
        drawing_utils.draw_landmarks(rgb.copy(), [face], connections)
    with pytest.raises(TypeError, match=r"one Detection \(e\.g\. result\.detections\[0\]\), got DetectionResult"):
        drawing_utils.draw_detection(rgb.copy(), vision.FaceDetectorResult([det]))


def test_image_processing_options_are_refused_not_ignored(frames):
    from gpulite.tasks.components.containers import RectF

    with vision.FaceLandmarker.create_from_options(face_options("cpu")) as landmarker:
        img = image(frames["photo/astronaut"])
        with pytest.raises(NotImplementedError, match="rotation_degrees=90 is not supported"):
            landmarker.detect(img, vision.ImageProcessingOptions(rotation_degrees=90))
        with pytest.raises(ValueError, match="doesn't support region-of-interest"):
            landmarker.detect(img, vision.ImageProcessingOptions(region_of_interest=RectF(0, 0, 1, 1)))
        with pytest.raises(ValueError, match="multiple of 90"):
            landmarker.detect(img, vision.ImageProcessingOptions(rotation_degrees=45))
        assert len(landmarker.detect(img, vision.ImageProcessingOptions(rotation_degrees=360)).face_landmarks) == 1


def test_face_landmarker_video_with_the_detector_on_every_frame(backend, oracle, frames):
    """num_faces=2 and one face: the detector runs on every frame beside the tracked face, and the
    fresh detection's region replaces the tracked one (the Tasks graph's association order)."""
    o, _ = oracle
    opts = vision.FaceLandmarkerOptions(base_options=base("face_landmarker", backend), num_faces=2,
                                        running_mode=vision.RunningMode.VIDEO)
    with vision.FaceLandmarker.create_from_options(opts) as landmarker:
        for i, key in enumerate(clip_keys(backend)):
            result = landmarker.detect_for_video(image(frames[key]), 33 * i)
            check_landmarks(result.face_landmarks, o[f"face_landmarker2/video/{key}/landmarks"], 640, key)


def test_pose_landmarker_assembled_bundles(frames):
    """pose_landmarker_lite/heavy are assembled from the zoo's legacy models; the same assembly of the full
    model gives the official pose_landmarker_full.task's results exactly."""
    rgb = image(frames["photo/astronaut"])
    results = {}
    for name in ("pose_landmarker_full", "pose_landmarker_full_assembled", "pose_landmarker_lite",
                 "pose_landmarker_heavy"):
        with vision.PoseLandmarker.create_from_model_path(name) as landmarker:
            results[name] = xyz(landmarker.detect(rgb).pose_landmarks)
    assert np.array_equal(results["pose_landmarker_full"], results["pose_landmarker_full_assembled"])
    for name in ("pose_landmarker_lite", "pose_landmarker_heavy"):  # the same person, roughly where full has it
        assert results[name].shape == (1, 33, 3)
        assert np.abs(results[name][0, :11, :2] - results["pose_landmarker_full"][0, :11, :2]).max() < 0.05


@pytest.mark.parametrize(("task", "model", "error", "match"), [
    (vision.FaceLandmarker, "blaze_face_short_range", FileNotFoundError, "No file with name: face_detector.tflite"),
    (vision.PoseLandmarker, "face_landmarker", FileNotFoundError, "No file with name: pose_detector.tflite"),
    (vision.HandLandmarker, "selfie_segmenter", FileNotFoundError, "No file with name: hand_detector.tflite"),
    (vision.ImageSegmenter, "hand_landmarker", ValueError, "The model is not a valid Flatbuffer buffer"),
    (vision.ImageSegmenter, "efficientnet_lite0", ValueError, r"expected a \(1, H, W, 3\) image input"),
    # MediaPipe: a RuntimeError from its TensorsToDetectionsCalculator at the first detect()
    (vision.FaceDetector, "efficientnet_lite0", ValueError,
     r"BlazeFace short range.*input \[1, 128, 128, 3\].*got input \[1, 224, 224, 3\], outputs \[1, 1000\]"),
    (vision.FaceDetector, "selfie_segmenter", ValueError, r"outputs \[1, 896, 16\] and \[1, 896, 1\]"),
])
def test_a_model_for_another_task_is_refused(task, model, error, match):
    with pytest.raises(error, match=match):
        task.create_from_model_path(model)


def test_results_without_anything_found_and_options_without_output_are_mediapipes():
    """mediapipe 1.2.2: no pose gives segmentation_masks None (gpulite gave []); a segmenter asked
    for no mask is refused when it is made (gpulite returned None and None)."""
    blank = mp.Image(image_format=mp.ImageFormat.SRGB, data=np.zeros((100, 100, 3), np.uint8))
    with vision.PoseLandmarker.create_from_options(vision.PoseLandmarkerOptions(
            base_options=base("pose_landmarker_full", "cpu"), output_segmentation_masks=True)) as landmarker:
        result = landmarker.detect(blank)
    assert result.pose_landmarks == [] and result.segmentation_masks is None
    with pytest.raises(ValueError, match=r"^At least one of `output_confidence_masks` and `output_category_mask` "
                                         r"must be set\.$"):
        vision.ImageSegmenter.create_from_options(vision.ImageSegmenterOptions(
            base_options=base("selfie_segmenter", "cpu"), output_confidence_masks=False))


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"num_faces": 0}, ValueError, "num_faces must be >= 1"),
    ({"num_faces": 1.5}, TypeError, "num_faces must be an int"),
    ({"min_face_detection_confidence": 2.0}, ValueError, r"min_face_detection_confidence must be in \[0, 1\]"),
    ({"min_tracking_confidence": "high"}, TypeError, "min_tracking_confidence must be a number"),
    ({"running_mode": "VIDEO"}, ValueError, "running_mode must be a vision.RunningMode"),
])
def test_bad_options_are_refused(options, error, match):
    with pytest.raises(error, match=match):
        vision.FaceLandmarker.create_from_options(
            vision.FaceLandmarkerOptions(base_options=base("face_landmarker", "cpu"), **options))
