"""The ``gpulite`` command line: ``inspect`` a model, ``bench`` it against LiteRT, ``info``.

``gpulite inspect MODEL`` shows what gpulite makes of a model: inputs and outputs, the
operators in the file, what was folded or fused at load, and the memory plan (arena bytes
against the sum of the intermediate tensors it replaces). ``gpulite bench`` times
``invoke()`` in gpulite and in LiteRT (XNNPACK, same thread count) in the same run and
prints their ratio per model and the geometric mean. ``gpulite info`` shows versions and
backends. MODEL is a ``.tflite`` path or a zoo name such as ``face_detection_short_range``.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import gpulite
from gpulite import zoo
from gpulite.errors import GpuliteError
from gpulite.graph.plan import plan_memory, topological_order
from gpulite.interpreter import Interpreter
from gpulite.model.reader import load

log = logging.getLogger(__name__)

FOLDED_MEANING = {
    "DEQUANTIZE": "constant weights dequantized to float32 at load",
    "DENSIFY": "sparse constant weights densified at load",
    "RELU": "fused into the producing op",
    "RELU6": "fused into the producing op",
    "RELU_N1_TO_1": "fused into the producing op",
}


def _fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def _fmt_bytes(n: int) -> str:
    return f"{n:,} B ({n / (1 << 20):.2f} MiB)"


# -- inspect --------------------------------------------------------------------------------
def inspect_model(model: str, backend: str = "cpu", out: Callable[[str], None] = print) -> None:
    """Print inputs/outputs, op counts, folded nodes, the memory plan and ``get_plan()``.

    Parameters
    ----------
    model : str
        A ``.tflite`` path or a zoo name.
    backend : str
        The backend whose kernels ``allocate_tensors`` compiles for ``get_plan()``.
    out : callable
        Receives each output line (``print`` by default).
    """
    path = zoo.resolve(model)
    m = load(path)
    it = Interpreter(model_path=path, backend=backend)
    graph = it.graph
    out(f"model      {path} ({path.stat().st_size:,} bytes)")
    if m.description:
        out(f"           {m.description}")
    out(f"backend    {backend}")
    for title, details in (("inputs", it.get_input_details()), ("outputs", it.get_output_details())):
        out(title)
        for d in details:
            out(f"  {d['index']:>5}  {d['name']:<40} {_fmt_shape(d['shape']):<20} {np.dtype(d['dtype']).name}")

    ops = m.subgraphs[0].operators
    counts = Counter(o.op for o in ops)
    out(f"operators  {len(ops)} in the file, {len(graph.nodes)} after load-time passes")
    for op, n in counts.most_common():
        out(f"  {op:<28} {n:>5}")

    kept = {n.index for n in graph.nodes}
    folded = Counter(o.op for o in ops if o.index not in kept)
    out(f"folded     {sum(folded.values())} nodes")
    for op, n in folded.most_common():
        out(f"  {op:<28} {n:>5}  {FOLDED_MEANING.get(op, 'removed at load')}")

    plan = plan_memory(graph, topological_order(graph))
    share = 100.0 * plan.arena_bytes / plan.total_bytes if plan.total_bytes else 0.0
    out(f"arena      {_fmt_bytes(plan.arena_bytes)}")
    out(f"           vs {_fmt_bytes(plan.total_bytes)} summed over {len(plan.sizes)} non-constant tensors "
        f"({share:.1f}%)")
    try:
        it.allocate_tensors()
    except GpuliteError as e:
        out(f"plan       allocate_tensors() failed on backend {backend!r}: {e}")
        return
    out("plan")
    for key, value in it.get_plan().items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            out(f"  {key}")
            for v in value:  # e.g. webgpu partitions: node lists are long, their count says enough
                out("    " + ", ".join(f"{k}={len(x) if k == 'nodes' and isinstance(x, list) else x}"
                                      for k, x in v.items()))
        else:
            out(f"  {key:<26} {value}")


# -- bench ----------------------------------------------------------------------------------
@dataclass
class BenchRow:
    model: str
    gpulite_ms: float | None
    litert_ms: float | None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.gpulite_ms is None or self.litert_ms is None or self.litert_ms <= 0:
            return None
        return self.gpulite_ms / self.litert_ms


def _inputs_for(details: list[dict[str, Any]], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = []
    for d in details:
        dt = np.dtype(d["dtype"])
        shape = tuple(int(s) for s in d["shape"])
        xs.append(rng.uniform(-1, 1, shape).astype(dt) if dt.kind == "f" else np.zeros(shape, dt))
    return xs


def _prepare(it) -> Callable[[], None]:
    """Allocate, feed seeded inputs, and return the bare ``invoke`` to time."""
    it.allocate_tensors()
    details = it.get_input_details()
    for d, x in zip(details, _inputs_for(details), strict=True):
        it.set_tensor(d["index"], x)
    return it.invoke


def _litert_interpreter(path: Path, threads: int):
    try:
        from ai_edge_litert.interpreter import Interpreter as LiteRtInterpreter
    except ImportError:
        return None, "LiteRT (ai-edge-litert) is not installed"
    try:
        return LiteRtInterpreter(model_path=str(path), num_threads=threads), ""
    except (RuntimeError, ValueError) as e:
        return None, f"LiteRT: {str(e).splitlines()[0]}"


def bench_model(model: str, backend: str = "cpu", runs: int = 50, threads: int = 2, warmup: int = 5) -> BenchRow:
    """Median ``invoke()`` latency of gpulite and of LiteRT, measured in the same run.

    The two runtimes alternate invoke by invoke, so a slow phase of the machine (another
    process, thermal throttling) hits both alike and the ratio stays meaningful.

    Parameters
    ----------
    model : str
        A ``.tflite`` path or a zoo name.
    backend : str
        gpulite backend.
    runs : int
        Timed invokes per runtime.
    threads : int
        ``num_threads`` for both runtimes.
    warmup : int
        Untimed invokes first.

    Returns
    -------
    BenchRow
        Latencies in milliseconds; a runtime that cannot run the model has None and a note.
    """
    path = zoo.resolve(model)
    name = path.name.removesuffix(".tflite")
    notes = []
    runners: dict[str, Callable[[], None]] = {}
    try:
        runners["gpulite"] = _prepare(Interpreter(model_path=path, backend=backend, num_threads=threads))
    except GpuliteError as e:
        notes.append(f"gpulite: {e}")
    ref, why = _litert_interpreter(path, threads)
    if ref is not None:
        try:
            runners["litert"] = _prepare(ref)
        except RuntimeError as e:  # e.g. MediaPipe custom ops LiteRT has no kernels for
            notes.append(f"LiteRT: {str(e).splitlines()[0]}")
    else:
        notes.append(why)
    times: dict[str, list[float]] = {k: [] for k in runners}
    for i in range(warmup + runs):
        for key, run in runners.items():
            t0 = time.perf_counter()
            run()
            dt = time.perf_counter() - t0
            if i >= warmup:
                times[key].append(dt)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return BenchRow(name, med.get("gpulite"), med.get("litert"), "; ".join(notes))


def geometric_mean(values: Sequence[float]) -> float | None:
    vals = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def format_table(rows: list[BenchRow], backend: str, threads: int, runs: int) -> list[str]:
    """The bench table: one row per model, then the geometric mean of the ratios."""
    def ms(v: float | None) -> str:
        return f"{v:10.3f}" if v is not None else f"{'-':>10}"

    width = max([len(r.model) for r in rows] + [28])
    if backend == "cpu":
        from gpulite.backends.cpu import jit
        backend += " (compiled loops)" if jit.available() else " (numpy only)"
    lines = [
        f"gpulite {gpulite.__version__} backend={backend} vs LiteRT (XNNPACK); num_threads={threads}, "
        f"median of {runs} invokes; ratio = gpulite / LiteRT (lower is better)",
        f"{'model':<{width}}  {'gpulite ms':>10}  {'LiteRT ms':>10}  {'ratio':>7}",
        "-" * (width + 33),
    ]
    for r in rows:
        ratio = f"{r.ratio:6.2f}x" if r.ratio is not None else f"{'-':>7}"
        lines.append(f"{r.model:<{width}}  {ms(r.gpulite_ms)}  {ms(r.litert_ms)}  {ratio}")
    lines.append("-" * (width + 33))
    ratios = [r.ratio for r in rows if r.ratio is not None]
    gm = geometric_mean(ratios)
    label = f"geometric mean ({len(ratios)} models)"
    lines.append(f"{label:<{width}}  {'':>10}  {'':>10}  " + (f"{gm:6.2f}x" if gm is not None else f"{'-':>7}"))
    for r in rows:
        if r.note:
            lines.append(f"note: {r.model}: {r.note}")
    return lines


def bench(models: Sequence[str], backend: str = "cpu", runs: int = 50, threads: int = 2,
          out: Callable[[str], None] = print) -> list[BenchRow]:
    """Benchmark ``models`` (all zoo models when empty) and print the table."""
    rows = []
    for m in models or zoo.NAMES:
        log.info("benchmarking %s", m)
        rows.append(bench_model(m, backend=backend, runs=runs, threads=threads))
    for line in format_table(rows, backend, threads, runs):
        out(line)
    return rows


# -- info -----------------------------------------------------------------------------------
def info(out: Callable[[str], None] = print) -> None:
    """Print versions, the registered backends (rank, kernels, adapters), the active one and why, and the flags."""
    from importlib.metadata import PackageNotFoundError, version

    from gpulite.backends import registry
    from gpulite.environment import env

    out(f"gpulite    {gpulite.__version__} ({Path(gpulite.__file__).parent})")
    out(f"python     {platform.python_version()} ({platform.platform()})")
    out(f"numpy      {np.__version__}")
    try:
        out(f"litert     {version('ai-edge-litert')} (reference for bench and tests)")
    except PackageNotFoundError:
        out("litert     not installed (pip install 'gpulite[test]' for bench comparisons)")
    try:
        active, why = registry.get_backend(), registry.backend_choice()
    except GpuliteError as e:
        active, why = None, str(e)
    out("backends   (name, priority -> rank for the automatic choice, kernels)")
    adapters = None
    for b in registry.describe_backends():
        rank = "cannot start" if b.rank is None else f"rank {b.rank}"
        mark = "*" if b.name == active else " "
        note = f"; {b.note}" if b.note else ""
        out(f" {mark}{b.name:<9} priority {b.priority} -> {rank}, {b.kernels} kernels{note}")
        if b.name == "webgpu":
            adapters = _adapters(out)
    out(f"active     {active or 'none'} ({why})")
    e = env()
    _precision(out, active, e.get("precision"), e.source("precision"), adapters)
    out("flags      " + ", ".join(f"{k}={v!r}" + (f" [{e.source(k)}]" if e.source(k) != "default" else "")
                                  for k, v in e.flags().items()))
    from gpulite.backends.cpu import jit
    out(f"cpu loops  {jit.status()}")


def _size(v: int, key: str) -> str:
    """A limit's value; byte sizes also in KiB/MiB/GiB."""
    if "size" not in key or key.startswith("max-compute-workgroup-size") or v < 1024:
        return str(v)
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= div:
            return f"{v} ({v / div:.4g} {unit})"
    return str(v)


