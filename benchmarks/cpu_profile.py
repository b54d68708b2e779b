"""Per-node and per-op-type time of gpulite's CPU backend (median over invokes).

    python benchmarks/cpu_profile.py pose_landmark_full --threads 1 --runs 50 --top 25
    python benchmarks/cpu_profile.py --ops            # per op type over all zoo models

Each node is timed by an observer passed to the executable's ``invoke`` (the contract of
``gpulite.backends.base``); the sum of the per-node medians is printed next to the plain
(unobserved) invoke median, whose difference is the per-step timer overhead plus the loop.
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
    for _ in range(5):
        it.invoke()
    plain = []
    for _ in range(runs):
        t0 = time.perf_counter()
        it.invoke()
        plain.append(time.perf_counter() - t0)
    per: dict[int, list[float]] = defaultdict(list)

    class Timer:
        def __init__(self) -> None:
            self.k = 0

        def node_done(self, node, ms, read) -> None:
            per[self.k].append(ms)
            self.k += 1

    for _ in range(runs):
        exe.invoke(Timer())
    meds = [stat(per[k]) for k in range(len(per))]
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
        order = it.graph.nodes
        names = exe.step_names  # the CPU executable's: fused epilogues and pads included
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
                n, g = order[k], it.graph
                shp = [list(g.tensors[i].shape) for i in n.inputs if i >= 0][:2]
                print(f"      {meds[k]:7.3f} ms  {names[k]} {shp} -> {list(g.tensors[n.outputs[0]].shape)}")
    if len(a.models) != 1:
        print("== all models, per op type")
        tot = sum(total_ops.values())
        for op, t in sorted(total_ops.items(), key=lambda kv: -kv[1]):
            print(f"   {op:<28} {t:8.3f} ms  {t / tot:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
