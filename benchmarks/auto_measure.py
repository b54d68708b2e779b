"""``Interpreter(backend="auto")``: what measuring costs on first use, and whether it picked the faster backend::

    python benchmarks/auto_measure.py                                   # three face/pose models
    python benchmarks/auto_measure.py selfie_segmentation --check 50

For each model, in one process: an Interpreter on ``cpu`` first (imports, the zoo), then
``backend="auto"`` timed with nothing cached (``first use``: building an Interpreter per
candidate and timing them, gpulite/measure.py) and again (``cached``: the key only), into a
temporary cache file (the user's ``auto_backend.json`` is neither read nor written). Then a
check independent of the measurement: ``--check`` interleaved invokes (each with every output
read) on every candidate, the median per candidate, and ``auto/best``: the median of the
backend auto chose over the best median (1.00 when auto chose the fastest; the rule is that it
never picks one it measured slower, and this says whether the measurement agreed with a longer
run). Prints the load average: on a loaded machine the ratios move from run to run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere in a checkout

import numpy as np

import gpulite
from gpulite import measure
from gpulite.interpreter import _seeded


def _runner(name: str, backend: str):
    it = gpulite.Interpreter(model_path=name, backend=backend)
    it.allocate_tensors()
    rng = np.random.default_rng(1)
    for d in it.get_input_details():
        it.set_tensor(d["index"], _seeded(d, rng))
    outputs = [d["index"] for d in it.get_output_details()]

    def run() -> None:
        it.invoke()
        for i in outputs:
            it.get_tensor(i)
    run()
    return run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", default=["face_detection_short_range", "face_landmark", "pose_landmark_full"])
    p.add_argument("--check", type=int, default=30, help="interleaved invokes per candidate in the check")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gpulite-auto-"))
    measure.cache_path = lambda: tmp / measure.CACHE_FILE  # type: ignore[assignment]
    names, notes = measure.candidates()
    print(f"candidates {names}; {'; '.join(notes) or 'all measured'}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| model | first use s | cached ms | auto | measured ms | check median ms | auto/best |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models:
        gpulite.Interpreter(model_path=name, backend="cpu")
        t0 = time.perf_counter()
        it = gpulite.Interpreter(model_path=name, backend="auto")
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        gpulite.Interpreter(model_path=name, backend="auto")
        cached = time.perf_counter() - t0
        entry = next((e for e in measure.read_cache(tmp / measure.CACHE_FILE).values()
                      if e["subject"].startswith(Path(str(gpulite.zoo.resolve(name))).name)), {})
        runs = {b: _runner(name, b) for b in entry.get("ms", {})}
        times: dict[str, list[float]] = {b: [] for b in runs}
        for _ in range(args.check):
            for b, run in runs.items():
                t0 = time.perf_counter()
                run()
                times[b].append((time.perf_counter() - t0) * 1e3)
        med = {b: statistics.median(v) for b, v in times.items()}
        ratio = f"{med[it.backend] / min(med.values()):.2f}" if it.backend in med else "n/a"
        fmt = lambda d: ", ".join(f"{b} {v:.2f}" for b, v in sorted(d.items(), key=lambda kv: kv[1]))  # noqa: E731
        print(f"| {name} | {first:.2f} | {cached * 1e3:.0f} | {it.backend} | {fmt(entry.get('ms', {}))} | "
              f"{fmt(med)} | {ratio} |")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
