"""The CPU cost of recording and submitting one resident invoke on WebGPU, per encoder::

    python benchmarks/webgpu_encode.py                       # pose_landmark_full
    python benchmarks/webgpu_encode.py selfie_segmentation face_landmark --runs 200

For each model (``outputs_on_gpu=True``: one GPU partition, nothing read back) it times, in
the same process and alternating run by run:

- ``wgpu-py``: the dispatches recorded through wgpu-py's methods (``set_pipeline``,
  ``set_bind_group``, ``dispatch_workgroups`` per dispatch: the path before the native encoder);
- ``python``: :mod:`gpulite.backends.webgpu.encode`'s Python loop over wgpu-native's C API;
- ``native``: its one call of the compiled ``encode.c`` (skipped when no C compiler is found).

``encode`` is the median time from ``create_command_encoder`` to ``finish`` (pass begun,
every dispatch recorded, pass ended), ``submit`` the median CPU cost of ``queue.submit`` of
an empty command buffer, and ``encode+submit`` their sum: what Python pays per resident
invoke in front of the GPU. ``us per dispatch`` is the encode time less that of an empty
pass (the fixed cost of an encoder), per dispatch. (The real submit is not timed: on a CPU adapter such as lavapipe
it runs the GPU work itself before returning.) Target (issue 20): encode+submit <= 0.2 ms for
pose_landmark_full with the native encoder.
"""

from __future__ import annotations

import argparse
import statistics
import time


def _wgpu_py(cp, dispatches) -> None:
    for pipeline, bg, groups in dispatches:
        cp.set_pipeline(pipeline)
        cp.set_bind_group(0, bg)
        cp.dispatch_workgroups(*groups)


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
    (dispatches,) = exe._dispatches.values()  # one GPU partition
    device, queue = exe.gdev.device, exe.gdev.queue
    recorders = {"empty": lambda cp: None, "wgpu-py": lambda cp: _wgpu_py(cp, dispatches),
                 "python": encode.Recording(dispatches, "python").record}
    if encode.mode() == "native":
        recorders["native"] = encode.Recording(dispatches, "native").record
    times: dict[str, list[float]] = {name: [] for name in recorders}
    submits = []
    for _ in range(runs):
        for name, record in recorders.items():
            t0 = time.perf_counter()
            enc = device.create_command_encoder()
            cp = enc.begin_compute_pass()
            record(cp)
            cp.end()
            buf = enc.finish()
            times[name].append(time.perf_counter() - t0)
            del buf  # never submitted: only the recording is timed
        empty = device.create_command_encoder().finish()
        t0 = time.perf_counter()
        queue.submit([empty])
        submits.append(time.perf_counter() - t0)
    exe.wait()
    it.close()
    submit = statistics.median(submits) * 1e3
    return {"model": model, "dispatches": len(dispatches), "submit_ms": submit,
            "encode_ms": {n: statistics.median(t) * 1e3 for n, t in times.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=["pose_landmark_full"])
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
    print("| model | dispatches | encoder | encode ms | encode+submit ms | us per dispatch | vs wgpu-py |")
    print("|---|---|---|---|---|---|---|")
    for model in args.models:
        r = measure(model, args.runs)
        empty = r["encode_ms"].pop("empty")
        base = r["encode_ms"]["wgpu-py"] + r["submit_ms"]
        for name, ms in r["encode_ms"].items():
            total = ms + r["submit_ms"]
            print(f"| {model} | {r['dispatches']} | {name} | {ms:.3f} | {total:.3f} | "
                  f"{1e3 * (ms - empty) / max(r['dispatches'], 1):.2f} | {total / base:.2f} |")


if __name__ == "__main__":
    main()
