"""The refined face mesh model on the ``litert`` backend: what its partitions cost, and what the
MediaPipe custom ops between them cost on numpy against the compiled loops.

``face_landmark_with_attention`` is cut into five partitions (LiteRT, cpu, LiteRT, cpu, LiteRT:
Landmarks2TransformMatrix, TransformTensorBilinear and TransformLandmarks run on gpulite's cpu
kernels). Three interpreters are timed in turn, invoke by invoke, in one process, so a busy phase
of a loaded machine hits them alike: the plain ``face_landmark`` (one partition), the attention
model with its custom ops on numpy and every LiteRT partition on ``--threads`` (how it ran
before the compiled custom ops and per-partition threads), and as it runs now. Per
interpreter: the median and minimum wall time of an invoke and the median CPU time of the
calling thread (what a loaded machine's waits do not inflate; with ``--threads`` above 1 the
XNNPACK workers' time is not in it). Then each partition of the attention model as it runs now.

    python benchmarks/litert_partitions.py                 # one thread, 300 invokes each
    python benchmarks/litert_partitions.py --threads 2 --invokes 500
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere in a checkout

import numpy as np

from gpulite import Interpreter, zoo
from gpulite.backends.litert import backend as litert_backend
from gpulite.environment import env


def interpreter(model: str, threads: int, x: np.ndarray, *, before: bool = False) -> Interpreter:
    """``model`` on the litert backend; ``before``: custom ops on numpy, every partition on ``threads``."""
    saved = litert_backend.SMALL_NODE_FLOPS
    if before:
        os.environ["GPULITE_CPU_JIT"] = "0"
        litert_backend.SMALL_NODE_FLOPS = 0
        env().reset()
    try:
        it = Interpreter(model_path=zoo.resolve(model), backend="litert", num_threads=threads)
        it.allocate_tensors()
    finally:
        if before:
            del os.environ["GPULITE_CPU_JIT"]
            litert_backend.SMALL_NODE_FLOPS = saved
            env().reset()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    return it


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1, help="the litert backend's num_threads (default 1)")
    p.add_argument("--invokes", type=int, default=300, help="timed invokes of each interpreter (default 300)")
    args = p.parse_args(argv)
    x = np.random.default_rng(0).uniform(0, 1, (1, 192, 192, 3)).astype(np.float32)
    its = {"face_landmark": interpreter("face_landmark", args.threads, x),
           "attention, before": interpreter("face_landmark_with_attention", args.threads, x, before=True),
           "attention, now": interpreter("face_landmark_with_attention", args.threads, x)}
    outs = {}
    for name, it in its.items():
        it.invoke()
        outs[name] = [it.get_tensor(d["index"]) for d in it.get_output_details()]
    same = all(np.array_equal(a, b) for a, b in zip(outs["attention, before"], outs["attention, now"], strict=True))
    wall: dict[str, list[float]] = {k: [] for k in its}
    cpu: dict[str, list[float]] = {k: [] for k in its}
    for _ in range(args.invokes):
        for name, it in its.items():
            t0, c0 = time.perf_counter(), time.thread_time()
            it.invoke()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.thread_time() - c0)
    load = f", load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores" if hasattr(os, "getloadavg") else ""
    print(f"litert backend, {args.threads} thread(s), {args.invokes} invokes each, interleaved{load}; "
          f"attention outputs before and now {'identical' if same else 'DIFFER'}")
    print(f"{'':<20}{'median ms':>10}{'min ms':>9}{'cpu ms':>9}")
    for name in its:
        print(f"{name:<20}{statistics.median(wall[name]) * 1e3:10.3f}{min(wall[name]) * 1e3:9.3f}"
              f"{statistics.median(cpu[name]) * 1e3:9.3f}")
    exe = its["attention, now"]._exe
    print("partitions now (median ms of each over the invokes):")
    per: list[list[float]] = [[] for _ in exe.steps]
    for _ in range(args.invokes):
        for k, s in enumerate(exe.steps):
            t0 = time.perf_counter()
            for _, src, dst in s.before:
                np.copyto(dst, src)
            for run in s.runs:
                run()
            for _, src, dst in s.after:
                np.copyto(dst, src)
            per[k].append(time.perf_counter() - t0)
    for s, times in zip(exe.steps, per, strict=True):
        how = f"{s.threads} thread(s)" if s.litert is not None else ("one compiled call" if s.fused else "numpy")
        ops = sorted({str(n.op) for n in s.part.nodes}) if s.litert is None else []
        print(f"  {s.part.backend:<7}{len(s.part.nodes):>4} nodes {statistics.median(times) * 1e3:8.3f}  {how} "
              f"{' '.join(ops)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
