"""Peak resident memory of running a model in gpulite against running it in LiteRT.

Each runtime loads the model, allocates, and invokes it a few times in a fresh Python
process; the process reports its own peak RSS. On Linux that is ``VmHWM`` from
``/proc/self/status``, not ``getrusage().ru_maxrss``: ru_maxrss survives ``execve``, so a
child started from this (numpy-importing) script would report at least the parent's size.
Elsewhere ru_maxrss is used.
A third process that only imports numpy gives the baseline both pay anyway. The headline
is the ratio of the two peaks (target: gpulite <= 1.5x LiteRT)::

    python benchmarks/peak_rss.py                     # pose_landmark_full
    python benchmarks/peak_rss.py --model selfie_segmentation --runs 20
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap

from gpulite import zoo

TARGET = 1.5

_RUN = """
import numpy as np
{make}
it.allocate_tensors()
d = it.get_input_details()[0]
x = np.random.default_rng(0).uniform(-1, 1, tuple(d["shape"])).astype(d["dtype"])
for _ in range({runs}):
    it.set_tensor(d["index"], x)
    it.invoke()
    outs = [it.get_tensor(o["index"]) for o in it.get_output_details()]
print(peak_kib())
"""
# Defines peak_kib() in the measuring process (see the module docstring for why VmHWM).
_PEAK = """
import resource, sys
def peak_kib():
    try:
        with open("/proc/self/status") as f:
            return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])
    except (OSError, StopIteration):
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return kb // 1024 if sys.platform == "darwin" else kb  # macOS reports bytes
"""
MAKERS = {
    "gpulite": "from gpulite import Interpreter\nit = Interpreter(model_path={path!r}, num_threads={threads})",
    "LiteRT": "from ai_edge_litert.interpreter import Interpreter\n"
              "it = Interpreter(model_path={path!r}, num_threads={threads})",
}
BASELINE = "import numpy as np\nprint(peak_kib())"


def measure_peak(code: str) -> int:
    """Peak RSS in KiB of a fresh ``python -c code`` that prints its own peak."""
    done = subprocess.run([sys.executable, "-c", _PEAK + code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"measuring process failed:\n{done.stderr[-2000:]}")
    return int(done.stdout.strip().splitlines()[-1])


def measure(model: str, runs: int, threads: int) -> dict[str, int]:
    """Peak RSS (KiB) of the baseline and of each runtime running ``model``."""
    path = str(zoo.resolve(model))
    out = {"python + numpy": measure_peak(BASELINE)}
    for name, make in MAKERS.items():
        code = _RUN.format(make=make.format(path=path, threads=threads), runs=runs)
        out[name] = measure_peak(textwrap.dedent(code))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="pose_landmark_full")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    peaks = measure(args.model, args.runs, args.threads)
    base = peaks["python + numpy"]
    print(f"peak RSS, {args.model}, {args.runs} invokes, num_threads={args.threads} (fresh process each)")
    for name, kib in peaks.items():
        extra = "" if name == "python + numpy" else f"   (+{(kib - base) / 1024:7.1f} MiB over the baseline)"
        print(f"  {name:<15} {kib / 1024:8.1f} MiB{extra}")
    ratio = peaks["gpulite"] / peaks["LiteRT"]
    verdict = "meets" if ratio <= TARGET else "misses"
    print(f"  ratio gpulite / LiteRT: {ratio:.3f}x ({verdict} the <= {TARGET}x target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
