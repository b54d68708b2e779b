"""gpulite's CPU backend against LiteRT (XNNPACK), side by side in one run.

Same code as ``gpulite bench``; arguments are passed through::

    python benchmarks/cpu_vs_litert.py                      # all zoo models
    python benchmarks/cpu_vs_litert.py pose_landmark_full --runs 100 --threads 2
    python benchmarks/cpu_vs_litert.py --backend litert --threads 2   # the litert backend: its overhead

Prints median ``invoke()`` latency per model for both runtimes, their ratio, and the
geometric mean of the ratios. Ratios, not absolute times, are the comparable numbers:
both runtimes are measured alternately on the same machine in the same process.
"""

from __future__ import annotations

import sys

from gpulite.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if "--backend" not in args:
        args += ["--backend", "cpu"]
    sys.exit(main(["bench", *args]))
