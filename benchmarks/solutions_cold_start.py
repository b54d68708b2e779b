"""Cold start of the solutions: time to the first result on webgpu against litert, and what a process reuses.

    python benchmarks/solutions_cold_start.py                           # every solution, webgpu and litert
    python benchmarks/solutions_cold_start.py --backends webgpu cpu --solutions face_mesh pose

Part 1, cold: each (solution, backend) runs in a fresh Python process, so nothing is warm:
no device, no compiled pipeline, no loaded model. Columns (milliseconds): ``import`` (``import
gpulite.solutions`` and the solution's module), ``build`` (the constructor: graph, models,
pipelines compiled up front on webgpu), ``first`` (the first ``process`` of frame 0 of the test
clip: some drivers compile for real at the first dispatch, lavapipe does), ``cold total``
(import + build + first: what a user waits for the first result), ``steady`` (the median of 5
more frames), ``again`` (build + first result of a second instance in the same process: the
pipelines and models are cached by then) and ``pipelines`` (compiled by the first instance /
the second; webgpu only).

Part 2, one process: every solution built one after the other in the same process on webgpu,
with the pipelines each compiled that the ones before it had not (the per-device pipeline cache,
``gpulite/backends/webgpu/pipelines.py``), and its build + first result. wgpu 0.32 has no
on-disk pipeline cache (docs/webgpu.md, "Cold start"), so every process compiles again.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from anywhere in a checkout

SOLUTIONS = {
    "face_detection": ("FaceDetector", {"model": "short"}),
    "face_mesh": ("FaceMesh", {}),
    "hands": ("Hands", {}),
    "pose": ("Pose", {}),
    "selfie_segmentation": ("SelfieSegmentation", {"model": "general"}),
}


def _pipelines(backend: str) -> int | None:
    if backend != "webgpu":
        return None
    from gpulite.backends.webgpu import get_device

    return len(get_device().pipelines)


def _first(cls: type, kwargs: dict, backend: str, frame) -> tuple[float, float, object]:
    t0 = time.perf_counter()
    sol = cls(backend=backend, **kwargs)
    t1 = time.perf_counter()
    sol.process(frame)
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, sol


def child(solution: str, backend: str) -> dict:
    """One cold (solution, backend) measurement, run in a fresh process."""
    from tests.solutions.video import make_frames

    frames = make_frames(7)
    t0 = time.perf_counter()
    import gpulite.solutions as gs

    cls = getattr(gs, SOLUTIONS[solution][0])
    imported = (time.perf_counter() - t0) * 1e3
    kwargs = SOLUTIONS[solution][1]
    build, first, sol = _first(cls, kwargs, backend, frames[0])
    compiled = _pipelines(backend)
    steady = []
    for f in frames[1:]:
        t = time.perf_counter()
        sol.process(f)
        steady.append((time.perf_counter() - t) * 1e3)
    sol.close()
    build2, first2, sol2 = _first(cls, kwargs, backend, frames[0])
    sol2.close()
    after = _pipelines(backend)
    return {"solution": solution, "backend": backend, "import": imported, "build": build, "first": first,
            "cold_total": imported + build + first, "steady": statistics.median(steady),
            "again": build2 + first2, "pipelines": compiled,
            "pipelines_again": None if after is None or compiled is None else after - compiled}


def sequence(backend: str, names: list[str]) -> list[dict]:
    """Every solution built in turn in this process: pipelines new to each, build + first result."""
    import gpulite.solutions as gs
    from tests.solutions.video import make_frames

    frame = make_frames(1)[0]
    rows = []
    for name in names:
        before = _pipelines(backend)
        build, first, sol = _first(getattr(gs, SOLUTIONS[name][0]), SOLUTIONS[name][1], backend, frame)
        sol.close()
        rows.append({"solution": name, "build_first": build + first,
                     "new_pipelines": None if before is None else _pipelines(backend) - before})
    return rows


def _run_child(args: list[str]) -> object:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=ROOT)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{") or ln.startswith("[")]
    if out.returncode or not lines:
        return {"error": (out.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", nargs="+", default=["webgpu", "litert"], choices=["webgpu", "litert", "cpu"])
    p.add_argument("--solutions", nargs="+", default=list(SOLUTIONS), choices=list(SOLUTIONS))
    p.add_argument("--child", nargs=2, metavar=("SOLUTION", "BACKEND"), help=argparse.SUPPRESS)
    p.add_argument("--sequence", metavar="BACKEND", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    if args.sequence:
        print(json.dumps(sequence(args.sequence, args.solutions)))
        return 0

    cols = ["import", "build", "first", "cold_total", "steady", "again"]
    print("cold: a fresh process per row; milliseconds; frame 0 of the 640x480 test clip")
    print(f"{'solution':<21}{'backend':<8}" + "".join(f"{c:>11}" for c in cols) + f"{'pipelines':>12}")
    by_case = {}
    for solution in args.solutions:
        for backend in args.backends:
            r = _run_child(["--child", solution, backend])
            by_case[solution, backend] = r
            if "error" in r:
                print(f"{solution:<21}{backend:<8} failed: {r['error']}")
                continue
            pipes = "" if r["pipelines"] is None else f"{r['pipelines']}/{r['pipelines_again']}"
            print(f"{solution:<21}{backend:<8}" + "".join(f"{r[c]:>11.1f}" for c in cols) + f"{pipes:>12}")
    if {"webgpu", "litert"} <= set(args.backends):
        print("time to first result, webgpu / litert: " + ", ".join(
            f"{s} {by_case[s, 'webgpu']['cold_total'] / by_case[s, 'litert']['cold_total']:.2f}x"
            for s in args.solutions if "error" not in by_case[s, "webgpu"] and "error" not in by_case[s, "litert"]))
    if "webgpu" in args.backends:
        rows = _run_child(["--sequence", "webgpu", "--solutions", *args.solutions])
        print("one process, webgpu: the solutions built in turn")
        if isinstance(rows, dict):
            print(f"  failed: {rows['error']}")
        else:
            for r in rows:
                print(f"  {r['solution']:<21} build + first result {r['build_first']:>9.1f} ms, "
                      f"{r['new_pipelines']} pipelines compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
