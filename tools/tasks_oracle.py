"""Record mediapipe 1.2.2's Tasks results on the test photos and clip: tests/data/tasks/.

mediapipe 1.2.2 cannot share a venv with the mediapipe 0.10.14 the other tests use, so its
results are recorded once, here, and committed (tests/tasks/ compare gpulite against them).
Run from the repository root in the project's venv, naming a venv that has mediapipe==1.2.2::

    python3.11 -m venv /work/venvs/mp122 && /work/venvs/mp122/bin/pip install mediapipe==1.2.2
    python tools/tasks_oracle.py --mediapipe-python /work/venvs/mp122/bin/python

The frames are made here (tests/solutions/video.py's clips, as the tests make them; the person
clips from a video the zoo fetches) and handed to the mediapipe process in a temporary .npz; the
models are the zoo's (``gpulite.zoo``, pinned by sha256). Writes ``oracle.npz`` (float arrays; masks as packed bits)
and ``oracle.json`` (counts, names, error types and messages, the sha256 of every input).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "tasks"
PHOTOS = ("astronaut", "chelsea", "coffee")
CLIP_FRAMES = 24
# the clips of one fully visible person (tests/solutions/video.py): key prefix -> (frame maker, frames);
# the PoseLandmarker's VIDEO mode is recorded on them
PERSON_CLIPS = {"person": ("person_frames", 16), "person_still": ("person_still_frames", 24)}
MODELS = ("face_landmarker", "hand_landmarker", "pose_landmarker_full", "blaze_face_short_range", "selfie_segmenter")


def inputs() -> dict[str, np.ndarray]:
    """The images the oracle and the tests share: the photos, the clip's frames, the person clips' frames."""
    sys.path.insert(0, str(ROOT))
    from PIL import Image

    from tests.solutions import video
    from tests.solutions.video import make_frames

    out = {f"photo/{n}": np.asarray(Image.open(ROOT / "tests" / "data" / "images" / f"{n}.png").convert("RGB"))
           for n in PHOTOS}
    for i, f in enumerate(make_frames(CLIP_FRAMES)):
        out[f"clip/{i:02d}"] = f
    for prefix, (make, n) in PERSON_CLIPS.items():
        out.update({f"{prefix}/{i:02d}": f for i, f in enumerate(getattr(video, make)(n))})
    return out


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


# -- the worker: runs in mediapipe 1.2.2's venv ----------------------------------------------------
def run_mediapipe(frames_path: str, models: dict[str, str], out_dir: str) -> None:  # pragma: no cover
    import mediapipe as mp
    from mediapipe.tasks import python
    from mediapipe.tasks.python import vision

    frames = dict(np.load(frames_path))
    photos = [k for k in frames if k.startswith("photo/")]
    clip = sorted(k for k in frames if k.startswith("clip/"))
    arrays: dict[str, np.ndarray] = {}
    meta: dict = {"mediapipe": mp.__version__, "inputs": {k: digest(v) for k, v in frames.items()}}
    Mode = vision.RunningMode  # noqa: N806
    base = lambda name: python.BaseOptions(model_asset_path=models[name])  # noqa: E731

    def image(key):
        return mp.Image(image_format=mp.ImageFormat.SRGB, data=np.ascontiguousarray(frames[key]))

    def lms(lists):
        return np.array([[[p.x, p.y, p.z] for p in pts] for pts in lists], np.float32).reshape(-1, n_of(lists), 3)

    def vis(lists):
        return np.array([[[p.visibility or 0.0, p.presence or 0.0] for p in pts] for pts in lists],
                        np.float32).reshape(-1, n_of(lists), 2)

    def n_of(lists):
        return len(lists[0]) if lists else 1

    def face(key, r):
        arrays[f"face_landmarker/{key}/landmarks"] = lms(r.face_landmarks)
        arrays[f"face_landmarker/{key}/blendshapes"] = np.array(
            [[c.score for c in b] for b in r.face_blendshapes], np.float32).reshape(-1, 52)
        arrays[f"face_landmarker/{key}/matrices"] = np.array(r.facial_transformation_matrixes,
                                                              np.float32).reshape(-1, 4, 4)
        if r.face_blendshapes:
            meta["blendshape_names"] = [c.category_name for c in r.face_blendshapes[0]]
            meta["blendshape_indices"] = [c.index for c in r.face_blendshapes[0]]

    def hands(key, r):
        arrays[f"hand_landmarker/{key}/landmarks"] = lms(r.hand_landmarks)
        arrays[f"hand_landmarker/{key}/world"] = lms(r.hand_world_landmarks)
        meta.setdefault("handedness", {})[key] = [[(c.index, c.score, c.category_name, c.display_name) for c in h]
                                                  for h in r.handedness]

    def pose(key, r):
        arrays[f"pose_landmarker/{key}/landmarks"] = lms(r.pose_landmarks)
        arrays[f"pose_landmarker/{key}/visibility"] = vis(r.pose_landmarks)
        arrays[f"pose_landmarker/{key}/world"] = lms(r.pose_world_landmarks)
        for i, m in enumerate(r.segmentation_masks or []):
            arrays[f"pose_landmarker/{key}/mask{i}"] = np.packbits(m.numpy_view()[..., 0] > 0.5)

    face_opts = dict(output_face_blendshapes=True, output_facial_transformation_matrixes=True)
    # the astronaut's gloved hand is found only with thresholds this low (as with the legacy solution)
    hand_opts = dict(num_hands=2, min_hand_detection_confidence=0.1, min_hand_presence_confidence=0.0,
                     min_tracking_confidence=0.1)  # 0 aborts mediapipe's process in VIDEO mode
    runs = [
        ("face_landmarker", vision.FaceLandmarker, vision.FaceLandmarkerOptions, face_opts, face),
        ("hand_landmarker", vision.HandLandmarker, vision.HandLandmarkerOptions, hand_opts, hands),
        ("pose_landmarker_full", vision.PoseLandmarker, vision.PoseLandmarkerOptions,
         dict(output_segmentation_masks=True), pose),
    ]
    for model, task, options, kw, record in runs:
        with task.create_from_options(options(base_options=base(model), **kw)) as t:
            for key in photos:
                record(key, t.detect(image(key)))
        with task.create_from_options(options(base_options=base(model), running_mode=Mode.VIDEO, **kw)) as t:
            for i, key in enumerate(clip):
                record("video/" + key, t.detect_for_video(image(key), 33 * i))

    for prefix in PERSON_CLIPS:
        with vision.PoseLandmarker.create_from_options(vision.PoseLandmarkerOptions(
                base_options=base("pose_landmarker_full"), running_mode=Mode.VIDEO)) as t:
            for i, key in enumerate(sorted(k for k in frames if k.startswith(prefix + "/"))):
                pose("video/" + key, t.detect_for_video(image(key), 33 * i))

    # two faces asked for: the detector runs on every frame, beside the tracked face (no smoothing then)
    with vision.FaceLandmarker.create_from_options(vision.FaceLandmarkerOptions(
            base_options=base("face_landmarker"), running_mode=Mode.VIDEO, num_faces=2)) as t:
        for i, key in enumerate(clip):
            faces = t.detect_for_video(image(key), 33 * i).face_landmarks
            arrays[f"face_landmarker2/video/{key}/landmarks"] = lms(faces)

    with vision.FaceDetector.create_from_options(
            vision.FaceDetectorOptions(base_options=base("blaze_face_short_range"))) as t:
        for key in photos + clip:
            dets = t.detect(image(key)).detections
            arrays[f"face_detector/{key}/boxes"] = np.array(
                [[d.bounding_box.origin_x, d.bounding_box.origin_y, d.bounding_box.width, d.bounding_box.height]
                 for d in dets], np.float32).reshape(-1, 4)
            arrays[f"face_detector/{key}/scores"] = np.array([d.categories[0].score for d in dets], np.float32)
            arrays[f"face_detector/{key}/keypoints"] = np.array(
                [[[k.x, k.y] for k in d.keypoints] for d in dets], np.float32).reshape(-1, 6, 2)

    with vision.ImageSegmenter.create_from_options(vision.ImageSegmenterOptions(
            base_options=base("selfie_segmenter"), output_confidence_masks=True, output_category_mask=True)) as t:
        meta["segmenter_labels"] = list(t.labels)
        for key in photos + clip[::6]:
            r = t.segment(image(key))
            arrays[f"image_segmenter/{key}/category"] = np.packbits(r.category_mask.numpy_view()[..., 0] > 0)
            values = np.unique(r.category_mask.numpy_view())
            meta.setdefault("category_values", {})[key] = sorted(int(v) for v in values)
            for i, m in enumerate(r.confidence_masks):
                arrays[f"image_segmenter/{key}/confidence{i}"] = np.packbits(m.numpy_view()[..., 0] > 0.5)

    from mediapipe.tasks.python.vision import drawing_styles

    meta["drawing_styles"] = {name: _specs(getattr(drawing_styles, name)()) for name in STYLES}
    np.savez_compressed(Path(out_dir) / "oracle.npz", **arrays)
    meta["errors"] = {}
    for case in ERROR_CASES:  # each in its own process: a failed mediapipe graph can hang or abort its process
        try:
            r = subprocess.run([sys.executable, __file__, "--error", case, frames_path, json.dumps(models)],
                               capture_output=True, text=True, timeout=120)
            lines = [ln for ln in r.stdout.splitlines() if ln.startswith("ERROR ")]
            meta["errors"][case] = json.loads(lines[-1][6:]) if lines else ["(process died)", str(r.returncode)]
        except subprocess.TimeoutExpired:
            meta["errors"][case] = ["(hung)", ""]
    (Path(out_dir) / "oracle.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")


STYLES = ("get_default_face_mesh_contours_style", "get_default_face_mesh_iris_connections_style",
          "get_default_face_mesh_tesselation_style", "get_default_hand_connections_style",
          "get_default_hand_landmarks_style", "get_default_pose_landmarks_style")


def _specs(style) -> object:
    """A drawing style as JSON: [color, thickness, circle_radius] per key (a key as its str)."""
    as_list = lambda s: [list(s.color), s.thickness, s.circle_radius]  # noqa: E731
    return as_list(style) if hasattr(style, "color") else {str(tuple(k) if isinstance(k, tuple) else int(k)): as_list(v)
                                                             for k, v in style.items()}


ERROR_CASES = ("detect_for_video in IMAGE mode", "detect_async in IMAGE mode", "detect in VIDEO mode",
               "callback in IMAGE mode", "no callback in LIVE_STREAM mode", "repeated timestamp", "missing file",
               "corrupt bundle", "wrong bundle", "bundle for a tflite task", "GRAY8 image", "VEC32F1 image")


def record_error(case: str, frames_path: str, models: dict[str, str]) -> None:  # pragma: no cover
    """Print mediapipe's exception type and message for one bad call (the tests make the same calls)."""
    import tempfile

    import mediapipe as mp
    from mediapipe.tasks import python
    from mediapipe.tasks.python import vision

    img = mp.Image(image_format=mp.ImageFormat.SRGB, data=np.ascontiguousarray(np.load(frames_path)["photo/astronaut"]))
    Mode = vision.RunningMode  # noqa: N806
    base = python.BaseOptions(model_asset_path=models["face_landmarker"])
    opts = vision.FaceLandmarkerOptions
    tmp = Path(tempfile.mkdtemp())
    (tmp / "junk.task").write_bytes(b"PK\x03\x04" + b"garbage" * 20)
    gray = mp.Image(image_format=mp.ImageFormat.GRAY8, data=np.zeros((64, 64), np.uint8))
    floats = mp.Image(image_format=mp.ImageFormat.VEC32F1, data=np.zeros((64, 64), np.float32))
    cases = {
        "detect_for_video in IMAGE mode": lambda: vision.FaceLandmarker.create_from_options(opts(base_options=base))
        .detect_for_video(img, 0),
        "detect_async in IMAGE mode": lambda: vision.FaceLandmarker.create_from_options(opts(base_options=base))
        .detect_async(img, 0),
        "detect in VIDEO mode": lambda: vision.FaceLandmarker.create_from_options(
            opts(base_options=base, running_mode=Mode.VIDEO)).detect(img),
        "callback in IMAGE mode": lambda: vision.FaceLandmarker.create_from_options(
            opts(base_options=base, result_callback=lambda *a: None)),
        "no callback in LIVE_STREAM mode": lambda: vision.FaceLandmarker.create_from_options(
            opts(base_options=base, running_mode=Mode.LIVE_STREAM)),
        "repeated timestamp": lambda: _twice(vision.FaceLandmarker.create_from_options(
            opts(base_options=base, running_mode=Mode.VIDEO)), img),
        "missing file": lambda: vision.FaceLandmarker.create_from_model_path("/nonexistent/none.task"),
        "corrupt bundle": lambda: vision.FaceLandmarker.create_from_model_path(str(tmp / "junk.task")),
        "wrong bundle": lambda: vision.FaceLandmarker.create_from_model_path(models["hand_landmarker"]),
        "bundle for a tflite task": lambda: vision.FaceDetector.create_from_model_path(models["face_landmarker"]),
        "GRAY8 image": lambda: vision.FaceDetector.create_from_model_path(models["blaze_face_short_range"])
        .detect(gray),
        "VEC32F1 image": lambda: vision.FaceDetector.create_from_model_path(models["blaze_face_short_range"])
        .detect(floats),
    }
    try:
        cases[case]()
        out = ["", ""]
    except Exception as e:  # recording whatever it raises is the point
        out = [type(e).__name__, str(e).splitlines()[0] if str(e) else ""]
    print("ERROR " + json.dumps(out), flush=True)
    os._exit(0)  # skip mediapipe's teardown, which can hang after a failed graph


def _twice(task, img):  # pragma: no cover
    task.detect_for_video(img, 5)
    task.detect_for_video(img, 5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mediapipe-python", help="the python of a venv with mediapipe==1.2.2")
    ap.add_argument("--worker", nargs=3, metavar=("FRAMES", "MODELS_JSON", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--error", nargs=3, metavar=("CASE", "FRAMES", "MODELS_JSON"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.error:
        record_error(args.error[0], args.error[1], json.loads(args.error[2]))
        return
    if args.worker:
        run_mediapipe(args.worker[0], json.loads(args.worker[1]), args.worker[2])
        return
    if not args.mediapipe_python:
        ap.error("--mediapipe-python is required")
    sys.path.insert(0, str(ROOT))
    from gpulite import zoo

    models = {name: str(zoo.resolve(name)) for name in MODELS}
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        frames = Path(tmp) / "frames.npz"
        np.savez(frames, **inputs())
        subprocess.run([args.mediapipe_python, __file__, "--worker", str(frames), json.dumps(models), str(OUT)],
                       check=True)
    print(f"wrote {OUT / 'oracle.npz'} and {OUT / 'oracle.json'}")


if __name__ == "__main__":
    main()
