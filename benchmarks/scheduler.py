"""CPU time of gpulite's pipeline scheduler per step, with calculators that do nothing.

A graph of 15 pass-through nodes (a chain, every third node a join with the node three before:
two inputs, as the solutions' joins) driven frame by frame as the solutions drive theirs:
inline (``num_threads: 0``), ``add_packet`` then ``wait_for`` the last stream, one observer.
What it prints is the thread CPU time per frame and per step (``time.thread_time``: waiting for
a busy core does not count), the median of the rounds: the scheduler's own cost, which every
node of every solution pays on top of its calculator. Compare commits by running both in turn.

    python benchmarks/scheduler.py                   # 5 rounds of 3000 frames
    python benchmarks/scheduler.py --frames 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere in a checkout

from gpulite.pipeline import Calculator, Graph, GraphBuilder

NODES = 15


class Pass(Calculator):
    inputs: ClassVar[dict[str, Any]] = {"IN": Any}
    outputs: ClassVar[dict[str, Any]] = {"OUT": Any}

    def process(self, cc) -> None:
        cc.output("OUT", cc.inputs["IN"])


class Join(Calculator):
    inputs: ClassVar[dict[str, Any]] = {"A": Any, "B": Any}
    outputs: ClassVar[dict[str, Any]] = {"OUT": Any}

    def process(self, cc) -> None:
        cc.output("OUT", cc.inputs["A"])


def graph() -> Graph:
    b = GraphBuilder()
    b.input_stream("in")
    b.node(Pass, inputs={"IN": "in"}, outputs={"OUT": "s0"})
    for i in range(1, NODES):
        if i % 3 == 0:
            b.node(Join, inputs={"A": f"s{i - 1}", "B": f"s{i - 3}"}, outputs={"OUT": f"s{i}"})
        else:
            b.node(Pass, inputs={"IN": f"s{i - 1}"}, outputs={"OUT": f"s{i}"})
    b.output_stream(f"s{NODES - 1}")
    return b.build(num_threads=0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--frames", type=int, default=3000, help="frames per round (default 3000)")
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args(argv)
    g = graph()
    last = f"s{NODES - 1}"
    seen: list[int] = []
    g.observe(last, lambda packet: seen.append(packet.timestamp))
    t = 0
    per_frame = []
    for r in range(a.rounds + 1):                  # the first round warms up
        t0 = time.thread_time()
        for _ in range(a.frames):
            g.add_packet("in", t, timestamp=t)
            g.wait_for([last], t)
            t += 1
        if r:
            per_frame.append((time.thread_time() - t0) / a.frames)
    g.close()
    if seen != list(range(t)):
        raise SystemExit("the graph lost or reordered frames")
    us = statistics.median(per_frame) * 1e6
    print(f"{NODES} nodes: {us:.1f} us CPU per frame, {us / NODES:.2f} us per step "
          f"(median of {a.rounds} rounds of {a.frames} frames)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
