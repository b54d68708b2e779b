"""WebGPU cold start against steady state, per zoo model::

    python benchmarks/webgpu_cold_start.py                       # a few small zoo models
    python benchmarks/webgpu_cold_start.py selfie_segmentation --runs 50

Each model runs in a fresh Python process, so "cold" really is cold: no device, no
compiled pipelines. Columns (milliseconds):

- ``device``: adapter request and device creation.
- ``allocate``: ``allocate_tensors`` (memory plan, kernel factories, every pipeline compiled
  up front, constants uploaded).
- ``first``: the first ``invoke`` with inputs set and outputs read back. Some drivers compile
  shaders for real only at the first dispatch (lavapipe does), which lands here;
  ``Interpreter.warmup()`` pays it before the application's first frame.
- ``steady``: the median of ``--runs`` further invokes, same work.
- ``warm-alloc``: ``allocate_tensors`` of a second interpreter of the model in the same
  process: the pipeline cache is warm, so this is what a reallocation costs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_MODELS = ["hand_recrop", "face_detection_short_range", "selfie_segmentation", "face_landmark"]


def _child(model: str, runs: int) -> dict:
    import numpy as np

    from gpulite import Interpreter
    from gpulite.backends.webgpu import get_device

    t0 = time.perf_counter()
    gdev = get_device()
    t1 = time.perf_counter()
    it = Interpreter(model_path=model, backend="webgpu", device=gdev)
    t2 = time.perf_counter()
    it.allocate_tensors()
    t3 = time.perf_counter()
    rng = np.random.default_rng(0)
    feeds = [(d["index"], rng.uniform(-1, 1, d["shape"]).astype(d["dtype"])) for d in it.get_input_details()]
    outs = [d["index"] for d in it.get_output_details()]

    def step() -> float:
        s = time.perf_counter()
        for i, x in feeds:
            it.set_tensor(i, x)
        it.invoke()
        for o in outs:
            it.get_tensor(o)
        return time.perf_counter() - s

    first = step()
    steady = statistics.median(step() for _ in range(runs))
    again = Interpreter(model_path=model, backend="webgpu", device=gdev)
    t4 = time.perf_counter()
    again.allocate_tensors()
    warm_alloc = time.perf_counter() - t4
    again.close()
    it.close()
    return {"model": model, "device": gdev.name, "device_s": t1 - t0, "load_s": t2 - t1, "allocate_s": t3 - t2,
            "first_s": first, "steady_s": steady, "warm_alloc_s": warm_alloc, "pipelines": len(gdev.pipelines)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=DEFAULT_MODELS, help="zoo names or .tflite paths")
    ap.add_argument("--runs", type=int, default=20, help="steady-state invokes per model (median)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.models[0], args.runs)))
        return 0
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    rows = []
    for m in args.models:
        proc = subprocess.run([sys.executable, __file__, "--child", "--runs", str(args.runs), m],
                              capture_output=True, text=True, cwd=root, env=env, check=False)
        if proc.returncode != 0:
            print(f"{m}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    if not rows:
        return 1
    print(f"device: {rows[0]['device']}; {args.runs} steady-state runs; milliseconds")
    print(f"{'model':32} {'device':>8} {'allocate':>9} {'first':>8} {'steady':>8} {'first/steady':>13} "
          f"{'warm-alloc':>11} {'pipelines':>10}")
    for r in rows:
        print(f"{r['model']:32} {r['device_s'] * 1e3:8.1f} {r['allocate_s'] * 1e3:9.1f} {r['first_s'] * 1e3:8.1f} "
              f"{r['steady_s'] * 1e3:8.1f} {r['first_s'] / r['steady_s']:13.1f} {r['warm_alloc_s'] * 1e3:11.1f} "
              f"{r['pipelines']:10d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
