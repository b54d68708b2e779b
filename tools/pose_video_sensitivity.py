"""How far mediapipe 1.2.2's PoseLandmarker moves in VIDEO mode on a test clip when its input barely changes.

Per frame of a clip of tests/solutions/video.py (``--clip astronaut``: the astronaut clip, the
figures behind ``POSE_VIDEO_CHAOS`` in tests/tasks/test_vision_tasks.py; ``person``: the real
video of one fully visible person; ``person_still``: one of its frames moved like the
astronaut), the largest x or y difference (a fraction of the width)
between mediapipe's landmarks on the clip and on copies with a few pixels changed by one grey level,
between gpulite's cpu and litert backends (the same graph; the models differ in float rounding), and
between gpulite (cpu) and mediapipe. Run from the repository root in the project's venv::

    python tools/pose_video_sensitivity.py --mediapipe-python /work/venvs/mp122/bin/python --clip person_still

``--frames N`` sets the clip's length (default 24).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CLIPS = {"astronaut": "make_frames", "person": "person_frames", "person_still": "person_still_frames"}
CHANGES = ((1e-4, 0), (1e-4, 1), (1e-4, 2), (1e-2, 0))  # (fraction of the pixels changed, seed)


def perturbed(frames: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """``frames`` with ``fraction`` of the pixels one grey level up or down (each channel alike)."""
    rng = np.random.default_rng(seed)
    out = frames.astype(np.int16)
    hit = rng.random(out.shape[:3]) < fraction
    out[hit] += rng.choice([-1, 1], size=(int(hit.sum()), 1)).astype(np.int16)
    return np.clip(out, 0, 255).astype(np.uint8)


def landmarks(results) -> np.ndarray:
    """(frames, 33, 2) x, y of the first pose per frame (NaN where none)."""
    out = np.full((len(results), 33, 2), np.nan)
    for i, r in enumerate(results):
        if r.pose_landmarks:
            out[i] = [[p.x, p.y] for p in r.pose_landmarks[0]]
    return out


def run_mediapipe(frames_path: str, model: str, out_path: str) -> None:  # pragma: no cover (mediapipe's venv)
    import mediapipe as mp
    from mediapipe.tasks import python
    from mediapipe.tasks.python import vision

    def video(frames):
        opts = vision.PoseLandmarkerOptions(base_options=python.BaseOptions(model_asset_path=model),
                                            running_mode=vision.RunningMode.VIDEO)
        with vision.PoseLandmarker.create_from_options(opts) as t:
            return landmarks([t.detect_for_video(mp.Image(image_format=mp.ImageFormat.SRGB,
                                                          data=np.ascontiguousarray(f)), 33 * i)
                              for i, f in enumerate(frames)])

    frames = np.load(frames_path)
    runs = {"clip": video(frames)}
    for fraction, seed in CHANGES:
        runs[f"{fraction:g}/{seed}"] = video(perturbed(frames, fraction, seed))
    np.savez(out_path, **runs)


def run_gpulite(frames: np.ndarray, backend: str) -> np.ndarray:
    from gpulite.tasks import python
    from gpulite.tasks.python import vision
    from gpulite.tasks.vision.core.image import Image, ImageFormat

    opts = vision.PoseLandmarkerOptions(base_options=python.BaseOptions(model_asset_path="pose_landmarker_full",
                                                                        backend=backend),
                                        running_mode=vision.RunningMode.VIDEO)
    with vision.PoseLandmarker.create_from_options(opts) as t:
        return landmarks([t.detect_for_video(Image(ImageFormat.SRGB, f), 33 * i) for i, f in enumerate(frames)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mediapipe-python", help="the python of a venv with mediapipe==1.2.2")
    ap.add_argument("--clip", choices=sorted(CLIPS), default="astronaut", help="the clip (default: astronaut)")
    ap.add_argument("--frames", type=int, default=24, help="how many of its frames (default: 24)")
    ap.add_argument("--worker", nargs=3, metavar=("FRAMES", "MODEL", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        run_mediapipe(*args.worker)
        return
    if not args.mediapipe_python:
        ap.error("--mediapipe-python is required")
    sys.path.insert(0, str(ROOT))
    from gpulite import zoo
    from tests.solutions import video

    frames = np.stack(getattr(video, CLIPS[args.clip])(args.frames))
    with tempfile.TemporaryDirectory() as tmp:
        np.save(Path(tmp) / "frames.npy", frames)
        subprocess.run([args.mediapipe_python, __file__, "--worker", str(Path(tmp) / "frames.npy"),
                        str(zoo.resolve("pose_landmarker_full")), str(Path(tmp) / "mp.npz")], check=True)
        mp_runs = dict(np.load(Path(tmp) / "mp.npz"))
    ours = {b: run_gpulite(frames, b) for b in ("cpu", "litert")}

    def gap(a, b):
        return np.abs(a - b).max(axis=(1, 2))

    columns = {f"mediapipe, {k.split('/')[0]} of the pixels changed (seed {k.split('/')[1]})": gap(mp_runs["clip"], v)
               for k, v in mp_runs.items() if k != "clip"}
    columns["gpulite cpu vs litert"] = gap(ours["cpu"], ours["litert"])
    columns["gpulite cpu vs mediapipe"] = gap(ours["cpu"], mp_runs["clip"])
    print("largest landmark x/y difference per frame, a fraction of the width:")
    for name, values in columns.items():
        print(f"{name:>52}: " + " ".join(f"{v:.3f}" for v in values))


if __name__ == "__main__":
    main()
