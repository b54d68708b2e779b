"""Acceptance: Hands, Pose and SelfieSegmentation against MediaPipe 0.10.14's Python solutions.

The oracle runs in the same process on the same RGB frames: astronaut.png, and frames of the
640x480 test video (tests/solutions/video.py: 60 frames of the photo moving, turning up to 30°
and zooming, written to H.264 and decoded, so both runtimes see the decoder's frames).
Criteria (per image, never averaged over frames): detection boxes IoU >= 0.9; landmarks within
a mean distance of 1% of the image width; world landmarks (metres) within a mean 3-D distance
of 1 cm; masks IoU >= 0.97 at threshold 0.5; handedness as the probability of "Right" within
0.02. Every test runs on cpu and on webgpu (lavapipe here;
fewer frames there, it is slow).

What MediaPipe finds is what gpulite must find: at the default settings MediaPipe finds no
hand in the photo or the video, so neither may gpulite. MediaPipe does find the astronaut's
gloved hand with ``min_detection_confidence=0.1, min_tracking_confidence=0.0``; that setting
checks palm detection, the hand regions, the landmarks and handedness against it.

Tracking (video mode) is compared on the first frames of the video only. MediaPipe's own pose
tracking is chaotic on this clip: adding +-1 grey level to 1% of the pixels moves its
landmarks by up to 10% of the width within 20 frames (its landmark model is sensitive to
1/32-pixel shifts of the region, and the region comes from the previous frame's landmarks),
so no reimplementation can follow it frame for frame for long. Over the first frames the
comparison is strict and not vacuous: there MediaPipe's landmark smoothing alone moves its
landmarks by more than the tolerance, so gpulite without its filters fails the test.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gpulite.pipeline.calculators.alignment_points_rects import alignment_points_to_rect
from gpulite.pipeline.calculators.association_norm_rect import associate
from gpulite.pipeline.calculators.landmark_smoothing import (
    LandmarkFilters,
    LandmarksSmoothingOptions,
    LowPassFilter,
    OneEuroFilter,
)
from gpulite.pipeline.calculators.refine_landmarks_from_heatmap import (
    RefineLandmarksFromHeatmapOptions,
    refine_landmarks,
)
from gpulite.pipeline.calculators.segmentation_smoothing import smooth_mask
from gpulite.pipeline.calculators.types import (
    Detection,
    LandmarkList,
    NormalizedLandmark,
    NormalizedRect,
    PipelineValueError,
    RelativeBox,
)
from gpulite.pipeline.calculators.world_landmarks import copy_visibility, rotate_world_landmarks
from gpulite.solutions import Hands, Pose, SelfieSegmentation
from tests.solutions.video import load_image, make_frames, read_video, write_video
from tests.webgpu.support import usable_backend

pytestmark = pytest.mark.filterwarnings("ignore:SymbolDatabase.GetPrototype:UserWarning")
mp = pytest.importorskip("mediapipe", reason="mediapipe 0.10.14 is the oracle (pip install -e '.[test]')")

LANDMARK_TOL = 0.01    # mean landmark distance, as a fraction of the image width
WORLD_TOL = 0.01       # mean world landmark distance, metres
BOX_IOU = 0.9
MASK_IOU = 0.97
HANDEDNESS_TOL = 0.02


@pytest.fixture(params=["cpu", "webgpu", "litert"])
def backend(request) -> str:
    """litert: models on LiteRT's kernels, image work on the cpu; it checks as many frames as webgpu.

    (Tracked pose frame 3 of the clip is chaotic: MediaPipe's own image landmarks move 1.6% of the
    width there when 1% of the pixels change by one grey level. litert, whose model outputs are
    LiteRT's bit for bit, lands 1.5% from MediaPipe there, the numpy cpu backend 0.1%.)"""
    return usable_backend(request.param)


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return load_image()


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> list[np.ndarray]:
    path = write_video(Path(tmp_path_factory.mktemp("video")) / "astronaut.mp4", make_frames(60), fps=30)
    return read_video(path)


def frames_for(backend: str, frames: list[np.ndarray], webgpu_count: int) -> list[np.ndarray]:
    return frames if backend == "cpu" else frames[:webgpu_count]


# -- metrics -----------------------------------------------------------------------------------
def mean_distance(ours: np.ndarray, theirs: np.ndarray, size: tuple[int, int]) -> float:
    """Mean landmark distance in pixels over the image width; both (N, 2) normalised."""
    w, h = size
    d = (np.asarray(ours)[:, :2] - np.asarray(theirs)[:, :2]) * [w, h]
    return float(np.linalg.norm(d, axis=1).mean() / w)


def world_distance(ours, theirs) -> float:
    """Mean 3-D distance in metres between two world landmark lists (gpulite's and MediaPipe's)."""
    a = ours.array()
    b = np.array([(p.x, p.y, p.z) for p in theirs.landmark])
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.linalg.norm(a - b, axis=1).mean())


