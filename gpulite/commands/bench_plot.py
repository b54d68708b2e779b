"""``gpulite bench --plot out.png``: latency per model and backend as grouped bars, in one run.

For each model, gpulite's cpu and webgpu backends and LiteRT (XNNPACK, same thread count) are
timed in the same process, invoke by invoke in turn (as ``gpulite bench`` does), so a slow
phase of the machine hits all three alike. The chart has one group of bars per model and one
bar per backend, like the model x backend latency table of TF.js's platform guide; the same
numbers are printed as a table. The latency axis is logarithmic: a software WebGPU adapter
(lavapipe) can be two orders of magnitude slower than the CPU.

Usage::

    gpulite bench --plot latency.png                      # every zoo model
    gpulite bench pose_landmark_full hand_landmark_full --runs 20 --plot latency.png

matplotlib is needed for the picture (``pip install matplotlib``; MediaPipe depends on it).
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpulite import zoo
from gpulite.commands.common import InputError, check_writable, litert_interpreter, prepared_invoke
from gpulite.errors import GpuliteError

log = logging.getLogger(__name__)

BACKENDS = ("gpulite-cpu", "gpulite-webgpu", "LiteRT")
COLORS = {"gpulite-cpu": "#4C72B0", "gpulite-webgpu": "#DD8452", "LiteRT": "#55A868"}
CHART_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg")


class PlotUnavailableError(InputError, ImportError):
    """matplotlib is not installed (an input error, exit status 2, as ``gpulite batch`` without Ray)."""


@dataclass
class LatencyRow:
    """Median milliseconds per backend for one model (None: that backend could not run it)."""

    model: str
    ms: dict[str, float | None]
    notes: list[str] = field(default_factory=list)


def _runners(path: Path, threads: int) -> tuple[dict[str, Callable[[], None]], list[str]]:
    from gpulite.interpreter import Interpreter

    runners: dict[str, Callable[[], None]] = {}
    notes: list[str] = []
    for backend in ("cpu", "webgpu"):
        try:
            it = Interpreter(model_path=path, backend=backend, num_threads=threads)
            runners[f"gpulite-{backend}"] = prepared_invoke(it)
        except (GpuliteError, ImportError) as e:
            notes.append(f"gpulite-{backend}: {str(e).splitlines()[0]}")
    ref, why = litert_interpreter(path, threads)
    if ref is None:
        notes.append(why)
    else:
        try:
            runners["LiteRT"] = prepared_invoke(ref)
        except RuntimeError as e:
            notes.append(f"LiteRT: {str(e).splitlines()[0]}")
    return runners, notes


def measure(model: str, *, runs: int = 20, threads: int = 2, warmup: int = 3) -> LatencyRow:
    """Median ``invoke()`` milliseconds of one model on every backend, measured alternately."""
    path = zoo.resolve(model)
    runners, notes = _runners(path, threads)
    times: dict[str, list[float]] = {k: [] for k in runners}
    for i in range(warmup + runs):
        for name, run in runners.items():
            t0 = time.perf_counter()
            run()
            if i >= warmup:
                times[name].append(time.perf_counter() - t0)
    ms = {b: (statistics.median(times[b]) * 1e3 if times.get(b) else None) for b in BACKENDS}
    return LatencyRow(path.name.removesuffix(".tflite"), ms, notes)


def format_rows(rows: Sequence[LatencyRow], runs: int, threads: int) -> list[str]:
    """The numbers of the chart as a text table (ms; ratios against LiteRT)."""
    width = max([len(r.model) for r in rows] + [20])
    lines = [f"median invoke() ms of {runs} runs, num_threads={threads}; x = ratio to LiteRT",
             f"{'model':<{width}}" + "".join(f"{b:>22}" for b in BACKENDS), "-" * (width + 22 * len(BACKENDS))]
    for r in rows:
        ref = r.ms.get("LiteRT")
        cells = []
        for b in BACKENDS:
            v = r.ms.get(b)
            if v is None:
                cells.append(f"{'-':>22}")
            elif b != "LiteRT" and ref:
                cells.append(f"{v:>12.2f} ({v / ref:6.1f}x)")
            else:
                cells.append(f"{v:>22.2f}")
        lines.append(f"{r.model:<{width}}" + "".join(cells))
    lines += [f"note: {r.model}: {n}" for r in rows for n in r.notes]
    return lines


def check_plot_path(path: str | Path) -> None:
    """InputError unless ``path`` ends in a chart format matplotlib writes (checked before measuring)."""
    if Path(path).suffix.lower() not in CHART_SUFFIXES:
        raise InputError(f"--plot {str(path)!r}: unsupported chart extension; use one of {', '.join(CHART_SUFFIXES)}")
    check_writable(path, option="--plot")


def _pyplot():
    try:
        import matplotlib
    except ImportError as e:
        raise PlotUnavailableError("gpulite bench --plot needs matplotlib: pip install matplotlib") from e
    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt
    return plt


def _machine() -> str:
    import os
    import platform

    parts = [f"{platform.machine()} {os.cpu_count()} CPUs"]
    try:
        from gpulite.backends.webgpu import adapter_info
        names = [a["name"] for a in adapter_info()]
        if names:
            parts.append(f"WebGPU adapter: {names[0]}")
    except ImportError:
        parts.append("no WebGPU")
    return ", ".join(parts)


def plot(rows: Sequence[LatencyRow], path: str | Path, *, runs: int, threads: int) -> Path:
    """Draw the grouped-bar chart of ``rows`` into ``path`` (PNG, SVG, PDF by suffix)."""
    plt = _pyplot()
    n = len(rows)
    fig, ax = plt.subplots(figsize=(max(8.0, 0.95 * n + 3), 7.5), dpi=110)
    width = 0.8 / len(BACKENDS)
    values = [v for r in rows for v in r.ms.values() if v]
    for k, b in enumerate(BACKENDS):
        xs = [i + (k - (len(BACKENDS) - 1) / 2) * width for i in range(n)]
        hs = [r.ms.get(b) or 0.0 for r in rows]
        bars = ax.bar(xs, hs, width * 0.95, label=b, color=COLORS[b])
        for bar, v in zip(bars, hs, strict=True):
            label = "n/a" if not v else (f"{v:.0f}" if v >= 10 else f"{v:.1f}")
            y = v if v else (min(values) if values else 1.0)
            ax.annotate(label, (bar.get_x() + bar.get_width() / 2, y), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, rotation=90 if n > 8 else 0)
    ax.set_yscale("log")
    if values:
        ax.set_ylim(min(values) / 2, max(values) * 4)
    ax.set_xticks(range(n))
    ax.set_xticklabels([r.model for r in rows], rotation=30 if n > 4 else 0, ha="right" if n > 4 else "center",
                       fontsize=10)
    ax.set_ylabel("median invoke() latency, ms (log scale)")
    ax.set_title(f"Latency per model and backend - lower is better\n"
                 f"median of {runs} invokes, num_threads={threads}, measured in one run on {_machine()}",
                 fontsize=11)
    ax.grid(axis="y", which="major", alpha=0.3)
    ax.legend(loc="upper right", ncol=len(BACKENDS), fontsize=10, frameon=True, framealpha=0.9)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out


def bench_plot(models: Sequence[str], path: str | Path, *, runs: int = 20, threads: int = 2, warmup: int = 3,
               out: Callable[[str], None] = print) -> list[LatencyRow]:
    """Measure ``models`` (all zoo models when empty) on every backend, print the table, draw the chart.

    Raises
    ------
    PlotUnavailableError
        matplotlib is missing (checked before anything is measured).
    """
    _pyplot()
    rows = []
    for m in models or zoo.NAMES:
        log.info("benchmarking %s on %s", m, ", ".join(BACKENDS))
        rows.append(measure(m, runs=runs, threads=threads, warmup=warmup))
    for line in format_rows(rows, runs, threads):
        out(line)
    out(f"chart      {plot(rows, path, runs=runs, threads=threads)}")
    return rows
