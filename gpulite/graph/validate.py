"""Check every node against its op's :class:`~gpulite.model.opdefs.Operands`, once, at graph build.

:func:`gpulite.graph.resolve.resolve` calls :func:`check_inputs` and then :func:`check_node` on
each node in run order, before it computes the node's shapes, and before any backend sees the
graph, so shape rules, kernels and fusion passes can rely on the arity, the dtypes and the
constness the table promises. What it checks, for every node:

- no graph input is a constant, and no node writes into one (LiteRT refuses such a node too);
- the number of inputs and outputs, and that only optional inputs are omitted (-1);
- tensors that must share a dtype do, and index inputs (shapes, axes, ...) are int32/int64;
- a bias holds one value per output channel, of the type the input's calls for;
- inputs gpulite's kernels need constant are constant (once shape computations are folded);
- quantized tensors LiteRT's Prepare refuses (``Operands.quant_refused``, ``same_quant``): an
  :class:`~gpulite.errors.UnsupportedOpError` on every backend, before webgpu's float rewrite;
- (in :mod:`~gpulite.graph.resolve`) every stored output shape is the one the op's shape rule
  gives, but for the dimensions the shape signature leaves open (-1);
- a control-flow node (WHILE, IF, CALL_ONCE) names subgraphs the model has, whose inputs and
  outputs match the node's, and that do not call themselves; those subgraphs are checked too.

A malformed node raises :class:`~gpulite.errors.ModelError` (:class:`~gpulite.errors.ShapeError`
for a stored shape that its inputs do not give); a valid node gpulite cannot run
(a run-time value where its kernels need a constant) raises
:class:`~gpulite.errors.UnsupportedOpError`. Ops without an entry are checked for the first
point only.
"""

from __future__ import annotations

import numpy as np

from gpulite.errors import ModelError, UnsupportedOpError
from gpulite.graph.ir import Graph, Node
from gpulite.model.opdefs import Op, Operands, OpName, op_spec

_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_FOLDED = (Op.DEQUANTIZE, Op.DENSIFY)  # a folded node kept to produce a graph output writes its constant


def check_inputs(g: Graph) -> None:
    """ModelError for a graph input that is a constant of the model."""
    for i in g.inputs:
        if g.tensors[i].is_const:
            raise ModelError(f"graph input {_where(g, i)} is a constant of the model (its buffer holds data); an input "
                             "must be a tensor without data")


def check_node(g: Graph, n: Node, backend: str, _calling: tuple[int, ...] = ()) -> None:
    """Raise the first problem of node ``n`` (see the module docstring; its stored output shapes are
    :func:`gpulite.graph.resolve.resolve`'s to check); ``backend`` names where it would run, for
    :class:`~gpulite.errors.UnsupportedOpError`."""
    _check_outputs_writable(g, n)
    spec = op_spec(n.op)
    if spec is not None and spec.operands is not None:
        _check_operands(g, n, spec.operands, backend)
    _check_called(g, n, backend, _calling)


def _check_graph(g: Graph, backend: str, calling: tuple[int, ...]) -> None:
    """A called subgraph: its inputs and every node (shapes are its kernel's to check when compiled)."""
    check_inputs(g)
    for n in g.nodes:
        check_node(g, n, backend, calling)


def _where(g: Graph, tensor: int) -> str:
    return f"tensor {tensor} ({g.tensors[tensor].name!r})"


def _check_outputs_writable(g: Graph, n: Node) -> None:
    if n.op in _FOLDED and all(i >= 0 and g.tensors[i].is_const for i in n.inputs):
        return
    for o in n.outputs:
        if g.tensors[o].is_const:
            raise ModelError(f"node {n.index} ({n.op}) writes {_where(g, o)}, which is a constant of the model "
                             "(its buffer holds data); an output must be a tensor without data")


def _count(lo: int, hi: int | None) -> str:
    return f"{lo}" if lo == hi else f"at least {lo}" if hi is None else f"{lo} to {hi}"


