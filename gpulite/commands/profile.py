"""``gpulite profile MODEL --backend webgpu [--batch N]``: where one invoke's time goes, node by node.

On webgpu, every dispatch of the compiled plan is timed on the GPU with timestamp queries
(each in a compute pass of its own) where the adapter has ``timestamp-query``; without it,
each node runs as its own submit followed by a wait, and the table says so (those times then
include a submit-and-wait round trip each). With each node's FLOPs and bytes moved
(:mod:`gpulite.graph.cost`) the table gives achieved GFLOP/s and GB/s, per node and in total,
and the header the CPU side of an invoke: the Python encode + submit of the resident invoke
(``outputs_on_gpu``, no wait), which precedes the GPU on the latency path. ``--backend cpu``
times each node of the CPU backend. How to read it: docs/webgpu.md, "Profiling".

Usage::

    gpulite profile pose_landmark_full --backend webgpu
    gpulite profile selfie_segmentation --batch 16 --top 30 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from typing import Any

from gpulite import zoo
from gpulite.commands.common import InputError, check_writable, seeded_inputs
from gpulite.graph.cost import bytes_moved, flops
from gpulite.interpreter import Interpreter


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite profile``."""
    p = subparsers.add_parser("profile", help="per-node GPU time, FLOPs, bytes and GFLOP/s of one invoke",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a .tflite path or a zoo name")
    p.add_argument("--backend", default="webgpu", choices=("webgpu", "cpu"))
    p.add_argument("--batch", type=int, default=1, help="batch size: the first dim of every input (default 1)")
    p.add_argument("--runs", type=int, default=10, help="timed runs; medians are shown (default 10)")
    p.add_argument("--top", type=int, default=20, help="nodes shown, slowest first (default 20; 0: all)")
    p.add_argument("--json", metavar="PATH", help="also write the whole profile there as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``gpulite profile``; returns the exit status."""
    if args.batch < 1 or args.runs < 1 or args.top < 0:
        raise InputError(f"gpulite profile: --batch and --runs must be at least 1 and --top at least 0, got "
                         f"batch={args.batch}, runs={args.runs}, top={args.top}")
    if args.json:
        check_writable(args.json, option="--json")
    prof = profile_model(args.model, backend=args.backend, batch=args.batch, runs=args.runs)
    print(format_profile(prof, top=args.top))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(prof, f, indent=1)
    return 0


def median_ms(fn: Any, runs: int, warmup: int = 0, after: Any = None) -> float:
    """Median milliseconds of ``runs`` calls of ``fn`` after ``warmup`` untimed ones (``after``,
    when given, runs untimed after each timed call)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
        if after is not None:
            after()
    return statistics.median(times)


class _NodeTimes:
    """An Observer collecting each node's time over several invokes."""

    def __init__(self) -> None:
        self.ms: dict[int, list[float]] = defaultdict(list)
        self.nodes: dict[int, Any] = {}

    def node_done(self, node: Any, ms: float, read: Any) -> None:
        self.ms[node.index].append(ms)
        self.nodes[node.index] = node


def profile_model(model: str, *, backend: str = "webgpu", batch: int = 1, runs: int = 10) -> dict[str, Any]:
    """The profile ``gpulite profile`` prints, as a dict (rows slowest first; times in ms)."""
    it = Interpreter(model_path=str(zoo.resolve(model)), backend=backend,
                     **({"outputs_on_gpu": True} if backend == "webgpu" else {}))
    if batch != 1:
        for d in it.get_input_details():
            it.resize_tensor_input(d["index"], [batch, *[int(s) for s in d["shape"][1:]]])
    it.allocate_tensors()
    details = it.get_input_details()
    for d, x in zip(details, seeded_inputs(details), strict=True):
        it.set_tensor(d["index"], x)
    exe, graph = it._exe, it.graph
    wait = getattr(exe, "wait", None)
    for _ in range(3):
        it.invoke()
    if wait is not None:
        wait()
    prof: dict[str, Any] = {"model": model, "backend": backend, "batch": batch, "runs": runs}
    if backend == "webgpu":
        from gpulite.backends.webgpu import instrument

        prof["device"] = exe.gdev.name
        prof["dispatches_per_invoke"] = sum(len(p.work) for p in exe.parts if p.backend == "webgpu")
        prof["encode_submit_ms"] = median_ms(it.invoke, runs, after=wait)
        prof["invoke_wait_ms"] = median_ms(lambda: (it.invoke(), wait()), runs)
        timed = instrument.dispatch_times(exe, runs)
    else:
        timed = None
    per_node: dict[int, dict[str, Any]] = {}
    if timed is not None:
        prof["method"] = "timestamp queries: GPU time of each dispatch, in a compute pass of its own"
        for node, _, ms in timed:
            row = per_node.setdefault(node.index, {"node": node, "ms": 0.0, "dispatches": 0})
            row["ms"] += ms
            row["dispatches"] += 1
    else:
        prof["method"] = ("per-node waits: each node its own submit and wait (no timestamp-query on this adapter), "
                          "so each GPU row includes a submit-and-wait round trip" if backend == "webgpu"
                          else "per-node wall time on the CPU backend")
        obs = _NodeTimes()
        exe.invoke(obs)  # first observed invoke: the split plan's own start-up
        obs.ms.clear()
        for _ in range(runs):
            exe.invoke(obs)
        for i, ms in obs.ms.items():
            per_node[i] = {"node": obs.nodes[i], "ms": statistics.median(ms), "dispatches": None}
    rows = []
    for r in per_node.values():
        n = r["node"]
        fl, by = flops(graph, n), bytes_moved(graph, n)
        out = graph.tensors[n.outputs[0]].shape if n.outputs else ()
        rows.append({"node": n.index, "op": str(n.op), "output": list(out), "dispatches": r["dispatches"],
                     "ms": r["ms"], "mflop": fl / 1e6, "mb": by / 1e6,
                     "gflops": fl / r["ms"] / 1e6 if r["ms"] > 0 else None,
                     "gbs": by / r["ms"] / 1e6 if r["ms"] > 0 else None})
    rows.sort(key=lambda r: -r["ms"])
    total_ms = sum(r["ms"] for r in rows)
    total_fl = sum(flops(graph, n) for n in graph.nodes)
    total_by = sum(bytes_moved(graph, n) for n in graph.nodes)
    prof.update(rows=rows, nodes=len(graph.nodes), timed_nodes=len(rows), total_ms=total_ms,
                gflop=total_fl / 1e9, mb=total_by / 1e6,
                gflops=total_fl / total_ms / 1e6 if total_ms > 0 else None)
    it.close()
    return prof


def _num(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def format_profile(prof: dict[str, Any], top: int = 20) -> str:
    """The profile as text: a header, then a markdown table of the slowest nodes and a total."""
    lines = [f"# {prof['model']} on {prof['backend']}, batch {prof['batch']}"
             + (f" ({prof['device']})" if prof.get("device") else "")]
    lines.append(f"timing: {prof['method']}; medians of {prof['runs']} runs")
    if "encode_submit_ms" in prof:
        lines.append(f"CPU time of one resident invoke() (encode + submit, no wait): "
                     f"{prof['encode_submit_ms']:.3f} ms for {prof['dispatches_per_invoke']} dispatches; "
                     f"invoke() + wait: {prof['invoke_wait_ms']:.3f} ms")
    lines.append(f"model: {prof['gflop']:.3f} GFLOP, {prof['mb']:.1f} MB moved at the least, {prof['nodes']} nodes "
                 f"({prof['timed_nodes']} timed)")
    lines.append("")
    lines.append("| node | op | output | dispatches | ms | % | MFLOP | MB | GFLOP/s | GB/s |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    total = prof["total_ms"] or 1.0
    rows = prof["rows"] if top == 0 else prof["rows"][:top]
    for r in rows:
        lines.append(f"| {r['node']} | {r['op']} | {'x'.join(map(str, r['output']))} | "
                     f"{'-' if r['dispatches'] is None else r['dispatches']} | {r['ms']:.3f} | "
                     f"{100 * r['ms'] / total:.1f} | {r['mflop']:.2f} | {r['mb']:.2f} | {_num(r['gflops'], 1)} | "
                     f"{_num(r['gbs'], 1)} |")
    lines.append(f"| total | {len(prof['rows'])} nodes | | | {prof['total_ms']:.3f} | 100 | "
                 f"{1e3 * prof['gflop']:.1f} | {prof['mb']:.1f} | {_num(prof['gflops'], 1)} | |")
    return "\n".join(lines)
