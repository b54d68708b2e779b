"""The CPU cost of encoding and submitting one resident invoke on WebGPU, per encoder::

    python benchmarks/webgpu_encode.py                       # pose_landmark_full
    python benchmarks/webgpu_encode.py selfie_segmentation face_landmark --runs 400

For each model (``outputs_on_gpu=True``: one GPU partition, nothing read back) it times, in
the same process and alternating run by run, one encode + submit of the partition's
dispatches:

- ``wgpu-py``: through wgpu-py's methods (``create_command_encoder``, ``begin_compute_pass``,
  ``set_pipeline`` / ``set_bind_group`` / ``dispatch_workgroups`` per dispatch, ``end``,
  ``finish``, ``queue.submit``: the path before the native encoder);
- ``python``: :meth:`gpulite.backends.webgpu.encode.Recording.submit` from Python over
  wgpu-native's C API (the fallback without a C compiler);
- ``native``: the same through the compiled ``encode.c`` (skipped when no C compiler is found);
- ``invoke``: the whole ``Interpreter.invoke()`` with the encoder in use (``gpulite info``
  says which): what Python pays per resident invoke in front of the GPU.

Every dispatch is recorded with zero workgroups, so the GPU has no work: on a CPU adapter
such as lavapipe a real submit would run the model on the same cores (and, a few submits
later, wait for it), which is GPU time, not encode time. wgpu-native's own work per
dispatch (validation, barriers, the driver's command recording) is the same for zero
workgroups as for the real counts. Medians of ``--runs``, wall time and the calling
thread's CPU time (``time.thread_time_ns``: what the encode costs, the rest is waiting for
the machine's other work). ``us per dispatch`` is the thread time less that of an empty
encoder's encode + submit, per dispatch (not given for ``invoke``). Target (issue 20): ``invoke`` <= 0.2 ms for
pose_landmark_full.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable


def _wgpu_py(device, queue, dispatches) -> Callable[[], None]:
    def run() -> None:
        enc = device.create_command_encoder()
        cp = enc.begin_compute_pass()
        for pipeline, bg, groups in dispatches:
            cp.set_pipeline(pipeline)
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(*groups)
        cp.end()
        queue.submit([enc.finish()])
    return run


def measure(model: str, runs: int) -> dict:
    import numpy as np

    from gpulite import Interpreter
    from gpulite.backends.webgpu import encode

    it = Interpreter(model_path=model, backend="webgpu", outputs_on_gpu=True)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
    it.invoke()
    exe = it._exe
    ((k, dispatches),) = exe._dispatches.items()  # one GPU partition
    zero = [(p, bg, (0, 0, 0)) for p, bg, _ in dispatches]  # no GPU work: see the docstring
    device, queue = exe.gdev.device, exe.gdev.queue
    own = exe._recordings[k]
    exe._recordings[k] = exe._recording(k, zero, exe._readbacks[k], exe._checks)
    paths = {"empty": encode.Recording(device, queue, []).submit, "wgpu-py": _wgpu_py(device, queue, zero),
             "python": encode.Recording(device, queue, zero, "python").submit}
    if encode.mode() == "native":
        paths["native"] = encode.Recording(device, queue, zero, "native").submit
    paths["invoke"] = it.invoke
    wall: dict[str, list[int]] = {name: [] for name in paths}
    cpu: dict[str, list[int]] = {name: [] for name in paths}
    for r in range(runs):
        for name, run in paths.items():
            t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            run()
            wall[name].append(time.perf_counter_ns() - t0)
            cpu[name].append(time.thread_time_ns() - c0)
        if r % 5 == 4:
            exe.wait()  # keep the queue short (outside the timings)
    exe.wait()
    exe._recordings[k] = own
    it.close()
    return {"model": model, "dispatches": len(dispatches), "encoder": exe.encoder,
            "wall_ms": {n: statistics.median(t) / 1e6 for n, t in wall.items()},
            "cpu_ms": {n: statistics.median(t) / 1e6 for n, t in cpu.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=["pose_landmark_full"])
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    print("| model | dispatches | path | wall ms | thread CPU ms | CPU us per dispatch | CPU vs wgpu-py |")
    print("|---|---|---|---|---|---|---|")
    for model in args.models:
        r = measure(model, args.runs)
        empty, base, n = r["cpu_ms"].pop("empty"), r["cpu_ms"]["wgpu-py"], max(r["dispatches"], 1)
        for name, ms in r["cpu_ms"].items():
            invoke = name == "invoke"
            per = "-" if invoke else f"{1e3 * (ms - empty) / n:.2f}"  # an invoke is more than its encode
            label = f"invoke ({r['encoder']})" if invoke else name
            print(f"| {model} | {r['dispatches']} | {label} | "
                  f"{r['wall_ms'][name]:.3f} | {ms:.3f} | {per} | {ms / base:.2f} |")


if __name__ == "__main__":
    main()
