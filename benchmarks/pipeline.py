"""Frames/s of the face detection graph against MediaPipe's own solution, in one run.

    python benchmarks/pipeline.py                  # cpu, webgpu and MediaPipe, 100 frames, 3 rounds
    python benchmarks/pipeline.py --frames 200 --rounds 5 --backends cpu mediapipe

Builds a 640x480 H.264 video from ``astronaut.png`` with PyAV (the face moves and changes
size from frame to frame), decodes it once into memory, then times, per backend and round,
every frame through ``gpulite/pipeline/graphs/face_detection.yaml`` (first packet in to last
detections out, after a few warm-up frames) and MediaPipe 0.10.14's
``mp.solutions.face_detection.FaceDetection(model_selection=0).process`` on the same frames.
Rounds alternate between backends so background load hits all alike; the table shows the
median round. It also checks that gpulite finds what MediaPipe finds (same face count per
frame, mean IoU of matched boxes, largest score difference).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpulite.pipeline import Graph
from gpulite.pipeline.calculators.sinks import VideoWriter
from gpulite.pipeline.calculators.sources import VideoReader
from gpulite.pipeline.calculators.types import Detection, RelativeBox

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ROOT / "gpulite" / "pipeline" / "graphs" / "face_detection.yaml"
WARMUP = 5


def find_image(name: str = "astronaut.png") -> Path:
    path = ROOT / "tests" / "data" / "images" / name
    if not path.is_file():
        raise FileNotFoundError(f"{name} not found under {path.parent}")
    return path


def make_video(path: Path, frames: int = 100, size: tuple[int, int] = (640, 480)) -> None:
    """A video of the astronaut photo drifting and zooming over a grey background.

    The photo is scaled to 1.0-1.6x the frame height and placed so the face (at about
    (0.44, 0.25) of the photo) wanders around the upper middle of the frame.
    """
    src = Image.open(find_image()).convert("RGB")
    w, h = size
    with VideoWriter(path, fps=30) as out:
        for k in range(frames):
            t = k / max(frames - 1, 1)
            side = int(h * (1.3 + 0.3 * math.sin(2 * math.pi * t)))
            cx = w / 2 + 0.25 * w * math.sin(3 * math.pi * t)
            cy = 0.4 * h + 0.1 * h * math.cos(2 * math.pi * t)
            canvas = Image.new("RGB", size, (90, 90, 90))
            canvas.paste(src.resize((side, side), Image.BILINEAR), (int(cx - 0.44 * side), int(cy - 0.25 * side)))
            out.write(np.asarray(canvas))


def run_gpulite(frames: list[np.ndarray], backend: str) -> tuple[float, list[list[Detection]]]:
    """Seconds for all frames through the graph (after warm-up) and the detections per frame."""
    g = Graph.from_config(GRAPH, side_packets={"backend": backend})
    results: dict[int, list[Detection]] = {}
    g.observe("detections", lambda p: results.__setitem__(p.timestamp, p.payload))
    g.start()
    for i in range(WARMUP):  # pipelines compiled, caches warm; not timed
        g.add_packet("image", frames[i % len(frames)], timestamp=i)
    while len(results) < WARMUP:
        time.sleep(0.001)
    t0 = time.perf_counter()
    for i, f in enumerate(frames):
        g.add_packet("image", f, timestamp=WARMUP + i)
    g.close()
    dt = time.perf_counter() - t0
    return dt, [results[WARMUP + i] for i in range(len(frames))]


def run_mediapipe(frames: list[np.ndarray]) -> tuple[float, list[list[Detection]]]:
    import mediapipe as mp

    out = []
    with mp.solutions.face_detection.FaceDetection(model_selection=0) as fd:
        for i in range(WARMUP):
            fd.process(frames[i % len(frames)])
        t0 = time.perf_counter()
        raw = [fd.process(f).detections or [] for f in frames]
        dt = time.perf_counter() - t0
    for dets in raw:
        out.append([Detection(RelativeBox(b.xmin, b.ymin, b.width, b.height), (), d.score[0])
                     for d in dets for b in [d.location_data.relative_bounding_box]])
    return dt, out


def agreement(ours: list[list[Detection]], ref: list[list[Detection]]) -> str:
    same = sum(len(a) == len(b) for a, b in zip(ours, ref, strict=True))
    ious, dscore = [], 0.0
    for a, b in zip(ours, ref, strict=True):
        for d in a:
            if b:
                best = max(b, key=lambda r: d.box.iou(r.box))
                ious.append(d.box.iou(best.box))
                dscore = max(dscore, abs(d.score - best.score))
    iou = f"{statistics.mean(ious):.4f}" if ious else "-"
    return f"{same}/{len(ref)} frames same count, mean IoU {iou}, max |dscore| {dscore:.4f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--backends", nargs="+", default=["cpu", "webgpu", "mediapipe"])
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        video = Path(tmp) / "astronaut_640x480.mp4"
        make_video(video, a.frames)
        with VideoReader(video) as reader:
            frames = [f for _, f in reader]
    print(f"video: {len(frames)} frames of {frames[0].shape[1]}x{frames[0].shape[0]} (H.264, decoded up front)")
    times: dict[str, list[float]] = {b: [] for b in a.backends}
    dets: dict[str, list[list[Detection]]] = {}
    for _ in range(a.rounds):
        for b in a.backends:
            dt, d = run_mediapipe(frames) if b == "mediapipe" else run_gpulite(frames, b)
            times[b].append(dt)
            dets[b] = d
    ref = times.get("mediapipe")
    mp_fps = len(frames) / statistics.median(ref) if ref else None
    print(f"\n| backend | frames/s (median of {a.rounds}) | ms/frame | vs MediaPipe | detections vs MediaPipe |")
    print("|---|---|---|---|---|")
    for b in a.backends:
        fps = len(frames) / statistics.median(times[b])
        ratio = f"{fps / mp_fps:.2f}x" if mp_fps else "-"
        agree = agreement(dets[b], dets["mediapipe"]) if "mediapipe" in dets and b != "mediapipe" else "-"
        print(f"| {b} | {fps:.1f} | {1e3 / fps:.2f} | {ratio} | {agree} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
