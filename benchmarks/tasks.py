"""gpulite.tasks against mediapipe 1.2.2's own Tasks: frames per second, side by side.

Each task in VIDEO mode on the 640x480 test clip (tests/solutions/video.py), on the gpulite
backends named (default: litert, the CPU path MediaPipe's own is), against mediapipe 1.2.2 on
its CPU path (XNNPACK). mediapipe 1.2.2 cannot share a venv with the 0.10.14 the tests use, so it
runs in its own venv as a worker process that holds the same frames (handed over once in a
temporary .npz) and the same models (the zoo's files); the two get each frame in turn, frame by
frame, so a slow phase of the machine hits both alike. Each side's frames/s is one over the
median of its own frame times (the worker times its own call), after a warm-up; the next column
gives the ratio of the mean frame times too, and the last the ratio of the median CPU time a
frame costs each process (``time.process_time``: every thread of it, so XNNPACK's and MediaPipe's
graph threads count), which waiting for a busy core does not inflate: on a loaded machine it
tells the work apart from the waiting. Ratios, not absolute numbers, are comparable between
machines.

    python3.11 -m venv /work/venvs/mp122 && /work/venvs/mp122/bin/pip install mediapipe==1.2.2
    python benchmarks/tasks.py --mediapipe-python /work/venvs/mp122/bin/python
    python benchmarks/tasks.py --mediapipe-python ... --backends litert cpu --tasks face_landmarker --frames 60
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere in a checkout

import numpy as np

TASKS = ("face_detector", "face_landmarker", "hand_landmarker", "pose_landmarker", "image_segmenter",
         "image_classifier", "image_classifier_int8", "object_detector", "object_detector_all", "image_embedder")
MODELS = {"face_detector": "blaze_face_short_range", "face_landmarker": "face_landmarker",
          "hand_landmarker": "hand_landmarker", "pose_landmarker": "pose_landmarker_full",
          "image_segmenter": "selfie_segmenter", "image_classifier": "efficientnet_lite0",
          "image_classifier_int8": "efficientnet_lite0_int8", "object_detector": "efficientdet_lite0_int8",
          "object_detector_all": "efficientdet_lite0_int8", "image_embedder": "efficientnet_lite0"}


def make(vision, python, name: str, model: str, **base):
    """The task ``name`` in VIDEO mode, built with ``vision``/``python`` (gpulite's or mediapipe's), and its call."""
    mode = vision.RunningMode.VIDEO
    b = python.BaseOptions(model_asset_path=model, **base)
    if name == "face_detector":
        t = vision.FaceDetector.create_from_options(vision.FaceDetectorOptions(base_options=b, running_mode=mode))
        return t, t.detect_for_video
    if name == "face_landmarker":
        t = vision.FaceLandmarker.create_from_options(vision.FaceLandmarkerOptions(
            base_options=b, running_mode=mode, output_face_blendshapes=True,
            output_facial_transformation_matrixes=True))
        return t, t.detect_for_video
    if name == "hand_landmarker":
        t = vision.HandLandmarker.create_from_options(vision.HandLandmarkerOptions(
            base_options=b, running_mode=mode, num_hands=2))
        return t, t.detect_for_video
    if name == "pose_landmarker":
        t = vision.PoseLandmarker.create_from_options(vision.PoseLandmarkerOptions(
            base_options=b, running_mode=mode, output_segmentation_masks=True))
        return t, t.detect_for_video
    if name.startswith("image_classifier"):
        t = vision.ImageClassifier.create_from_options(vision.ImageClassifierOptions(
            base_options=b, running_mode=mode, max_results=3))
        return t, t.classify_for_video
    if name.startswith("object_detector"):  # _all: MediaPipe's default threshold 0.0, every anchor a candidate
        extra = {} if name == "object_detector_all" else {"score_threshold": 0.3}
        t = vision.ObjectDetector.create_from_options(vision.ObjectDetectorOptions(
            base_options=b, running_mode=mode, max_results=5, **extra))
        return t, t.detect_for_video
    if name == "image_embedder":
        t = vision.ImageEmbedder.create_from_options(vision.ImageEmbedderOptions(
            base_options=b, running_mode=mode, l2_normalize=True))
        return t, t.embed_for_video
    t = vision.ImageSegmenter.create_from_options(vision.ImageSegmenterOptions(
        base_options=b, running_mode=mode, output_category_mask=True))
    return t, t.segment_for_video


def worker(frames_path: str, models: dict[str, str]) -> None:  # pragma: no cover (mediapipe 1.2.2's venv)
    """Read "TASK INDEX" lines; run that frame through mediapipe's task; answer with the seconds it took."""
    import mediapipe as mp
    from mediapipe.tasks import python
    from mediapipe.tasks.python import vision

    frames = np.load(frames_path)["frames"]
    tasks: dict = {}
    for line in sys.stdin:
        name, index = line.split()
        if name not in tasks:
            for t, _ in tasks.values():
                t.close()
            tasks = {name: make(vision, python, name, models[name])}
        _, call = tasks[name]
        i = int(index)
        img = mp.Image(image_format=mp.ImageFormat.SRGB, data=frames[i])
        t0, c0 = time.perf_counter(), time.process_time()
        call(img, 33 * i)
        print(time.perf_counter() - t0, time.process_time() - c0, flush=True)