def perturbed(frames: list[np.ndarray], seed: int = 0) -> list[np.ndarray]:
    """``frames`` with 1% of their pixels one grey level up or down (seeded): a disturbance far
    below what the eye or any encoder notices, to measure how much MediaPipe moves on its own."""
    rng = np.random.default_rng(seed)
    out = []
    for f in frames:
        g = f.astype(np.int16)
        hit = rng.random(f.shape[:2]) < 0.01
        g[hit] += rng.choice(np.array([-1, 1], np.int16), size=(int(hit.sum()), 1))
        out.append(np.clip(g, 0, 255).astype(np.uint8))
    return out


def tracked_world_tol(theirs, theirs_perturbed) -> list[float]:
    """Per frame, the world landmark tolerance: WORLD_TOL on the first (detected) frame; on
    tracked frames, twice MediaPipe's own movement between the frames and :func:`perturbed`
    ones when that is larger. Tracked world landmarks amplify any change of the region (a
    grey level on 1% of the pixels moves MediaPipe's by 1-4 cm within five frames), so beyond
    WORLD_TOL the oracle's own sensitivity, measured in the same run, is the bound (as the
    zoo tests do where LiteRT disagrees with itself)."""
    tols = [WORLD_TOL]
    for a, b in list(zip(theirs, theirs_perturbed, strict=True))[1:]:
        drift = float(np.linalg.norm(np.array([(p.x, p.y, p.z) for p in a.pose_world_landmarks.landmark])
                                     - np.array([(p.x, p.y, p.z) for p in b.pose_world_landmarks.landmark]),
                                     axis=1).mean())
        tols.append(max(WORLD_TOL, 2 * drift))
    return tols


def mask_iou(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a) > 0.5, np.asarray(b) > 0.5
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0


def box_iou(ours, theirs) -> float:
    a = RelativeBox(ours.xmin, ours.ymin, ours.width, ours.height)
    return a.iou(RelativeBox(theirs.xmin, theirs.ymin, theirs.width, theirs.height))


def mp_points(landmark_list) -> np.ndarray:
    return np.array([(p.x, p.y) for p in landmark_list.landmark])


def p_right(classification) -> float:
    c = classification.classification[0]
    return c.score if c.label == "Right" else 1.0 - c.score


# -- the oracle --------------------------------------------------------------------------------
def mp_pose_graph(*, static: bool, segmentation: bool, smooth: bool = True):
    """MediaPipe's pose graph as its Pose solution sets it up, with the detection as an extra output."""
    from mediapipe.python.solution_base import SolutionBase

    return SolutionBase(
        binary_graph_path="mediapipe/modules/pose_landmark/pose_landmark_cpu.binarypb",
        side_inputs={"model_complexity": 1, "smooth_landmarks": smooth and not static,
                     "enable_segmentation": segmentation, "smooth_segmentation": not static,
                     "use_prev_landmarks": not static},
        calculator_params={"posedetectioncpu__TensorsToDetectionsCalculator.min_score_thresh": 0.5,
                           "poselandmarkbyroicpu__tensorstoposelandmarksandsegmentation__ThresholdingCalculator"
                           ".threshold": 0.5},
        outputs=["pose_landmarks", "pose_world_landmarks", "segmentation_mask", "pose_detection"])


def mp_hands_graph(*, static: bool, det: float, trk: float):
    """MediaPipe's hand graph as its Hands solution sets it up, with the palm detections as an extra output."""
    from mediapipe.python.solution_base import SolutionBase

    return SolutionBase(
        binary_graph_path="mediapipe/modules/hand_landmark/hand_landmark_tracking_cpu.binarypb",
        side_inputs={"model_complexity": 1, "num_hands": 2, "use_prev_landmarks": not static},
        calculator_params={"palmdetectioncpu__TensorsToDetectionsCalculator.min_score_thresh": det,
                           "handlandmarkcpu__ThresholdingCalculator.threshold": trk},
        outputs=["multi_hand_landmarks", "multi_hand_world_landmarks", "multi_handedness", "palm_detections"])