def _wrapped(out: Callable[[str], None], head: str, items: list[str], indent: int = 29, width: int = 110) -> None:
    """``head`` then ``items`` comma-separated, wrapped under the first item."""
    line = head.ljust(indent)
    for k, item in enumerate(items):
        piece = item + ("," if k < len(items) - 1 else "")
        if len(line) + len(piece) + 1 > width and line.strip() != head.strip():  # never an empty first line
            out(line.rstrip())
            line = " " * indent
        line += piece + " "
    out(line.rstrip())


def _adapters(out: Callable[[str], None]) -> list[dict] | None:
    """Each WebGPU adapter: type, backend, features and the limits gpulite depends on."""
    try:
        from gpulite.backends.webgpu import adapter_info
    except ImportError as e:
        out(f"             not available ({e})")
        return None
    infos = adapter_info()
    if not infos:
        out("             no adapter")
    for a in infos:
        default = ", the default" if a["default"] else ""
        out(f"             adapter {a['name']} [{a['adapter_type']}, {a['backend_type']}, "
            f"shader-f16 {'yes' if a['shader_f16'] else 'no'}{default}]")
        _wrapped(out, f"               features ({len(a['features'])})", a["features"] or ["none"])
        _wrapped(out, "               limits", [f"{k} {_size(v, k)}" for k, v in a["key_limits"].items()])
    return infos