def _check_operands(g: Graph, n: Node, spec: Operands, backend: str) -> None:
    for what, have, (lo, hi) in (("inputs", n.inputs, spec.inputs), ("outputs", n.outputs, spec.outputs)):
        if len(have) < lo or (hi is not None and len(have) > hi):
            raise ModelError(f"node {n.index} ({n.op}) has {len(have)} {what} {list(have)}; {n.op} takes "
                             f"{_count(lo, hi)}")
    for pos, t in enumerate(n.inputs):
        if t < 0 and pos not in spec.optional:
            raise ModelError(f"node {n.index} ({n.op}): input {pos} is omitted (-1), but {n.op} needs it")
    named = _named(n, spec.same_dtype)
    for label, t in named[1:]:
        first, t0 = named[0]
        if g.tensors[t].dtype != g.tensors[t0].dtype:
            raise ModelError(f"node {n.index} ({n.op}): {first} ({_where(g, t0)}) is {g.tensors[t0].dtype} but "
                             f"{label} ({_where(g, t)}) is {g.tensors[t].dtype}; {n.op} needs them to be of "
                             "one type")
    for pos in spec.index_inputs:
        t = n.inputs[pos] if pos < len(n.inputs) else -1
        if t >= 0 and g.tensors[t].dtype not in _INDEX_DTYPES:
            raise ModelError(f"node {n.index} ({n.op}): input {pos} ({_where(g, t)}) is {g.tensors[t].dtype}; "
                             "expected int32 or int64")
    if spec.bias is not None and spec.bias < len(n.inputs) and n.inputs[spec.bias] >= 0 and n.outputs:
        _check_bias(g, n, spec.bias)
    for pos in spec.const_inputs:
        t = n.inputs[pos] if pos < len(n.inputs) else -1
        if t >= 0 and not g.tensors[t].is_const:
            raise UnsupportedOpError(n.op, n.index, backend, f"input {pos} ({_where(g, t)}) is computed at run "
                                     "time; gpulite's kernels need it constant")
    _check_quantization(g, n, spec, backend)


def _named(n: Node, keys: tuple[str, ...]) -> list[tuple[str, int]]:
    """``(label, tensor)`` for the keys ``"i0"``, ``"o0"``, ``"i*"``, ``"o*"`` (omitted inputs skipped)."""
    named = []
    for key in keys:
        seq, what = (n.inputs, "input") if key[0] == "i" else (n.outputs, "output")
        if key[1:] == "*":
            named += [(f"{what} {p}", t) for p, t in enumerate(seq)]
        elif int(key[1:]) < len(seq):
            named.append((f"{what} {key[1:]}", seq[int(key[1:])]))
    return [(label, t) for label, t in named if t >= 0]


def _quantized(g: Graph, t: int) -> bool:
    info = g.tensors[t]
    return info.quant is not None and bool(np.size(info.quant.scale)) and info.dtype.kind in "iu"


def _check_quantization(g: Graph, n: Node, spec: Operands, backend: str) -> None:
    """LiteRT's Prepare refusals of quantized tensors (:class:`~gpulite.model.opdefs.Operands`'
    ``quant_refused`` and ``same_quant``), checked on the model's own dtypes for every backend."""
    for label, t in _named(n, ("i*", "o*")):
        if g.tensors[t].dtype.name in spec.quant_refused and _quantized(g, t):
            raise UnsupportedOpError(n.op, n.index, backend, f"{label} ({_where(g, t)}) is quantized "
                                     f"{g.tensors[t].dtype}; LiteRT's kernel refuses quantized "
                                     f"{'/'.join(spec.quant_refused)} tensors")
    named = [(label, t) for label, t in _named(n, spec.same_quant) if _quantized(g, t)]
    if not named or g.tensors[named[0][1]].dtype.name not in spec.same_quant_dtypes:
        return

    def key(t: int) -> str:
        q = g.tensors[t].quant
        assert q is not None  # _quantized
        return f"scale {np.ravel(q.scale).tolist()}, zero point {np.ravel(q.zero_point).tolist()}"
    if len({key(t) for _, t in named}) > 1:
        got = "; ".join(f"{label} {key(t)}" for label, t in named)
        raise UnsupportedOpError(n.op, n.index, backend, f"inputs and outputs are quantized differently ({got}); "
                                 "LiteRT's kernel copies codes and requires one scale and zero point")


_BIAS_DTYPES = {"float32": ("float32",), "int8": ("int32",), "uint8": ("int32",), "int16": ("int32", "int64")}


def _check_bias(g: Graph, n: Node, pos: int) -> None:
    bias, x, out = g.tensors[n.inputs[pos]], g.tensors[n.inputs[0]], g.tensors[n.outputs[0]]
    channels = out.shape[-1] if out.shape else 1
    if bias.nbytes // bias.dtype.itemsize != channels:
        raise ModelError(f"node {n.index} ({n.op}): bias {_where(g, bias.index)} has shape {list(bias.shape)}; "
                         f"expected {channels} values, one per output channel")
    allowed = _BIAS_DTYPES.get(x.dtype.name)
    if allowed is not None and bias.dtype.name not in allowed:
        raise ModelError(f"node {n.index} ({n.op}): bias {_where(g, bias.index)} is {bias.dtype} for a {x.dtype} "
                         f"input; expected {' or '.join(allowed)}")


