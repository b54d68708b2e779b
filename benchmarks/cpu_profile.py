"""Per-node and per-op-type time of gpulite's CPU backend (median over invokes).

    python benchmarks/cpu_profile.py pose_landmark_full --threads 1 --runs 50 --top 25
    python benchmarks/cpu_profile.py --ops            # per op type over all zoo models

Each compiled step closure is wrapped with a timer; the sum of the per-node medians is
printed next to the plain (unwrapped) invoke median, whose difference is the per-step
timer overhead plus the loop.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpulite import Interpreter, zoo


def profile(model: str, threads: int, runs: int, stat=statistics.median):
    it = Interpreter(model_path=zoo.resolve(model), backend="cpu", num_threads=threads)
    it.allocate_tensors()
    for d in it.get_input_details():
        x = np.random.default_rng(0).uniform(-1, 1, tuple(d["shape"])).astype(d["dtype"])
        it.set_tensor(d["index"], x)
    exe = it._exe
    steps = list(exe.steps)
    for _ in range(5):
        it.invoke()
    plain = []
    for _ in range(runs):
        t0 = time.perf_counter()
        it.invoke()
        plain.append(time.perf_counter() - t0)
    per = [[] for _ in steps]
    pc = time.perf_counter
    # The steps run outside CpuExecutable.invoke here: give BLAS the thread count it sets.
    from gpulite.backends.cpu import blas
    prev = blas.set_local_threads(getattr(exe, "num_threads", 1))
    try:
        for _ in range(runs):
            for k, s in enumerate(steps):
                t0 = pc()
                s()
                per[k].append(pc() - t0)
    finally:
        if prev is not None:
            blas.set_local_threads(prev)
    meds = [stat(v) * 1e3 for v in per]
    return it, exe, stat(plain) * 1e3, meds


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="*")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--top", type=int, default=20)
    p.add_argument("--ops", action="store_true", help="aggregate per op type only")
    p.add_argument("--min", action="store_true", help="minimum over runs instead of the median (noisy machines)")
    a = p.parse_args(argv)
    total_ops: dict[str, float] = defaultdict(float)
    for m in a.models or zoo.NAMES:
        it, exe, plain, meds = profile(m, a.threads, a.runs, min if a.min else statistics.median)
        order = it._order
        names = getattr(exe, "step_names", None) or [f"{n.op}#{n.index}" for n in order]
        order = (getattr(exe, "cpu_run", None) or (None, None))[1] or order
        ops: dict[str, float] = defaultdict(float)
        cnt: dict[str, int] = defaultdict(int)
        for nm, t in zip(names, meds, strict=False):
            op = nm.split("#")[0]
            ops[op] += t
            cnt[op] += 1
            total_ops[op] += t
        print(f"== {m}: invoke {plain:.3f} ms, sum of steps {sum(meds):.3f} ms, {len(meds)} steps")
        for op, t in sorted(ops.items(), key=lambda kv: -kv[1]):
            print(f"   {op:<28} {t:8.3f} ms  {cnt[op]:4d} steps  {t / max(sum(meds), 1e-9):6.1%}")
        if not a.ops:
            idx = np.argsort(meds)[::-1][: a.top]
            for k in idx:
                n = order[k] if k < len(order) else None
                extra = ""
                if n is not None:
                    g = (getattr(exe, "cpu_run", None) or (None, None))[0] or it.graph
                    shp = [list(g.tensors[i].shape) for i in n.inputs if i >= 0][:2]
                    extra = f" {shp} -> {list(g.tensors[n.outputs[0]].shape)}"
                print(f"      {meds[k]:7.3f} ms  {names[k]}{extra}")
    if len(a.models) != 1:
        print("== all models, per op type")
        tot = sum(total_ops.values())
        for op, t in sorted(total_ops.items(), key=lambda kv: -kv[1]):
            print(f"   {op:<28} {t:8.3f} ms  {t / tot:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