def _precision(out: Callable[[str], None], active: str | None, asked: str, source: str,
               adapters: list[dict] | None) -> None:
    """The precision asked for (the ``precision`` flag: what an Interpreter gets when it does not
    say) and what is in force for it on each backend (webgpu: on the default adapter)."""
    default = next((a for a in adapters or () if a["default"]), None)
    if default is None:
        gpu = None
        gpu_note = ("not available" if adapters is None else "no adapter" if not adapters
                    else "no default adapter: GPULITE_ADAPTER matches none")
    else:
        f16 = default["shader_f16"]
        gpu = "fp16" if asked == "fp16" and f16 else "fp32"
        gpu_note = (f"on {default['name']}; shader-f16 {'available' if f16 else 'not available'}"
                    + ("" if f16 or asked == "fp32" else ": fp16 falls back to fp32")
                    + ("; fp16 = float16 weights, float32 activations and math" if gpu == "fp16" else ""))
    in_force = {"cpu": "fp32", "webgpu": gpu}.get(active or "", None)
    out(f"precision  {asked} asked (flag precision, {source}); in force on the active backend "
        f"({active or 'none'}): {in_force or 'n/a'}")
    out("             cpu      fp32 (the cpu backend computes in float32 only)")
    out(f"             webgpu   {gpu or '-'} ({gpu_note})")