# -- SelfieSegmentation --------------------------------------------------------------------------
@pytest.mark.parametrize("model,selection", [("general", 0), ("landscape", 1)])
def test_selfie_segmentation_masks_match_mediapipe(backend, astronaut, video, model, selection):
    images = [astronaut, *frames_for(backend, video[::15], 2)]
    with mp.solutions.selfie_segmentation.SelfieSegmentation(model_selection=selection) as ref:
        theirs = [ref.process(im).segmentation_mask for im in images]
    with SelfieSegmentation(model=model, backend=backend) as seg:
        ours = [seg.process(im).segmentation_mask for im in images]
    for i, (a, b, im) in enumerate(zip(ours, theirs, images, strict=True)):
        assert a.shape == im.shape[:2] and a.dtype == np.float32
        assert 0.0 <= a.min() and a.max() <= 1.0
        assert mask_iou(a, b) >= MASK_IOU, f"image {i}: mask IoU {mask_iou(a, b):.4f}"


# -- Pose --------------------------------------------------------------------------------------
def check_pose(ours, theirs, size: tuple[int, int], what: str, *, detection: bool = True,
               world_tol: float = WORLD_TOL) -> None:
    assert ours.pose_landmarks is not None and theirs.pose_landmarks is not None, what
    assert len(ours.pose_landmarks) == 33
    d = mean_distance(ours.pose_landmarks.array(), mp_points(theirs.pose_landmarks), size)
    assert d <= LANDMARK_TOL, f"{what}: mean landmark distance {d:.4f} of the width"
    vis = np.array([p.visibility for p in ours.pose_landmarks])
    assert np.abs(vis - [p.visibility for p in theirs.pose_landmarks.landmark]).max() < 0.05, what
    d = world_distance(ours.pose_world_landmarks, theirs.pose_world_landmarks)
    assert d <= world_tol, f"{what}: mean world landmark distance {d:.4f} m (bound {world_tol:.4f} m)"
    world_vis = np.array([p.visibility for p in ours.pose_world_landmarks])
    assert np.abs(world_vis - [p.visibility for p in theirs.pose_world_landmarks.landmark]).max() < 0.05, what
    iou = mask_iou(ours.segmentation_mask, theirs.segmentation_mask)
    assert iou >= MASK_IOU, f"{what}: mask IoU {iou:.4f}"
    if detection:
        assert ours.pose_detection is not None and theirs.pose_detection is not None, what
        iou = box_iou(ours.pose_detection.relative_bounding_box,
                      theirs.pose_detection.location_data.relative_bounding_box)
        assert iou >= BOX_IOU, f"{what}: detection box IoU {iou:.4f}"


def test_pose_still_images_match_mediapipe(backend, astronaut, video):
    images = [astronaut, *frames_for(backend, video[::12], 1)]
    ref = mp_pose_graph(static=True, segmentation=True)
    theirs = [ref.process({"image": im}) for im in images]
    ref.close()
    with Pose(static_image_mode=True, enable_segmentation=True, backend=backend) as pose:
        for i, (im, t) in enumerate(zip(images, theirs, strict=True)):
            ours = pose.process(im)
            assert not ours.tracked
            check_pose(ours, t, (im.shape[1], im.shape[0]), f"image {i}")


def test_pose_tracking_matches_mediapipe(backend, video):
    frames = frames_for(backend, video[:5], 3)
    ref = mp_pose_graph(static=False, segmentation=True)
    theirs = [ref.process({"image": f}) for f in frames]
    ref.close()
    ref = mp_pose_graph(static=False, segmentation=True)
    world_tols = tracked_world_tol(theirs, [ref.process({"image": f}) for f in perturbed(frames)])
    ref.close()
    raw = mp_pose_graph(static=False, segmentation=False, smooth=False)
    unsmoothed = [raw.process({"image": f}).pose_landmarks for f in frames]
    raw.close()
    # Not vacuous: MediaPipe's smoothing moves its landmarks by more than the tolerance here.
    assert max(mean_distance(mp_points(a), mp_points(b), (640, 480))
               for a, b in zip(unsmoothed, [t.pose_landmarks for t in theirs], strict=True)) > LANDMARK_TOL
    with Pose(enable_segmentation=True, backend=backend) as pose:
        for i, (f, t) in enumerate(zip(frames, theirs, strict=True)):
            ours = pose.process(f)
            assert ours.tracked == (i > 0), f"frame {i}: the detector should run on the first frame only"
            check_pose(ours, t, (640, 480), f"frame {i}", detection=i == 0, world_tol=world_tols[i])


