"""The GPU report: gpulite's WebGPU backend against LiteRT on this machine, as markdown tables.

One run prints, each table measured in this process with gpulite and LiteRT side by side:

1. zoo latency at batch 1, median ms: LiteRT (XNNPACK) on all cores and on 1 thread; gpulite
   webgpu with readback (set_tensor + invoke + get_tensor of every output) and resident
   (``outputs_on_gpu``: N invokes, then one readback, per invoke); LiteRT's own GPU
   accelerator kept in float32 where ai-edge-litert has one that finds this GPU; the webgpu
   error against LiteRT (max |diff| / max(1, max |LiteRT|));
2. batch scaling (1, 16, 128): ms per invoke with readback and images/s against LiteRT on all
   cores;
3. the solutions in frames/s on webgpu, litert and cpu (the test clip's frames, median);
4. the slowest nodes of ``gpulite profile`` (GPU time per dispatch where the adapter has
   ``timestamp-query``).

It takes under 3 minutes on a GPU machine (the one of docs/webgpu.md). On lavapipe (no GPU) it
runs too, slowly; ``--quick`` is a smoke test there: one small model, few runs, batch 1 and
2, one solution, a short profile. The header names the date, adapter, driver and versions;
paste the output into docs/webgpu.md with them.

    python benchmarks/gpu_report.py                # everything
    python benchmarks/gpu_report.py --quick        # smoke test (lavapipe: about a minute)
    python benchmarks/gpu_report.py --models pose_landmark_full selfie_segmentation --no-solutions
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere in a checkout

import numpy as np

from gpulite import Interpreter, zoo
from gpulite.commands.profile import median_ms
from gpulite.graph.cost import flops

CORES = os.cpu_count() or 1
WARMUP = 2  # untimed calls before each timing
# The models of MediaPipe 0.10.14's solutions (the mediapipe wheel's), all but
# face_landmark_with_attention (LiteRT cannot run MediaPipe's custom ops: no reference);
# --models names others (pose_landmark_heavy, the MediaPipe Tasks models).
ZOO = [n for n in sorted(zoo.SOURCE_OF["face_detection_short_range"].members) if n != "face_landmark_with_attention"]
BATCH_MODELS = ("pose_landmark_full", "selfie_segmentation")
SOLUTIONS = ("face_detection", "face_mesh", "hands", "pose", "selfie_segmentation")
PROFILED = ("pose_landmark_full", "selfie_segmentation")


def inputs_for(details: list[dict[str, Any]], batch: int = 1, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = []
    for d in details:
        shape = (batch, *[int(s) for s in d["shape"][1:]])
        dt = np.dtype(d["dtype"])
        xs.append(rng.uniform(-1, 1, shape).astype(dt) if dt.kind == "f" else np.zeros(shape, dt))
    return xs


def runner(it: Any, xs: list[np.ndarray], batch: int = 1) -> Callable[[], list[np.ndarray]]:
    """Allocate ``it`` (gpulite or LiteRT) for ``batch``; a call sets ``xs``, invokes, reads every output."""
    if batch != 1:
        for d in it.get_input_details():
            it.resize_tensor_input(d["index"], [batch, *[int(s) for s in d["shape"][1:]]])
    it.allocate_tensors()
    ins, outs = it.get_input_details(), it.get_output_details()

    def call() -> list[np.ndarray]:
        for d, x in zip(ins, xs, strict=True):
            it.set_tensor(d["index"], x)
        it.invoke()
        return [it.get_tensor(d["index"]) for d in outs]
    return call


def rel_error(got: list[np.ndarray], ref: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(a.astype(np.float64) - r))) / max(1.0, float(np.max(np.abs(r))))
               for a, r in zip(got, ref, strict=True) if r.dtype.kind == "f")


def litert(path: str, threads: int) -> Any:
    from ai_edge_litert.interpreter import Interpreter as LiteRt

    return LiteRt(model_path=path, num_threads=threads)


def litert_gpu_ms(path: str, xs: list[np.ndarray], ref: list[np.ndarray], runs: int) -> tuple[float | None, str]:
    """LiteRT's GPU accelerator in float32 (CompiledModel, ``GpuOptions(enforce_f32=True)``):
    (median ms of write + run + read, "") or (None, why not)."""
    try:
        from ai_edge_litert.compiled_model import CompiledModel
        from ai_edge_litert.hardware_accelerator import HardwareAccelerator
        from ai_edge_litert.options import GpuOptions, Options

        m = CompiledModel.from_file(path, options=Options(hardware_accelerators=HardwareAccelerator.GPU,
                                                          gpu_options=GpuOptions(enforce_f32=True)))
        if not m.is_fully_accelerated():
            return None, "not fully on its GPU"
        ins, outs = m.create_input_buffers(0), m.create_output_buffers(0)

        def call() -> list[np.ndarray]:
            for b, x in zip(ins, xs, strict=True):
                b.write(x)
            m.run_by_index(0, ins, outs)
            return [b.read(r.size, r.dtype).reshape(r.shape) for b, r in zip(outs, ref, strict=True)]
        err = rel_error(call(), ref)
        return median_ms(call, runs, WARMUP), "" if err <= 1e-3 else f"error {err:.1e}"
    except Exception as e:  # no accelerator here (lavapipe), an older ai-edge-litert, a model it refuses
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:60]}" if str(e) else type(e).__name__


def resident_ms(path: str, xs: list[np.ndarray], runs: int, k: int = 20) -> float:
    """ms per invoke with ``outputs_on_gpu``: ``k`` invokes, then one readback (throughput)."""
    r = Interpreter(model_path=path, backend="webgpu", outputs_on_gpu=True)
    runner(r, xs)()
    out = r.get_output_details()[0]["index"]

    def resident() -> None:
        for _ in range(k):
            r.invoke()
        r.get_tensor(out)
    ms = median_ms(resident, runs, warmup=1) / k
    r.close()
    return ms


def zoo_table(names: list[str], runs: int) -> list[str]:
    rows = [f"| model | GFLOP | LiteRT {CORES} thr | LiteRT 1 thr | webgpu | webgpu resident | LiteRT GPU f32 | "
            f"webgpu / LiteRT {CORES} thr | webgpu error |", "|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for name in names:
        path = str(zoo.resolve(name))
        li = litert(path, CORES)
        xs = inputs_for(li.get_input_details())
        run_li = runner(li, xs)
        ref = [r.copy() for r in run_li()]
        li_ms = median_ms(run_li, runs, WARMUP)
        li1_ms = median_ms(runner(litert(path, 1), xs), max(3, runs // 4), WARMUP)
        g = Interpreter(model_path=path, backend="webgpu")
        run_g = runner(g, xs)
        err = rel_error(run_g(), ref)
        g_ms = median_ms(run_g, runs, WARMUP)
        gflop = sum(flops(g.graph, n) for n in g.graph.nodes) / 1e9
        g.close()
        res_ms = resident_ms(path, xs, max(3, runs // 8))
        gpu_ms, why = litert_gpu_ms(path, xs, ref, runs)
        if why:
            notes.append(f"{name}: LiteRT GPU {why}")
        gpu = f"{gpu_ms:.2f}" if gpu_ms is not None else "n/a"
        rows.append(f"| {name} | {gflop:.3f} | {li_ms:.2f} | {li1_ms:.2f} | {g_ms:.2f} | {res_ms:.2f} | {gpu} | "
                    f"{g_ms / li_ms:.2f} | {err:.1e} |")
        print(f"  zoo: {name} done", file=sys.stderr, flush=True)
    return rows + ([""] + [f"- {n}" for n in notes] if notes else [])


def batch_table(models: list[str], batches: list[int], runs: int) -> list[str]:
    rows = [f"| model | batch | LiteRT {CORES} thr ms | webgpu ms | webgpu images/s | webgpu / LiteRT images/s |",
            "|---|---|---|---|---|---|"]
    for name in models:
        path = str(zoo.resolve(name))
        for b in batches:
            li = litert(path, CORES)
            xs = inputs_for(li.get_input_details(), b)
            n = runs if b <= 16 else max(3, runs // 4)
            li_ms = median_ms(runner(li, xs, b), n, WARMUP)
            g = Interpreter(model_path=path, backend="webgpu")
            g_ms = median_ms(runner(g, xs, b), n, WARMUP)
            g.close()
            rows.append(f"| {name} | {b} | {li_ms:.2f} | {g_ms:.2f} | {1e3 * b / g_ms:.0f} | {li_ms / g_ms:.2f} |")
        print(f"  batch: {name} done", file=sys.stderr, flush=True)
    return rows


def solutions_table(names: list[str], backends: list[str], frames: int) -> list[str]:
    from gpulite import solutions as gs
    from tests.solutions.video import make_frames

    make = {
        "face_detection": lambda b: gs.FaceDetector(model="short", backend=b),
        "face_mesh": lambda b: gs.FaceMesh(backend=b),
        "hands": lambda b: gs.Hands(backend=b),
        "pose": lambda b: gs.Pose(enable_segmentation=True, backend=b),
        "selfie_segmentation": lambda b: gs.SelfieSegmentation(model="general", backend=b),
    }
    clip = make_frames(frames + 2)
    rows = ["| solution | " + " | ".join(f"{b} frames/s" for b in backends) + " | webgpu / litert |",
            "|---|" + "---|" * (len(backends) + 1)]
    for name in names:
        fps: dict[str, float | None] = {}
        for b in backends:
            try:
                sol = make[name](b)
            except Exception as e:  # a backend this machine lacks
                print(f"  solutions: {name} on {b}: {e}", file=sys.stderr)
                fps[b] = None
                continue
            times = []
            for i, f in enumerate(clip):
                t = time.perf_counter()
                sol.process(f, timestamp_ms=33 * i)
                if i >= 2:
                    times.append(time.perf_counter() - t)
            sol.close()
            fps[b] = 1 / statistics.median(times)
        ratio = (f"{fps['webgpu'] / fps['litert']:.2f}" if fps.get("webgpu") and fps.get("litert") else "-")
        rows.append(f"| {name} | " + " | ".join("-" if fps[b] is None else f"{fps[b]:.0f}" for b in backends)
                    + f" | {ratio} |")
        print(f"  solutions: {name} done", file=sys.stderr, flush=True)
    return rows


def profile_tables(models: list[str], top: int, runs: int) -> list[str]:
    from gpulite.commands.profile import format_profile, profile_model

    out: list[str] = []
    for name in models:
        text = format_profile(profile_model(name, backend="webgpu", runs=runs), top=top)
        out += ["###" + text[1:], ""]  # its title one level down
    return out


def header() -> list[str]:
    import wgpu

    from gpulite.backends.webgpu.device import choose_adapter

    info = choose_adapter().info
    try:
        from importlib.metadata import version

        litert_v = version("ai-edge-litert")
    except Exception:
        litert_v = "?"
    return [f"# gpulite GPU report, {datetime.date.today().isoformat()}", "",
            f"Adapter: {info.get('device', '?')} ({info.get('adapter_type', '?')}, {info.get('backend_type', '?')}), "
            f"driver: {info.get('description', '?')}; wgpu {wgpu.__version__}, ai-edge-litert {litert_v}, "
            f"numpy {np.__version__}, Python {platform.python_version()}, {CORES} CPU cores. Median ms unless "
            "noted; gpulite and LiteRT measured side by side in this process on seeded random inputs.", ""]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test: one small model, few runs (lavapipe)")
    p.add_argument("--models", nargs="+",
                   help="zoo models of the latency table (default: the 13 of MediaPipe's solutions)")
    p.add_argument("--runs", type=int, default=30, help="timed runs per figure (default 30)")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 16, 128])
    p.add_argument("--frames", type=int, default=40, help="timed frames per solution (default 40)")
    p.add_argument("--no-solutions", action="store_true")
    p.add_argument("--top", type=int, default=10, help="profile rows per model (default 10)")
    args = p.parse_args(argv)
    models, batch_models, sols, profiled = args.models or ZOO, list(BATCH_MODELS), list(SOLUTIONS), list(PROFILED)
    runs, batches, frames = args.runs, args.batches, args.frames
    if args.quick:
        models, batch_models, sols, profiled = ["face_detection_short_range"], ["face_detection_short_range"], \
            ["face_detection"], ["face_detection_short_range"]
        runs, batches, frames, args.top = 3, [1, 2], 3, 5
    if runs < 1 or frames < 1 or any(b < 1 for b in batches):
        p.error("--runs, --frames and --batches must be at least 1")
    t0 = time.perf_counter()
    lines = header()
    lines += ["## Zoo latency, batch 1", "", *zoo_table(models, runs), ""]
    lines += ["## Batch scaling (with readback)", "", *batch_table(batch_models, batches, runs), ""]
    if not args.no_solutions:
        lines += ["## Solutions", "", *solutions_table(sols, ["webgpu", "litert", "cpu"], frames), ""]
    lines += ["## Top nodes (gpulite profile)", "", *profile_tables(profiled, args.top, max(3, runs // 3))]
    lines.append(f"(report made in {time.perf_counter() - t0:.0f} s)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
