"""Work counts of the WebGPU convolution and matrix-product dispatches, per layer::

    python benchmarks/matmul_counts.py                          # pose_landmark_full, hand_landmark_full
    python benchmarks/matmul_counts.py selfie_segmentation --top 8

For the largest CONV_2D layers (by FLOPs), the two largest DEPTHWISE_CONV_2D and every
FULLY_CONNECTED of each model, from the compiled plan (no GPU time is measured, so it runs
the same on lavapipe): workgroups x threads per workgroup, outputs per thread, products one
thread sums for one output (``Program.reduction_per_thread``) and the bytes the kernel's loads
request per output (caches not counted), next to the same counts for the kernels these
replaced (one thread per 4 output channels reading the whole window, one per FC output, one
per 4 depthwise channels), computed from those kernels' loop structure. The plans are those a
GPU gets (``gemm.spreads``), also where the adapter is a CPU. docs/webgpu.md,
"Matrix products", shows the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


def _old(op: str, k: int, out_size: int) -> tuple[int, int, float, int, float]:
    """(workgroups, threads per workgroup, outputs per thread, products per thread, bytes per
    output) of the pre-tiling kernels: 64-thread workgroups; conv: 4 output channels per thread,
    each input value and a vec4 of weights per product step; FC: one output per thread, an input
    and a weight per product; depthwise: 4 channels per thread, a vec4 of input and of weights
    per tap."""
    per = {"CONV_2D": 4, "FULLY_CONNECTED": 1, "DEPTHWISE_CONV_2D": 4}[op]
    threads = -(-out_size // per)
    bytes_per_output = {"CONV_2D": (4 * k + 16 * k) / 4, "FULLY_CONNECTED": 8 * k, "DEPTHWISE_CONV_2D": 8 * k}[op]
    return -(-threads // 64), 64, per, k, bytes_per_output


def _new(program, op: str, node, g, k: int, out_size: int) -> tuple[int, int, float, int, float]:
    wgs = int(np.prod(program.dispatch))
    threads = program.threads
    sources = program.key[0]
    if "gemm" in sources:
        from gpulite.backends.webgpu.kernels import gemm

        n = g.tensors[node.outputs[0]].shape[-1]
        p = gemm.plan(out_size // n, n, k)
        # per k-step of a tile: the A rows and the B columns that exist (vec4s), for every tile
        loaded = (p.m * p.k_pad * p.tiles_n + p.k * p.n4 * p.tiles_m) * 4
        return wgs, program.workgroup_size, out_size / threads, program.reduction_per_thread, loaded / out_size
    if sources[0] == "depthwise_conv2d_c4":
        kh, kw = g.tensors[node.inputs[1]].shape[1:3]
        o = node.options
        cols = 3 * (o.stride_w or 1) + (kw - 1) * (o.dilation_w_factor or 1) + 1
        # per filter row: the four columns' input pixels and the row's taps, one vec4 each, for 16 outputs
        return wgs, program.workgroup_size, 16, program.reduction_per_thread, kh * (cols + kw) * 16 / 16
    return wgs, program.workgroup_size, out_size / threads, program.reduction_per_thread, float("nan")


def rows(name: str, top: int) -> list[tuple]:
    import gpulite
    from gpulite.backends.webgpu.kernels import gemm

    gemm.spreads = lambda gdev: True  # the plans a GPU gets, also on a CPU adapter

    it = gpulite.Interpreter(model_path=name, backend="webgpu")
    it.allocate_tensors()
    exe = it._exe
    g = exe.graph
    out = []
    for node in g.nodes:
        if node.op not in OPS:
            continue
        x, w, y = (g.tensors[t].shape for t in (node.inputs[0], node.inputs[1], node.outputs[0]))
        size = int(np.prod(y))
        k = int(w[-1]) if node.op == "FULLY_CONNECTED" else int(np.prod(w[1:] if node.op == "CONV_2D" else w[1:3]))
        programs = [p for part in exe.parts if part.backend == "webgpu" for p in part.work
                    if p.name.startswith(_label(node.op, x, w, y))]
        if not programs:
            continue
        out.append((2 * size * k, node.op, f"{tuple(x)} * {tuple(w)} -> {tuple(y)}", _old(node.op, k, size),
                    _new(programs[0], node.op, node, g, k, size)))
    convs = sorted((r for r in out if r[1] == "CONV_2D"), key=lambda r: -r[0])[:top]
    dws = sorted((r for r in out if r[1] == "DEPTHWISE_CONV_2D"), key=lambda r: -r[0])[:2]
    fcs = [r for r in out if r[1] == "FULLY_CONNECTED"]
    seen, picked = set(), []
    for r in convs + dws + fcs:
        if r[2] not in seen:
            seen.add(r[2])
            picked.append(r)
    return picked


def _label(op: str, x, w, y) -> str:
    if op == "FULLY_CONNECTED":
        return f"fully_connected {tuple(x)}x{tuple(w)}->{tuple(y)}"
    return f"{op.lower()} {tuple(x)}*{tuple(w)}->{tuple(y)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=["pose_landmark_full", "hand_landmark_full"])
    ap.add_argument("--top", type=int, default=3, help="CONV_2D layers per model, by FLOPs")
    args = ap.parse_args()
    print("| model | layer | MFLOP | workgroups x threads before | after | outputs/thread before | after"
          " | products/thread before | after | bytes loaded/output before | after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models:
        for flops, op, shapes, old, new in rows(name, args.top):
            print(f"| {name} | {op} {shapes} | {flops / 1e6:.1f} | {old[0]} x {old[1]} | {new[0]} x {new[1]} | "
                  f"{old[2]:g} | {new[2]:.3g} | {old[3]} | {new[3]} | {old[4]:.0f} | {new[4]:.0f} |")


if __name__ == "__main__":
    main()