# -- Hands -------------------------------------------------------------------------------------
def test_hands_find_no_hand_where_mediapipe_finds_none(backend, astronaut, video):
    frames = frames_for(backend, video[::6], 3)
    with mp.solutions.hands.Hands(static_image_mode=True) as ref:
        assert ref.process(astronaut).multi_hand_landmarks is None
    with mp.solutions.hands.Hands() as ref:
        assert all(ref.process(f).multi_hand_landmarks is None for f in frames)
    with Hands(static_image_mode=True, backend=backend) as hands:
        result = hands.process(astronaut)
        assert result.multi_hand_landmarks is None and result.multi_handedness is None
        assert result.palm_detections == []
    with Hands(backend=backend) as hands:
        for i, f in enumerate(frames):
            result = hands.process(f)
            assert result.multi_hand_landmarks is None, f"frame {i}"
            assert not result.tracked, f"frame {i}: nothing tracked, so the palm detector must run"


def check_hands(ours, theirs, size: tuple[int, int], what: str) -> None:
    n = len(theirs.multi_hand_landmarks or [])
    assert n > 0, f"{what}: the oracle should find the gloved hand at these thresholds"
    assert len(ours.multi_hand_landmarks or []) == n, what
    for k, (a, b) in enumerate(zip(ours.multi_hand_landmarks, theirs.multi_hand_landmarks, strict=True)):
        d = mean_distance(a.array(), mp_points(b), size)
        assert d <= LANDMARK_TOL, f"{what}, hand {k}: mean landmark distance {d:.4f} of the width"
    for k, (a, b) in enumerate(zip(ours.multi_hand_world_landmarks, theirs.multi_hand_world_landmarks, strict=True)):
        d = world_distance(a, b)
        assert d <= WORLD_TOL, f"{what}, hand {k}: mean world landmark distance {d:.4f} m"
    for k, (a, b) in enumerate(zip(ours.multi_handedness, theirs.multi_handedness, strict=True)):
        assert abs(p_right(a) - p_right(b)) <= HANDEDNESS_TOL, f"{what}, hand {k}: handedness"


def test_hands_low_thresholds_match_mediapipe_on_still_images(backend, astronaut, video):
    images = [astronaut, *frames_for(backend, [video[0], video[2], video[15], video[45]], 1)]
    ref = mp_hands_graph(static=True, det=0.1, trk=0.0)
    theirs = [ref.process({"image": im}) for im in images]
    ref.close()
    with Hands(static_image_mode=True, min_detection_confidence=0.1, min_tracking_confidence=0.0,
               backend=backend) as hands:
        for i, (im, t) in enumerate(zip(images, theirs, strict=True)):
            ours = hands.process(im)
            what, size = f"image {i}", (im.shape[1], im.shape[0])
            assert len(ours.palm_detections) == len(t.palm_detections), what
            for a, b in zip(ours.palm_detections, t.palm_detections, strict=True):
                iou = box_iou(a.relative_bounding_box, b.location_data.relative_bounding_box)
                assert iou >= BOX_IOU, f"{what}: palm box IoU {iou:.4f}"
            check_hands(ours, t, size, what)


def test_hands_tracking_skips_the_palm_detector_like_mediapipe(backend, video):
    """Video mode: the detector runs on the same frames as MediaPipe's (only while fewer than two
    hands are tracked) and the regions merge the same way (MediaPipe itself returns three hands
    on frame 2). Landmarks and handedness are compared on the first frame; on this non-hand the
    tracked regions compound small differences from frame 1 on (handedness first), as for
    pose. The still-image test compares them on five images."""
    frames = video[:5]
    ref = mp_hands_graph(static=False, det=0.1, trk=0.0)
    theirs = [ref.process({"image": f}) for f in frames]
    ref.close()
    assert any(t.palm_detections is None for t in theirs)   # MediaPipe skipped its detector somewhere
    with Hands(min_detection_confidence=0.1, min_tracking_confidence=0.0, backend=backend) as hands:
        for i, (f, t) in enumerate(zip(frames, theirs, strict=True)):
            ours = hands.process(f)
            assert ours.tracked == (t.palm_detections is None), f"frame {i}: detector run or skipped"
            assert len(ours.multi_hand_landmarks or []) == len(t.multi_hand_landmarks or []), f"frame {i}"
            if i == 0:
                check_hands(ours, t, (640, 480), f"frame {i}")
        hands.reset()
        assert not hands.process(frames[4]).tracked, "after reset() the palm detector runs again"


