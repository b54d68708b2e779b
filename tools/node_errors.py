"""Where does a model's output drift from LiteRT's? Node by node, on one random input.

A developer tool (not a test)::

    GPULITE_CPU_FUSE=0 python tools/node_errors.py pose_landmark_full --backend cpu --seed 4

LiteRT runs with its builtin kernels and ``experimental_preserve_all_tensors``, so every
intermediate tensor is there to compare (XNNPACK keeps its intermediates inside the
delegate). For each node of gpulite's graph whose output LiteRT also names (run with
``GPULITE_CPU_FUSE=0`` so the CPU backend fuses nothing), it prints:

- *accumulated*: gpulite's tensor after a whole invoke against LiteRT's, as
  ``max|a - b| / max(1, max|b|)``: how the difference grows along the graph;
- *local*: gpulite's kernel for that node alone, fed LiteRT's own inputs, against LiteRT's
  output: a kernel that is wrong, or rounds worse than float32 allows, stands out here;
- for the convolutions with the largest local difference, both against a float64 convolution
  of the same inputs: which of the two is closer to the exact result.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
from ai_edge_litert.interpreter import Interpreter as LiteRt
from ai_edge_litert.interpreter import OpResolverType
from numpy.lib.stride_tricks import sliding_window_view

from gpulite import Interpreter, zoo
from gpulite.backends.cpu.window import window
from gpulite.graph.resolve import _one_node


def rel(a: np.ndarray, b: np.ndarray) -> float:
    b = b.astype(np.float64)
    return float(np.abs(a.reshape(b.shape) - b).max() / max(1.0, np.abs(b).max()))


def conv_f64(node, graph, values: dict[str, np.ndarray]) -> np.ndarray:
    """CONV_2D of LiteRT's input in float64 (bias, fused clamp)."""
    t = graph.tensors
    x = values[t[node.inputs[0]].name].astype(np.float64)
    w = t[node.inputs[1]].const.astype(np.float64)
    b = t[node.inputs[2]].const.astype(np.float64) if len(node.inputs) > 2 and node.inputs[2] >= 0 else 0.0
    _, kh, kw, _ = w.shape
    win = window(x.shape, kh, kw, node.options, t[node.outputs[0]].shape)
    xp = np.pad(x, ((0, 0), (win.pad_t, win.pad_b), (win.pad_l, win.pad_r), (0, 0)))
    taps = sliding_window_view(xp, (win.dh * (kh - 1) + 1, win.dw * (kw - 1) + 1), axis=(1, 2))
    taps = taps[:, ::win.sh, ::win.sw, :, ::win.dh, ::win.dw][:, :win.oh, :win.ow]
    lo, hi = node.activation.bounds(np.float32) if node.activation else (-np.inf, np.inf)
    return np.clip(np.einsum("nhwcij,oijc->nhwo", taps, w) + b, lo, hi)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a zoo name or a .tflite path")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "webgpu"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    path = str(zoo.resolve(args.model))
    ref = LiteRt(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
                 experimental_preserve_all_tensors=True)
    ref.allocate_tensors()
    d = ref.get_input_details()[0]
    x = np.random.default_rng(args.seed).uniform(-1, 1, d["shape"]).astype(d["dtype"])
    ref.set_tensor(d["index"], x)
    ref.invoke()
    values = {}
    for t in ref.get_tensor_details():
        try:
            values[t["name"]] = ref.get_tensor(t["index"]).copy()
        except ValueError:  # tensors without data
            pass
    it = Interpreter(model_path=path, backend=args.backend)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    graph = it._graph
    seen: dict[int, tuple] = {}

    class Record:
        def node_done(self, node, ms, read):
            for o in node.outputs:
                v = read(o)
                if v is not None:
                    seen[o] = (node, np.array(v, copy=True))

    it._exe.invoke(Record())
    print(f"{args.model} on {args.backend}, seed {args.seed}: accumulated difference from LiteRT's builtin kernels")
    for o, (node, v) in seen.items():
        name = graph.tensors[o].name
        if name in values and v.dtype.kind == "f" and values[name].size == v.size:
            print(f"  {node.index:4d} {node.op:20s} {tuple(v.shape)!s:20s} {rel(v, values[name]):.2e}  {name[:60]}")
    local = []
    for node in graph.nodes:
        def info(i: int):
            t = graph.tensors[i]
            return t if t.is_const else dataclasses.replace(t, const=values[t.name].reshape(t.shape).astype(t.dtype))
        try:
            outs = it._evaluate(_one_node(node, info))
        except (KeyError, ValueError):  # an input LiteRT does not keep
            continue
        for o, v in zip(node.outputs, outs, strict=True):
            name = graph.tensors[o].name
            if name in values and v.dtype.kind == "f":
                local.append((rel(v, values[name]), node, v))
    local.sort(key=lambda r: -r[0])
    print(f"largest local differences (gpulite's cpu kernel on LiteRT's inputs), top {args.top}")
    for err, node, _ in local[:args.top]:
        print(f"  {node.index:4d} {node.op:20s} {err:.2e}")
    print("the convolutions among them against float64 (absolute)")
    for _, node, v in [r for r in local[:args.top] if r[1].op == "CONV_2D"][:4]:
        exact = conv_f64(node, graph, values)
        lite = values[graph.tensors[node.outputs[0]].name]
        print(f"  {node.index:4d} LiteRT {np.abs(lite - exact).max():.2e}  gpulite {np.abs(v - exact).max():.2e}")


if __name__ == "__main__":
    main()
