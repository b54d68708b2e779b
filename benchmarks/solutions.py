"""The solutions against MediaPipe 0.10.14's Python solutions: frames per second, side by side.

Face detection, face mesh (plain and ``refine_landmarks=True``), hands, pose (with segmentation)
and selfie segmentation, each in video mode on the 640x480 test clip (astronaut.png moving, turning and zooming:
tests/solutions/video.py), on the backend gpulite picks by default (``auto``: the fastest measured
on this machine on first use, gpulite/solutions/auto.py; the benchmark installs
gpulite's ``litert`` extra when it is missing), or on the ones named. gpulite and MediaPipe get the
same frame in turn, frame by frame, so a slow phase of the machine hits both alike; the
frames/s of each is one over the median time of its own ``process`` calls, after a warm-up
(graph start, pipeline compilation), so that a frame during which another process took the
core does not weigh. The last columns give the ratio of the mean frame times too, and of the
mean CPU time per frame (the process's, all threads: what each costs the machine, which a
loaded machine's waits do not inflate; MediaPipe runs its graph on threads of its own,
gpulite on the calling thread). Ratios, not absolute numbers, are comparable between machines.
MediaPipe runs on its CPU path (XNNPACK) in both rows.

    python benchmarks/solutions.py                         # 30 frames on the auto backend
    python benchmarks/solutions.py --backends cpu webgpu   # 30 frames on cpu, 5 on webgpu
    python benchmarks/solutions.py --frames 60 --backends cpu --solutions pose hands
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere in a checkout

import numpy as np

log = logging.getLogger("benchmarks.solutions")


@dataclass(frozen=True)
class Case:
    """One solution: how to build gpulite's (for a backend) and MediaPipe's."""

    name: str
    gpulite: Callable[[str], object]
    mediapipe: Callable[[], object]


def cases() -> list[Case]:
    import mediapipe as mp

    from gpulite import solutions as gs

    return [
        Case("face_detection", lambda b: gs.FaceDetector(model="short", backend=b),
             lambda: mp.solutions.face_detection.FaceDetection(model_selection=0)),
        Case("face_mesh", lambda b: gs.FaceMesh(backend=b), lambda: mp.solutions.face_mesh.FaceMesh()),
        Case("face_mesh_refined", lambda b: gs.FaceMesh(refine_landmarks=True, backend=b),
             lambda: mp.solutions.face_mesh.FaceMesh(refine_landmarks=True)),
        Case("hands", lambda b: gs.Hands(backend=b), lambda: mp.solutions.hands.Hands()),
        Case("pose", lambda b: gs.Pose(enable_segmentation=True, backend=b),
             lambda: mp.solutions.pose.Pose(enable_segmentation=True)),
        Case("selfie_segmentation", lambda b: gs.SelfieSegmentation(model="general", backend=b),
             lambda: mp.solutions.selfie_segmentation.SelfieSegmentation(model_selection=0)),
    ]


@dataclass
class Row:
    solution: str
    backend: str
    frames: int
    gpulite_fps: float | None
    mediapipe_fps: float
    note: str = ""
    mean_ratio: float | None = None  # the same ratio from mean frame times
    cpu_ratio: float | None = None  # MediaPipe's mean CPU time per frame over gpulite's

    @property
    def ratio(self) -> float | None:
        return self.gpulite_fps / self.mediapipe_fps if self.gpulite_fps else None


def measure(case: Case, backend: str, frames: list[np.ndarray], warmup: int) -> Row:
    """Frames/s of gpulite and MediaPipe on ``frames``, fed to both in turn."""
    ref = case.mediapipe()
    try:
        ours = case.gpulite(backend)
    except (ImportError, RuntimeError, ValueError) as e:
        ref.close()
        return Row(case.name, backend, 0, None, 0.0, f"gpulite: {e}")
    spent: dict[str, list[float]] = {"gpulite": [], "mediapipe": []}
    cpu: dict[str, list[float]] = {"gpulite": [], "mediapipe": []}
    try:
        for i, f in enumerate([*frames[:warmup], *frames]):
            for name, sol in (("gpulite", ours), ("mediapipe", ref)):
                t0, c0 = time.perf_counter(), time.process_time()
                sol.process(f)
                if i >= warmup:
                    spent[name].append(time.perf_counter() - t0)
                    cpu[name].append(time.process_time() - c0)
    finally:
        ours.close()
        ref.close()
    used = backend if backend != "auto" else f"auto:{getattr(ours, 'backend', '?')}"
    ours_t, theirs_t = np.array(spent["gpulite"]), np.array(spent["mediapipe"])
    return Row(case.name, used, len(frames), 1 / float(np.median(ours_t)), 1 / float(np.median(theirs_t)),
               mean_ratio=float(theirs_t.mean() / ours_t.mean()),
               cpu_ratio=float(np.mean(cpu["mediapipe"]) / max(np.mean(cpu["gpulite"]), 1e-9)))


def table(rows: list[Row]) -> list[str]:
    lines = [f"{'solution':<21}{'backend':<13}{'frames':>7}{'gpulite fps':>13}{'MediaPipe fps':>15}"
             f"{'gpulite/MediaPipe':>19}{'(means)':>9}{'(cpu)':>8}", "-" * 105]
    for r in rows:
        fps = f"{r.gpulite_fps:13.1f}" if r.gpulite_fps else f"{'-':>13}"
        ratio = f"{r.ratio:18.2f}x" if r.ratio else f"{'-':>19}"
        means = f"{r.mean_ratio:8.2f}x" if r.mean_ratio else f"{'-':>9}"
        cpu = f"{r.cpu_ratio:7.2f}x" if r.cpu_ratio else f"{'-':>8}"
        lines.append(f"{r.solution:<21}{r.backend:<13}{r.frames:>7}{fps}{r.mediapipe_fps:15.1f}{ratio}{means}{cpu}")
    lines += [f"note: {r.solution} on {r.backend}: {r.note}" for r in rows if r.note]
    return lines


def ensure_litert() -> None:
    """Install gpulite's ``litert`` extra (the pinned ai-edge-litert) when it is missing, as a user would."""
    import importlib.util
    import subprocess
    import tomllib

    if importlib.util.find_spec("ai_edge_litert") is not None:
        return
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    reqs = project["project"]["optional-dependencies"]["litert"]
    print(f"installing {' '.join(reqs)} (gpulite[litert]) for the auto backend", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", *reqs], check=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=30, help="timed frames on cpu and litert (default 30)")
    p.add_argument("--webgpu-frames", type=int, default=5, help="timed frames on webgpu (default 5; lavapipe is slow)")
    p.add_argument("--warmup", type=int, default=2, help="untimed frames first (default 2)")
    p.add_argument("--backends", nargs="+", default=["auto"], choices=["auto", "cpu", "webgpu", "litert"])
    p.add_argument("--solutions", nargs="+", help="subset of: face_detection face_mesh face_mesh_refined hands pose "
                   "selfie_segmentation")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")

    from tests.solutions.video import make_frames

    if {"auto", "litert"} & set(args.backends):
        ensure_litert()

    selected = [c for c in cases() if not args.solutions or c.name in args.solutions]
    rows = []
    for backend in args.backends:
        n = args.webgpu_frames if backend == "webgpu" else args.frames
        frames = make_frames(n + args.warmup)[args.warmup:] if n else []
        for case in selected:
            log.info("%s on %s: %d frames", case.name, backend, n)
            rows.append(measure(case, backend, frames, args.warmup))
    print("video mode, 640x480 frames (tests/solutions/video.py); MediaPipe 0.10.14 on its CPU path; "
          "fps = 1 / median frame time; ratio > 1: gpulite faster; (cpu): by mean process CPU time per frame")
    if hasattr(os, "getloadavg"):
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores when the run ended")
    for line in table(rows):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