# -- API -----------------------------------------------------------------------------------------
def test_solutions_check_their_arguments_and_close():
    with pytest.raises(ValueError, match="max_hands"):
        Hands(max_hands=0, backend="cpu")
    with pytest.raises(ValueError, match="model_complexity"):
        Hands(model_complexity=2, backend="cpu")
    with pytest.raises(ValueError, match="min_tracking_confidence"):
        Pose(min_tracking_confidence=1.5, backend="cpu")
    with pytest.raises(ValueError, match="model must be one of"):
        SelfieSegmentation(model="portrait", backend="cpu")
    seg = SelfieSegmentation(backend="cpu")
    seg.close()
    from gpulite.solutions import SolutionClosedError
    with pytest.raises(SolutionClosedError):
        seg.process(np.zeros((8, 8, 3), np.uint8))


# -- calculators: MediaPipe's arithmetic on hand-made values --------------------------------------
def test_association_keeps_later_lists_and_drops_what_they_overlap():
    palm = NormalizedRect(0.30, 0.5, 0.2, 0.2)
    other_palm = NormalizedRect(0.80, 0.5, 0.2, 0.2)
    tracked = NormalizedRect(0.31, 0.5, 0.2, 0.2)          # IoU with palm ~0.9: replaces it
    assert associate([[palm, other_palm], [tracked]], 0.5) == [other_palm, tracked]
    assert associate([[palm, NormalizedRect(0.305, 0.5, 0.2, 0.2)]], 0.5) == [NormalizedRect(0.305, 0.5, 0.2, 0.2)]
    assert associate([None, [tracked]], 0.5) == [tracked]


def test_alignment_points_rect_is_centred_on_the_start_point_and_twice_the_distance():
    d = Detection(RelativeBox(0, 0, 0, 0), keypoints=((0.5, 0.5), (0.5, 0.25)))
    r = alignment_points_to_rect(d, (640, 480))
    assert (r.x_center, r.y_center) == (0.5, 0.5)
    assert r.width == pytest.approx(2 * 120 / 640) and r.height == pytest.approx(2 * 120 / 480)
    assert r.rotation == pytest.approx(0.0)                  # end point straight up: no rotation
    r = alignment_points_to_rect(Detection(RelativeBox(0, 0, 0, 0), keypoints=((0.5, 0.5), (0.75, 0.5))), (480, 480))
    assert r.rotation == pytest.approx(math.pi / 2)          # pointing right: turned a quarter


def test_heatmap_refinement_moves_a_confident_landmark_to_the_centre_of_mass():
    hm = np.full((1, 8, 8, 2), -20.0, np.float32)
    hm[0, 2, 5, 0] = hm[0, 3, 5, 0] = 20.0                  # landmark 0: mass at column 5, rows 2-3
    hm[0, 4, 4, 1] = -0.1                                    # landmark 1: never confident
    lms = LandmarkList((NormalizedLandmark(0.6, 0.3), NormalizedLandmark(0.5, 0.5)))
    out = refine_landmarks(lms, hm, RefineLandmarksFromHeatmapOptions(kernel_size=3))
    assert out[0].x == pytest.approx(5 / 8, abs=1e-6) and out[0].y == pytest.approx(2.5 / 8, abs=1e-6)
    assert out[1] == lms[1]


