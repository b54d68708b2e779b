"""``gpulite inspect MODEL``: what gpulite makes of a model.

Inputs and outputs, the operators in the file, what was folded or fused at load, the memory
plan (arena bytes against the sum of the intermediate tensors it replaces) and the backend's
``get_plan()``; on webgpu, each node that falls back to the CPU with its op and the reason
(the kernel's ``UnsupportedOpError`` detail, or "no webgpu kernel"). A model with TFLite
Metadata also shows it: name, version, author, licence, each input's content and
normalization, each output's labels, score threshold and calibration, and the files packed
in the model. MODEL is a ``.tflite`` path or a zoo name such as ``face_detection_short_range``;
a MediaPipe Tasks ``.task`` bundle (or its zoo name, ``face_landmarker``) lists its members and
the metadata of each model in it. A file that is neither is an input error (exit status 2).

Usage::

    gpulite inspect pose_landmark_full --backend webgpu
"""

from __future__ import annotations

import argparse
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from gpulite import zoo
from gpulite.errors import GpuliteError, ModelError
from gpulite.graph.plan import plan_memory, topological_order
from gpulite.interpreter import Interpreter
from gpulite.model import metadata as tfmeta
from gpulite.model.reader import load

FOLDED_MEANING = {
    "DEQUANTIZE": "constant weights dequantized to float32 at load",
    "DENSIFY": "sparse constant weights densified at load",
    "SHAPE": "computed at allocate (shapes are known then)",
    "RANK": "computed at allocate (shapes are known then)",
}
CONSTANT = "computed at load or allocate (its inputs are all constants)"
# What a node that reads a computed tensor became when it left the graph (gpulite.graph.fusion)
FUSED_MEANING = {
    "PAD": "fused into the convolution reading it (its zero padding)",
    "RELU": "fused into the producing op (its activation)",
    "RELU6": "fused into the producing op (its activation)",
    "RELU_N1_TO_1": "fused into the producing op (its activation)",
    "PRELU": "fused into the producing op (after its activation)",
}
FUSED = "fused into the producing op (run as a step on its output)"


def removed_nodes(model_ops: Sequence, constants: set[int], kept: set[int]) -> Counter:
    """(op, what became of it) -> count for each operator of the file that is not in the graph.

    A node whose inputs are all constants (file weights, or outputs of such nodes) or that
    reads only shapes was computed before the first invoke; any other missing node was fused
    into a neighbour.
    """
    known = set(constants)
    out: Counter = Counter()
    for o in model_ops:
        if o.index in kept:
            continue
        if o.op in ("SHAPE", "RANK") or all(i < 0 or i in known for i in o.inputs):
            known.update(o.outputs)
            out[o.op, FOLDED_MEANING.get(o.op, CONSTANT)] += 1
        else:
            out[o.op, FUSED_MEANING.get(o.op, FUSED)] += 1
    return out


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite inspect``."""
    p = subparsers.add_parser("inspect", help="show a model's inputs, operators, folding and memory plan",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a .tflite path or a zoo name")
    p.add_argument("--backend", default="cpu", choices=("cpu", "webgpu", "litert"))
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``gpulite inspect``; returns the exit status."""
    from gpulite.commands.common import check_backend

    check_backend(args.backend)
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
    data = path.read_bytes()
    if data[4:8] != b"TFL3" and (data[:4] == b"PK\x03\x04" or zipfile.is_zipfile(path)):
        _inspect_bundle(path, data, out)
        return
    m = load(data)
    it = Interpreter(model_path=path, backend=backend)
    graph = it.graph
    out(f"model      {path} ({path.stat().st_size:,} bytes)")
    if m.description:
        out(f"           {m.description}")
    md = tfmeta.load_metadata(m)
    if md is not None:
        print_metadata(md, out)
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
    constants = {i for i, t in enumerate(m.subgraphs[0].tensors) if t.data is not None}
    removed = removed_nodes(ops, constants, kept)
    out(f"folded     {sum(removed.values())} nodes (computed before the first invoke, or fused into another op)")
    for (op, how), n in removed.most_common():
        out(f"  {op:<28} {n:>5}  {how}")

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