# Control flow: the options fields naming subgraphs, per op.
SUBGRAPH_FIELDS: dict[OpName, tuple[str, ...]] = {
    Op.WHILE: ("cond_subgraph_index", "body_subgraph_index"),
    Op.IF: ("then_subgraph_index", "else_subgraph_index"),
    Op.CALL_ONCE: ("init_subgraph_index",),
}


def called_subgraphs(g: Graph, n: Node) -> list[Graph]:
    """The subgraphs control-flow node ``n`` of ``g`` runs (in its options' order); [] for other ops.
    A missing subgraph is a :class:`~gpulite.errors.ModelError`."""
    fields = SUBGRAPH_FIELDS.get(n.op, ())
    out = []
    for name in fields:
        k = getattr(n.options, name, None)
        if k is None:
            raise ModelError(f"node {n.index} ({n.op}) has no {type(n.options).__name__ if n.options else 'options'} "
                             f"{name}; {n.op} needs its options to name its subgraphs")
        if not 0 <= k < len(g.subgraphs):
            raise ModelError(f"node {n.index} ({n.op}): {name} is {k}, but the model has {len(g.subgraphs)} "
                             f"subgraph(s) (0 to {len(g.subgraphs) - 1})")
        out.append(g.subgraphs[k])
    return out


def _check_called(g: Graph, n: Node, backend: str, calling: tuple[int, ...]) -> None:
    subs = called_subgraphs(g, n)
    if not subs:
        return
    here = max(_position(g, g), 0)  # a graph not in its own list is the resolved copy of subgraph 0
    n_in, n_out = len(n.inputs), len(n.outputs)
    if n.op == Op.WHILE:
        if n_in != n_out:
            raise ModelError(f"node {n.index} (WHILE) has {n_in} inputs and {n_out} outputs; a loop carries each "
                             "input to the output in its place, so they must be as many")
        wants = [("cond", subs[0], n_in, 1), ("body", subs[1], n_in, n_in)]
    elif n.op == Op.IF:
        if n_in < 1:
            raise ModelError(f"node {n.index} (IF) has no inputs; it needs the condition first")
        wants = [("then", subs[0], n_in - 1, n_out), ("else", subs[1], n_in - 1, n_out)]
    else:
        wants = [("init", subs[0], 0, 0)]
    fed = [g.tensors[t] for t in n.inputs[1:]] if n.op == Op.IF else [g.tensors[t] for t in n.inputs if t >= 0]
    for role, sub, k_in, k_out in wants:
        k = _position(g, sub)
        if k in calling or k == here:
            raise ModelError(f"node {n.index} ({n.op}): its {role} subgraph {k} ({sub.name!r}) calls itself "
                             f"(call chain {[*calling, here, k]}); recursion is not allowed")
        if len(sub.inputs) != k_in or len(sub.outputs) != k_out:
            raise ModelError(f"node {n.index} ({n.op}): {role} subgraph {k} ({sub.name!r}) has {len(sub.inputs)} "
                             f"inputs and {len(sub.outputs)} outputs; expected {k_in} and {k_out}")
        for pos, (t, s) in enumerate(zip(fed, (sub.tensors[i] for i in sub.inputs), strict=True)):
            if t.dtype != s.dtype:
                raise ModelError(f"node {n.index} ({n.op}): input {pos} is {t.dtype} but {role} subgraph {k} "
                                 f"takes {s.dtype} there")
        if n.op == Op.WHILE and role == "cond" and sub.tensors[sub.outputs[0]].dtype != np.bool_:
            raise ModelError(f"node {n.index} (WHILE): cond subgraph {k} ({sub.name!r}) gives "
                             f"{sub.tensors[sub.outputs[0]].dtype}; expected bool")
        outs = [] if role == "cond" else zip(n.outputs, sub.outputs, strict=True)
        for pos, (t, s) in enumerate((g.tensors[a], sub.tensors[b]) for a, b in outs):
            if t.dtype != s.dtype:
                raise ModelError(f"node {n.index} ({n.op}): output {pos} is {t.dtype} but {role} subgraph {k} "
                                 f"gives {s.dtype} there")
        _check_graph(sub, backend, (*calling, here))


def _position(g: Graph, sub: Graph) -> int:
    # By identity: graphs compare by value, and each one holds the list of all of them.
    return next((k for k, s in enumerate(g.subgraphs) if s is sub), -1)
