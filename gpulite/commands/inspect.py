"""``gpulite inspect MODEL``: what gpulite makes of a model.

Inputs and outputs, the operators in the file, what was folded or fused at load, the memory
plan (arena bytes against the sum of the intermediate tensors it replaces) and the backend's
``get_plan()``; on webgpu, each node that falls back to the CPU with its op and the reason
(the kernel's ``UnsupportedOpError`` detail, or "no webgpu kernel"). MODEL is a ``.tflite``
path or a zoo name such as ``face_detection_short_range``; a file that is not a ``.tflite``
model is an input error (exit status 2).

Usage::

    gpulite inspect pose_landmark_full --backend webgpu
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from gpulite import zoo
from gpulite.errors import GpuliteError
from gpulite.graph.plan import plan_memory, topological_order
from gpulite.interpreter import Interpreter
from gpulite.model.reader import load

FOLDED_MEANING = {
    "DEQUANTIZE": "constant weights dequantized to float32 at load",
    "DENSIFY": "sparse constant weights densified at load",
    "RELU": "fused into the producing op",
    "RELU6": "fused into the producing op",
    "RELU_N1_TO_1": "fused into the producing op",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite inspect``."""
    p = subparsers.add_parser("inspect", help="show a model's inputs, operators, folding and memory plan",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a .tflite path or a zoo name")
    p.add_argument("--backend", default="cpu", choices=("cpu", "webgpu", "litert"))
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``gpulite inspect``; returns the exit status."""
    inspect_model(args.model, backend=args.backend)
    return 0


def fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def _fmt_bytes(n: int) -> str:
    return f"{n:,} B ({n / (1 << 20):.2f} MiB)"


def inspect_model(model: str, backend: str = "cpu", out: Callable[[str], None] = print) -> None:
    """Print inputs/outputs, op counts, folded nodes, the memory plan and ``get_plan()``.

    Parameters
    ----------
    model : str
        A ``.tflite`` path or a zoo name.
    backend : str
        The backend whose kernels ``allocate_tensors`` compiles for ``get_plan()``.
    out : callable
        Receives each output line (``print`` by default).
    """
    path = zoo.resolve(model)
    m = load(path)
    it = Interpreter(model_path=path, backend=backend)
    graph = it.graph
    out(f"model      {path} ({path.stat().st_size:,} bytes)")
    if m.description:
        out(f"           {m.description}")
    out(f"backend    {backend}")
    for title, details in (("inputs", it.get_input_details()), ("outputs", it.get_output_details())):
        out(title)
        for d in details:
            out(f"  {d['index']:>5}  {d['name']:<40} {fmt_shape(d['shape']):<20} {np.dtype(d['dtype']).name}")

    ops = m.subgraphs[0].operators
    counts = Counter(o.op for o in ops)
    out(f"operators  {len(ops)} in the file, {len(graph.nodes)} after load-time passes")
    for op, n in counts.most_common():
        out(f"  {op:<28} {n:>5}")

    kept = {n.index for n in graph.nodes} | set(it.get_plan().get("cpu_after_invoke", ()))
    folded = Counter(o.op for o in ops if o.index not in kept)
    out(f"folded     {sum(folded.values())} nodes")
    for op, n in folded.most_common():
        out(f"  {op:<28} {n:>5}  {FOLDED_MEANING.get(op, 'computed at allocate (values known then)')}")

    plan = plan_memory(graph, topological_order(graph))
    share = 100.0 * plan.arena_bytes / plan.total_bytes if plan.total_bytes else 0.0
    out(f"arena      {_fmt_bytes(plan.arena_bytes)}")
    out(f"           vs {_fmt_bytes(plan.total_bytes)} summed over {len(plan.sizes)} non-constant tensors "
        f"({share:.1f}%)")
    try:
        it.allocate_tensors()
    except GpuliteError as e:
        out(f"plan       allocate_tensors() failed on backend {backend!r}: {e}")
        return
    out("plan")
    plan_d = it.get_plan()
    fallback = plan_d.pop("cpu_fallback", None)
    for key, value in plan_d.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            out(f"  {key}")
            for v in value:  # e.g. webgpu partitions: node lists are long, their count says enough
                out("    " + ", ".join(f"{k}={len(x) if k == 'nodes' and isinstance(x, list) else x}"
                                      for k, x in v.items()))
        else:
            out(f"  {key:<26} {value}")
    if fallback is not None:
        out(f"cpu fallback  {len(fallback)} node(s) run on the CPU backend" + (":" if fallback else ""))
        for f in fallback:
            out(f"  node {f['node']:>4}  {f['op']:<28} {f['reason']}")
