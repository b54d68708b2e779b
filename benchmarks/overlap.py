"""Overlap: a solution over a clip frame by frame (``process``) vs overlapped (``process_video``: frame
N+1 queued on the GPU before frame N is read back), same frames, same run, in turns.

    python benchmarks/overlap.py                                   # FaceDetector, SelfieSegmentation on webgpu
    python benchmarks/overlap.py --solutions FaceMesh Pose --frames 20 --rounds 3

Prints, per solution, the median wall milliseconds per frame of each way over ``--rounds``
rounds (the ways alternate within a round, so a busy phase of the machine hits both alike), the
ratio sequential / overlapped (> 1: overlapping is faster) and the bytes up, bytes down and
submits per frame (webgpu). The results are checked equal frame by frame (tests/solutions/test_overlap.py tests
that too). Tracked solutions (FaceMesh, Hands, Pose) overlap little: a tracked frame's region
waits for the previous frame's landmarks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere in a checkout


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--solutions", nargs="+", default=["FaceDetector", "SelfieSegmentation"])
    p.add_argument("--backend", default="webgpu", choices=["webgpu", "cpu", "litert"])
    p.add_argument("--frames", type=int, default=30, help="frames of the test clip per pass (default 30)")
    p.add_argument("--rounds", type=int, default=5, help="passes of each way (default 5)")
    args = p.parse_args(argv)

    from gpulite import solutions
    from tests.solutions.video import make_frames

    frames = make_frames(args.frames)
    print(f"{'solution':<20} {'sequential ms':>14} {'overlapped ms':>14} {'ratio':>6}  per frame")
    for name in args.solutions:
        sol = getattr(solutions, name)(backend=args.backend)
        sol.process(frames[0])  # warm-up: pipelines compiled
        ways = {"sequential": lambda s=sol: [s.process(f) for f in frames],
                "overlapped": lambda s=sol: list(s.process_video(frames))}
        times: dict[str, list[float]] = {w: [] for w in ways}
        counted = args.backend == "webgpu"
        if counted:
            from gpulite.backends.webgpu.pipeline import transfer_stats
        transfers: dict[str, float] = {}
        for _ in range(args.rounds):
            got = {}
            for way, run in ways.items():
                sol.reset()
                before = transfer_stats() if counted else {}
                t0 = time.perf_counter()
                got[way] = run()
                times[way].append((time.perf_counter() - t0) * 1e3 / len(frames))
                if counted:
                    transfers = {k: (v - before[k]) / len(frames) for k, v in transfer_stats().items()}
            for a, b in zip(got["sequential"], got["overlapped"], strict=True):
                if repr(a) != repr(b):
                    print(f"{name}: overlapped results differ from sequential ones", file=sys.stderr)
                    return 1
        seq, ov = (statistics.median(times[w]) for w in ways)
        moved = ", ".join(f"{k} {v:g}" for k, v in transfers.items()) or "-"
        print(f"{name:<20} {seq:>14.2f} {ov:>14.2f} {seq / ov:>6.2f}  {moved}")
        sol.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
