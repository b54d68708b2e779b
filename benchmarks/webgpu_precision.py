"""WebGPU fp32 against fp16 (float16 weights, f16 products in the matrix
products and depthwise convolutions, float32 activations and sums), per zoo model::

    python benchmarks/webgpu_precision.py                      # every zoo model
    python benchmarks/webgpu_precision.py hand_recrop --runs 30

Columns:

- ``const MB``: constant (weight) bytes in the GPU arena, fp32 / fp16.
- ``fp32 ms`` / ``fp16 ms``: median invoke (inputs set, outputs read back) over ``--runs``
  runs, the two interpreters alternating run by run so that machine noise hits both alike.
- ``fp16 err``: ``max|fp16 - ref| / max(1, max|ref|)`` over the outputs, ``ref`` being LiteRT
  (gpulite's CPU backend for face_landmark_with_attention, whose custom ops LiteRT lacks),
  seeded random input in [-1, 1]. ``fp32 err`` the same for fp32.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _reference(name: str, path: str, x: np.ndarray) -> list[np.ndarray]:
    if name == "face_landmark_with_attention":
        from gpulite import Interpreter

        ref = Interpreter(model_path=path, backend="cpu")
    else:
        from ai_edge_litert.interpreter import Interpreter as LiteRT

        ref = LiteRT(model_path=path)
    ref.allocate_tensors()
    ref.set_tensor(ref.get_input_details()[0]["index"], x)
    ref.invoke()
    return [ref.get_tensor(d["index"]).copy() for d in ref.get_output_details()]


def main() -> None:
    from gpulite import Interpreter, zoo

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=list(zoo.NAMES))
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    print(f"{'model':34s} {'const MB':>13s} {'fp32 ms':>8s} {'fp16 ms':>8s} {'fp32 err':>9s} {'fp16 err':>9s}")
    for name in args.models:
        path = str(zoo.resolve(name))
        its = {p: Interpreter(model_path=path, backend="webgpu", precision=p) for p in ("fp32", "fp16")}
        for it in its.values():
            it.allocate_tensors()
        d = its["fp32"].get_input_details()[0]
        x = np.random.default_rng(0).uniform(-1, 1, d["shape"]).astype(np.float32)
        times: dict[str, list[float]] = {p: [] for p in its}
        outs = {}
        for r in range(args.runs + 1):
            for p, it in its.items():
                s = time.perf_counter()
                it.set_tensor(d["index"], x)
                it.invoke()
                outs[p] = [it.get_tensor(o["index"]) for o in it.get_output_details()]
                if r:  # run 0 pays first-dispatch shader compilation
                    times[p].append(time.perf_counter() - s)
        ref = _reference(name, path, x)

        def err(o: list[np.ndarray], ref: list[np.ndarray] = ref) -> float:
            return max(float(np.abs(a.astype(np.float64) - e).max() / max(1.0, float(np.abs(e).max())))
                       for a, e in zip(o, ref, strict=True))

        plans = {p: it.get_plan() for p, it in its.items()}
        assert plans["fp16"]["precision"] == "fp16", plans["fp16"].get("precision_note")
        const = f"{plans['fp32']['constant_bytes'] / 1e6:.2f}/{plans['fp16']['constant_bytes'] / 1e6:.2f}"
        med = {p: statistics.median(v) * 1e3 for p, v in times.items()}
        print(f"{name:34s} {const:>13s} {med['fp32']:8.1f} {med['fp16']:8.1f} {err(outs['fp32']):9.1e} "
              f"{err(outs['fp16']):9.1e}", flush=True)
        for it in its.values():
            it.close()


if __name__ == "__main__":
    main()
