"""gpulite.tasks against mediapipe 1.2.2's Tasks: frames per second, side by side, same run.

mediapipe 1.2.2 cannot share a venv with the test suite's mediapipe 0.10.14, so it runs in a
worker process of its own venv (``--mediapipe-python``, default ``/work/venvs/mp122/bin/python``;
make one with ``python3 -m venv V && V/bin/pip install mediapipe==1.2.2``) that speaks this
script's line protocol. Both APIs are driven by the same code (:func:`build`: the task class,
its options and the method by name, as in :data:`TASKS`), in IMAGE mode on the test photos in
turn. gpulite and MediaPipe get the same frame in turn, frame by frame, so a slow phase of the
machine hits both alike; frames/s is one over the median time of each side's calls after a
warm-up. MediaPipe runs on its CPU path (XNNPACK); gpulite on the backend named
(``BaseOptions.backend``; the default, as ``BaseOptions`` without one: litert where installed).

    python benchmarks/tasks.py                                  # every task, 30 frames, litert
    python benchmarks/tasks.py --backends litert cpu --tasks image_classifier --frames 50

To add a task: an entry in :data:`TASKS` (the zoo model, the class, its options, the method).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ("astronaut.png", "chelsea.png", "coffee.png")
DEFAULT_MP_PYTHON = "/work/venvs/mp122/bin/python"

# name -> (zoo model, task class, options class, method, options)
TASKS: dict[str, tuple[str, str, str, str, dict]] = {
    "image_classifier": ("efficientnet_lite0", "ImageClassifier", "ImageClassifierOptions", "classify",
                         {"max_results": 3}),
    "image_classifier_int8": ("efficientnet_lite0_int8", "ImageClassifier", "ImageClassifierOptions", "classify",
                              {"max_results": 3}),
    "object_detector": ("efficientdet_lite0_int8", "ObjectDetector", "ObjectDetectorOptions", "detect",
                        {"max_results": 5, "score_threshold": 0.3}),
    "object_detector_all": ("efficientdet_lite0_int8", "ObjectDetector", "ObjectDetectorOptions", "detect",
                            {"max_results": 5}),  # MediaPipe's default threshold 0.0: every anchor is a candidate
    "image_embedder": ("efficientnet_lite0", "ImageEmbedder", "ImageEmbedderOptions", "embed",
                       {"l2_normalize": True}),
}


def build(api: str, name: str, model_path: str, backend: str | None):
    """The task ``name`` of :data:`TASKS` made through ``api`` ("gpulite" or "mediapipe"), and its method."""
    _, cls, opts, method, kwargs = TASKS[name]
    if api == "mediapipe":
        from mediapipe.tasks import python
        from mediapipe.tasks.python import vision
        base = python.BaseOptions(model_asset_path=model_path)
    else:
        from gpulite.tasks import python
        from gpulite.tasks.python import vision
        base = python.BaseOptions(model_asset_path=model_path, backend=backend)
    task = getattr(vision, cls).create_from_options(getattr(vision, opts)(base_options=base, **kwargs))
    return task, getattr(task, method)


def load_images(api: str) -> list:
    mp = __import__("mediapipe" if api == "mediapipe" else "gpulite")
    return [mp.Image.create_from_file(str(ROOT / "tests" / "data" / "images" / n)) for n in IMAGES]


def worker(name: str, model_path: str) -> None:
    """The mediapipe side: build, say ``ready``, then time one call per line read (the frame's
    index) and answer with the seconds it took."""
    import os

    _task, run = build("mediapipe", name, model_path, None)  # kept alive while it runs
    images = load_images("mediapipe")
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        image = images[int(line) % len(images)]
        t = time.perf_counter()
        run(image)
        print(f"{time.perf_counter() - t:.9f}", flush=True)
    os._exit(0)  # mediapipe's dispatcher threads can hold up an orderly exit


class MediaPipeWorker:
    def __init__(self, python: str, name: str, model_path: str) -> None:
        self.p = subprocess.Popen([python, __file__, "--worker", name, model_path], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.p.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"the mediapipe worker ({python}) did not start: {line!r}")

    def frame(self, i: int) -> float:
        self.p.stdin.write(f"{i}\n")
        self.p.stdin.flush()
        return float(self.p.stdout.readline())

    def close(self) -> None:
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        self.p.wait(timeout=30)


def bench(name: str, backend: str, frames: int, warmup: int, mp_python: str) -> tuple[float, float]:
    """(gpulite frames/s, mediapipe frames/s) from median frame times, frames interleaved."""
    from gpulite import zoo

    model_path = str(zoo.resolve(TASKS[name][0]))
    task, run = build("gpulite", name, model_path, backend)
    images = load_images("gpulite")
    mp = MediaPipeWorker(mp_python, name, model_path)
    ours, theirs = [], []
    try:
        for i in range(warmup + frames):
            t = time.perf_counter()
            run(images[i % len(images)])
            dt = time.perf_counter() - t
            their = mp.frame(i)
            if i >= warmup:
                ours.append(dt)
                theirs.append(their)
    finally:
        mp.close()
        task.close()
    return 1.0 / statistics.median(ours), 1.0 / statistics.median(theirs)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--worker"]:
        worker(args[1], args[2])
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    p.add_argument("--backends", nargs="+", default=["litert"])
    p.add_argument("--frames", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--mediapipe-python", default=DEFAULT_MP_PYTHON)
    a = p.parse_args(args)
    print(f"{'task':<24} {'backend':<8} {'gpulite f/s':>12} {'mediapipe f/s':>14} {'ratio':>7}")
    for name in a.tasks:
        for backend in a.backends:
            ours, theirs = bench(name, backend, a.frames, a.warmup, a.mediapipe_python)
            print(f"{name:<24} {backend:<8} {ours:>12.1f} {theirs:>14.1f} {ours / theirs:>6.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
