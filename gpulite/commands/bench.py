"""``gpulite bench [MODEL ...]``: ``invoke()`` latency in gpulite and in LiteRT, side by side.

Times ``invoke()`` in gpulite and in LiteRT (XNNPACK, same thread count) in the same run and
prints their ratio per model and the geometric mean. The two runtimes alternate invoke by
invoke, so a slow phase of the machine hits both alike. The first invokes (``--warmup``,
which include one-time compilation and uploads) are never part of the medians. With
``--plot PNG`` it times gpulite-cpu, gpulite-webgpu and LiteRT and draws a chart
(:mod:`gpulite.commands.bench_plot`).

Usage::

    gpulite bench                                   # every zoo model
    gpulite bench pose_landmark_full --runs 100 --threads 2
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gpulite
from gpulite import zoo
from gpulite.commands.common import InputError, check_backend, litert_interpreter, prepared_invoke
from gpulite.errors import GpuliteError, ModelError
from gpulite.interpreter import Interpreter
from gpulite.model.reader import load

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite bench``."""
    b = subparsers.add_parser("bench", help="time invoke() against LiteRT, side by side",
                              description=__doc__.split("\n\n")[0])
    b.add_argument("models", nargs="*", help=f"paths or zoo names (default: all of {', '.join(zoo.NAMES)})")
    b.add_argument("--backend", default="cpu", choices=("cpu", "webgpu", "litert"))
    b.add_argument("--runs", type=int, default=50, help="timed invokes per runtime (default 50)")
    b.add_argument("--warmup", type=int, default=5, help="untimed invokes first (default 5)")
    b.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 4),
                   help="num_threads for both runtimes (default: CPUs, at most 4)")
    b.add_argument("--plot", metavar="PNG", help="time gpulite-cpu, gpulite-webgpu and LiteRT in one run and draw "
                   "the model x backend latency chart there (needs matplotlib)")
    b.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``gpulite bench``; returns the exit status."""
    if args.runs < 1 or args.threads < 1 or args.warmup < 1:
        raise InputError(f"gpulite bench: --runs, --warmup and --threads must be at least 1, got runs={args.runs}, "
                         f"warmup={args.warmup}, threads={args.threads}")
    for m in args.models:  # a missing or malformed model file is an input error before anything is timed
        try:
            load(zoo.resolve(m))
        except ModelError as e:
            raise InputError(f"{m}: {e}") if str(m) not in str(e) else e from None
    if args.plot:
        from gpulite.commands.bench_plot import bench_plot, check_plot_path

        check_plot_path(args.plot)
        bench_plot(args.models, args.plot, runs=args.runs, threads=args.threads, warmup=args.warmup)
        return 0
    check_backend(args.backend)
    rows = bench(args.models, backend=args.backend, runs=args.runs, threads=args.threads, warmup=args.warmup)
    failed = [r.model for r in rows if r.gpulite_ms is None]
    if failed:  # gpulite could not run a model (its note says why): a runtime failure
        print(f"gpulite: error: gpulite could not run {', '.join(failed)} (see the notes above)", file=sys.stderr)
        return 1
    return 0


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


def bench_model(model: str, backend: str = "cpu", runs: int = 50, threads: int = 2, warmup: int = 5) -> BenchRow:
    """Median ``invoke()`` latency of gpulite and of LiteRT, measured in the same run.

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
        Untimed invokes first (the first invoke pays compilation and uploads).

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
        runners["gpulite"] = prepared_invoke(Interpreter(model_path=path, backend=backend, num_threads=threads))
    except GpuliteError as e:
        notes.append(f"gpulite: {e}")
    ref, why = litert_interpreter(path, threads)
    if ref is not None:
        try:
            runners["litert"] = prepared_invoke(ref)
        except RuntimeError as e:  # e.g. MediaPipe custom ops LiteRT has no kernels for
            notes.append(f"LiteRT: {str(e).splitlines()[0]}")
    else:
        notes.append(why)
    times: dict[str, list[float]] = {k: [] for k in runners}
    for i in range(warmup + runs):
        for key, invoke in runners.items():
            t0 = time.perf_counter()
            invoke()
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
        f"median of {runs} invokes after the warm-up; ratio = gpulite / LiteRT (lower is better)",
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


def bench(models: Sequence[str], backend: str = "cpu", runs: int = 50, threads: int = 2, warmup: int = 5,
          out: Callable[[str], None] = print) -> list[BenchRow]:
    """Benchmark ``models`` (all zoo models when empty) and print the table."""
    rows = []
    for m in models or zoo.NAMES:
        log.info("benchmarking %s", m)
        rows.append(bench_model(m, backend=backend, runs=runs, threads=threads, warmup=warmup))
    for line in format_table(rows, backend, threads, runs):
        out(line)
    return rows