# -- entry point ----------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpulite", description=__doc__.split("\n\n")[0])
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = p.add_subparsers(dest="command", required=True)

    ins = sub.add_parser("inspect", help="show a model's inputs, operators, folding and memory plan")
    ins.add_argument("model", help="a .tflite path or a zoo name")
    ins.add_argument("--backend", default="cpu", choices=("cpu", "webgpu"))

    b = sub.add_parser("bench", help="time invoke() against LiteRT, side by side")
    b.add_argument("models", nargs="*", help=f"paths or zoo names (default: all of {', '.join(zoo.NAMES)})")
    b.add_argument("--backend", default="cpu", choices=("cpu", "webgpu"))
    b.add_argument("--runs", type=int, default=50, help="timed invokes per runtime (default 50)")
    b.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 4),
                   help="num_threads for both runtimes (default: CPUs, at most 4)")
    b.add_argument("--plot", metavar="PNG", help="time gpulite-cpu, gpulite-webgpu and LiteRT in one run and draw "
                   "the model x backend latency chart there (needs matplotlib)")

    sub.add_parser("info", help="versions and backends")

    from gpulite.commands import demo, detect, models
    demo.add_parser(sub)
    detect.add_parser(sub)
    models.register(sub)

    g = sub.add_parser("graph", help="run a calculator graph").add_subparsers(dest="graph_command", required=True)
    gr = g.add_parser("run", help="run a graph over a video, image, folder or camera:N")
    gr.add_argument("graph", help="a shipped graph (e.g. face_detection) or a YAML path")
    gr.add_argument("--input", required=True, help="video file, image file, folder of images, or camera:N")
    gr.add_argument("--output", help="annotated video (.mp4, .mkv, ...) or a folder for PNG frames")
    gr.add_argument("--backend", default="auto", choices=("auto", "cpu", "webgpu"))
    gr.add_argument("--max-frames", type=int, default=-1, help="stop after N frames")
    gr.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def graph_run(args: argparse.Namespace, out: Callable[[str], None] = print) -> None:
    """``gpulite graph run``: run the graph with a progress bar, then print the summary."""
    from gpulite.pipeline.graphs import run_media

    summary = run_media(args.graph, args.input, output=args.output, backend=args.backend,
                        max_frames=args.max_frames, progress=not args.no_progress)
    for line in summary.lines():
        out(line)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``gpulite`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        if hasattr(args, "run"):  # commands following the register/run convention (gpulite.commands.models)
            return args.run(args)
        if args.command == "inspect":
            inspect_model(args.model, backend=args.backend)
        elif args.command == "bench":
            if args.runs < 1 or args.threads < 1:
                raise SystemExit("gpulite bench: --runs and --threads must be at least 1")
            if args.plot:
                from gpulite.commands.bench_plot import bench_plot
                bench_plot(args.models, args.plot, runs=args.runs, threads=args.threads)
            else:
                bench(args.models, backend=args.backend, runs=args.runs, threads=args.threads)
        elif args.command in ("demo", "detect"):
            from gpulite.commands import demo, detect
            return {"demo": demo, "detect": detect}[args.command].main(args)
        elif args.command == "graph":
            graph_run(args)
        else:
            info()
    except GpuliteError as e:
        print(f"gpulite: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
