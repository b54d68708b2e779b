"""Cut a graph into LiteRT partitions and gpulite cpu partitions, and write each LiteRT one as a model.

LiteRT's Python package runs every builtin op. Of custom ops it runs only those its
XNNPACK delegate knows (MediaPipe's Convolution2DTransposeBias), not the other MediaPipe ops
(Landmarks2TransformMatrix, TransformTensorBilinear, TransformLandmarks); which is asked
of LiteRT itself, node by node (:func:`runs_on_litert`). An op a user declared
(``gpulite.declare_custom_op``) always runs on its gpulite kernel. Consecutive nodes in run
order that LiteRT can run form one LiteRT partition; the others form cpu partitions, run
by gpulite's numpy kernels. A LiteRT partition's inputs are the tensors its nodes read that
it does not make (graph inputs and tensors of earlier partitions; a variable tensor stays
inside the one partition using it); its outputs are the tensors it makes that a later
partition reads or that are graph outputs.

:func:`write_partition` writes one partition as a ``.tflite`` with :mod:`gpulite.model.writer`:
the constants' original bytes (folded ones, e.g. fp16 weights behind a DEQUANTIZE, as the
fp32 values gpulite folded them to), quantization (scales, zero points, axis, min/max),
sparsity, variable tensors, each node's options, version and custom options. A tensor's
shape is its current one (after any ``resize_tensor_input``); its shape signature is
written when it has dynamic (-1) dimensions that still agree with that shape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpulite.graph.ir import Graph, Node, TensorInfo
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import CustomOp, op_named
from gpulite.model.reader import DTYPES
from gpulite.model.writer import ModelBuilder, Quant

LITERT, CPU = "litert", "cpu"


def runs_on_litert(graph: Graph, node: Node, interpreter: Callable[..., Any]) -> bool:
    """Whether LiteRT runs ``node``: every builtin; a custom op that is not a user's declared one
    when ``interpreter`` (LiteRT's Interpreter class, or :func:`.quiet.allocated` over it) prepares a
    model of that node alone."""
    if not node.op.is_custom:
        return True
    if isinstance(node.op, CustomOp) and _declared(node.op):
        return False
    part = Partition(LITERT, [node], [i for i in node.inputs if i >= 0 and not graph.tensors[i].is_const],
                     list(node.outputs))
    try:
        interpreter(model_content=write_partition(graph, part)[0]).allocate_tensors()
    except (RuntimeError, ValueError):  # "Encountered unresolved custom op", or a delegate's refusal
        return False
    return True


def _declared(op: CustomOp) -> bool:
    try:
        op_named(str(op))
    except ValueError:
        return False
    return True


@dataclass
class Partition:
    """Consecutive nodes that run on one side; ``inputs``/``outputs`` are graph tensor indices."""

    backend: str
    nodes: list[Node] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


def partition(graph: Graph, interpreter: Callable[..., Any]) -> list[Partition]:
    """Group ``graph.nodes`` (run order) by where they run; see the module docstring."""
    parts: list[Partition] = []
    for n in graph.nodes:
        side = LITERT if runs_on_litert(graph, n, interpreter) else CPU
        if not parts or parts[-1].backend != side:
            parts.append(Partition(side))
        parts[-1].nodes.append(n)
    made_in = {o: k for k, p in enumerate(parts) for n in p.nodes for o in n.outputs}
    read_after: dict[int, int] = {}  # tensor -> last partition reading it
    for k, p in enumerate(parts):
        for n in p.nodes:
            for i in n.inputs:
                if i >= 0:
                    read_after[i] = k
    for k, p in enumerate(parts):
        seen: set[int] = set()
        for n in p.nodes:
            for i in n.inputs:
                t = graph.tensors[i] if i >= 0 else None
                if t is not None and not (t.is_const or t.is_variable) and made_in.get(i) != k and i not in seen:
                    seen.add(i)
                    p.inputs.append(i)
        for n in p.nodes:
            for o in n.outputs:
                if o in graph.outputs or read_after.get(o, -1) > k:
                    p.outputs.append(o)
    return parts


def _quant(t: TensorInfo) -> Quant | None:
    q = t.quant
    return None if q is None else Quant(q.scale, q.zero_point, q.axis, q.min, q.max)


def _type(t: TensorInfo) -> object:
    """The file's TensorType; a tensor made by gpulite (a folded constant) by its dtype."""
    known = DTYPES.get(t.type_code)
    return sg.TensorType(t.type_code) if known is None or known == t.dtype else t.dtype


def _signature(t: TensorInfo) -> tuple[int, ...] | None:
    sig = t.shape_signature
    if len(sig) != len(t.shape) or -1 not in sig or any(s not in (-1, d) for s, d in zip(sig, t.shape, strict=True)):
        return None  # static, or made stale by a resize: the shape says everything
    return sig


def _sparsity(t: TensorInfo) -> dict | None:
    sp = t.sparsity
    if sp is None:
        return None
    dims = [{"format": int(d.format), "dense_size": int(d.dense_size), "array_segments": d.array_segments,
             "array_indices": d.array_indices} for d in sp.dim_metadata]
    return {"traversal_order": list(sp.traversal_order), "block_map": list(sp.block_map), "dim_metadata": dims}


def _options(node: Node) -> dict:
    """The node's options table as ``ModelBuilder.op`` keywords; empty vectors and strings are
    left out, as the file that had none (the reader gives both as empty)."""
    o = node.options
    if o is None:
        return {}
    values = {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}  # type: ignore[arg-type]
    return {k: v for k, v in values.items() if not (isinstance(v, (tuple, str)) and len(v) == 0)}


def write_partition(graph: Graph, part: Partition, name: str = "main") -> tuple[bytes, dict[int, int]]:
    """The partition as a ``.tflite`` model: ``(model bytes, {graph tensor: tensor index in the model})``.

    The model's inputs and outputs are ``part.inputs`` and ``part.outputs``, in that order.
    """
    mb = ModelBuilder(name)
    index: dict[int, int] = {}

    def add(i: int) -> int:
        if i < 0:
            return -1
        if i in index:
            return index[i]
        t = graph.tensors[i]
        type_code = _type(t)
        if t.const is not None:
            index[i] = mb.const(t.name, t.const, quant=_quant(t), sparsity=_sparsity(t), shape=t.shape,
                                dtype=type_code, is_variable=t.is_variable)
        elif i in part.inputs:
            index[i] = mb.input(t.name, t.shape, type_code, quant=_quant(t), shape_signature=_signature(t))
        else:
            index[i] = mb.tensor(t.name, t.shape, type_code, quant=_quant(t), shape_signature=_signature(t),
                                 is_variable=t.is_variable)
        return index[i]

    for i in part.inputs:
        add(i)
    for n in part.nodes:
        ins, outs = [add(i) for i in n.inputs], [add(o) for o in n.outputs]
        if n.op.is_custom:
            mb.custom_op(str(n.op), ins, outs, custom_options=n.custom_options or b"", op_version=n.version)
        else:
            mb.op(n.op.spec.code, ins, outs, op_version=n.version, **_options(n))
    mb.output(*(index[o] for o in part.outputs))
    return mb.build(description="gpulite litert partition"), index