def measure(name: str, backend: str, frames: list[np.ndarray], warmup: int,
            mp_worker) -> tuple[float, float, float, float]:
    """(gpulite fps, mediapipe fps, ratio of mean frame times, ratio of median CPU times a frame)."""
    import gpulite as gmp
    from gpulite.tasks import python
    from gpulite.tasks.python import vision

    task, call = make(vision, python, name, MODELS[name], backend=backend)
    spent: dict[str, list[tuple[float, float]]] = {"gpulite": [], "mediapipe": []}
    try:
        for i, f in enumerate(frames):
            img = gmp.Image(image_format=gmp.ImageFormat.SRGB, data=f)
            t0, c0 = time.perf_counter(), time.process_time()
            call(img, 33 * i)
            ours = (time.perf_counter() - t0, time.process_time() - c0)
            mp_worker.stdin.write(f"{name} {i}\n")
            mp_worker.stdin.flush()
            wall, cpu = mp_worker.stdout.readline().split()
            if i >= warmup:
                spent["gpulite"].append(ours)
                spent["mediapipe"].append((float(wall), float(cpu)))
    finally:
        task.close()
    o, t = np.array(spent["gpulite"]), np.array(spent["mediapipe"])
    return (1 / float(np.median(o[:, 0])), 1 / float(np.median(t[:, 0])), float(t[:, 0].mean() / o[:, 0].mean()),
            float(np.median(t[:, 1]) / np.median(o[:, 1])))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mediapipe-python", default=os.environ.get("GPULITE_MEDIAPIPE_TASKS_PYTHON"),
                   help="the python of a venv with mediapipe==1.2.2 (or $GPULITE_MEDIAPIPE_TASKS_PYTHON)")
    p.add_argument("--frames", type=int, default=30, help="timed frames (default 30; webgpu: 5)")
    p.add_argument("--warmup", type=int, default=2, help="untimed frames first (default 2)")
    p.add_argument("--backends", nargs="+", default=["litert"], choices=["cpu", "litert", "webgpu", "auto"])
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker[0], json.loads(args.worker[1]))
        return 0
    if not args.mediapipe_python:
        p.error("--mediapipe-python (a venv with mediapipe==1.2.2) is required")
    from gpulite import zoo
    from tests.solutions.video import make_frames

    models = {name: str(zoo.resolve(MODELS[name])) for name in args.tasks}
    n = max(args.frames if b != "webgpu" else 5 for b in args.backends) + args.warmup
    frames = make_frames(n)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "frames.npz", frames=np.stack(frames))
        env = {**os.environ, "GLOG_minloglevel": "2"}
        with subprocess.Popen([args.mediapipe_python, __file__, "--worker", str(Path(tmp) / "frames.npz"),
                               json.dumps(models)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=env) as mp_worker:
            for backend in args.backends:
                count = (5 if backend == "webgpu" else args.frames) + args.warmup
                for name in args.tasks:
                    rows.append((name, backend, count - args.warmup,
                                 *measure(name, backend, frames[:count], args.warmup, mp_worker)))
            mp_worker.stdin.close()
    print("VIDEO mode, 640x480 frames (tests/solutions/video.py); mediapipe 1.2.2 on its CPU path in its own "
          "process; fps = 1 / median frame time; ratio > 1: gpulite faster; (cpu): mediapipe's median CPU time a "
          "frame over gpulite's")
    print(f"{'task':<22}{'backend':<9}{'frames':>7}{'gpulite fps':>13}{'mediapipe fps':>15}"
          f"{'gpulite/mediapipe':>19}{'(means)':>9}{'(cpu)':>8}")
    print("-" * 102)
    for name, backend, count, ours, theirs, means, cpu in rows:
        print(f"{name:<22}{backend:<9}{count:>7}{ours:13.1f}{theirs:15.1f}{ours / theirs:18.2f}x{means:8.2f}x"
              f"{cpu:7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