def _inspect_bundle(path, data: bytes, out: Callable[[str], None]) -> None:
    from gpulite.tasks.bundle import Bundle, BundleError  # the tasks package is only needed for bundles

    try:
        b = Bundle.open(data)
    except BundleError as e:  # a truncated or damaged .task: the user's input, not a failure
        raise ModelError(f"{str(path)!r}: {e}") from None
    out(f"bundle     {path} ({len(data):,} bytes), {len(b.files)} files")
    for name, body in b.files.items():
        out(f"  {name:<46} {len(body):>12,} bytes")
    for name, body in b.files.items():
        if name.endswith(".tflite"):
            md = tfmeta.load_metadata(body)
            out(f"{name}")
            if md is None:
                out("  no TFLite Metadata")
            else:
                print_metadata(md, lambda s: out("  " + s))
        elif name.endswith(".task"):
            out(f"{name}: a nested bundle of {', '.join(b.bundle(name).names)}")


def _files(files: Sequence[tfmeta.AssociatedFile]) -> str:
    return ", ".join(f"{f.name} ({f.type}" + (f", {f.locale}" if f.locale else "") + ")" for f in files)


def print_metadata(md: tfmeta.ModelMetadata, out: Callable[[str], None] = print) -> None:
    """Print a model's TFLite Metadata: what it is, and what each input and output tensor needs."""
    out(f"metadata   {md.name or '(no name)'}" + (f", version {md.version}" if md.version else "")
        + (f", by {md.author}" if md.author else "") + f" (parser >= {md.min_parser_version or '?'})")
    for line in (md.description, md.license and f"licence: {md.license}"):
        if line:
            out(f"           {line}")
    if md.associated_files:
        out(f"  model files     {_files(md.associated_files)}")
    for si, sg in enumerate(md.subgraphs):
        if len(md.subgraphs) > 1 or sg.name:
            out(f"  subgraph {si}  {sg.name}")
        for kind, tensors in (("input", sg.inputs), ("output", sg.outputs)):
            for i, t in enumerate(tensors):
                what = f": {_content(t.content)}" if t.content else ""
                out(f"  {kind + ' ' + str(i):<15} {t.name or '(unnamed)'}{what}")
                for u in t.process_units:
                    out(f"    {_unit(u)}")
                if t.stats_min or t.stats_max:
                    out(f"    range           min {list(t.stats_min)}, max {list(t.stats_max)}")
                for f in t.associated_files:
                    extra = ""
                    if f.type in ("TENSOR_AXIS_LABELS", "TENSOR_VALUE_LABELS") and f.name in md.files:
                        labels = tfmeta.split_labels(md.files[f.name], f.name)
                        extra = f": {len(labels)} labels, {', '.join(map(repr, labels[:4]))}" + (
                            ", ..." if len(labels) > 4 else "")
                    locale = f", {f.locale}" if f.locale else ""
                    out(f"    file            {f.name} ({f.type}{locale}){extra}")
        if sg.associated_files:
            out(f"  subgraph files  {_files(sg.associated_files)}")
        for name, blob in sg.custom_metadata.items():
            out(f"  custom metadata {name} ({len(blob)} bytes)")
    if md.files:
        out("  packed files    " + ", ".join(f"{n} ({len(b):,} bytes)" for n, b in md.files.items()))


def _content(c: tfmeta.Content) -> str:
    p = c.properties
    if isinstance(p, tfmeta.ImageProperties):
        s = f"image, {p.color_space}" + (f", default size {p.default_size[0]}x{p.default_size[1]}"
                                         if p.default_size else "")
    elif isinstance(p, tfmeta.BoundingBoxProperties):
        s = f"boxes, {p.type} {p.coordinate_type}" + (f", order {list(p.index)}" if p.index else "")
    elif isinstance(p, tfmeta.AudioProperties):
        s = f"audio, {p.sample_rate} Hz, {p.channels} channels"
    else:
        s = "features" if p is not None else "no content type"
    return s + (f" (dimensions {c.range[0]}-{c.range[1]})" if c.range else "")


def _unit(u: tfmeta.ProcessUnit) -> str:
    if isinstance(u, tfmeta.NormalizationOptions):
        return f"normalization   mean {list(u.mean)}, std {list(u.std)}"
    if isinstance(u, tfmeta.ScoreThresholdingOptions):
        return f"score threshold {u.global_score_threshold:g}"
    if isinstance(u, tfmeta.ScoreCalibrationOptions):
        return f"calibration     {u.score_transformation}, default score {u.default_score:g}"
    return f"tokenizer       {u.kind}" + (f" ({_files(u.files)})" if u.files else "")
