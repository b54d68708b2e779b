"""Soak: 10,000 frames through FaceMesh and Pose, resident set size and GPU memory flat within 5% after warm-up.

    python benchmarks/soak.py                                  # 10,000 frames each on webgpu
    python benchmarks/soak.py --frames 500 --solutions face_mesh --backend cpu

Frames go forward and backward through the 640x480 test clip (tests/solutions/video.py), so
tracking runs as in a video. After ``--warmup`` frames a sample is taken every ``--every``
frames (after ``gc.collect()``): resident set size, and what wgpu counts alive in the process,
the bytes of its buffers and textures and the number of its objects (tests/solutions/soak.py).
Each quantity passes when its largest sample is within 5% of the first; the exit status is 1
if any fails. One JSON line per sample goes to ``--json`` when given. On lavapipe a FaceMesh
frame takes about 0.3 s and a Pose frame about 2 s: use ``--frames`` there (CI runs
tests/solutions/test_soak.py, a short loop of the same code).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere in a checkout

SOLUTIONS = {"face_mesh": ("FaceMesh", {}), "pose": ("Pose", {})}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=10_000, help="frames after the warm-up (default 10000)")
    p.add_argument("--warmup", type=int, default=100, help="frames before the first sample (default 100)")
    p.add_argument("--every", type=int, default=500, help="frames between samples (default 500)")
    p.add_argument("--backend", default="webgpu", choices=["webgpu", "cpu", "litert", "auto"])
    p.add_argument("--solutions", nargs="+", default=list(SOLUTIONS), choices=list(SOLUTIONS))
    p.add_argument("--json", help="write one JSON line per sample here")
    args = p.parse_args(argv)

    from gpulite import solutions
    from tests.solutions.soak import LIMIT, growth, soak, verdict
    from tests.solutions.video import make_frames

    clip = make_frames(60)
    failed = False
    out = open(args.json, "w") if args.json else None  # closed below
    try:
        for key in args.solutions:
            cls, kwargs = SOLUTIONS[key]
            t0 = time.perf_counter()
            with getattr(solutions, cls)(backend=args.backend, **kwargs) as sol:
                samples = soak(sol, clip, frames=args.frames, warmup=args.warmup, every=args.every)
                used = sol.backend
            secs = time.perf_counter() - t0
            print(f"{key} on {used}: {args.warmup} + {args.frames} frames in {secs:.0f} s "
                  f"({(args.warmup + args.frames) / secs:.1f} frames/s)")
            print(f"  {'frame':>7} {'RSS MiB':>9} {'GPU MiB':>9} {'GPU objects':>12}")
            for s in samples:
                print(f"  {s.frame:>7} {s.rss / 2**20:>9.1f} {s.gpu_bytes / 2**20:>9.2f} {s.gpu_objects:>12}")
                if out:
                    out.write(json.dumps({"solution": key, "backend": used, **dataclasses.asdict(s)}) + "\n")
            grew = ", ".join(f"{k} {100 * v:+.2f}%" for k, v in growth(samples).items())
            problems = verdict(samples)
            failed |= bool(problems)
            print(f"  largest growth after warm-up: {grew} -> "
                  + ("FLAT" if not problems else f"NOT FLAT (limit {100 * LIMIT:.0f}%): {'; '.join(problems)}"))
    finally:
        if out:
            out.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
