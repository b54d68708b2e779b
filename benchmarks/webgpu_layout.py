"""Channel layout on WebGPU: dense NHWC (vec4 loads when C % 4 == 0) against PHWC4, per layer::

    python benchmarks/webgpu_layout.py                                  # the three default models
    python benchmarks/webgpu_layout.py pose_landmark_full --target-ms 100 --reps 7
    python benchmarks/webgpu_layout.py --markdown                       # tables as in docs/webgpu.md

Every distinct CONV_2D / DEPTHWISE_CONV_2D shape of the models (input, filter, output, stride,
padding, fused activation) runs, with random data, on gpulite's own shaders and weight
re-layouts (``kernels/conv.py``; no kernel is changed here) in three variants:

- ``scalar``: CONV_2D's tiled product (``gemm.wgsl``) reading its input one f32 at a time /
  ``depthwise_conv2d.wgsl`` (one output per thread). Applies to every layer.
- ``vec4``: the tiled product reading 4-channel slices (Cin % 4 == 0) /
  ``depthwise_conv2d_c4.wgsl`` (C % 4 == 0), through the vec4 binding. What gpulite's NHWC layout runs when it
  applies ("-" when it does not; gpulite then runs ``scalar``).
- ``phwc4``: PHWC4 emulated, i.e. what that layout costs per layer: the same layer with every
  channel count rounded up to a multiple of 4, the extra input channels zero, the weights
  zero-padded to match, run through the vec4 kernel and writing the padded output. Where
  every channel count is already a multiple of 4 this is the very same dispatch as ``vec4``
  (shown as ``=``, not measured twice).

``nhwc`` is what gpulite runs today (``vec4`` where it applies, else ``scalar``);
``phwc4/nhwc`` their ratio. ``+KB`` is the memory PHWC4 adds for the layer: the channel
padding of its input and output activations and of its weights (gpulite already pads the
output channels of CONV_2D weights to 4, so that part is not counted again).

Timing is GPU time without readback: one command buffer holding N dispatches of the layer
(one compute pass; WebGPU orders dispatches that write the same buffer), submitted, then a
4-byte copy and one map as the fence; the same with 0 dispatches is the baseline, so
``(t(N) - t(0)) / N`` is one dispatch. N is calibrated to about ``--target-ms`` per batch;
each number is the median of ``--reps`` batches, the variants of a layer alternating batch by
batch so that machine noise hits them alike. Nothing here assumes a particular adapter
(``GPULITE_ADAPTER`` picks one); on a CPU adapter (lavapipe, SwiftShader, WARP) the absolute
numbers are CPU times, and only the ratios between layouts carry over.

The per-model summary sums every conv/depthwise node (repeated shapes counted each time) and
gives the activation arena of the model's memory plan as is and with every float
activation's last dim padded to 4 (PHWC4 over the whole graph, not only the convolutions).
``--check`` (default on) compares the three variants' outputs with each other.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

DEFAULT_MODELS = ("face_detection_short_range", "pose_landmark_full", "selfie_segmentation")


def _up4(n: int) -> int:
    return -(-n // 4) * 4


@dataclass(frozen=True)
class Layer:
    op: str  # "conv" or "dw"
    x: tuple[int, int, int, int]
    w: tuple[int, int, int, int]  # TFLite: conv OHWI [Cout, KH, KW, Cin]; depthwise [1, KH, KW, C]
    y: tuple[int, int, int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    padding: int  # TFLite Padding enum
    act: str | None

    @property
    def cin(self) -> int:
        return self.x[3]

    @property
    def cout(self) -> int:
        return self.y[3]

    def label(self) -> str:
        k = f"{self.w[1]}x{self.w[2]}"
        s = f"/{self.stride[0]}" if self.stride != (1, 1) else ""
        s += " valid" if self.padding == 1 else ""  # TFLite Padding: SAME 0, VALID 1
        s += f" {self.act.lower()}" if self.act else ""
        return f"{self.op:4s} {self.x[1]}x{self.x[2]}x{self.cin}->{self.y[1]}x{self.y[2]}x{self.cout} k{k}{s}"

    def vec4_applies(self) -> bool:
        """Whether gpulite's NHWC kernels take the vec4 path (kernels/conv.py's test)."""
        return self.cin % 4 == 0 if self.op == "conv" else (self.cin % 4 == 0 and self.cin == self.cout)

    def aligned(self) -> bool:
        """Every channel count a multiple of 4: PHWC4 is then byte-for-byte NHWC."""
        return self.cin % 4 == 0 and self.cout % 4 == 0

    def padded(self) -> Layer:
        """The layer PHWC4 runs: channels rounded up to a multiple of 4."""
        ci, co = _up4(self.cin), _up4(self.cout)
        w = (co, *self.w[1:3], ci) if self.op == "conv" else (1, *self.w[1:3], co)
        return Layer(self.op, (*self.x[:3], ci), w, (*self.y[:3], co), self.stride, self.dilation,
                     self.padding, self.act)

    def extra_bytes(self) -> tuple[int, int]:
        """(activation, weight) bytes PHWC4 adds for this layer."""
        n, h, w, _ = self.x
        act = n * h * w * (_up4(self.cin) - self.cin) * 4 + int(np.prod(self.y[:3])) * (_up4(self.cout) - self.cout) * 4
        kh, kw = self.w[1:3]
        if self.op == "conv":  # PHWC4's Cin padding (gpulite's packed weights pad Cout and K themselves)
            wt = _up4(self.cout) * kh * kw * (_up4(self.cin) - self.cin) * 4
        else:
            wt = kh * kw * (_up4(self.cout) - self.cout) * 4 + (_up4(self.cout) - self.cout) * 4
        return act, wt


def model_layers(name: str) -> tuple[list[Layer], int, int]:
    """A model's conv/depthwise layers (one entry per node) and its activation arena bytes as
    planned (NHWC) and with every float activation's last dim padded to 4 (PHWC4)."""
    from gpulite import zoo
    from gpulite.graph.ir import Graph
    from gpulite.graph.passes import fold_constants
    from gpulite.graph.plan import plan_memory, topological_order
    from gpulite.model.reader import load

    g = fold_constants(Graph.from_model(load(zoo.resolve(name))))
    layers = []
    for n in g.nodes:
        if n.op not in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            continue
        x, w, y = (g.tensors[i] for i in (n.inputs[0], n.inputs[1], n.outputs[0]))
        if len(x.shape) != 4 or len(w.shape) != 4 or len(y.shape) != 4:
            continue
        if n.op == "DEPTHWISE_CONV_2D" and y.shape[3] != x.shape[3]:
            continue  # channel multipliers: none in the zoo; the vec4 kernel takes multiplier 1 only
        o = n.options
        layers.append(Layer("conv" if n.op == "CONV_2D" else "dw", tuple(x.shape), tuple(w.shape), tuple(y.shape),
                            (o.stride_h or 1, o.stride_w or 1), (o.dilation_h_factor or 1, o.dilation_w_factor or 1),
                            o.padding, n.activation))
    order = topological_order(g)
    nhwc = plan_memory(g, order).arena_bytes
    gp = copy.copy(g)
    gp.tensors = [copy.copy(t) for t in g.tensors]
    for t in gp.tensors:
        if not t.is_const and t.dtype == np.float32 and len(t.shape) >= 1:
            t.shape = (*t.shape[:-1], _up4(t.shape[-1]))
    return layers, nhwc, plan_memory(gp, order).arena_bytes