def test_one_euro_filter_passes_the_first_value_and_follows_slowly_when_still():
    f = OneEuroFilter(30.0, min_cutoff=0.05, beta=80.0, derivate_cutoff=1.0)
    assert f.apply(1 / 30, 1.0, 10.0) == 10.0
    second = f.apply(2 / 30, 1.0, 10.1)
    assert 10.0 < second < 10.1
    assert f.apply(2 / 30, 1.0, 99.0) == 99.0               # a repeated timestamp passes the value
    assert f.apply(1 / 30, 1.0, 99.0) == 99.0               # so does an earlier one
    # mediapipe 0.10.14 measures the frequency only between two non-zero times: after a first
    # frame at time 0 the second is filtered at the constructed 30 Hz, whatever the time step
    g = OneEuroFilter(30.0, min_cutoff=0.05, beta=80.0, derivate_cutoff=1.0)
    assert g.apply(0.0, 1.0, 10.0) == 10.0 and g.apply(0.1, 1.0, 10.1) == second
    h = OneEuroFilter(30.0, min_cutoff=0.05, beta=80.0, derivate_cutoff=1.0)
    assert h.apply(0.1, 1.0, 10.0) == 10.0 and h.apply(0.2, 1.0, 10.1) != second   # 10 Hz: less smoothing
    lp = LowPassFilter(0.1)
    assert lp.apply(1.0) == 1.0 and lp.apply(0.0) == pytest.approx(0.9)


def test_landmark_filters_on_arrays_match_one_filter_per_coordinate():
    # LandmarksSmoothing filters all coordinates as one array: each must get exactly what its
    # own scalar filter gives (the per-point filters MediaPipe runs)
    options = LandmarksSmoothingOptions(min_cutoff=0.05, beta=80.0, derivate_cutoff=1.0, seconds_per_tick=1e-6)
    filters, rng = LandmarkFilters(options), np.random.default_rng(0)
    scalar = [OneEuroFilter(30.0, 0.05, 80.0, 1.0) for _ in range(3 * 5)]
    base = rng.random((5, 3))
    for k, t in enumerate([0.0, 0.033, 0.07, 0.07, 0.1, 0.05, 0.2]):
        xyz = base + rng.normal(0, 0.02, base.shape) * k
        out = filters.apply(LandmarkList.from_arrays(xyz), t, (640, 480), None).columns()[0]
        px = (xyz * [640, 480, 640]).astype(np.float32).astype(np.float64)
        scale = (np.ptp(px[:, 0]) + np.ptp(px[:, 1])) / 2.0
        want = [f.apply(t, 1.0 / float(np.float32(scale)), float(v)) for f, v in zip(scalar, px.ravel(), strict=True)]
        np.testing.assert_array_equal(out, np.array(want).reshape(5, 3) / [640, 480, 640])
    lp, lps = LowPassFilter(0.1), [LowPassFilter(0.1) for _ in range(4)]
    for v in rng.random((3, 4)):
        assert lp.apply(v).tolist() == [f.apply(float(x)) for f, x in zip(lps, v, strict=True)]


def test_segmentation_smoothing_blends_only_where_the_new_mask_is_unsure():
    new = np.array([0.5, 0.0, 1.0], np.float32)
    prev = np.array([1.0, 1.0, 0.0], np.float32)
    out = smooth_mask(new, prev, 0.7)
    assert out[0] == pytest.approx(0.5 + 0.5 * 0.7, abs=1e-5)      # p = 0.5: fully uncertain
    # p = 0 or 1: MediaPipe's polynomial gives an uncertainty of 1 - 0.9999, not exactly 0
    assert out[1] == pytest.approx(0.0, abs=1e-4) and out[2] == pytest.approx(1.0, abs=1e-4)


def test_world_landmarks_are_rotated_back_not_scaled_or_moved():
    lms = LandmarkList((NormalizedLandmark(1.0, 0.0, 0.3, 0.9), NormalizedLandmark(0.0, -2.0, -0.1)))
    out = rotate_world_landmarks(lms, math.pi / 2)        # MediaPipe: x' = cos x - sin y, y' = sin x + cos y
    assert out[0].x == pytest.approx(0.0, abs=1e-7) and out[0].y == pytest.approx(1.0)
    assert out[1].x == pytest.approx(2.0) and out[1].y == pytest.approx(0.0, abs=1e-7)
    assert (out[0].z, out[0].visibility, out[1].z) == (pytest.approx(0.3), 0.9, pytest.approx(-0.1))
    source = LandmarkList((NormalizedLandmark(0.5, 0.5, visibility=0.2, presence=0.7),) * 2)
    copied = copy_visibility(source, lms)
    assert [(p.x, p.visibility, p.presence) for p in copied] == [(1.0, 0.2, 0.7), (0.0, 0.2, 0.7)]
    with pytest.raises(PipelineValueError, match="1 landmarks to copy from, 2 to copy to"):
        copy_visibility(LandmarkList(source.landmarks[:1]), lms)