class Bench:
    """One layer variant on its own arena: [input | output | weights | bias], 16-byte aligned."""

    def __init__(self, gdev, layer: Layer, variant: str, x: np.ndarray, w: np.ndarray, bias: np.ndarray):
        import wgpu

        from gpulite.backends.webgpu.geometry import pad_before
        from gpulite.backends.webgpu.kernels import gemm
        from gpulite.backends.webgpu.program import get_pipeline, make_program

        self.gdev, self.layer = gdev, layer
        lay = layer
        (_, ih, iw, ic), (_, oh, ow, oc), (kh, kw) = lay.x, lay.y, lay.w[1:3]
        words: list[np.ndarray] = []
        offsets: list[int] = []
        pos = 0

        def put(a: np.ndarray) -> int:
            nonlocal pos
            off = pos
            a = np.ascontiguousarray(a, np.float32).reshape(-1)
            words.append(a)
            words.append(np.zeros(_up4(a.size) - a.size, np.float32))
            pos += _up4(a.size)
            offsets.append(off)
            return off

        x_off = put(x)
        self.out_off, self.out_words = put(np.zeros(int(np.prod(lay.y)), np.float32)), int(np.prod(lay.y))
        window = [
            ("in_h", "u32", ih), ("in_w", "u32", iw), ("in_c", "u32", ic),
            ("out_h", "u32", oh), ("out_w", "u32", ow), ("out_c", "u32", oc),
            ("k_h", "u32", kh), ("k_w", "u32", kw),
            ("stride_h", "u32", lay.stride[0]), ("stride_w", "u32", lay.stride[1]),
            ("dil_h", "u32", lay.dilation[0]), ("dil_w", "u32", lay.dilation[1]),
            ("pad_top", "i32", pad_before(lay.padding, ih, oh, kh, lay.stride[0], lay.dilation[0])),
            ("pad_left", "i32", pad_before(lay.padding, iw, ow, kw, lay.stride[1], lay.dilation[1])),
            ("x_off", "u32", x_off), ("out_off", "u32", self.out_off),
        ]
        fin = {"FINISH": "return act(v);"}
        name = f"{lay.label()} [{variant}]"
        if lay.op == "conv":  # the tiled product (kernels/gemm.py), as kernels/conv.py builds it
            p = gemm.plan(oh * ow, oc, kh * kw * ic, spread=gemm.spreads(gdev))
            b = gemm.padded_bias(bias, p)
            params = [*window, ("w_off", "u32", put(gemm.packed_b(w.transpose(1, 2, 3, 0).reshape(-1, oc), p))),
                      ("bias_off", "u32", put(b))]
            pads = [v for f, _, v in window if f.startswith("pad_")]
            a = "gemm_rows" if (kh, kw, *lay.stride, *pads) == (1, 1, 1, 1, 0, 0) else "gemm_im2col"
            (prog,) = gemm.programs(None, name, (a, "gemm_weights"), p, params, act=lay.act,
                                    A_VEC=str(variant != "scalar").lower(), A_SCALE="return v;", **fin)
        else:
            w_off, bias_off = put(w), put(bias)
            if variant == "scalar":
                params = [*window, ("mult", "u32", 1), ("w_off", "u32", w_off), ("bias_off", "u32", bias_off)]
                prog = make_program(name, "depthwise_conv2d", params, oh * ow * oc, act=lay.act, **fin)
            else:
                sw, dw = lay.stride[1], lay.dilation[1]
                blocks = -(-ow // 4)
                params = [p for p in window if p[0] not in ("in_c", "out_c", "k_w", "stride_w", "dil_w")] + [
                    ("c4", "u32", ic // 4), ("col_blocks", "u32", blocks), ("w_off", "u32", w_off),
                    ("bias_off", "u32", bias_off)]
                prog = make_program(name, "depthwise_conv2d_c4", params, oh * blocks * ic // 4, act=lay.act,
                                    KW=str(kw), SW=str(sw), DW=str(dw), COLS=str(3 * sw + (kw - 1) * dw + 1), **fin)
        dev = gdev.device
        data = np.concatenate(words)
        self.arena = dev.create_buffer_with_data(
            data=data.tobytes(), usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
        self.ubuf = dev.create_buffer_with_data(data=prog.params, usage=wgpu.BufferUsage.UNIFORM)
        self.pipeline = get_pipeline(gdev, prog)
        size = data.nbytes
        self.bind_group = dev.create_bind_group(layout=gdev.bind_group_layout_for("f32"), entries=[
            {"binding": 0, "resource": {"buffer": self.arena, "offset": 0, "size": size}},
            {"binding": 1, "resource": {"buffer": self.ubuf, "offset": 0, "size": len(prog.params)}},
            {"binding": 2, "resource": {"buffer": self.arena, "offset": 0, "size": size}},
        ])
        self.grid = prog.dispatch
        self.fence = dev.create_buffer(size=16, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)
        self.read = dev.create_buffer(size=_up4(self.out_words) * 4,
                                      usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)

    def run(self, n: int) -> float:
        """Seconds for n dispatches in one submit plus the 4-byte fence readback."""
        import wgpu

        dev = self.gdev.device
        t = time.perf_counter()
        enc = dev.create_command_encoder()
        if n:
            cp = enc.begin_compute_pass()
            cp.set_pipeline(self.pipeline)
            cp.set_bind_group(0, self.bind_group)
            for _ in range(n):
                cp.dispatch_workgroups(*self.grid)
            cp.end()
        enc.copy_buffer_to_buffer(self.arena, self.out_off * 4, self.fence, 0, 16)
        dev.queue.submit([enc.finish()])
        self.fence.map_sync(wgpu.MapMode.READ)
        self.fence.unmap()
        return time.perf_counter() - t

    def output(self) -> np.ndarray:
        import wgpu

        dev = self.gdev.device
        enc = dev.create_command_encoder()
        cp = enc.begin_compute_pass()
        cp.set_pipeline(self.pipeline)
        cp.set_bind_group(0, self.bind_group)
        cp.dispatch_workgroups(*self.grid)
        cp.end()
        enc.copy_buffer_to_buffer(self.arena, self.out_off * 4, self.read, 0, self.read.size)
        dev.queue.submit([enc.finish()])
        self.read.map_sync(wgpu.MapMode.READ)
        out = np.frombuffer(self.read.read_mapped(), np.float32)[:self.out_words].copy()
        self.read.unmap()
        return out.reshape(self.layer.y)

    def close(self) -> None:
        for b in (self.arena, self.ubuf, self.fence, self.read):
            b.destroy()


def measure(benches: dict[str, Bench], target_s: float, reps: int) -> dict[str, float]:
    """Median seconds per dispatch of each bench, batches alternating between them."""
    ns = {}
    for k, b in benches.items():
        b.run(1)  # first dispatch: drivers that compile lazily (lavapipe) compile here
        base = min(b.run(0) for _ in range(3))
        one = min(b.run(1) for _ in range(2)) - base
        ns[k] = int(min(max(target_s / max(one, 1e-6), 1), 500))
    times: dict[str, list[float]] = {k: [] for k in benches}
    for _ in range(reps):
        for k, b in benches.items():
            t0 = b.run(0)
            tn = b.run(ns[k])
            t0 = min(t0, b.run(0))
            times[k].append(max(tn - t0, 0.0) / ns[k])
    return {k: statistics.median(v) for k, v in times.items()}


def bench_layer(gdev, lay: Layer, target_s: float, reps: int, check: bool) -> dict[str, float]:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, lay.x).astype(np.float32)
    w = rng.uniform(-1, 1, lay.w).astype(np.float32)
    b = rng.uniform(-1, 1, lay.cout).astype(np.float32)
    pl = lay.padded()
    xp = np.zeros(pl.x, np.float32)
    xp[..., :lay.cin] = x
    wp = np.zeros(pl.w, np.float32)
    if lay.op == "conv":
        wp[:lay.cout, ..., :lay.cin] = w
    else:
        wp[..., :lay.cout] = w
    bp = np.zeros(pl.cout, np.float32)
    bp[:lay.cout] = b
    benches = {"scalar": Bench(gdev, lay, "scalar", x, w, b)}
    if lay.vec4_applies():
        benches["vec4"] = Bench(gdev, lay, "vec4", x, w, b)
    if not lay.aligned():
        benches["phwc4"] = Bench(gdev, pl, "vec4", xp, wp, bp)
    try:
        if check:
            ref = benches["scalar"].output()
            for k, bn in benches.items():
                got = bn.output()[..., :lay.cout]
                err = float(np.abs(got - ref).max())
                if err > 1e-4 * max(1.0, float(np.abs(ref).max())):
                    raise AssertionError(f"{lay.label()}: {k} differs from scalar by {err}")
        res = measure(benches, target_s, reps)
    finally:
        for bn in benches.values():
            bn.close()
    if "phwc4" not in res:
        res["phwc4"] = res["vec4"]
    return res


def main() -> None:
    from gpulite.backends.webgpu.device import get_device

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=list(DEFAULT_MODELS))
    ap.add_argument("--target-ms", type=float, default=40.0, help="GPU time per timed batch (default 40)")
    ap.add_argument("--reps", type=int, default=5, help="timed batches per variant (median; default 5)")
    ap.add_argument("--no-check", dest="check", action="store_false", help="skip comparing the variants' outputs")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    ap.add_argument("--all-rows", action="store_true",
                    help="list every layer (default: the layers whose layouts differ, plus the totals)")
    args = ap.parse_args()

    gdev = get_device()
    info = gdev.adapter.info
    atype = str(info.get("adapter_type", "?"))
    print(f"adapter: {gdev.name} [{atype}, {info.get('backend_type', '?')}]")
    if "cpu" in atype.lower():
        print("NOTE: a CPU adapter (software rasterizer): the absolute times below are CPU times, "
              "not GPU times; only the ratios between layouts are informative.")
    print(f"GPU time per dispatch, no readback: median of {args.reps} batches of ~{args.target_ms:g} ms, "
          "baseline (0 dispatches) subtracted\n")

    per_model = {m: model_layers(m) for m in args.models}
    uses: dict[Layer, list[str]] = {}
    for m, (layers, _, _) in per_model.items():
        for lay in layers:
            uses.setdefault(lay, [])
            if m not in uses[lay]:
                uses[lay].append(m)
    short = {m: "".join(p[0] for p in m.split("_")) for m in args.models}
    print("models: " + ", ".join(f"{v} = {k}" for k, v in short.items()) + "\n")
    results: dict[Layer, dict[str, float]] = {}
    md = args.markdown
    head = ("layer", "model", "scalar ms", "vec4 ms", "phwc4 ms", "phwc4/nhwc", "+KB act", "+KB wt")
    if md:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    else:
        print(f"{head[0]:52s} {head[1]:>9s} {head[2]:>9s} {head[3]:>9s} {head[4]:>9s} {head[5]:>10s} "
              f"{head[6]:>8s} {head[7]:>7s}")
    for lay in sorted(uses, key=lambda lay: (lay.aligned(), lay.op, -int(np.prod(lay.y)))):
        r = results[lay] = bench_layer(gdev, lay, args.target_ms / 1e3, args.reps, args.check)
        if lay.aligned() and not args.all_rows:
            continue
        nhwc = r["vec4"] if lay.vec4_applies() else r["scalar"]
        act, wt = lay.extra_bytes()
        cells = (lay.label(), ",".join(short[m] for m in uses[lay]), f"{r['scalar'] * 1e3:.3f}",
                 f"{r['vec4'] * 1e3:.3f}" if lay.vec4_applies() else "-",
                 "=" if lay.aligned() else f"{r['phwc4'] * 1e3:.3f}", f"{r['phwc4'] / nhwc:.2f}",
                 f"{act / 1024:.1f}", f"{wt / 1024:.1f}")
        if md:
            print("| " + " | ".join(cells) + " |", flush=True)
        else:
            print(f"{cells[0]:52s} {cells[1]:>9s} {cells[2]:>9s} {cells[3]:>9s} {cells[4]:>9s} {cells[5]:>10s} "
                  f"{cells[6]:>8s} {cells[7]:>7s}", flush=True)

    print("\nvec4 / scalar over the layers where vec4 applies (geometric mean, min, max):")
    for op in ("conv", "dw"):
        q = [results[lay]["vec4"] / results[lay]["scalar"] for lay in results if lay.op == op and lay.vec4_applies()]
        if q:
            print(f"  {op:4s} {len(q):3d} layers: {float(np.exp(np.mean(np.log(q)))):.2f} "
                  f"({min(q):.2f} .. {max(q):.2f})")

    print("\nper model (every conv/depthwise node, repeated shapes counted each time):")
    head = ("model", "nodes", "unaligned", "all-scalar ms", "nhwc ms", "phwc4 ms", "phwc4/nhwc",
            "arena MB nhwc", "arena MB phwc4")
    if md:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for m, (layers, a_nhwc, a_phwc4) in per_model.items():
        tot = {"scalar": 0.0, "nhwc": 0.0, "phwc4": 0.0}
        for lay in layers:
            r = results[lay]
            tot["scalar"] += r["scalar"]
            tot["nhwc"] += r["vec4"] if lay.vec4_applies() else r["scalar"]
            tot["phwc4"] += r["phwc4"]
        cells = (m, str(len(layers)), str(sum(not lay.aligned() for lay in layers)), f"{tot['scalar'] * 1e3:.2f}",
                 f"{tot['nhwc'] * 1e3:.2f}", f"{tot['phwc4'] * 1e3:.2f}", f"{tot['phwc4'] / tot['nhwc']:.3f}",
                 f"{a_nhwc / 1e6:.2f}", f"{a_phwc4 / 1e6:.2f}")
        if md:
            print("| " + " | ".join(cells) + " |")
        else:
            print("  " + "  ".join(f"{h}={c}" for h, c in zip(head, cells, strict=True)))


if __name__ == "__main__":
    main()
